#pragma once
// The instance lifecycle between gaia's store and a backend (docs/backends.md), as pure
// functions: what an observation of the backend means for the stored instances
// (observe_instances), and which copies the backend must start or stop so that what
// runs matches what the store says should run (plan_actuation). The runner
// (ops/runner.hpp) calls them around its reconcile and commit; tests call them with a
// made-up observation.
//
// Lifecycle: Pending -> Placed (the scheduler bound it to a node and raised its
// generation) -> Running (the backend reports the copy of that generation ready) ->
// Succeeded (a batch copy exited 0) or Failed (it exited otherwise, failed, or was lost).
// A stateful instance that must leave its node while its copy may still run becomes
// Terminating and keeps its node until the backend no longer reports the copy, then it
// is Pending again: its data never has two live copies. A stateless instance moves
// make-before-break: its old copy runs until the new one is up, unless the old node's
// room is needed first.

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "controllers/reconcile.hpp"
#include "lib/backend.hpp"
#include "lib/state.hpp"

namespace gaia {

// serving() and occupies_node() (lib/cluster.hpp) are the two predicates every layer
// uses to ask whether an instance works and whether it holds its node's resources.

// Takes `i` off its node for `reason`: the one way every controller sends an instance
// away (preemption, drain, node failure, restart, rollout). A stateful instance whose
// copy may still run (bound or running on a node that is not down) becomes Terminating
// and keeps its node until the backend reports the copy gone; everything else is
// Pending at once, with its node, address and ports released and what was learnt while
// it ran reset. Volume bindings stay, so a stateful instance returns to its data.
void evict_instance(Instance& i, std::string reason, bool node_down = false);

// Binds a pending instance to `node`: Placed, a new generation, run-time facts reset
// (the last failure is kept, for `gaia describe`).
// The backend is asked to start it by the next actuation.
void bind_instance(Instance& i, const std::string& node);

// The state changes an observation implies, with an event for each: a bound instance
// whose copy is ready runs (Started); a copy that exited 0 finishes a batch instance
// (Completed); one that exited otherwise or failed fails the instance (Failed, with the
// exit code and reason); a running instance whose copy the backend no longer reports
// is lost (Failed, internal: gaia's own failure does not spend retry_times); a
// Terminating instance without a live copy is Pending again (Stopped). Usage and start
// times of running instances follow the observation without events. Nodes the backend
// cannot reach are skipped: their copies are unknown, not lost. App statuses follow.
Batch observe_instances(const ClusterState& state, const Observation& obs, int64_t now_ms);

// What a healthy backend that starts and stops at once would report for `state`: every
// bound or running instance has a ready copy of its current generation; Terminating ones
// are gone. What-if plans (`--dry-run`) use it to show where things end up.
Observation healthy_observation(const ClusterState& state, int64_t now_ms);

// What a modelled backend reports for a state (healthy_observation, or one that also
// models usage).
using ObservationModel = std::function<Observation(const ClusterState&, int64_t now_ms)>;

// The controllers on `state` with a modelled backend, round after round until nothing
// changes: the end state a what-if shows. `outcome.batch` holds every change.
ReconcileOutcome reconcile_with_backend_model(const ClusterState& state, const ControllerContext& ctx,
                                             const ObservationModel& observe,
                                             const std::vector<NamedController>& controllers = default_controllers(),
                                             int max_rounds = 32);

// The same with healthy_observation.
ReconcileOutcome reconcile_with_healthy_backend(const ClusterState& state, const ControllerContext& ctx);

// The gates a bound instance passes before it is started: every dependency of its app
// ready, and every role it follows (`after:`) available. Built once per state, so a
// listing of many instances asks cheaply.
class AppHealthIndex;  // controllers/app_health.hpp

class StartGates {
 public:
  explicit StartGates(const ClusterState& state);
  // Only what the gates of `instances` need: the health of their apps' dependencies
  // and of their own apps where a role waits on another. reason() answers only for
  // these instances (a command starting 500 copies does not weigh 10,000 apps).
  StartGates(const ClusterState& state, const std::vector<const Instance*>& instances);
  // Why `i` may not start yet ("waiting for dependency zk to be ready", "waiting for
  // role namenode of app hdfs to be ready (after)"), or "" when it may.
  std::string reason(const Instance& i) const;

 private:
  const ClusterState& m_state;
  std::unordered_set<std::string> m_ready_apps;       // "tenant/app"
  std::unordered_set<std::string> m_available_roles;  // "tenant/app/role", of apps using after.

  void add(const AppHealthIndex& health, const std::string& id, const AppRecord& a);
};

struct Actuation {
  std::vector<StartSpec> starts;
  std::vector<StopSpec> stops;
  // Bound instances that are not started yet, and why ("waiting for dependency zk to
  // be ready", "waiting for the copy on n3 to stop"), for progress and timeouts.
  std::vector<std::pair<std::string, std::string>> held;

  bool empty() const { return starts.empty() && stops.empty(); }
};

// What the backend must do so that what runs matches the store. Stops: copies of
// instances the store no longer has; copies of Terminating instances; leftover copies
// of an earlier generation or another node (a stateful one at once, a stateless one
// once its new copy runs, its instance is no longer bound, or a bound instance waits
// for room on that node); dead leftovers. Starts: bound instances without a copy of
// their generation, once every dependency of their app is ready, and for stateful ones
// only when no other copy of them is live. Level-triggered: planning again on the
// same inputs gives the same actions, and carrying them out twice is harmless.
Actuation plan_actuation(const ClusterState& state, const Observation& obs);

// What gaia adds to a copy's environment: its names, address and ports, and the
// resolved outputs of its app's dependencies, and GAIA_DEP_<APP>_<ROLE>_<PORT> with the
// "address:port" list of the dependencies' serving instances.
std::map<std::string, std::string> instance_env(const ClusterState& state, const Instance& i);

}  // namespace gaia
