#pragma once
// Config and label changes and their propagation down the dependency chain
// (docs/decisions.md): the part that renders, so it lives in ops/ (controllers/ may not
// use render/); the decisions are controllers/propagation.hpp.
//
// A change runs in this order, and its dry run is the same code stopping before the
// first write:
//   1. load the cluster state and the centers, apply the change to a copy of the centers;
//   2. re-render the apps whose recorded reads it changes, then, in topological order,
//      the dependents whose imported outputs changed, each with the inputs it was
//      submitted with (AppRecord::render_inputs, ops/render_inputs.hpp) and the files
//      of its spec bundle (ops/bundle.hpp). Any failure refuses the change: nothing is
//      written;
//   3. write the change (a config write with its history, a label write, or a node
//      update);
//   4. render again against what was written (render-cache hits unless someone else
//      wrote meanwhile), commit the re-rendered apps with the change's events
//      (ConfigChanged / LabelChanged / NodeLabeled, Rerendered), and run the controllers
//      inline: the rollout controller replaces instances in batches keeping
//      min_available, the placement controller moves instances off nodes that no longer
//      satisfy their required placement.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/placement.hpp"
#include "controllers/propagation.hpp"
#include "lib/config_center.hpp"
#include "lib/secrets.hpp"
#include "ops/bundle.hpp"
#include "ops/runner.hpp"
#include "ops/submission.hpp"
#include "ops/workspace.hpp"

namespace gaia::ops {

struct CenterChange {
  std::string description;  // "config web.replicas (global)", for messages.
  std::vector<ChangedKey> keys;
  // Applies the change to `centers` (a copy) as if written at `revision`.
  std::function<void(StoreConfigSource& centers, int64_t revision)> apply;
  // Writes the change; `before` is the centers the decision was made on.
  std::function<Result<void>(const Workspace& ws, const StoreConfigSource& before)> write;
  // Events committed with the re-rendered apps, from the centers as written; values of
  // `secrets` are masked in them (the timeline never holds a secret in clear).
  std::function<void(Batch& b, const StoreConfigSource& after, const SecretKeys& secrets)> events;
  // For node label changes: the cluster state once the change is written, so a dry run
  // can show which instances would be moved. Unset: the change does not touch nodes.
  std::function<Result<ClusterState>(const ClusterState& state)> preview;
};

// One app the propagation looked at.
struct PropagatedApp {
  std::string tenant, name;
  bool direct = false;                // Reads a changed key.
  std::vector<ReadChange> reads;      // Direct: the reads whose value changes.
  std::vector<std::string> imports;   // Dependents: the imported outputs that changed.
  bool rerendered = false;            // False: a dependent whose imports did not change.
  bool outputs_changed = false;
  bool roles_changed = false;
  size_t to_roll = 0;                 // Instances the rollout will replace.
  // Roles whose new count a `gaia scale` override beats, one sentence each.
  std::vector<std::string> scale_wins;
  // Dependencies a `when:` adds or removes with this change ("search (when
  // search.enabled)"); a removed dependency keeps running, as nothing named it.
  std::vector<std::string> deps_added, deps_removed;
  std::string old_hash, new_hash;
};

struct Propagation {
  std::vector<PropagatedApp> apps;  // In propagation order.
  std::vector<Rerender> rerenders;  // What to commit.
  // The deployed apps' secret keys (ops/secrets.hpp), as of the state it ran on: the
  // Rerendered events mask them, and so must whoever shows `apps[].reads`.
  SecretKeys secrets;
};

// What an app's renders see from `centers`: its tenant's snapshot, with the
// --config-file layer it was submitted with (if any) on top, as at submit.
ConfigSnapshot app_snapshot(const StoreConfigSource& centers, const AppRecord& app);

// Reads spec bundles from the workspace's store (State::bundle).
BundleReader bundle_reader(const Workspace& ws);

// Steps 1-2 on a given state and centers (after the change). Renders are cached in
// `cache_dir` (none when empty). An app is rendered from its spec bundle, read with
// `bundles` and unpacked into a temporary folder, so the render sees the files it was
// submitted with on any machine; only records without one (written before bundles
// existed) read their spec directory.
Result<Propagation> propagate(const ClusterState& state, const StoreConfigSource& after,
                              const std::vector<ChangedKey>& keys, const std::filesystem::path& cache_dir,
                              const BundleReader& bundles);

struct ChangeOutcome {
  bool dry_run = false;
  Propagation propagation;
  RerenderOutcome committed;                 // Empty on a dry run.
  std::optional<ControllerRun> controllers;  // The inline run after the commit.
  // Node label changes: instances whose node no longer fits (on a dry run: would be
  // moved; after the change: the pinned ones left in place).
  std::vector<PlacementViolation> placement;
  std::vector<std::string> moved;  // Instances the placement controller moved.
};

// Steps 1-4 (1-2 for a dry run).
Result<ChangeOutcome> apply_center_change(const Workspace& ws, const CenterChange& change, bool dry_run);

// Heals what a crash between a config (or label) write and its re-render left behind:
// the apps whose recorded reads no longer hold (controllers/propagation.hpp stale_keys)
// are re-rendered, with the dependents whose imports change, and committed as the change
// would have done, each Rerendered event saying it repairs a stale render. `gaia
// controller run` calls it every pass in which the store moved. Returns what was
// committed (empty when nothing was stale); a render failure is returned and nothing is
// written.
Result<RerenderOutcome> heal_stale_renders(const Workspace& ws);

// What `--wait` waits for: every app the change re-rendered runs its new workload on
// every instance, and every instance it moved runs again.
bool change_settled(const ChangeOutcome& o, const ClusterState& state);

// `--wait` for a change (done at once for a dry run): follows the controllers until
// change_settled or the timeout; `blockers` names what is not rolled out at the end.
struct ChangeWait {
  bool done = false;
  ClusterState state;
  std::vector<Blocker> blockers;  // Empty when done.
};
Result<ChangeWait> wait_for_change(const Workspace& ws, const ChangeOutcome& o, const FollowOptions& options);

}  // namespace gaia::ops
