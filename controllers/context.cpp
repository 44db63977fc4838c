#include "controllers/context.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace gaia::sched {

DomainCounter* CounterPool::acquire(int topo) {
  size_t slot;
  if (!m_free[topo].empty()) {
    slot = m_free[topo].back();
    m_free[topo].pop_back();
  } else {
    auto c = std::make_unique<DomainCounter>();
    c->topo = topo;
    c->count.assign(static_cast<size_t>(m_idx->domain_count[topo]), 0);
    slot = m_all.size();
    m_all.push_back(std::move(c));
  }
  m_in_use.push_back(slot);
  return m_all[slot].get();
}

void CounterPool::release_all() {
  for (size_t slot : m_in_use) {
    m_all[slot]->reset();
    m_free[m_all[slot]->topo].push_back(slot);
  }
  m_in_use.clear();
}

std::optional<Cidr> parse_subnet(std::string_view text) {
  Cidr c;
  std::string addr(text);
  int max_prefix = 0;
  auto slash = addr.find('/');
  std::string prefix_text;
  if (slash != std::string::npos) {
    prefix_text = addr.substr(slash + 1);
    addr.resize(slash);
  }
  if (inet_pton(AF_INET, addr.c_str(), c.bytes.data()) == 1) {
    c.family = 4;
    max_prefix = 32;
  } else if (inet_pton(AF_INET6, addr.c_str(), c.bytes.data()) == 1) {
    c.family = 6;
    max_prefix = 128;
  } else {
    return std::nullopt;
  }
  c.prefix = max_prefix;
  if (slash != std::string::npos) {
    if (prefix_text.empty() || prefix_text.size() > 3 ||
        !std::all_of(prefix_text.begin(), prefix_text.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return std::nullopt;
    c.prefix = std::stoi(prefix_text);
    if (c.prefix > max_prefix) return std::nullopt;
  }
  return c;
}

bool cidr_contains(const Cidr& outer, const Cidr& inner) {
  if (outer.family != inner.family || inner.prefix < outer.prefix) return false;
  int full = outer.prefix / 8, rest = outer.prefix % 8;
  if (std::memcmp(outer.bytes.data(), inner.bytes.data(), static_cast<size_t>(full)) != 0) return false;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xFF << (8 - rest));
  return (outer.bytes[full] & mask) == (inner.bytes[full] & mask);
}

std::string stored_label_key(const std::string& key) {
  if (key == "app" || key == "role" || key == "tenant" || key == "version") return "gaia.io/" + key;
  return key;
}

bool requirement_matches(const LabelRequirement& r, const std::map<std::string, std::string>& labels) {
  auto it = labels.find(r.key);
  // Specs call gaia's own instance labels app, role, tenant and version; instances carry
  // them as gaia.io/<key> (users may not set the short keys, docs/spec.md 5.1).
  if (it == labels.end()) it = labels.find(stored_label_key(r.key));
  bool has = it != labels.end();
  auto in_values = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  if (r.op == "In") return in_values();
  if (r.op == "NotIn") return !in_values();
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  return false;  // Validation rejects other operators; never match what we do not understand.
}

bool labels_match(const std::vector<LabelRequirement>& reqs, const std::map<std::string, std::string>& labels) {
  for (const auto& r : reqs)
    if (!requirement_matches(r, labels)) return false;
  return true;
}

void build_request(Request& rq, const ClusterIndex& idx, int inst) {
  rq = Request{};
  const InstIx& x = idx.insts[inst];
  const Instance& in = *x.inst;
  const Role& role = idx.role_of(inst);
  rq.inst = inst;
  rq.instance = &in;
  rq.role = &role;
  rq.tenant = x.tenant;
  rq.role_id = x.role;
  rq.req = in.request;
  rq.res = x.reservation;
  rq.nonprod = in.priority.band == Band::Nonprod;
  for (size_t i = 0; i < role.ports.size(); ++i) {
    const Port& p = role.ports[i];
    rq.ports.emplace_back(p.name.empty() ? fmt::format("port{}", i) : p.name, p.port > 0 ? p.port : 0);
    if (p.port <= 0) ++rq.dynamic_ports;
  }
  for (const auto& v : role.volumes) {
    bool bound = std::any_of(in.volumes.begin(), in.volumes.end(), [&](const VolumeBinding& b) { return b.volume == v.name; });
    if (!bound) rq.new_volumes.push_back(&v);
  }
  // Local volumes hold it to their node; claim volumes follow it wherever it goes.
  for (const auto& b : in.volumes) {
    if (claim_binding(b)) {
      rq.has_claims = true;
    } else if (!rq.sticky) {
      rq.sticky = true;
      rq.sticky_name = b.node;
      rq.sticky_node = idx.node_index(rq.sticky_name);
    }
  }
  if (!role.required_subnet.empty()) {
    rq.has_subnet = true;
    rq.subnet = parse_subnet(role.required_subnet);
  }
  std::string_view topo = role.required_topology;
  while (!topo.empty()) {
    auto comma = topo.find(',');
    std::string_view part = topo.substr(0, comma);
    topo = comma == std::string_view::npos ? std::string_view{} : topo.substr(comma + 1);
    if (part.empty()) continue;
    auto eq = part.find('=');
    if (eq == std::string_view::npos) {
      rq.topology.emplace_back(-1, std::string(part));
      continue;
    }
    int level = topo_from_name(part.substr(0, eq));
    rq.topology.emplace_back(level, std::string(level < 0 ? part : part.substr(eq + 1)));
  }
}

namespace {

// Counts placed instances of the tenant matching the term, per domain. Candidates come
// from the label index through the term's first positive requirement, so only
// plausible instances are looked at.
void count_term(TermState& ts, const ClusterIndex& idx, int tenant) {
  const auto& reqs = ts.term->match;
  auto visit = [&](int i) {
    const InstIx& x = idx.insts[i];
    if (x.node < 0 || x.tenant != tenant || !labels_match(reqs, x.inst->labels)) return;
    ts.counts->add(ts.topo < 0 ? -1 : idx.nodes[x.node].dom[ts.topo]);
  };
  for (const auto& r : reqs) {
    if (r.op == "In") {
      for (const auto& v : r.values) {
        int l = idx.label_id(tenant, stored_label_key(r.key), v);
        if (l >= 0)
          for (int i : idx.postings[l]) visit(i);
      }
      return;
    }
    if (r.op == "Exists") {
      if (const auto* ls = idx.label_ids_for_key(tenant, stored_label_key(r.key)))
        for (int l : *ls)
          for (int i : idx.postings[l]) visit(i);
      return;
    }
  }
  for (size_t i = 0; i < idx.insts.size(); ++i) visit(static_cast<int>(i));
}

void add_terms(std::vector<TermState>& out, std::vector<const AffinityTerm*>* node_terms,
               const std::vector<AffinityTerm>& terms, const ClusterIndex& idx, CounterPool& pool, int tenant) {
  for (const auto& t : terms) {
    if (t.target == AffinityTerm::Target::Node) {
      if (node_terms) node_terms->push_back(&t);
      continue;
    }
    TermState ts;
    ts.term = &t;
    ts.topo = topo_from_name(t.topology);
    ts.counts = pool.acquire(ts.topo < 0 ? kTopoNode : ts.topo);
    count_term(ts, idx, tenant);
    out.push_back(ts);
  }
}

void push_domain(const ClusterIndex& idx, int topo, int node, std::vector<int>* affected) {
  if (!affected) return;
  int dom = topo < 0 ? -1 : idx.nodes[node].dom[topo];
  if (topo <= kTopoNode || dom < 0) {
    affected->push_back(node);
    return;
  }
  const auto& ns = idx.domain_nodes[topo][dom];
  affected->insert(affected->end(), ns.begin(), ns.end());
}

}  // namespace

void init_group(GroupCtx& g, const ClusterIndex& idx, CounterPool& pool, const SchedulerProfile& profile, int inst) {
  g = GroupCtx{};
  g.stack = profile.strategy == "stack";
  build_request(g.rq, idx, inst);
  const Role& role = *g.rq.role;
  int tenant = g.rq.tenant;
  add_terms(g.req_aff, nullptr, role.required_affinity, idx, pool, tenant);
  add_terms(g.req_anti, nullptr, role.required_anti_affinity, idx, pool, tenant);
  add_terms(g.pref_aff, &g.pref_node_aff, role.preferred_affinity, idx, pool, tenant);
  add_terms(g.pref_anti, &g.pref_node_anti, role.preferred_anti_affinity, idx, pool, tenant);
  for (const auto& t : role.preferred_affinity) g.pref_aff_weight += std::max(t.weight, 1);
  for (const auto& t : role.preferred_anti_affinity) g.pref_anti_weight += std::max(t.weight, 1);

  if (!role.near.empty()) {
    g.has_near = true;
    for (int t = 0; t < kTopoCount; ++t) g.near[t] = pool.acquire(t);
    // A dependency usually lives in the same tenant; only when it does not is a role of
    // that name in another tenant taken (a shared platform service).
    const std::vector<int>* ids = idx.roles_by_app_role(role.near);
    std::vector<int> same_tenant;
    if (ids)
      for (int r : *ids)
        if (idx.roles[r].tenant == tenant) same_tenant.push_back(r);
    auto add_role = [&](int r) {
      if (r == g.rq.role_id) g.near_self = true;
      for (int i : idx.roles[r].members)
        for (int t = 0; t < kTopoCount; ++t) g.near[t]->add(idx.nodes[idx.insts[i].node].dom[t]);
    };
    if (!same_tenant.empty())
      for (int r : same_tenant) add_role(r);
    else if (ids)
      for (int r : *ids) add_role(r);
  }
  if (!role.image.empty()) {
    if (const auto* ns = idx.nodes_with_image(role.image)) {
      g.image = pool.acquire(kTopoNode);
      for (int n : *ns) g.image->add(n);
    }
  }
  g.spread_node = pool.acquire(kTopoNode);
  g.spread_rack = pool.acquire(kTopoRack);
  for (int i : idx.roles[g.rq.role_id].members) {
    int n = idx.insts[i].node;
    g.spread_node->add(n);
    g.spread_rack->add(idx.nodes[n].dom[kTopoRack]);
  }
}

void set_instance(GroupCtx& g, const ClusterIndex& idx, int inst) {
  g.rq.inst = inst;
  g.rq.instance = idx.insts[inst].inst;
}

bool note_placed(GroupCtx& g, const ClusterIndex& idx, int inst, int node, std::vector<int>* affected) {
  const auto& labels = idx.insts[inst].inst->labels;
  bool everything = false;
  if (affected) affected->push_back(node);
  g.spread_node->add(node);
  g.spread_rack->add(idx.nodes[node].dom[kTopoRack]);
  push_domain(idx, kTopoRack, node, affected);
  auto update = [&](std::vector<TermState>& terms, bool first_changes_all) {
    for (auto& ts : terms) {
      if (!labels_match(ts.term->match, labels)) continue;
      // The first matching instance ends the "nothing to be near yet" exemption of a
      // self-affine role, which changes the verdict for every node.
      if (first_changes_all && ts.counts->total == 0) everything = true;
      ts.counts->add(ts.topo < 0 ? -1 : idx.nodes[node].dom[ts.topo]);
      push_domain(idx, ts.topo, node, affected);
    }
  };
  update(g.req_aff, true);
  update(g.req_anti, false);
  update(g.pref_aff, false);
  update(g.pref_anti, false);
  if (g.near_self) {
    for (int t = 0; t < kTopoCount; ++t) {
      g.near[t]->add(idx.nodes[node].dom[t]);
      push_domain(idx, t, node, affected);
    }
  }
  return everything;
}

}  // namespace gaia::sched
