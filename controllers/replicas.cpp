#include "controllers/replicas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "controllers/submit.hpp"

namespace gaia {

namespace {


struct RoleKey {
  std::string_view tenant, app, role;
  bool operator==(const RoleKey&) const = default;
};

struct RoleKeyHash {
  size_t operator()(const RoleKey& k) const {
    std::hash<std::string_view> h;
    return h(k.tenant) ^ (h(k.app) * 31) ^ (h(k.role) * 1000003);
  }
};

std::string volume_note(const Instance& i) {
  if (i.volumes.empty()) return "";
  std::vector<std::string> names;
  for (const auto& v : i.volumes) names.push_back(fmt::format("{} on {}", v.volume, v.node));
  return fmt::format("; its volumes are deleted with it ({})", fmt::join(names, ", "));
}

}  // namespace

int desired_replicas(const AppRecord& app, const Role& role) {
  auto it = app.scale.find(role.name);
  return it != app.scale.end() ? it->second : role.replicas;
}

ControllerResult reconcile_replicas(const ClusterState& state, const ControllerContext&) {
  ControllerResult out;
  Batch& b = out.batch;
  // Instances by (tenant, app, role), in one pass without building strings: the
  // controller runs on every pass of every reconcile, so it stays linear and cheap.
  std::unordered_map<RoleKey, std::vector<const Instance*>, RoleKeyHash> by_role;
  by_role.reserve(state.snapshot.roles.size());
  for (const auto& i : state.snapshot.instances) by_role[RoleKey{i.tenant, i.app, i.role}].push_back(&i);

  std::set<std::string> shrunk;  // Apps that lost instances: their status may change.
  for (const auto& [id, app] : state.apps) {
    for (const auto& role : app.workload.roles) {
      int want = std::max(0, desired_replicas(app, role));
      auto it = by_role.find(RoleKey{app.tenant, app.name, role.name});
      std::vector<const Instance*> have = it == by_role.end() ? std::vector<const Instance*>{} : it->second;
      std::set<int> ordinals;
      for (const Instance* i : have) ordinals.insert(i->ordinal);
      // Scale down: highest ordinals first.
      std::sort(have.begin(), have.end(), [](const Instance* x, const Instance* y) { return x->ordinal > y->ordinal; });
      for (const Instance* i : have) {
        if (i->ordinal < want) break;
        b.delete_instances.push_back(i->key());
        b.instance_event(*i, "ScaledDown",
                       fmt::format("removed: role {} scaled to {} replica(s){}", role.name, want, volume_note(*i)));
        shrunk.insert(id);
      }
      // Scale up: the missing ordinals below the target, lowest first.
      for (int k = 0; k < want; ++k) {
        if (ordinals.count(k)) continue;
        Instance i = new_instance(app.tenant, app.name, app.version, role, k);
        i.hash = app.workload.hash;
        i.pending_reason = fmt::format("created by scale to {} replica(s)", want);
        b.instance_event(i, "ScaledUp", fmt::format("created: role {} scaled to {} replica(s)", role.name, want));
        b.put_instances.push_back(std::move(i));
      }
    }
  }
  if (shrunk.empty()) return out;
  // The app's status, judged as the scheduler judges it, on the state this batch leaves:
  // a scale down that removes the last pending instance makes it ready.
  ClusterState after = apply_batch(state, b);
  for (const auto& id : shrunk) {
    const AppRecord& app = state.apps.at(id);
    std::string status = app_status(after, app.tenant, app.name);
    if (app.status == status) continue;
    bool ready = status == "Ready";
    AppRecord changed = app;
    changed.status = status;
    changed.op.clear();  // The commit stamps the operation making this change.
    b.put_apps.push_back(std::move(changed));
    if (status != "Ready" && status != "Pending") continue;  // Failed, Updating: their controllers say so.
    auto& e = b.event(ready ? "AppReady" : "AppPending",
                      ready ? "every instance is running" : "some instances are not running yet",
                      ready ? "Normal" : "Warning");
    e.tenant = app.tenant;
    e.app = app.name;
  }
  return out;
}

}  // namespace gaia
