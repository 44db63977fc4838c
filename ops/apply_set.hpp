#pragma once
// What `gaia apply`, `gaia diff` and `gaia plan --out` share: a set of specs, the source
// that owns what the set creates, resolving and rendering the set against the state
// read from the store (again inside the transaction when what it reuses moved), and the
// use cases on top: deciding (diff, dry run) and applying (committed in one
// transaction, optionally guarded by a store revision, then the controllers inline).

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "controllers/apply.hpp"
#include "ops/render_inputs.hpp"
#include "ops/runner.hpp"
#include "ops/submission.hpp"
#include "ops/workspace.hpp"

namespace gaia::ops {

// A set of specs to converge a tenant to.
struct SetRequest {
  std::vector<std::string> paths;  // App directories or folders of them.
  std::string source;              // Owner of what the set creates; empty: from the paths.
  std::string tenant = "default";
  bool prune = false;              // Also delete what the source created and left the set.
  RenderSettings render;
  // Secret values stay in the decision's field changes (still marked secret): only
  // `gaia diff --show-secrets`, which writes nothing, asks for it.
  bool show_secrets = false;
};

// The request's source, else "dir:" and the canonical absolute paths of the set, sorted
// and joined with ',' (docs/decisions.md says why).
Result<std::string> apply_source(const SetRequest& request);

// The running apps of `tenant` as resolution sees them, taken from `state` (so the set
// is resolved against exactly the state the decision is made on).
InMemoryRunningApps running_apps(const ClusterState& state, const std::string& tenant);

// A digest of what resolution read from `state` (names, versions, outputs, readiness of
// the tenant's apps): when it differs at commit time, the set is resolved again.
std::string resolution_fingerprint(const ClusterState& state, const std::string& tenant);

// What `apply --prune` lets go of when the set does not resolve as it is: the apps of
// `source` in `tenant` that no app of another source depends on (directly or through
// them). Each is then deployed again from its spec, reused, or pruned; the others are
// kept by the prune, so their ranges still count.
std::set<std::string> prune_released(const ClusterState& state, const std::string& tenant,
                                     const std::string& source);

// running_apps, with each app of `released` accepting any released version ("*") of its
// dependencies: still a candidate for reuse where it fits, no longer holding the set back.
InMemoryRunningApps running_apps_releasing(const ClusterState& state, const std::string& tenant,
                                           const std::set<std::string>& released);

// Whether every app of `released` that `plan` reuses (keeps running as it is) still gets
// what its recorded ranges ask of the versions the plan chose.
bool released_ranges_hold(const spec::Plan& plan, const ClusterState& state, const std::string& tenant,
                          const std::set<std::string>& released);

struct ApplySet {
  std::unique_ptr<Submission> submission;
  ApplyRequest request;
  std::string fingerprint;  // resolution_fingerprint of the state it was resolved on.
};

// Resolves and renders the set against `state`, reading the config and label centers
// from `center` (the store's); builds the request with the source, the reused apps and
// each app's secrets. `inputs`, when given, are the render inputs already loaded for
// this command (a set resolved again renders with what was read the first time).
// Errors carry spec locations.
Result<ApplySet> load_apply_set(const SetRequest& request, const std::string& source, const ClusterState& state,
                                const StoreConfigSource* center, const RenderInputs* inputs = nullptr);

// The decision for a set on the state read from the store, nothing written: `gaia diff`,
// `gaia apply --dry-run`, and the plan `gaia plan --out` saves.
struct SetDecision {
  std::string source;
  ApplySet set;
  ApplyPlan plan;
  ClusterState state;  // As read.
};
Result<SetDecision> decide_set(const Workspace& ws, const SetRequest& request);

struct ApplyOptions {
  bool dry_run = false;                  // Decide only.
  std::optional<int64_t> check_revision;  // Refuse unless the store is at this revision.
};

// What an apply decided and committed.
struct Applied {
  ApplyPlan plan;
  std::string tenant, source;
  ClusterState state;  // Right after the commit (as read, on a dry run).
  // The inline run, after a commit that changed something (an apply that changes
  // nothing writes nothing, controllers included).
  std::optional<ControllerRun> controllers;

  // The state after everything the apply did.
  const ClusterState& final_state() const { return controllers ? *controllers->state : state; }
  // The applied apps an apply --wait waits for (pruned and kept ones are not).
  std::vector<std::string> waited_apps() const;
};

// After an apply's commit: records the committed state and, when the apply changed
// something, runs the controllers inline (an apply that changes nothing writes nothing).
Result<void> finish_apply(const Workspace& ws, ClusterState committed, Applied& applied);

// `gaia apply -f PATH...`: decided inside the transaction, so a concurrent writer makes
// it decide again on what that writer committed (resolving the set again if the apps it
// reuses changed) and two applies never interleave; with check_revision the retry fails
// instead. The tenant-unknown warning is the caller's (it has the state in `Applied`).
Result<Applied> apply_set(const Workspace& ws, const SetRequest& request, const ApplyOptions& options);

// The error of a store that moved past the revision a command was told to expect.
Diagnostic revision_moved(int64_t now, int64_t wanted);

}  // namespace gaia::ops
