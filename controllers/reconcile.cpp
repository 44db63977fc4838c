#include "controllers/reconcile.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
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
#include "lib/threads.hpp"

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

unsigned threads_for(const ClusterState& st, const ControllerContext& ctx) {
  if (ctx.threads > 0) return ctx.threads;
  if (st.snapshot.instances.size() < k_parallel_instances) return 1;
  return worker_threads();
}

// Runs controllers[first..] on `st`, on `threads` threads taking the next controller in
// turn, and returns their results in order. Only the results up to and including the
// first that changes something are valid (the later ones had to see that change), so
// once one is found no thread starts a controller after it. On one thread this is
// running them in turn, stopping after the first change.
std::vector<std::optional<ControllerResult>> run_from(const ClusterState& st, const ControllerContext& ctx,
                                                      const std::vector<NamedController>& controllers, size_t first,
                                                      unsigned threads) {
  const size_t n = controllers.size() - first;
  std::vector<std::optional<ControllerResult>> out(n);
  // A controller that threw on a state it was run on ahead of a change is not an error of
  // the pass (one thread would have run it on the changed state): kept by position, and
  // rethrown only when it is at or before the first change.
  std::vector<std::exception_ptr> thrown(n);
  std::atomic<size_t> next{0};
  std::atomic<size_t> first_change{n};
  // Controller k changed something (or threw): none after it is started any more.
  auto stop_after = [&](size_t k) {
    size_t seen = first_change.load();
    while (k < seen && !first_change.compare_exchange_weak(seen, k)) {
    }
  };
  auto work = [&] {
    for (size_t k = next.fetch_add(1); k < n; k = next.fetch_add(1)) {
      if (k > first_change.load()) continue;
      try {
        out[k] = controllers[first + k].fn(st, ctx);
      } catch (...) {
        thrown[k] = std::current_exception();
        stop_after(k);
        continue;
      }
      if (!out[k]->batch.empty()) stop_after(k);
    }
  };
  std::vector<std::future<void>> helpers;
  for (unsigned t = 1; t < threads && t < n; ++t) helpers.push_back(std::async(std::launch::async, work));
  work();
  for (auto& h : helpers) h.get();
  // A controller that threw (a bug) throws here, on the caller's thread.
  for (size_t k = 0; k <= std::min(first_change.load(), n - 1); ++k)
    if (thrown[k]) std::rethrow_exception(thrown[k]);
  return out;
}

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
  // Once a controller changed something, the rest of the call runs on one thread: the
  // passes of a cluster that is changing tend to change more, and each change leaves
  // the other threads' work on the state before it wasted, and waited for.
  unsigned threads = threads_for(current(), ctx);
  out.converged = false;
  for (int pass = 0; pass < max_passes; ++pass) {
    ++out.passes;
    bool changed = false;
    int64_t wake = 0;
    size_t c = 0;
    while (c < controllers.size()) {
      auto results = run_from(current(), ctx, controllers, c, threads);
      size_t next = controllers.size();
      for (size_t k = 0; k < results.size(); ++k) {
        auto& r = *results[k];  // Set up to the first change, which ends this loop.
        if (r.wake_at_ms > 0) wake = wake == 0 ? r.wake_at_ms : std::min(wake, r.wake_at_ms);
        if (r.batch.empty()) continue;
        changed = true;
        active[c + k] = true;
        auto events = r.batch.events.size();
        owned = apply_batch(owned ? std::move(*owned) : ClusterState(*base), r.batch);
        owned->seq += static_cast<int64_t>(events);
        merge_batch(out.batch, std::move(r.batch));
        next = c + k + 1;
        threads = 1;
        break;
      }
      c = next;
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
