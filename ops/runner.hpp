#pragma once
// Running the controllers against the store. On the embedded default every mutating
// command runs them once its own change is committed (run_controllers), `--wait`
// follows them until the cluster converges (follow_controllers), and `gaia controller
// run` runs them as the store's one leader. What a run did is returned, and what to
// show while following is the caller's: the CLI passes callbacks that print events and
// a progress line, a test passes none.

#include <chrono>
#include <functional>
#include <future>
#include <string>

#include "controllers/reconcile.hpp"
#include "lib/state.hpp"
#include "ops/workspace.hpp"

namespace gaia::ops {

struct ControllerRun {
  // The state after the run (committed), shared with the State's kept copy.
  std::shared_ptr<const ClusterState> state;
  ReconcileOutcome outcome;    // What the controllers decided (batch already committed).
  // Bound instances the backend was not asked to start yet, and why.
  std::vector<std::pair<std::string, std::string>> held;
  std::vector<BackendError> backend_errors;  // What the backend refused or could not do.
};

// One cycle of observe -> reconcile -> commit -> actuate against the workspace's backend
// (ops/cycle.hpp); each commit is atomic and re-decided on a conflicting write. The
// options stored with `gaia sim options` apply over `options`. The run's events
// carry the workspace's operation id, so `gaia events --op` shows what a command
// caused, controllers included.
Result<ControllerRun> run_controllers(const Workspace& ws, const ControllerOptions& options = {});

// A command's own change followed by the inline controller run: `decide` fills the
// batch from the freshly loaded state (called again after a conflicting write), the
// batch is committed, then the controllers run once.
struct Reconciled {
  // The inline run after the command's own commit (its state is the one after both).
  ControllerRun controllers;
};
Result<Reconciled> commit_and_reconcile(const Workspace& ws,
                                        const std::function<Result<void>(const ClusterState&, Batch&)>& decide);

// Reads the store's state and what the backend observes on threads of their own while
// the command does work that needs neither (loading specs, rendering): at 50,000
// instances each is a read of tens to hundreds of milliseconds, which a command would
// otherwise do one after the other. The State keeps what it read only when it follows
// changes (the CLI's sessions), so the command's own load then costs a refresh.
// Nothing is reported here: what fails is read again, and reported, where it is used.
// Destroying it waits for both reads (a failed render waits for them too).
class ReadAhead {
 public:
  // What to read: a plan observes no backend, and a command that loads the state at
  // once has only the backend's copies read beside it.
  enum class What { StateAndBackend, State, Backend };
  explicit ReadAhead(const Workspace& ws, What what = What::StateAndBackend);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

 private:
  std::future<void> m_done;
};

struct FollowOptions {
  std::chrono::milliseconds timeout{300'000};
  ControllerOptions controller;
  // Called after every run with what it did (events to show); may be empty.
  std::function<void(const Batch&)> on_run;
  // Called when a run left the cluster not yet done, before sleeping (a status line to
  // refresh); may be empty.
  std::function<void(const ClusterState&)> on_wait;
};

struct FollowResult {
  bool done = false;  // `done(state)` held before the timeout.
  ClusterState state;
  int runs = 0;
};

// Runs the controllers until `done(state)` holds or the timeout passes, sleeping until
// the earliest wake-up a controller asked for (or a short poll, growing to a second,
// while another process may still change things).
Result<FollowResult> follow_controllers(const Workspace& ws, const std::function<bool(const ClusterState&)>& done,
                                        const FollowOptions& options);

}  // namespace gaia::ops
