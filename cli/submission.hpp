#pragma once
// What `gaia plan` and `gaia submit` share: resolving the chain of the given specs against
// the apps running in the store, rendering it, turning the rendered apps into records to
// deploy, and printing the outcome of plan_submit (text or JSON), including the
// instances that keep a submission from being complete and why.

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/loader.hpp"
#include "controllers/submit.hpp"
#include "lib/running_apps.hpp"
#include "spec/repository.hpp"
#include "spec/resolve.hpp"

namespace gaia::cli {

struct ReusedApp {
  std::string name, version;
  bool ready = true;
};

// The resolved, rendered submission. Held by pointer: the plan points into `roots` and
// `repo`.
struct Submission {
  std::string tenant;
  spec::SpecRepository repo;
  std::vector<spec::AppSpec> roots;
  spec::Plan plan;
  std::vector<AppToDeploy> apps;  // Deploy nodes of the plan, in deploy order.
  std::vector<ReusedApp> reused;  // Running apps the chain reuses.

  // Names of every app the submission involves (deployed and reused).
  std::vector<std::string> app_names() const;
};

// Resolves DIRS in `tenant` against `running`, renders the chain, and builds the
// records. Renders read the config and label centers from `center` (the store's; see
// chain_options), and each record keeps the inputs it was rendered with (render_inputs:
// overrides for the roots, jpaths, repository roots, limits, the --config-file layer) so
// a config change can re-render it the same way (cli/propagate.hpp). All errors are
// collected and carry the spec locations.
Result<std::unique_ptr<Submission>> prepare_submission(const Globals& g, const std::string& tenant,
                                                       const std::vector<std::string>& dirs, const RenderFlags& flags,
                                                       const RunningApps& running,
                                                       const StoreConfigSource* center = nullptr);

// One instance that keeps a submission from being complete, and why.
struct Blocker {
  std::string instance, state, reason;
};

// Instances of the named apps of `tenant` that are not running, with their reasons
// (which filter rejected them, the dependency they wait for, who preempted them),
// running instances of an older render still waiting for the rollout to replace them,
// and apps that are missing altogether.
std::vector<Blocker> blocking_instances(const ClusterState& state, const std::string& tenant,
                                        const std::vector<std::string>& apps);

struct OutcomeView {
  bool dry_run = false;       // `gaia plan`: nothing is written.
  bool explain_scores = true;  // Add the top score terms of each placement (small plans).
};

// The outcome as aligned text: apps (deployed, updated, unchanged, reused), placements
// with node, address, score and why, preemptions, pending instances with reasons.
std::string format_outcome(const Globals& g, const Submission& s, const SubmitOutcome& out, const OutcomeView& view);
nlohmann::json outcome_json(const Submission& s, const SubmitOutcome& out, const OutcomeView& view);
nlohmann::json blockers_json(const std::vector<Blocker>& blockers);

// "  0.frontend.web.default   Pending   0/3 nodes fit: 3 ResourceFit (memory)" lines.
std::string format_blockers(const std::vector<Blocker>& blockers);

// Warns on stderr when `tenant` is not defined in a cluster that defines tenants:
// submitting there works (no quota, no pool) but is usually a typo.
void warn_unknown_tenant(const Globals& g, const ClusterState& st, const std::string& tenant);

}  // namespace gaia::cli
