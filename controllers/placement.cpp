#include "controllers/lifecycle.hpp"
#include "controllers/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "controllers/context.hpp"
#include "controllers/filters.hpp"

namespace gaia {

namespace {

bool occupies(const Instance& i) { return occupies_node(i); }

// The first required-placement rule `node` breaks for `role` (and the tenant's pool), or
// "" when it satisfies them all. Same rules and wording as the scheduler's filters.
std::string broken_rule(const Role& role, const Tenant* tenant, const Node& node) {
  // `what` names the rule, formatted only for a node that breaks it: this runs for every
  // instance on every reconcile, and nearly all of them pass.
  auto check = [&](const std::map<std::string, std::string>& want, auto what) -> std::string {
    for (const auto& [k, v] : want) {
      auto it = node.labels.find(k);
      if (it != node.labels.end() && it->second == v) continue;
      return it == node.labels.end() ? fmt::format("{} needs label {}={}, node has no {}", what(), k, v, k)
                                     : fmt::format("{} needs label {}={}, node has {}={}", what(), k, v, k, it->second);
    }
    return "";
  };
  if (tenant)
    if (auto why = check(tenant->pool_selector, [&] { return fmt::format("tenant {} pool", tenant->name); });
        !why.empty())
      return why;
  if (auto why = check(role.node_selector, [] { return std::string("node_selector"); }); !why.empty()) return why;
  for (const auto& t : role.required_affinity)
    if (t.target == AffinityTerm::Target::Node && !sched::labels_match(t.match, node.labels))
      return fmt::format("required node affinity {} is not satisfied", sched::describe_requirements(t.match));
  return "";
}

}  // namespace

std::vector<PlacementViolation> placement_violations(const ClusterState& state) {
  std::unordered_map<std::string_view, const Node*> nodes;
  nodes.reserve(state.snapshot.nodes.size());
  for (const auto& n : state.snapshot.nodes) nodes[n.name] = &n;
  std::unordered_map<std::string_view, const Tenant*> tenants;
  for (const auto& t : state.snapshot.tenants) tenants[t.name] = &t;
  // Roles by views of their own keys, looked up with one reused buffer: this runs over
  // every instance on every reconcile, where a new string and a walk of the sorted map
  // per instance cost more than the check itself. Each with whether it has a rule a
  // node can break: most have none, and their instances need no look at their node.
  struct RoleRules {
    const Role* role;
    bool any;
  };
  std::unordered_map<std::string_view, RoleRules> roles;
  roles.reserve(state.snapshot.roles.size());
  for (const auto& [id, r] : state.snapshot.roles) {
    bool any = !r.node_selector.empty() ||
               std::any_of(r.required_affinity.begin(), r.required_affinity.end(),
                           [](const AffinityTerm& t) { return t.target == AffinityTerm::Target::Node; });
    roles.emplace(id, RoleRules{&r, any});
  }
  const bool any_pool = std::any_of(state.snapshot.tenants.begin(), state.snapshot.tenants.end(),
                                    [](const Tenant& t) { return !t.pool_selector.empty(); });
  std::string role_id;
  std::vector<PlacementViolation> out;
  for (const auto& i : state.snapshot.instances) {
    if (!occupies(i)) continue;
    role_id.assign(i.tenant).append("/").append(i.app).append("/").append(i.role);
    auto role = roles.find(role_id);
    if (role == roles.end()) continue;
    // Nothing the node could break: no rule of the role or of any tenant's pool, and no
    // claim volume (which needs a node that can attach its class).
    if (!role->second.any && !any_pool &&
        std::none_of(i.volumes.begin(), i.volumes.end(), [](const VolumeBinding& v) { return claim_binding(v); }))
      continue;
    auto n = nodes.find(i.node);
    if (n == nodes.end()) continue;  // A removed node is the migration controller's business.
    auto t = tenants.find(i.tenant);
    std::string why = broken_rule(*role->second.role, t == tenants.end() ? nullptr : t->second, *n->second);
    // A claim volume needs a node that can attach its class (its selector, e.g. a zone).
    for (const auto& v : i.volumes) {
      if (!why.empty() || !claim_binding(v)) continue;
      const StorageClass* c = find_storage_class(state.snapshot, v.group);
      if (c && c->kind == StorageKind::Claim && !can_attach_class(*n->second, *c))
        why = fmt::format("volume {} of class {} cannot be attached there", v.volume, v.group);
    }
    if (why.empty()) continue;
    bool pinned = false;
    for (const auto& v : i.volumes)
      if (v.node == i.node) pinned = true;
    out.push_back(PlacementViolation{i.key(), i.node, fmt::format("node {} no longer fits: {}", i.node, why), pinned});
  }
  return out;
}

ControllerResult placement_controller(const ClusterState& state, const ControllerContext&) {
  ControllerResult out;
  auto violations = placement_violations(state);
  if (violations.empty()) return out;
  std::unordered_map<std::string, const Instance*> by_key;
  for (const auto& i : state.snapshot.instances) by_key[i.key()] = &i;
  for (const auto& v : violations) {
    if (v.pinned) continue;
    Instance moved = *by_key.at(v.instance);
    evict_instance(moved, v.reason);
    out.batch.put_instances.push_back(moved);
    auto& e = out.batch.event("Displaced", fmt::format("moved off {}: {}", v.node, v.reason), "Warning");
    e.tenant = moved.tenant;
    e.app = moved.app;
    e.role = moved.role;
    e.instance = v.instance;
    e.node = v.node;
  }
  return out;
}

}  // namespace gaia
