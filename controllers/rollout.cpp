#include "controllers/rollout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "controllers/replicas.hpp"
#include "controllers/role_key.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {

bool is_running(const Instance& i) { return serving(i); }

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

}  // namespace

bool instance_outdated(const Instance& i, const AppRecord& app) {
  // An app without a hash (built by hand in tests and tools) has nothing to roll to.
  return !app.workload.hash.empty() && i.hash != app.workload.hash;
}

std::vector<RolloutStep> plan_rollout(const ClusterState& state) {
  // Instances by "tenant/app/role" in one pass: the controller runs on every pass of
  // every reconcile, so it stays linear in the number of instances.
  std::unordered_map<RoleKey, std::vector<const Instance*>, RoleKeyHash> by_role;
  by_role.reserve(state.snapshot.roles.size());
  for (const auto& i : state.snapshot.instances) by_role[RoleKey{i.tenant, i.app, i.role}].push_back(&i);
  std::vector<RolloutStep> steps;
  for (const auto& [id, app] : state.apps) {
    if (app.workload.hash.empty()) continue;
    for (const auto& role : app.workload.roles) {
      auto it = by_role.find(RoleKey{app.tenant, app.name, role.name});
      if (it == by_role.end()) continue;
      int want = std::max(0, desired_replicas(app, role));
      std::vector<const Instance*> outdated_running, outdated_idle;
      size_t running = 0, in_flight = 0;
      for (const Instance* i : it->second) {
        if (i->ordinal >= want) continue;  // The replicas controller removes these.
        bool old = instance_outdated(*i, app);
        if (is_running(*i)) ++running;
        if (old) (is_running(*i) ? outdated_running : outdated_idle).push_back(i);
        else if (!is_running(*i)) ++in_flight;
      }
      if (outdated_running.empty() && outdated_idle.empty()) continue;
      RolloutStep step;
      step.tenant = app.tenant;
      step.app = app.name;
      step.role = role.name;
      step.outdated = outdated_running.size() + outdated_idle.size();
      step.running = running;
      step.min_available = role.min_available;
      // Outdated instances that serve nothing are replaced whatever else is going on.
      for (const Instance* i : outdated_idle) step.replace.push_back(i->key());
      if (!outdated_running.empty()) {
        if (in_flight > 0) {
          step.waiting = fmt::format("waiting for {} instance(s) of the new workload to run", in_flight);
        } else {
          long spare = static_cast<long>(running) - role.min_available;
          size_t batch = spare > 0 ? static_cast<size_t>(spare) : 0;
          // With no spare instance, only a role that cannot get one (nothing else is on
          // its way to running) goes one instance at a time; otherwise the idle ones
          // replaced above run first and make room.
          if (batch == 0 && outdated_idle.empty()) batch = 1;
          if (batch == 0)
            step.waiting = fmt::format("{} of {} running, min_available {}: the replaced idle instances run first",
                                       running, want, role.min_available);
          std::sort(outdated_running.begin(), outdated_running.end(),
                    [](const Instance* a, const Instance* b) { return a->ordinal > b->ordinal; });
          for (size_t k = 0; k < batch && k < outdated_running.size(); ++k)
            step.replace.push_back(outdated_running[k]->key());
        }
      }
      steps.push_back(std::move(step));
    }
  }
  return steps;
}

bool roles_unchanged(const AppRecord& before, const AppRecord& after) {
  if (before.version != after.version) return false;
  const auto roles = nlohmann::json::json_pointer("/spec/roles");
  if (!before.document.is_object() || !after.document.is_object() || !before.document.contains(roles) ||
      !after.document.contains(roles))
    return false;
  return before.document.at(roles) == after.document.at(roles);
}

Instance replacement_instance(const AppRecord& app, const Role& role, const Instance& old) {
  Instance i = new_instance(app.tenant, app.name, app.version, role, old.ordinal);
  i.hash = app.workload.hash;
  // The same key on perhaps the same node: its next binding must name a copy the old
  // one is not, or a backend would take the old process for the new one.
  i.generation = old.generation;
  std::set<std::string> volume_names;
  for (const auto& v : role.volumes) volume_names.insert(v.name);
  for (const auto& b : old.volumes)
    if (volume_names.count(b.volume)) i.volumes.push_back(b);
  i.pending_reason = fmt::format("replacing an instance of workload {}", short_hash(old.hash.empty() ? "?" : old.hash));
  return i;
}

ControllerResult rollout_controller(const ClusterState& state, const ControllerContext&) {
  ControllerResult out;
  auto steps = plan_rollout(state);
  if (steps.empty()) return out;
  std::unordered_map<std::string, const Instance*> by_key;
  for (const auto& i : state.snapshot.instances) by_key[i.key()] = &i;
  for (const auto& step : steps) {
    if (step.replace.empty()) continue;
    const AppRecord* app = state.find_app(step.tenant, step.app);
    const Role* role = nullptr;
    for (const auto& r : app->workload.roles)
      if (r.name == step.role) role = &r;
    for (const auto& key : step.replace) {
      const Instance& old = *by_key.at(key);
      Instance fresh = replacement_instance(*app, *role, old);
      out.batch.put_instances.push_back(fresh);
      auto& e = out.batch.event(
          "Replaced", fmt::format("{} instance of workload {} replaced by workload {} (batch of {}; {} of {} running, "
                                  "min_available {})",
                                  instance_state_name(old.state), short_hash(old.hash.empty() ? "?" : old.hash),
                                  short_hash(app->workload.hash), step.replace.size(), step.running,
                                  desired_replicas(*app, *role), step.min_available));
      e.tenant = old.tenant;
      e.app = old.app;
      e.role = old.role;
      e.instance = key;
      e.node = old.node;
    }
  }
  return out;
}

}  // namespace gaia
