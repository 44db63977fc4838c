#pragma once
// One run of the controllers against a backend (docs/backends.md):
//
//   observe -> commit -> reconcile -> commit -> actuate
//
// The backend is observed first and what it reports becomes state changes
// (controllers/lifecycle.hpp observe_instances), committed at once; the controllers
// reconcile on the kept state with those changes applied in place (no copy of every
// instance) and their decisions are committed next, so gaia's intent is durable before
// anything starts or stops. Should the store move on between the two commits (another
// process wrote), the round observes again and commits that observation with the
// decisions in one transaction, so the starts and stops planned from the committed
// state (plan_actuation) never weigh it against an older observation.
//
// With a synchronous backend (sim) the cycle goes round again at once while rounds
// change something, so a command converges before it returns; with an asynchronous one
// it returns after actuating, and the caller waits for news (Backend::wait) before the
// next cycle. A failed second commit fails the cycle with the observation already
// committed: its events are on the timeline, and the next cycle decides on it.
//
// A crash anywhere leaves a state the next cycle repairs: every step is level-triggered.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "controllers/lifecycle.hpp"
#include "controllers/reconcile.hpp"
#include "lib/backend.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"

namespace gaia::ops {

struct CycleOptions {
  ControllerOptions controller;
  // Rounds of a synchronous backend before giving up on convergence in one cycle.
  int max_rounds = 64;
};

struct CycleResult {
  // After the last commit: shared with the State's kept copy (State::load_shared), not a
  // copy of every instance (a tenth of a command at 50,000 instances). A later load that
  // changes the kept state while this is held copies it then (copy on write).
  std::shared_ptr<const ClusterState> state;
  Batch batch;          // Everything committed (events in order), observations included.
  int rounds = 0;
  bool converged = false;  // The last round changed nothing and asked nothing of the backend.
  int64_t wake_at_ms = 0;  // Earliest time a controller or the backend wants another cycle.
  std::vector<std::string> active;  // Controllers that changed something.
  // Bound instances not started, and why (from the last round).
  std::vector<std::pair<std::string, std::string>> held;
  int started = 0, stopped = 0;
  std::vector<BackendError> errors;  // What the backend refused or could not do.
};

// Runs rounds of observe -> reconcile -> commit -> actuate on the store behind `state`.
// Events carry the operation id `op`. A store failure is an error; a backend failure is
// not: it is recorded as a Warning event and in `errors`, and the cycle stops there (the
// next cycle retries, since the intent is committed).
Result<CycleResult> run_cycle(State& state, Backend& backend, const Clock& clock, const std::string& op,
                              const CycleOptions& options = {});

// The same on a state in memory (no store): what-if plans and tests.
CycleResult settle(ClusterState state, Backend& backend, int64_t now_ms, const CycleOptions& options = {});

}  // namespace gaia::ops
