#pragma once
// The rollout controller (docs/cli.md#rolling-updates): when an app's workload changes
// (a submit of a changed spec, a config or label change that re-rendered it), its
// instances are replaced in batches rather than all at once.
//
// An instance is outdated when its hash differs from its app's workload hash. Instance
// names are ordinals ("2.web.shop.default"), so a replacement takes the old instance's
// name: the old one stops and a pending new one takes its place (a stateful one keeps its
// volumes, so it returns to its data), and the scheduler places it. Per role:
//   - outdated instances that are not running are replaced at once (nobody is served by
//     them);
//   - running ones go in batches of running - min_available, highest ordinal first, so
//     at least min_available instances of the role keep running throughout. When no
//     instance is spare and none is on its way to running (min_available not below the
//     replica count), one goes at a time: there are no extra instances to surge with,
//     and a rollout must still finish;
//   - the next batch starts only when every instance already on the new workload runs,
//     so a broken new version stops the rollout after one batch.
// Instances beyond the desired replica count are left to the replicas controller.

#include <string>
#include <vector>

#include "controllers/reconcile.hpp"
#include "lib/state.hpp"

namespace gaia {

struct RolloutStep {
  std::string tenant, app, role;
  std::vector<std::string> replace;  // Instance keys replaced now (empty while waiting).
  size_t outdated = 0;               // Outdated instances before this step.
  size_t running = 0;                // Running instances of the role before this step.
  int min_available = 0;
  std::string waiting;  // Why no batch starts now ("" when one does).
};

// What the rollout controller would do on `state`: one step per role with outdated
// instances, in app and role order.
std::vector<RolloutStep> plan_rollout(const ClusterState& state);

// Whether an instance of `app` runs an older render than the app's current workload.
bool instance_outdated(const Instance& i, const AppRecord& app);

// The controller: replaces the instances plan_rollout chose (event Replaced for each).
ControllerResult rollout_controller(const ClusterState& state, const ControllerContext& ctx);

// Whether `after` renders the same roles as `before` (same version, the roles of the
// gaia/v1 documents equal): then its instances already run what `after` describes and
// only take its hash, without a restart. False when either has no document.
bool roles_unchanged(const AppRecord& before, const AppRecord& after);

// A pending instance of the app's current workload taking `old`'s place: same name,
// the new role's spec, the old volumes that the new role still has.
Instance replacement_instance(const AppRecord& app, const Role& role, const Instance& old);

}  // namespace gaia
