#pragma once
// The controller loop (ARCHITECTURE.md, "The controllers and the backend"). Each
// controller is a pure function of the cluster state (and the time) returning the batch
// that moves the cluster toward its goal; running it again on the result returns an empty batch. reconcile() runs them in
// a fixed order on the state each previous one left, over and over until a whole pass
// changes nothing (one controller's action often enables another's), and returns
// everything as one batch to commit. Controllers never talk to a backend: what runs
// reaches them as instance states written from observations (controllers/lifecycle.hpp),
// and the runner (ops/runner.hpp) starts and stops copies after the commit.
//
// Controllers never sleep: one that waits for a time (a restart back-off, the end of a
// start-up period) says when it wants to run again in `wake_at_ms`, and the caller
// (`--wait`, `gaia controller run`) sleeps until then.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/state.hpp"

namespace gaia {

// Tunables of the run-time controllers (reclamation, runtime preemption, restarts).
struct ControllerOptions {
  // Reclamation (DESIGN.md section 6): a prod instance keeps its full request as its
  // reservation for `startup_ms` after it started, then its reservation decays to its
  // observed usage times (1 + margin); a usage spike above the reservation snaps it back
  // to the request.
  int64_t reclaim_startup_ms = 60'000;
  double reclaim_margin = 0.2;
  // Highest back-off between restarts, however many failures came before.
  int64_t max_backoff_ms = 300'000;
  // A node whose agent wrote a heartbeat once and then none for this long is marked
  // Down and its instances move, as for `gaia node fail` (docs/backends.md).
  int64_t heartbeat_timeout_ms = 30'000;
  // The rebalance controller (controllers/rebalance.hpp): at most this many moves per
  // period, 0 turning it off (the default: moving running instances costs their users
  // something); it stops early once the allocation of the nodes in use reaches the
  // target (0: no target).
  int rebalance_budget = 0;
  int64_t rebalance_period_ms = 600'000;
  double rebalance_target_pct = 0;
  // Not stored: whether this run is the controller loop's (`gaia controller run`, and
  // `gaia controller options` once it changed them). Only those run the periodic
  // rebalance controller, so a command about one thing (a scale, a label) never moves
  // instances it was not about.
  bool periodic = false;
};

struct ControllerContext {
  int64_t now_ms = 0;  // Wall-clock milliseconds since the epoch.
  ControllerOptions options;
  // Threads a pass runs its controllers on (see reconcile below). 0: the machine's
  // cores, up to 4, for a cluster of k_parallel_instances instances or more, else one.
  // The decisions are the same for any number.
  unsigned threads = 0;
};

// Below this many instances a pass is quicker than starting a thread.
inline constexpr size_t k_parallel_instances = 256;

struct ControllerResult {
  Batch batch;
  // Earliest time this controller wants to run again although nothing changed (0: only
  // when something changes).
  int64_t wake_at_ms = 0;
};

using ControllerFn = ControllerResult (*)(const ClusterState&, const ControllerContext&);

struct NamedController {
  std::string_view name;
  ControllerFn fn;
};

// The controllers in the order one pass runs them: desired replicas first, then what
// moves or restarts instances, then what reclaims and preempts at run time, and last
// the scheduler that places whatever is pending.
const std::vector<NamedController>& default_controllers();

struct ReconcileOutcome {
  Batch batch;          // Everything to commit, as one batch.
  ClusterState after;   // `state` with `batch` applied.
  int passes = 0;       // Passes run (the last one changed nothing when converged).
  bool converged = true;  // False when max_passes ran out while still changing.
  int64_t wake_at_ms = 0;  // Earliest wake-up any controller asked for (0: none).
  std::vector<std::string> active;  // Names of the controllers that changed something.
};

// Each controller sees the state with the batches of the controllers before it in the
// pass applied. On several threads, the controllers of a pass all start on the same
// state; the results of those after the first that changed something are dropped and
// they run again on the changed state, so the outcome is the one of running them one
// after the other, and a settled cluster (no controller changes anything, the usual
// pass) costs about its slowest controller instead of their sum.
//
// `state` is taken by value: a caller done with its state moves it in, and it becomes
// the outcome's `after` without a copy (a copy of a large cluster costs tens of ms).
ReconcileOutcome reconcile(ClusterState state, const ControllerContext& ctx,
                           const std::vector<NamedController>& controllers = default_controllers(),
                           int max_passes = 32);
// The same decisions on a state the caller keeps, for a caller that needs only the
// batch: the state is copied only once a controller changes something (on a settled
// cluster, never), and the outcome's `after` is left empty.
ReconcileOutcome reconcile_batch(const ClusterState& state, const ControllerContext& ctx,
                                 const std::vector<NamedController>& controllers = default_controllers(),
                                 int max_passes = 32);

// Milliseconds since the epoch of a clock reading, the unit every controller works in.
int64_t to_millis(std::chrono::system_clock::time_point t);

}  // namespace gaia
