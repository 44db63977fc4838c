#include "controllers/cluster_index.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <limits>
#include <numeric>

namespace gaia::sched {

namespace {

// Pools without a size stay at INT64_MAX; a sized one may go below zero when the cluster
// file shrank it under what is stored, which then fits nothing new.
void take_from_pool(ClaimPool& p, int64_t bytes) {
  if (p.free != std::numeric_limits<int64_t>::max()) p.free -= bytes;
}

}  // namespace

namespace {

void add(Resources& a, const Resources& b) {
  a.cpu_millis += b.cpu_millis;
  a.memory_bytes += b.memory_bytes;
  a.gpu += b.gpu;
  a.disk_bytes += b.disk_bytes;
}

void sub(Resources& a, const Resources& b) {
  a.cpu_millis -= b.cpu_millis;
  a.memory_bytes -= b.memory_bytes;
  a.gpu -= b.gpu;
  a.disk_bytes -= b.disk_bytes;
}

// The topology field, or the label of the same name when the field was not filled.
std::string topology_value(const Node& n, const std::string& field, const char* label) {
  if (!field.empty()) return field;
  auto it = n.labels.find(label);
  return it == n.labels.end() ? std::string{} : it->second;
}

void erase_value(std::vector<int>& v, int x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end()) v.erase(it);
}

}  // namespace

int topo_from_name(std::string_view name) {
  if (name == "node") return kTopoNode;
  if (name == "switch") return kTopoSwitch;
  if (name == "rack") return kTopoRack;
  if (name == "zone") return kTopoZone;
  return -1;
}

std::string_view topo_name(int topo) {
  switch (topo) {
    case kTopoNode: return "node";
    case kTopoSwitch: return "switch";
    case kTopoRack: return "rack";
    case kTopoZone: return "zone";
  }
  return "?";
}

bool NodeIx::port_used(int p) const { return std::binary_search(ports.begin(), ports.end(), p); }


ClusterIndex::ClusterIndex(const Snapshot& snapshot) : m_snapshot(&snapshot) {
  const auto& sn = snapshot;
  nodes.resize(sn.nodes.size());
  std::vector<int> order(sn.nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return sn.nodes[a].name < sn.nodes[b].name; });
  for (size_t r = 0; r < order.size(); ++r) nodes[order[r]].name_rank = static_cast<int>(r);

  // Racks and switches are interned under their zone so that equal names in different
  // zones stay different domains.
  std::array<std::unordered_map<std::string, int>, kTopoCount> dom_ids;
  auto intern_dom = [&](int topo, const std::string& name) {
    if (name.empty()) return -1;
    auto [it, inserted] = dom_ids[topo].try_emplace(name, static_cast<int>(dom_ids[topo].size()));
    if (inserted) domain_nodes[topo].emplace_back();
    return it->second;
  };
  for (size_t i = 0; i < sn.nodes.size(); ++i) {
    const Node& n = sn.nodes[i];
    NodeIx& x = nodes[i];
    x.node = &n;
    x.cap = n.capacity;
    x.inv_cpu = n.capacity.cpu_millis > 0 ? 1.0 / static_cast<double>(n.capacity.cpu_millis) : 0.0;
    x.inv_mem = n.capacity.memory_bytes > 0 ? 1.0 / static_cast<double>(n.capacity.memory_bytes) : 0.0;
    x.inv_gpu = n.capacity.gpu > 0 ? 1.0 / static_cast<double>(n.capacity.gpu) : 0.0;
    gpu_mixed = gpu_mixed || (n.capacity.gpu > 0) != (sn.nodes[0].capacity.gpu > 0);
    m_node_by_name.emplace(n.name, static_cast<int>(i));
    std::string zone = topology_value(n, n.zone, "zone");
    std::string rack = topology_value(n, n.rack, "rack");
    std::string sw = topology_value(n, n.switch_, "switch");
    x.dom[kTopoNode] = static_cast<int>(i);
    x.dom[kTopoZone] = intern_dom(kTopoZone, zone);
    x.dom[kTopoRack] = rack.empty() ? -1 : intern_dom(kTopoRack, zone + "/" + rack);
    x.dom[kTopoSwitch] = sw.empty() ? -1 : intern_dom(kTopoSwitch, zone + "/" + sw);
    for (int t = kTopoSwitch; t < kTopoCount; ++t)
      if (x.dom[t] >= 0) domain_nodes[t][x.dom[t]].push_back(static_cast<int>(i));
    for (const auto& vg : n.volume_groups) {
      x.vg_free_size.push_back(vg.size_bytes);
      x.vg_free_iops.push_back(vg.iops);
    }
    // Volumes kept after a scale down still hold their data, so their space stays taken
    // until the instance that gets them back is created or they are deleted.
    for (const auto& k : n.kept_volumes)
      for (size_t g = 0; g < n.volume_groups.size(); ++g)
        if (n.volume_groups[g].name == k.group) {
          x.vg_free_size[g] -= k.size_bytes;
          x.vg_free_iops[g] -= k.iops;
          break;
        }
    for (const auto& img : n.cached_images) m_nodes_by_image[img].push_back(static_cast<int>(i));
  }
  domain_count[kTopoNode] = static_cast<int>(nodes.size());
  for (const auto& c : sn.storage_classes)
    if (c.kind == StorageKind::Claim)
      claim_pools.push_back(ClaimPool{&c, c.capacity_bytes < 0 ? std::numeric_limits<int64_t>::max() : c.capacity_bytes});
  // Claim volumes kept after a scale down hold their data in the pool, like kept local
  // volumes in their node's group.
  for (const auto& k : sn.kept_claims)
    if (int p = claim_pool(k.group); p >= 0) take_from_pool(claim_pools[p], k.size_bytes);
  for (int t = kTopoSwitch; t < kTopoCount; ++t) domain_count[t] = static_cast<int>(domain_nodes[t].size());

  for (const auto& t : sn.tenants) {
    m_tenant_by_name.emplace(t.name, static_cast<int>(tenants.size()));
    tenants.push_back(TenantIx{t.name, &t, {}, 0});
  }
  m_known_tenants = sn.tenants.size();
  insts.reserve(sn.instances.size());
  for (size_t i = 0; i < sn.instances.size(); ++i) add_instance(i);
  for (auto& n : nodes) std::sort(n.ports.begin(), n.ports.end());
  // Snapshots list a role's instances by ordinal as a rule; sort only when not. Equal
  // keys keep snapshot order, so the first of duplicates is found.
  for (auto& r : roles)
    if (!std::is_sorted(r.by_ordinal.begin(), r.by_ordinal.end())) std::sort(r.by_ordinal.begin(), r.by_ordinal.end());
  m_built = true;
}

int ClusterIndex::tenant_id(const std::string& name) {
  auto [it, inserted] = m_tenant_by_name.try_emplace(name, static_cast<int>(tenants.size()));
  if (inserted) tenants.push_back(TenantIx{name, nullptr, {}, 0});
  return it->second;
}

int ClusterIndex::role_id(const Instance& inst) {
  m_role_key.assign(inst.tenant).append("/").append(inst.app).append("/").append(inst.role);
  auto it = m_role_by_key.find(m_role_key);
  if (it != m_role_by_key.end()) return it->second;
  int id = static_cast<int>(roles.size());
  m_role_by_key.emplace(m_role_key, id);
  RoleIx r;
  r.key = m_role_key;
  r.key_tail.assign(".").append(inst.role).append(".").append(inst.app).append(".").append(inst.tenant);
  r.tenant = tenant_id(inst.tenant);
  if (auto spec = m_snapshot->roles.find(m_role_key); spec != m_snapshot->roles.end()) r.role = &spec->second;
  m_roles_by_tail[r.key_tail].push_back(id);
  roles.push_back(std::move(r));
  m_labelled_by.push_back(-1);
  m_roles_by_app_role[inst.app + "/" + inst.role].push_back(id);
  return id;
}

void ClusterIndex::add_instance(size_t i) {
  const Snapshot& sn = *m_snapshot;
  const Instance& in = sn.instances[i];
  InstIx& x = insts.emplace_back();
  x.inst = &in;
  x.role = role_id(in);
  x.tenant = roles[x.role].tenant;
  // Instances of a role usually carry the same labels: each role remembers the last
  // instance whose labels were interned, and an instance with equal labels reuses its
  // ids instead of formatting and hashing them again (a third of indexing a large
  // snapshot, which every schedule() does).
  int& src = m_labelled_by[static_cast<size_t>(x.role)];
  if (src >= 0 && sn.instances[static_cast<size_t>(src)].labels == in.labels) {
    x.labels = insts[static_cast<size_t>(src)].labels;
  } else {
    auto& ids = m_label_lists.emplace_back();
    for (const auto& [k, v] : in.labels) ids.push_back(intern_label(x.tenant, k, v));
    x.labels = &ids;
    src = static_cast<int>(i);
  }
  x.reservation = in.reserved();
  roles[x.role].by_ordinal.emplace_back(in.ordinal, static_cast<int>(i));
  // Volumes outlive their instance, whatever its state: they always take space.
  for (const auto& vb : in.volumes) {
    if (claim_binding(vb)) {
      if (int p = claim_pool(vb.group); p >= 0) take_from_pool(claim_pools[p], vb.size_bytes);
      continue;
    }
    int n = node_index(vb.node);
    if (n < 0) continue;
    const auto& groups = sn.nodes[n].volume_groups;
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].name == vb.group) {
        nodes[n].vg_free_size[g] -= vb.size_bytes;
        nodes[n].vg_free_iops[g] -= vb.iops;
        break;
      }
  }
  if (occupies_node(in)) {
    int n = node_index(in.node);
    if (n >= 0) {
      occupy(static_cast<int>(i), n);
      for (const auto& [name, port] : in.ports) {
        // Unsorted here: the constructor sorts every node's ports once at the end, and
        // extend() inserts in order.
        if (m_built) nodes[n].ports.insert(std::upper_bound(nodes[n].ports.begin(), nodes[n].ports.end(), port), port);
        else nodes[n].ports.push_back(port);
        insts[i].held_ports.push_back(port);
        if (port >= nodes[n].node->port_min && port <= nodes[n].node->port_max) ++nodes[n].ports_in_range;
      }
    }
  }
}

bool ClusterIndex::extend(const Snapshot& sn, std::vector<int>* occupied) {
  // What the index cannot follow: an eviction (a stateful victim keeps its node in the
  // snapshot, the index let it go), nodes, tenants or storage classes that came or went,
  // or fewer instances than it indexed. The old snapshot may be gone: only `sn` is read.
  size_t claim_classes = static_cast<size_t>(
      std::count_if(sn.storage_classes.begin(), sn.storage_classes.end(),
                    [](const StorageClass& c) { return c.kind == StorageKind::Claim; }));
  if (m_evicted || sn.nodes.size() != nodes.size() || sn.tenants.size() != m_known_tenants ||
      claim_classes != claim_pools.size() || sn.instances.size() < insts.size())
    return false;
  for (size_t n = 0; n < sn.nodes.size(); ++n) {
    auto it = m_node_by_name.find(sn.nodes[n].name);
    if (it == m_node_by_name.end() || it->second != static_cast<int>(n)) return false;
  }
  // Every placement the index made must be in the snapshot as it was made: the same
  // instance, holding that node, with the reservation the index counted (binding drops
  // one observed before, which would change what the node holds).
  for (int i : m_placed) {
    const Instance& in = sn.instances[static_cast<size_t>(i)];
    const InstIx& x = insts[static_cast<size_t>(i)];
    m_role_key.assign(in.tenant).append("/").append(in.app).append("/").append(in.role);
    if (x.node < 0 || !occupies_node(in) || in.node != sn.nodes[static_cast<size_t>(x.node)].name ||
        m_role_key != roles[static_cast<size_t>(x.role)].key || !(in.reserved() == x.reservation))
      return false;
  }
  m_placed.clear();
  m_snapshot = &sn;
  for (size_t n = 0; n < nodes.size(); ++n) nodes[n].node = &sn.nodes[n];
  for (size_t t = 0; t < m_known_tenants; ++t) tenants[t].tenant = &sn.tenants[t];
  size_t pool = 0;
  for (const auto& c : sn.storage_classes)
    if (c.kind == StorageKind::Claim) claim_pools[pool++].cls = &c;
  for (size_t i = 0; i < insts.size(); ++i) insts[i].inst = &sn.instances[i];
  // A role's spec may have been written since (its map entry keeps its address, but a
  // role first seen without one may have one now).
  for (auto& r : roles) {
    auto spec = sn.roles.find(r.key);
    r.role = spec == sn.roles.end() ? nullptr : &spec->second;
  }
  size_t first_new = insts.size();
  for (size_t i = first_new; i < sn.instances.size(); ++i) {
    add_instance(i);
    if (occupied && insts[i].node >= 0) occupied->push_back(insts[i].node);
  }
  // Every role that got new instances is sorted again where they broke its order (two
  // new ones may both go before an ordinal it had).
  std::vector<char> touched(roles.size(), 0);
  for (size_t i = first_new; i < sn.instances.size(); ++i) touched[static_cast<size_t>(insts[i].role)] = 1;
  for (size_t r = 0; r < roles.size(); ++r) {
    auto& byo = roles[r].by_ordinal;
    if (touched[r] && !std::is_sorted(byo.begin(), byo.end())) std::sort(byo.begin(), byo.end());
  }
  return true;
}

int ClusterIndex::intern_label(int tenant, const std::string& key, const std::string& value) {
  std::string k = fmt::format("{}\x1f{}\x1f{}", tenant, key, value);
  auto [it, inserted] = m_label_ids.try_emplace(std::move(k), static_cast<int>(postings.size()));
  if (inserted) {
    postings.emplace_back();
    m_labels_by_key[fmt::format("{}\x1f{}", tenant, key)].push_back(it->second);
  }
  return it->second;
}

const Role& ClusterIndex::role_of(int inst) const {
  const Role* r = roles[insts[inst].role].role;
  return r ? *r : m_empty_role;
}

int ClusterIndex::node_index(std::string_view name) const {
  auto it = m_node_by_name.find(std::string(name));
  return it == m_node_by_name.end() ? -1 : it->second;
}

bool ClusterIndex::key_less(int a, int b) const {
  char da[24], db[24];
  std::string_view a1(da, static_cast<size_t>(std::to_chars(da, da + sizeof da, insts[a].inst->ordinal).ptr - da));
  std::string_view b1(db, static_cast<size_t>(std::to_chars(db, db + sizeof db, insts[b].inst->ordinal).ptr - db));
  std::string_view a2 = roles[insts[a].role].key_tail, b2 = roles[insts[b].role].key_tail;
  // a1 + a2 against b1 + b2, byte by byte as std::string compares (unsigned).
  size_t na = a1.size() + a2.size(), nb = b1.size() + b2.size();
  for (size_t i = 0; i < std::min(na, nb); ++i) {
    auto ca = static_cast<unsigned char>(i < a1.size() ? a1[i] : a2[i - a1.size()]);
    auto cb = static_cast<unsigned char>(i < b1.size() ? b1[i] : b2[i - b1.size()]);
    if (ca != cb) return ca < cb;
  }
  return na < nb;
}

int ClusterIndex::find_key(int ordinal, const std::vector<int>& roles_with_tail) const {
  int first = -1;
  for (int r : roles_with_tail) {
    const auto& all = roles[static_cast<size_t>(r)].by_ordinal;
    auto it = std::lower_bound(all.begin(), all.end(), std::pair{ordinal, std::numeric_limits<int>::min()});
    if (it != all.end() && it->first == ordinal && (first < 0 || it->second < first)) first = it->second;
  }
  return first;
}

int ClusterIndex::first_with_key_of(int inst) const {
  return find_key(insts[inst].inst->ordinal, m_roles_by_tail.at(roles[static_cast<size_t>(insts[inst].role)].key_tail));
}

const std::vector<int>& ClusterIndex::role_order() const {
  if (m_role_order.size() != roles.size()) {
    // Any instance of a role names its tenant, app and role.
    std::vector<int> ids(roles.size());
    std::iota(ids.begin(), ids.end(), 0);
    auto parts = [&](int r) {
      const Instance& i = *insts[static_cast<size_t>(roles[static_cast<size_t>(r)].by_ordinal.front().second)].inst;
      return std::tie(i.tenant, i.app, i.role);
    };
    std::sort(ids.begin(), ids.end(), [&](int a, int b) { return parts(a) < parts(b); });
    m_role_order.assign(roles.size(), 0);
    for (size_t k = 0; k < ids.size(); ++k) m_role_order[static_cast<size_t>(ids[k])] = static_cast<int>(k);
  }
  return m_role_order;
}

int ClusterIndex::instance_index(std::string_view key) const {
  // "<ordinal>.<role>.<app>.<tenant>": the ordinal has no dot, so the first dot splits
  // the key into the ordinal and the role's key_tail.
  auto dot = key.find('.');
  if (dot == std::string_view::npos || dot == 0) return -1;
  int ordinal = 0;
  auto [end, ec] = std::from_chars(key.data(), key.data() + dot, ordinal);
  if (ec != std::errc{} || end != key.data() + dot) return -1;
  // from_chars accepts what fmt would not print ("007"): such a key names nothing.
  char canon[24];
  if (std::string_view(canon, static_cast<size_t>(std::to_chars(canon, canon + sizeof canon, ordinal).ptr - canon)) !=
      key.substr(0, dot))
    return -1;
  auto found = m_roles_by_tail.find(key.substr(dot));
  return found == m_roles_by_tail.end() ? -1 : find_key(ordinal, found->second);
}

int ClusterIndex::label_id(int tenant, std::string_view key, std::string_view value) const {
  auto it = m_label_ids.find(fmt::format("{}\x1f{}\x1f{}", tenant, key, value));
  return it == m_label_ids.end() ? -1 : it->second;
}

const std::vector<int>* ClusterIndex::label_ids_for_key(int tenant, std::string_view key) const {
  auto it = m_labels_by_key.find(fmt::format("{}\x1f{}", tenant, key));
  return it == m_labels_by_key.end() ? nullptr : &it->second;
}

const std::vector<int>* ClusterIndex::roles_by_app_role(std::string_view app_role) const {
  auto it = m_roles_by_app_role.find(app_role);
  return it == m_roles_by_app_role.end() ? nullptr : &it->second;
}

const std::vector<int>* ClusterIndex::nodes_with_image(std::string_view image) const {
  auto it = m_nodes_by_image.find(image);
  return it == m_nodes_by_image.end() ? nullptr : &it->second;
}

Resources NodeIx::preemptible_below(int64_t rank, bool reservations) const {
  Resources sum;
  for (const auto& l : preemptible) {
    if (l.rank >= rank) break;
    add(sum, reservations ? l.res : l.req);
  }
  return sum;
}

namespace {

void account_preemptible(NodeIx& n, std::map<int64_t, int>& ranks, const InstIx& x, bool adding) {
  const Priority& p = x.inst->priority;
  if (!p.preemptible) return;
  int64_t rank = p.rank();
  if (adding) ++ranks[rank];
  else if (auto r = ranks.find(rank); r != ranks.end() && --r->second == 0) ranks.erase(r);
  auto it = std::lower_bound(n.preemptible.begin(), n.preemptible.end(), rank,
                             [](const RankLoad& l, int64_t r) { return l.rank < r; });
  if (it == n.preemptible.end() || it->rank != rank) {
    if (!adding) return;
    it = n.preemptible.insert(it, RankLoad{rank, 0, {}, {}});
  }
  if (adding) {
    ++it->count;
    add(it->req, x.inst->request);
    add(it->res, x.reservation);
  } else if (--it->count == 0) {
    n.preemptible.erase(it);  // Exact zero again, whatever the sums were.
  } else {
    sub(it->req, x.inst->request);
    sub(it->res, x.reservation);
  }
}

}  // namespace

void ClusterIndex::occupy(int i, int n) {
  InstIx& x = insts[i];
  x.node = n;
  x.running = x.inst->state == InstanceState::Running;
  add(nodes[n].alloc_req, x.inst->request);
  add(nodes[n].alloc_res, x.reservation);
  nodes[n].occupants.push_back(i);
  account_preemptible(nodes[n], m_preemptible_ranks, x, true);
  roles[x.role].members.push_back(i);
  if (x.running) ++roles[x.role].running;
  add(tenants[x.tenant].used, x.inst->request);
  ++tenants[x.tenant].count;
  for (int l : *x.labels) postings[l].push_back(i);
}

void ClusterIndex::place(int i, int n, const std::map<std::string, int>& ports,
                         const std::vector<VolumeBinding>& new_volumes) {
  occupy(i, n);
  m_placed.push_back(i);
  NodeIx& x = nodes[n];
  for (const auto& [name, port] : ports) {
    insts[i].held_ports.push_back(port);
    x.ports.insert(std::upper_bound(x.ports.begin(), x.ports.end(), port), port);
    if (port >= x.node->port_min && port <= x.node->port_max) ++x.ports_in_range;
  }
  const auto& groups = x.node->volume_groups;
  for (const auto& vb : new_volumes) {
    if (claim_binding(vb)) {
      if (int p = claim_pool(vb.group); p >= 0) take_from_pool(claim_pools[p], vb.size_bytes);
      continue;
    }
    for (size_t g = 0; g < groups.size(); ++g)
      if (groups[g].name == vb.group) {
        x.vg_free_size[g] -= vb.size_bytes;
        x.vg_free_iops[g] -= vb.iops;
        break;
      }
  }
}

int ClusterIndex::claim_pool(std::string_view cls) const {
  // A handful of classes at most: a scan beats a map.
  for (size_t p = 0; p < claim_pools.size(); ++p)
    if (claim_pools[p].cls->name == cls) return static_cast<int>(p);
  return -1;
}

bool ClusterIndex::can_attach(const NodeIx& n, int pool) const {
  return can_attach_class(*n.node, *claim_pools[pool].cls);
}

void ClusterIndex::evict(int i) {
  InstIx& x = insts[i];
  if (x.node < 0) return;
  m_evicted = true;
  NodeIx& n = nodes[x.node];
  sub(n.alloc_req, x.inst->request);
  sub(n.alloc_res, x.reservation);
  erase_value(n.occupants, i);
  account_preemptible(n, m_preemptible_ranks, x, false);
  erase_value(roles[x.role].members, i);
  if (x.running) --roles[x.role].running;
  sub(tenants[x.tenant].used, x.inst->request);
  --tenants[x.tenant].count;
  for (int l : *x.labels) erase_value(postings[l], i);
  for (int port : x.held_ports) {
    auto it = std::lower_bound(n.ports.begin(), n.ports.end(), port);
    if (it != n.ports.end() && *it == port) {
      n.ports.erase(it);
      if (port >= n.node->port_min && port <= n.node->port_max) --n.ports_in_range;
    }
  }
  x.held_ports.clear();
  x.node = -1;
  x.running = false;
}

}  // namespace gaia::sched
