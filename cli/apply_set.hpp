#pragma once
// What `gaia apply`, `gaia diff` and `gaia plan --out` share: the flags naming a set of
// specs, the source that owns what the set creates, resolving and rendering the set
// against the state read from the store, and printing the decision (text or JSON).

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/loader.hpp"
#include "cli/submission.hpp"
#include "controllers/apply.hpp"

namespace gaia::cli {

struct ApplyFlags {
  std::vector<std::string> paths;  // -f PATH (and positional paths)
  std::string source;              // --source NAME
  std::string tenant;              // --tenant (default: the global one)
  bool prune = false;
  RenderFlags flags;

  // -f/--filename, --source, --tenant, --prune (when `with_prune`) and the render flags.
  void add_to(CLI::App* cmd, bool with_prune = true);
  std::string tenant_or(const Globals& g) const { return tenant.empty() ? g.tenant : tenant; }
};

// --source NAME, else "dir:" and the canonical absolute paths of the -f arguments,
// sorted and joined with ',' (docs/decisions.md says why).
Result<std::string> apply_source(const ApplyFlags& f);

// The running apps of `tenant` as resolution sees them, taken from `state` (so the set
// is resolved against exactly the state the decision is made on).
InMemoryRunningApps running_apps(const ClusterState& state, const std::string& tenant);

// A digest of what resolution read from `state` (names, versions, outputs, readiness of
// the tenant's apps): when it differs at commit time, the set is resolved again.
std::string resolution_fingerprint(const ClusterState& state, const std::string& tenant);

struct ApplySet {
  std::unique_ptr<Submission> submission;
  ApplyRequest request;
  std::string fingerprint;  // resolution_fingerprint of the state it was resolved on.
};

// Resolves and renders the set of `f` against `state`, reading the config and label
// centers from `center` (the store's); builds the request with the source, the reused
// apps and each app's secrets. Errors carry spec locations.
Result<ApplySet> load_apply_set(const Globals& g, const ApplyFlags& f, const std::string& source,
                                const ClusterState& state, const StoreConfigSource* center);

struct ApplyView {
  bool dry_run = true;       // diff, plan, apply --dry-run: nothing was written.
  size_t max_instances = 10;  // Instance lines per app in text (the rest are counted).
};

// The decision as text: one block per app (+ deploy, ~ update, - prune, ! kept,
// = unchanged or reused) with field changes (secrets masked), instances and where they
// land, then affected apps, dependents outside the set and a summary line.
std::string format_apply_plan(const Globals& g, const ApplyPlan& plan, const std::string& tenant,
                              const std::string& source, const ApplyView& view);

// The stable JSON summary documented in docs/cli.md ("apply / diff").
nlohmann::json apply_plan_json(const ApplyPlan& plan, const std::string& tenant, const std::string& source,
                               const ApplyView& view);

}  // namespace gaia::cli
