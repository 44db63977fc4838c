#pragma once
// Running the controllers from the CLI. On the embedded default every mutating command
// runs them inline once its own change is committed (run_controllers), `--wait` follows
// them until the cluster converges (follow_controllers), and `gaia controller run`
// runs them continuously as the store's one leader.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/context.hpp"
#include "controllers/reconcile.hpp"

namespace gaia::cli {

struct ControllerRun {
  ClusterState state;          // The state after the run (committed).
  ReconcileOutcome outcome;    // What the controllers decided (batch already committed).
  // Bound instances the backend was not asked to start yet, and why.
  std::vector<std::pair<std::string, std::string>> held;
};

// One cycle of observe -> reconcile -> commit -> actuate against the session's backend
// (ops/cycle.hpp); each commit is atomic and re-decided on a conflicting write.
// The run's events carry the session's operation id, so `gaia events --op` shows what a
// command caused, controllers included.
Result<ControllerRun> run_controllers(Session& s, const ControllerOptions& options = {});

// One line per event of `batch` ("  Scheduled  0.web.web.default  placed on n3 ...").
void print_controller_events(const Globals& g, const Batch& batch);

// The event lines print_controller_events prints, without printing them.
std::vector<std::string> controller_event_lines(const Globals& g, const Batch& batch);

struct FollowOptions {
  std::chrono::milliseconds timeout{300'000};
  bool print = true;  // Progress on stdout: events, and a status line (cli/progress.hpp).
  ControllerOptions controller;
  // The status line while waiting; default: how many instances of the store run and
  // why the others wait.
  std::function<std::string(const ClusterState&)> status;
};

struct FollowResult {
  bool done = false;  // `done(state)` held before the timeout.
  ClusterState state;
  int runs = 0;
};

// Runs the controllers until `done(state)` holds or the timeout passes, sleeping until
// the earliest wake-up a controller asked for (or a short poll while another process
// may still change things), and prints what they did when `print` is set.
Result<FollowResult> follow_controllers(const Globals& g, Session& s, const std::function<bool(const ClusterState&)>& done,
                                        const FollowOptions& options);

}  // namespace gaia::cli
