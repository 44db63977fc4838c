#include "controllers/replicas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>

#include "controllers/role_key.hpp"
#include "controllers/runtime_util.hpp"
#include "lib/codec.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {

std::string instance_key(const KeptVolume& k) { return fmt::format("{}.{}.{}.{}", k.ordinal, k.role, k.app, k.tenant); }

bool same_volume(const KeptVolume& a, const KeptVolume& b) {
  return a.tenant == b.tenant && a.app == b.app && a.role == b.role && a.ordinal == b.ordinal && a.volume == b.volume &&
         a.group == b.group && a.size_bytes == b.size_bytes && a.iops == b.iops;
}

bool of_role(const KeptVolume& k, const AppRecord& app, const Role& role) {
  return k.tenant == app.tenant && k.app == app.name && k.role == role.name;
}

bool role_has_volume(const Role& role, const std::string& name) {
  return std::any_of(role.volumes.begin(), role.volumes.end(), [&](const Volume& v) { return v.name == name; });
}

std::string size_text(int64_t bytes) {
  constexpr int64_t gi = int64_t{1} << 30, mi = int64_t{1} << 20;
  if (bytes >= gi && bytes % gi == 0) return fmt::format("{}Gi", bytes / gi);
  if (bytes >= mi && bytes % mi == 0) return fmt::format("{}Mi", bytes / mi);
  return fmt::format("{}B", bytes);
}

// The nodes one decision changes, each copied once from the state, so that several
// volumes kept or given back on one node end up in a single put of that node.
class NodeEdits {
 public:
  explicit NodeEdits(const ClusterState& state) : m_state(state) {}

  // The node to change, or null when the state has no such node (it was removed, and
  // the data it held went with it). The name "" stands for the claim pools: claim
  // volumes are kept in Snapshot::kept_claims, seen here as the kept volumes of a node
  // without a name, so keeping and giving back follow one path for both kinds.
  Node* edit(const std::string& name) {
    if (name.empty()) {
      if (!m_claims) {
        m_claims.emplace();
        m_claims->kept_volumes = m_state.snapshot.kept_claims;
      }
      return &*m_claims;
    }
    if (auto it = m_nodes.find(name); it != m_nodes.end()) return &it->second;
    const Node* n = m_state.find_node(name);
    if (!n) return nullptr;
    return &m_nodes.emplace(name, *n).first->second;
  }

  // Takes the first kept volume equal to `k` off node `name`.
  void drop(const std::string& name, const KeptVolume& k) {
    Node* n = edit(name);
    if (!n) return;
    auto it = std::find_if(n->kept_volumes.begin(), n->kept_volumes.end(),
                           [&](const KeptVolume& x) { return same_volume(x, k); });
    if (it != n->kept_volumes.end()) n->kept_volumes.erase(it);
  }

  void put_into(Batch& b) {
    for (auto& [name, n] : m_nodes) b.put_nodes.push_back(std::move(n));
    m_nodes.clear();
    if (m_claims) b.put_settings[keys::k_kept_claims_setting] = nlohmann::json(m_claims->kept_volumes);
    m_claims.reset();
  }

 private:
  const ClusterState& m_state;
  std::map<std::string, Node> m_nodes;
  std::optional<Node> m_claims;
};

// Removes `i`, beyond the `want` replicas of its role. Its volumes stay on their nodes as
// kept volumes unless `delete_volumes`; either way they are listed in `kept` or `deleted`
// and named in the ScaledDown event, so the timeline says where the data is (or that it
// is gone).
void remove_instance(const Instance& i, int want, bool delete_volumes, NodeEdits& nodes, Batch& b,
                     std::vector<ScaleVolume>& kept, std::vector<ScaleVolume>& deleted) {
  b.delete_instances.push_back(i.key());
  std::vector<std::string> names;
  for (const auto& v : i.volumes) {
    ScaleVolume sv{i.key(), v.volume, v.node, v.group, v.size_bytes, false};
    if (delete_volumes) {
      names.push_back(fmt::format("{} {}", v.volume, volume_place(v.node, v.group)));
      deleted.push_back(std::move(sv));
      continue;
    }
    Node* n = nodes.edit(v.node);
    if (!n) continue;
    n->kept_volumes.push_back(KeptVolume{i.tenant, i.app, i.role, i.ordinal, v.volume, v.group, v.size_bytes, v.iops});
    names.push_back(fmt::format("{} {}", v.volume, volume_place(v.node, v.group)));
    kept.push_back(std::move(sv));
  }
  std::string note;
  if (!names.empty())
    note = delete_volumes ? fmt::format("; its volumes are deleted (--delete-volumes): {}", fmt::join(names, ", "))
                          : fmt::format("; its volumes are kept for a scale up: {}", fmt::join(names, ", "));
  b.instance_event(i, "ScaledDown", fmt::format("removed: role {} scaled to {} replica(s){}", i.role, want, note));
}

// Kept volumes by role, built only when some node holds one: the controller runs on
// every pass of every reconcile, and most clusters keep none.
using KeptByRole = std::unordered_map<RoleKey, std::vector<std::pair<const Node*, const KeptVolume*>>, RoleKeyHash>;

KeptByRole kept_by_role(const ClusterState& state, const Node& claims) {
  KeptByRole out;
  for (const auto& n : state.snapshot.nodes)
    for (const auto& k : n.kept_volumes) out[RoleKey{k.tenant, k.app, k.role}].push_back({&n, &k});
  for (const auto& k : claims.kept_volumes) out[RoleKey{k.tenant, k.app, k.role}].push_back({&claims, &k});
  return out;
}

// Kept claim volumes as the kept volumes of a node named "" (see NodeEdits::edit).
Node claims_holder(const ClusterState& state) {
  Node n;
  n.name.clear();
  n.kept_volumes = state.snapshot.kept_claims;
  return n;
}

// The kept volumes of `role` that its instance `ordinal` gets back, from `candidates`
// (the role's kept volumes in node order): those the role still has, one per name.
std::vector<std::pair<const Node*, const KeptVolume*>> pick_reattach(
    const std::vector<std::pair<const Node*, const KeptVolume*>>& candidates, const Role& role, int ordinal) {
  std::vector<std::pair<const Node*, const KeptVolume*>> out;
  std::set<std::string_view> names;
  for (const auto& c : candidates) {
    const KeptVolume& k = *c.second;
    if (k.ordinal != ordinal || !role_has_volume(role, k.volume) || !names.insert(k.volume).second) continue;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::vector<KeptVolume> volumes_to_reattach(const ClusterState& state, const AppRecord& app, const Role& role,
                                            int ordinal) {
  std::vector<std::pair<const Node*, const KeptVolume*>> candidates;
  for (const auto& n : state.snapshot.nodes)
    for (const auto& k : n.kept_volumes)
      if (of_role(k, app, role)) candidates.push_back({&n, &k});
  Node claims = claims_holder(state);
  for (const auto& k : claims.kept_volumes)
    if (of_role(k, app, role)) candidates.push_back({&claims, &k});
  std::vector<KeptVolume> out;
  for (const auto& [node, k] : pick_reattach(candidates, role, ordinal)) out.push_back(*k);
  return out;
}

ControllerResult reconcile_replicas(const ClusterState& state, const ControllerContext&) {
  ControllerResult out;
  Batch& b = out.batch;
  // Instances by (tenant, app, role), in one pass without building strings: the
  // controller runs on every pass of every reconcile, so it stays linear and cheap.
  std::unordered_map<RoleKey, std::vector<const Instance*>, RoleKeyHash> by_role;
  by_role.reserve(state.snapshot.roles.size());
  for (const auto& i : state.snapshot.instances) by_role[RoleKey{i.tenant, i.app, i.role}].push_back(&i);
  bool any_kept = !state.snapshot.kept_claims.empty() ||
                  std::any_of(state.snapshot.nodes.begin(), state.snapshot.nodes.end(),
                              [](const Node& n) { return !n.kept_volumes.empty(); });
  Node claims = claims_holder(state);
  KeptByRole kept = any_kept ? kept_by_role(state, claims) : KeptByRole{};
  NodeEdits nodes(state);
  std::vector<ScaleVolume> kept_now, none;

  std::set<std::string> shrunk;  // Apps that lost instances: their status may change.
  for (const auto& [id, app] : state.apps) {
    for (const auto& role : app.workload.roles) {
      int want = std::max(0, desired_replicas(app, role));
      RoleKey key{app.tenant, app.name, role.name};
      auto it = by_role.find(key);
      // The role's own list (each role is visited once), not a copy of it.
      std::vector<const Instance*> no_instances;
      std::vector<const Instance*>& have = it == by_role.end() ? no_instances : it->second;
      // Which ordinals below the target exist: flags, not a set node per instance.
      std::vector<bool> present(static_cast<size_t>(want), false);
      bool beyond = false;  // An ordinal at or past the target: the usual role has none.
      for (const Instance* i : have) {
        if (i->ordinal >= 0 && i->ordinal < want) present[static_cast<size_t>(i->ordinal)] = true;
        beyond |= i->ordinal >= want;
      }
      // Scale down: highest ordinals first. `gaia scale` removes them itself (it decides
      // about their volumes); this catches any other way the count dropped, and keeps
      // the volumes, since no one asked for the data to go.
      if (beyond) {
        std::sort(have.begin(), have.end(), [](const Instance* x, const Instance* y) { return x->ordinal > y->ordinal; });
        for (const Instance* i : have) {
          if (i->ordinal < want) break;
          remove_instance(*i, want, false, nodes, b, kept_now, none);
          shrunk.insert(id);
        }
      }
      // Scale up: the missing ordinals below the target, lowest first, each with the
      // volumes an earlier scale down kept for it.
      auto role_kept = kept.find(key);
      for (int k = 0; k < want; ++k) {
        if (present[static_cast<size_t>(k)]) continue;
        Instance i = new_instance(app.tenant, app.name, app.version, role, k);
        i.hash = app.workload.hash;
        i.pending_reason = fmt::format("created by scale to {} replica(s)", want);
        std::vector<std::string> names;
        if (role_kept != kept.end())
          for (const auto& [node, v] : pick_reattach(role_kept->second, role, k)) {
            i.volumes.push_back(VolumeBinding{v->volume, node->name, v->group, v->size_bytes, v->iops});
            nodes.drop(node->name, *v);
            names.push_back(fmt::format("{} {}", v->volume, volume_place(node->name, v->group)));
          }
        std::string note = names.empty() ? "" : fmt::format("; its kept volumes are reattached: {}", fmt::join(names, ", "));
        b.instance_event(i, "ScaledUp", fmt::format("created: role {} scaled to {} replica(s){}", role.name, want, note));
        b.put_instances.push_back(std::move(i));
      }
    }
  }
  nodes.put_into(b);
  if (shrunk.empty()) return out;
  // The app's status, judged as the scheduler judges it, on the state this batch leaves:
  // a scale down that removes the last pending instance makes it ready.
  ClusterState after = apply_batch(state, b);
  for (const auto& id : shrunk) {
    const AppRecord& app = state.apps.at(id);
    sync_app_status(after, app.tenant, app.name, b);
  }
  return out;
}

ScalePlan plan_scale(const ClusterState& state, const AppRecord& app, const Role& role, int to, bool delete_volumes) {
  ScalePlan p;
  p.from = desired_replicas(app, role);
  p.to = to;
  Batch& b = p.batch;
  NodeEdits nodes(state);

  std::vector<const Instance*> have;
  std::set<int> ordinals;
  for (const auto& i : state.snapshot.instances)
    if (i.tenant == app.tenant && i.app == app.name && i.role == role.name) {
      have.push_back(&i);
      ordinals.insert(i.ordinal);
    }
  std::sort(have.begin(), have.end(), [](const Instance* x, const Instance* y) { return x->ordinal > y->ordinal; });
  for (const Instance* i : have) {
    if (i->ordinal < to) break;
    remove_instance(*i, to, delete_volumes, nodes, b, p.kept, p.deleted);
    p.removed.push_back(i->key());
  }

  // What earlier scale downs kept: given back to an ordinal the scale (re)creates, else
  // deleted when asked for, else kept. The same rule the replicas controller applies
  // when it creates the instances, on the same order (nodes as the state lists them).
  std::set<std::pair<int, std::string>> given;
  std::vector<const Node*> holders;
  for (const auto& n : state.snapshot.nodes) holders.push_back(&n);
  Node claims = claims_holder(state);
  holders.push_back(&claims);
  for (const Node* holder : holders)
    for (const auto& k : holder->kept_volumes) {
      const Node& n = *holder;
      if (!of_role(k, app, role)) continue;
      ScaleVolume sv{instance_key(k), k.volume, n.name, k.group, k.size_bytes, true};
      bool back = k.ordinal < to && !ordinals.count(k.ordinal) && role_has_volume(role, k.volume) &&
                  given.insert({k.ordinal, k.volume}).second;
      if (back) {
        p.reattached.push_back(std::move(sv));
      } else if (!delete_volumes) {
        p.kept.push_back(std::move(sv));
      } else {
        nodes.drop(n.name, k);
        auto& e = b.event("VolumeDeleted",
                          fmt::format("kept volume {} of {} deleted (--delete-volumes): {} freed in {} {}", k.volume,
                                      sv.instance, size_text(k.size_bytes),
                                      n.name.empty() ? "claim class" : "volume group", k.group));
        e.tenant = k.tenant;
        e.app = k.app;
        e.role = k.role;
        e.instance = sv.instance;
        e.node = n.name;
        p.deleted.push_back(std::move(sv));
      }
    }
  nodes.put_into(b);
  if (to == p.from && b.empty()) return p;

  if (to != p.from) {
    AppRecord changed = app;
    changed.scale[role.name] = to;
    changed.op.clear();  // The commit stamps the operation making this change.
    b.put_apps.push_back(std::move(changed));
    std::string volumes;
    if (!p.kept.empty() || !p.deleted.empty() || !p.reattached.empty())
      volumes = fmt::format("; volumes: {} kept, {} deleted, {} reattached", p.kept.size(), p.deleted.size(),
                            p.reattached.size());
    auto& e = b.event("Scaled", fmt::format("role {}: {} -> {} replica(s){}", role.name, p.from, to, volumes));
    e.tenant = app.tenant;
    e.app = app.name;
    e.role = role.name;
    // The Scaled event before the removals it causes, as the timeline reads best.
    std::rotate(b.events.begin(), b.events.end() - 1, b.events.end());
  }
  // Removing the last pending instance can make the app ready.
  if (!p.removed.empty()) sync_app_status(apply_batch(state, b), app.tenant, app.name, b);
  return p;
}

}  // namespace gaia
