#pragma once
// Backend: where instances really run (docs/backends.md). gaia's store holds what should
// run (the intent); a backend reports what does run (the observation) and carries out
// starts and stops. Implementations: `sim` (bookkeeping only, lib/sim_backend.hpp), and
// later local processes and Kubernetes.
//
// The contract is level-triggered and idempotent, so every call is safe to repeat after a
// crash of the caller: starting a copy that already runs, or stopping one that is gone,
// succeeds and changes nothing. A backend never decides anything; the pure functions of
// controllers/lifecycle.hpp turn an observation into state changes and the state into
// starts and stops, and the runner (ops/runner.hpp) commits the state changes before it
// asks the backend to act.
//
// What runs is a *copy* of an instance: the instance key, the node it runs on and the
// placement generation it was started for. An instance has at most one record in the
// store but may briefly have two copies while it moves (make-before-break for stateless
// roles); the generation tells a copy of the current placement from a leftover.

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cluster.hpp"
#include "lib/workload.hpp"

namespace gaia {

struct ClusterState;  // lib/state.hpp

// Coded, so a caller can tell "try again" from "give up" without parsing text.
enum class BackendErrc {
  Unavailable,  // The backend (agent, API server) could not be reached: retry later.
  Rejected,     // The backend refused the request (invalid spec, no permission): do not retry as is.
  NotFound,     // The node or copy named does not exist on the backend.
  Timeout,      // The backend did not answer in time: retry later.
  // The backend refused for now and says so: a disruption budget would be violated, a
  // rate limit. Retry later, as is; nothing is wrong with the request.
  Throttled,
};
std::string_view backend_errc_name(BackendErrc c);

struct BackendError {
  BackendErrc code = BackendErrc::Unavailable;
  std::string message;
  // Whether repeating the same call later may succeed.
  bool retryable() const {
    return code == BackendErrc::Unavailable || code == BackendErrc::Timeout || code == BackendErrc::Throttled;
  }
  std::string to_string() const;
};

template <class T>
using BackendResult = std::expected<T, BackendError>;

// What a copy is doing, as the backend sees it.
enum class CopyPhase {
  Starting,  // Started, not ready yet (health checks not passing).
  Running,   // Running and ready.
  Exited,    // Finished; exit_code tells how.
  Failed,    // Could not start or was killed; reason tells why.
};
std::string_view copy_phase_name(CopyPhase p);

struct ObservedCopy {
  std::string instance;  // Instance key "<ordinal>.<role>.<app>.<tenant>".
  std::string node;
  int64_t generation = 0;  // Instance::generation it was started for.
  CopyPhase phase = CopyPhase::Starting;
  int exit_code = 0;       // For Exited and Failed.
  std::string reason;      // Why it failed or exited ("OOMKilled", "exited with code 3").
  // The failure was the backend's own (an agent lost the copy), not the app's: restarts
  // after it do not spend the role's retry_times.
  bool internal = false;
  int64_t started_ms = 0;  // When it started (milliseconds since the epoch).
  std::optional<Resources> usage;  // Observed usage; unset when not measured.
  // The address the backend gave the copy (a pod IP); empty when gaia's own allocation
  // from the node's instance subnet is the address (sim, process).
  std::string address;

  bool live() const { return phase == CopyPhase::Starting || phase == CopyPhase::Running; }
};

struct ObservedNode {
  std::string name;
  bool reachable = true;  // False: the backend lost contact (its copies are not reported).
  std::string reason;
};

// A node as a backend that owns the list of nodes describes it (Kubernetes: the Node
// objects of the API server). gaia's store follows this list (controllers/inventory.hpp):
// new nodes are added, changed ones updated, and a node not ready for longer than the
// heartbeat timeout is taken down so its instances move.
struct InventoryNode {
  Node node;               // Name, address, capacity (allocatable), labels, topology.
  bool ready = true;       // The backend's own health verdict (the Ready condition).
  std::string not_ready_reason;   // Why not ("KubeletNotReady: ...", "NodeStatusUnknown").
  int64_t not_ready_since_ms = 0;  // When it stopped being ready (0: unknown).
  bool unschedulable = false;     // Cordoned on the backend's side (kubectl cordon).
};

// One consistent reading of the backend.
struct Observation {
  // Nodes the backend reports on; empty when it does not report node health (sim).
  std::vector<ObservedNode> nodes;
  // Set by a backend that owns the list of nodes (Kubernetes): every node it has. Unset
  // when gaia's store is where nodes are defined (sim, process).
  std::optional<std::vector<InventoryNode>> inventory;
  std::vector<ObservedCopy> copies;
  // Earliest time the backend's answer changes by itself (a simulated usage spike ends);
  // 0: only when something happens.
  int64_t wake_at_ms = 0;
};

// Everything a backend needs to start one copy. The instance carries its node, address,
// ports, volumes and generation; the role its command, image, env and health checks.
struct StartSpec {
  Instance instance;
  Role role;
  std::string app_version;
  // When the app's record was created (RFC 3339): tells a resubmit after a delete from
  // the app before it, so what a backend made for the old one is not taken for the new
  // one's (kube: an annotation on its Service, ConfigMap and budget).
  std::string app_created;
  // The app's evaluated config (config.jsonnet with the centers' values): a backend
  // that runs processes writes it into the copy's working directory.
  nlohmann::json config = nlohmann::json::object();
  // Environment gaia adds for the instance (its name, address, ports, tenant, resolved
  // outputs of its dependencies), merged over the role's env by the backend.
  std::map<std::string, std::string> env;
};

struct StopSpec {
  std::string instance;
  std::string node;
  int64_t generation = 0;
  // Time between the polite signal and the kill. Unset: the grace the copy was started
  // with (its role's), which a copy whose instance was deleted still knows.
  std::optional<std::chrono::milliseconds> grace;
  std::string reason;
  // A voluntary disruption (a migration, a drain, a rebalance) of a copy whose instance
  // lives on: a backend with disruption budgets (Kubernetes' Eviction API) may refuse it
  // for now (BackendErrc::Throttled). False for a deletion, a scale-down and preemption,
  // which are not subject to budgets.
  bool evict = false;
};

// The outcome of one start or stop in a batch.
struct ActionResult {
  std::string instance, node;
  std::optional<BackendError> error;  // Unset: done (or already so).
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // What runs now: every copy of gaia's instances the backend knows of.
  virtual BackendResult<Observation> observe(int64_t now_ms) = 0;
  // Starts each copy unless a copy of that instance, node and generation exists already.
  // Errors are per copy; the call itself fails only when the backend is unreachable.
  virtual BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& specs, int64_t now_ms) = 0;
  // Stops each copy (polite signal, then a kill after its grace period); a copy that is
  // gone already counts as stopped.
  virtual BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& specs, int64_t now_ms) = 0;
  // Blocks until the backend may have news (a copy changed phase) or `timeout` passes.
  // Returns true when there may be news.
  virtual bool wait(std::chrono::milliseconds timeout) = 0;
  // Whether start and stop finish before they return, so observing right after them
  // shows their effect. The runner then keeps going inline instead of waiting for news.
  virtual bool synchronous() const { return false; }
  // Reads ahead what the next observe() needs, so a command can have it read on another
  // thread while it renders or loads the store (ops/runner.hpp ReadAhead). Safe to call
  // beside the other methods. What fails here is left for observe() to report, as it
  // reads again what it could not.
  virtual void prefetch() {}
  // Removes what the backend keeps beside the copies (Kubernetes: Services, ConfigMaps
  // and PodDisruptionBudgets) for the apps and roles the store no longer has and none of
  // whose copies it still records: what a delete, or a role a resubmit dropped, leaves
  // behind. Never data: volumes and their claims stay. Returns what it removed ("Service
  // shop-web"), for the timeline. The runner calls it after a cycle converged, with that
  // cycle's state, by which a backend may skip the work while the apps and roles are
  // those it last looked at; it decides on `current()`, a state read after it listed its
  // objects, so an app submitted meanwhile (its record is committed before its objects
  // are made) is seen and keeps them. `current` gives nullopt when the store cannot be
  // read, and then nothing is removed.
  virtual BackendResult<std::vector<std::string>> remove_unused(
      const ClusterState& cycle_state, const std::function<std::optional<ClusterState>()>& current) {
    return std::vector<std::string>{};
  }
};

}  // namespace gaia
