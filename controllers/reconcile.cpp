#include "controllers/reconcile.hpp"

#include <algorithm>
#include <chrono>
#include <optional>

#include "controllers/migration.hpp"
#include "controllers/node_health.hpp"
#include "controllers/placement.hpp"
#include "controllers/replicas.hpp"
#include "controllers/rollout.hpp"
#include "controllers/rebalance.hpp"
#include "controllers/reclamation.hpp"
#include "controllers/restart.hpp"
#include "controllers/runtime_preemption.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {

// Places pending instances whose dependencies are ready: the scheduler as a controller.
ControllerResult schedule_pending(const ClusterState& state, const ControllerContext&) {
  // Nothing pending, nothing to place: the common case on a settled cluster, where the
  // scheduler's working copy of the state would cost more than every other controller.
  if (std::none_of(state.snapshot.instances.begin(), state.snapshot.instances.end(),
                   [](const Instance& i) { return i.state == InstanceState::Pending; }))
    return {};
  auto out = reschedule_pending(state);
  return ControllerResult{std::move(out.batch), 0};
}

}  // namespace

const std::vector<NamedController>& default_controllers() {
  static const std::vector<NamedController> controllers = {
      {"node_health", &reconcile_node_health},
      {"replicas", &reconcile_replicas},
      {"rollout", &rollout_controller},
      {"placement", &placement_controller},
      {"migration", &reconcile_migration},
      {"restart", &restart_failed},
      {"runtime_preemption", &preempt_at_runtime},
      {"reclamation", &reclaim_reservations},
      {"scheduler", &schedule_pending},
      // Off unless `gaia controller options --rebalance-budget N`; last, so it sees the
      // cluster the others settled.
      {"rebalance", &rebalance_controller},
  };
  return controllers;
}

namespace {

// The controllers run on `*base` until one changes something; from then on on `owned`,
// the state with every batch so far applied (a copy of `*base` made at that moment, or
// the caller's own state moved in). Returns the outcome with `after` empty; `owned`
// ends as the state after, if it was needed.
ReconcileOutcome reconcile_on(const ClusterState* base, std::optional<ClusterState>& owned,
                              const ControllerContext& ctx, const std::vector<NamedController>& controllers,
                              int max_passes) {
  ReconcileOutcome out;
  auto current = [&]() -> const ClusterState& { return owned ? *owned : *base; };
  std::vector<bool> active(controllers.size(), false);
  out.converged = false;
  for (int pass = 0; pass < max_passes; ++pass) {
    ++out.passes;
    bool changed = false;
    int64_t wake = 0;
    for (size_t c = 0; c < controllers.size(); ++c) {
      auto r = controllers[c].fn(current(), ctx);
      if (r.wake_at_ms > 0) wake = wake == 0 ? r.wake_at_ms : std::min(wake, r.wake_at_ms);
      if (r.batch.empty()) continue;
      changed = true;
      active[c] = true;
      auto events = r.batch.events.size();
      owned = apply_batch(owned ? std::move(*owned) : ClusterState(*base), r.batch);
      owned->seq += static_cast<int64_t>(events);
      merge_batch(out.batch, std::move(r.batch));
    }
    out.wake_at_ms = wake;
    if (!changed) {
      out.converged = true;
      break;
    }
  }
  for (size_t c = 0; c < controllers.size(); ++c)
    if (active[c]) out.active.emplace_back(controllers[c].name);
  return out;
}

}  // namespace

ReconcileOutcome reconcile(ClusterState state, const ControllerContext& ctx,
                           const std::vector<NamedController>& controllers, int max_passes) {
  std::optional<ClusterState> owned(std::move(state));
  ReconcileOutcome out = reconcile_on(nullptr, owned, ctx, controllers, max_passes);
  out.after = std::move(*owned);
  return out;
}

ReconcileOutcome reconcile_batch(const ClusterState& state, const ControllerContext& ctx,
                                 const std::vector<NamedController>& controllers, int max_passes) {
  std::optional<ClusterState> owned;
  return reconcile_on(&state, owned, ctx, controllers, max_passes);
}


int64_t to_millis(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

}  // namespace gaia
