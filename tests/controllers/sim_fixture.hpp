#pragma once
// A cluster that starts and stops copies at once, in memory, for the controller tests:
// what the sim backend and the runner (ops/cycle.hpp) do around the controllers, built
// from the same pure functions (controllers/lifecycle.hpp).

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "controllers/lifecycle.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"
#include "lib/sim_usage.hpp"

namespace gaia::test {

// What the sim backend reports for `s`: every bound or running instance has a running
// copy of its current generation (the sim starts at once), using what `model` says;
// Terminating ones are gone (the sim stops at once).
inline Observation sim_observation(const ClusterState& s, const SimUsageModel& model, int64_t now_ms) {
  Observation obs = healthy_observation(s, now_ms);
  for (auto& c : obs.copies)
    if (const Instance* i = s.find_instance(c.instance)) c.usage = model.usage_of(*i, now_ms);
  obs.wake_at_ms = model.next_change_ms(now_ms);
  return obs;
}

// The controllers and a cluster that starts and stops copies at once, until nothing
// changes: what a command on the embedded default does (ops/cycle.hpp), in memory.
inline ReconcileOutcome settle_sim(const ClusterState& s, const ControllerContext& ctx,
                                   const std::vector<NamedController>& controllers = default_controllers(),
                                   const SimUsageModel& model = {}) {
  return reconcile_with_backend_model(
      s, ctx, [&](const ClusterState& st, int64_t now) { return sim_observation(st, model, now); }, controllers);
}

// `s` after the backend started every bound instance: they run.
inline ClusterState started(const ClusterState& s, int64_t now_ms = 1'700'000'000'000) {
  Observation obs = sim_observation(s, SimUsageModel{}, now_ms);
  ClusterState out = apply_batch(s, observe_instances(s, obs, now_ms));
  return out;
}

// The state after `b` is committed and the backend started what it placed (the sim
// starts copies at once): what a command on the embedded default ends with.
inline ClusterState applied(const ClusterState& s, const Batch& b) { return started(apply_batch(s, b)); }

}  // namespace gaia::test
