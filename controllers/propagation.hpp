#pragma once
// Config and label propagation down the dependency chain (docs/cli.md#gaia-config), the
// pure part: which apps a change touches, in which order, which dependents follow, and
// what committing the re-rendered apps means for their instances. Rendering itself
// needs render/, which controllers/ may not use, so ops/ renders (ops/propagate.hpp)
// and calls these to decide.
//
// An app is touched directly when one of its recorded reads (AppRecord.workload.reads)
// names a changed key and would now read a different value: for config, the key itself,
// a parent of it (gaia.config('web') reads the whole object, so `web.port` changes it) or
// a child of it (setting `web` changes what `web.port` reads); for labels, the exact
// "kind/name/key". Values are compared, not revisions: a render records the revision it
// read for provenance, but a key set back to the value an app was rendered with does not
// need a new render. A dependent follows only when an output it imports from a
// re-rendered app changed.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/config_source.hpp"
#include "lib/state.hpp"

namespace gaia {

// A changed key: kind "config" with a dotted key, or kind "label" with "kind/name/key".
struct ChangedKey {
  std::string kind;
  std::string key;
};

// Whether `read` names `changed` (config: the same key, a parent or a child).
bool read_touches(const ConfigRead& read, const ChangedKey& changed);

// What `read` would read from `snapshot` now (nullopt: absent, so the default applies).
std::optional<ConfigValue> read_now(const ConfigRead& read, const ConfigSnapshot& snapshot);

// Whether `read` would read the same value from `snapshot` (an absent key with a default
// holds when the key is still absent).
bool read_holds(const ConfigRead& read, const ConfigSnapshot& snapshot);

struct ReadChange {
  ConfigRead read;                  // As recorded by the app's last render.
  std::optional<ConfigValue> now;   // What it reads after the change (nullopt: default).
};

struct DirectImpact {
  std::string tenant, app;
  std::vector<ReadChange> reads;  // Reads of changed keys whose value changes.
};

// Apps (in "tenant/name" order) with reads that touch one of `changed` and would read a
// different value from the snapshot `after(app)` returns (the snapshot its renders see
// once the change is written).
std::vector<DirectImpact> direct_impact(const ClusterState& state, const std::vector<ChangedKey>& changed,
                                        const std::function<ConfigSnapshot(const AppRecord&)>& after);

// The keys some app's recorded reads no longer hold in the snapshot `now(app)` returns,
// each once, sorted. Normally empty: a change re-renders its readers in the same command.
// A crash between a config write and that re-render (two commits) leaves readers stale;
// `gaia controller run` feeds these keys back into the propagation so it heals.
std::vector<ChangedKey> stale_keys(const ClusterState& state,
                                   const std::function<ConfigSnapshot(const AppRecord&)>& now);

// `seeds` ("tenant/name") and every app depending on them, directly or through others
// (AppRecord.dependencies, same tenant), dependencies before dependents; apps at the same
// depth by id. Apps on a dependency cycle (only a corrupt store has one) come last.
std::vector<std::string> propagation_order(const ClusterState& state, const std::vector<std::string>& seeds);

// What a dependent imports from one dependency: its app name and output names.
struct ImportEdge {
  std::string dependency;
  std::vector<std::string> outputs;
};

// The imported outputs that changed ("zookeeper.quorum"), given the outputs before and
// after of the dependencies that were re-rendered (by app name). Empty: the dependent
// keeps its render.
std::vector<std::string> changed_imports(const std::vector<ImportEdge>& imports,
                                         const std::map<std::string, std::pair<nlohmann::json, nlohmann::json>>& changed);

// One app re-rendered for a change.
struct Rerender {
  AppRecord record;       // The app's new record (new workload and document).
  std::string base_hash;  // Workload hash of the record it was rendered from.
  std::string why;        // "reads web.replicas (3 -> 5)", "imports zookeeper.quorum".
};

struct RerenderOutcome {
  Batch batch;
  std::vector<std::string> applied;   // "tenant/name" of apps updated.
  std::vector<std::string> skipped;   // Changed by someone else since rendering.
  size_t rolling = 0;                 // Instances the rollout controller will replace.
};

// Commits re-rendered apps onto `state`: each record replaces the app's (keeping its
// scale overrides, status and creation time) unless the app changed since it was
// rendered (its hash is no longer `base_hash`: skipped). When the roles render as before,
// the instances take the new hash in place; otherwise the app is Updating and the
// rollout controller replaces its instances in batches. One Rerendered event per app.
RerenderOutcome plan_rerender(const ClusterState& state, const std::vector<Rerender>& rerenders);

}  // namespace gaia
