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
  ReconcileOutcome total;
  total.after = s;
  total.converged = false;
  std::set<std::string> active;
  for (int round = 0; round < 32; ++round) {
    ++total.passes;
    auto r = reconcile(total.after, ctx, controllers);
    for (const auto& a : r.active) active.insert(a);
    total.after = std::move(r.after);
    merge_batch(total.batch, r.batch);
    Observation obs = sim_observation(total.after, model, ctx.now_ms);
    int64_t wake = r.wake_at_ms == 0 ? obs.wake_at_ms : obs.wake_at_ms == 0 ? r.wake_at_ms : std::min(r.wake_at_ms, obs.wake_at_ms);
    total.wake_at_ms = wake;
    Batch b = observe_instances(total.after, obs, ctx.now_ms);
    if (r.batch.empty() && b.empty()) {
      total.converged = true;
      break;
    }
    total.after = apply_batch(std::move(total.after), b);
    total.after.seq += static_cast<int64_t>(b.events.size());
    merge_batch(total.batch, std::move(b));
  }
  total.active.assign(active.begin(), active.end());
  return total;
}

// `s` after the backend started every bound instance: they run.
inline ClusterState started(const ClusterState& s, int64_t now_ms = 1'700'000'000'000) {
  Observation obs = sim_observation(s, SimUsageModel{}, now_ms);
  ClusterState out = apply_batch(s, observe_instances(s, obs, now_ms));
  return out;
}

}  // namespace gaia::test
