#pragma once
// What `gaia plan` and `gaia submit` (and apply sets) share: resolving the chain of the
// given specs against the apps running in the store, rendering it, and turning the
// rendered apps into records to deploy; then the two use cases on top, planning
// (nothing written) and submitting (the decision committed, the controllers run), and
// the instances that keep a submission from being complete.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/config_center.hpp"
#include "lib/running_apps.hpp"
#include "ops/render_inputs.hpp"
#include "ops/runner.hpp"
#include "ops/workspace.hpp"
#include "spec/repository.hpp"
#include "spec/resolve.hpp"

namespace gaia::ops {

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
  RenderInputs inputs;            // As loaded once for this command.
  std::vector<AppToDeploy> apps;  // Deploy nodes of the plan, in deploy order.
  std::vector<ReusedApp> reused;  // Running apps the chain reuses.
  // The spec bundles of `apps` (AppRecord::bundle, ops/bundle.hpp): hash -> JSON text,
  // committed with the records (attach_bundles) so any machine can re-render them.
  std::map<std::string, std::string> bundles;

  // Names of every app the submission involves (deployed and reused).
  std::vector<std::string> app_names() const;
};

struct SubmitRequest {
  std::string tenant = "default";
  std::vector<std::string> dirs;  // App directories, or folders of them.
  RenderSettings render;
  // `--name`: the release the one spec given is deployed as; empty: its app's name.
  std::string release;
};

// Resolves the request's dirs against `running`, loads the render inputs (once), renders
// the chain and builds the records. Renders read the config and label centers from
// `center` (the store's) with the --config-file over them, and each record keeps the
// inputs it was rendered with, so a config change re-renders it the same way
// (ops/propagate.hpp). All errors are collected and carry the spec locations; spec
// errors come before errors of the render inputs, as a user fixes them in that order.
Result<std::unique_ptr<Submission>> prepare_submission(const SubmitRequest& request, const RunningApps& running,
                                                       const StoreConfigSource* center = nullptr);

// The same with inputs already loaded: apply sets resolve again inside a retried
// transaction and must render with exactly what they read the first time.
Result<std::unique_ptr<Submission>> prepare_submission(const std::string& tenant, const std::vector<std::string>& dirs,
                                                       const RenderInputs& inputs,
                                                       const std::filesystem::path& cache_dir,
                                                       const RunningApps& running, const StoreConfigSource* center,
                                                       const std::string& release = {});

// `gaia plan`: the submit decision on the state read from the store, nothing written.
struct Planned {
  std::unique_ptr<Submission> submission;
  SubmitOutcome outcome;
  ClusterState state;  // As read; the decision was made on it.
};
Result<Planned> plan(const Workspace& ws, const SubmitRequest& request);

// `gaia submit`: the submission prepared against the store, plan_submit's decision
// committed (decided again on a conflicting write, never on a stale state), then the
// controllers inline, which roll changed apps out and place what is pending.
struct Submitted {
  std::unique_ptr<Submission> submission;
  SubmitOutcome outcome;      // The decision as committed.
  ControllerRun controllers;  // The inline run; its state is the cluster afterwards.
};
Result<Submitted> submit(const Workspace& ws, const SubmitRequest& request);

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

// `--wait` of submit and apply: follows the controllers until no instance of the named
// apps blocks, or the timeout; `blockers` is what still blocks at the end.
struct AppsWait {
  bool done = false;
  ClusterState state;
  std::vector<Blocker> blockers;
};
Result<AppsWait> wait_for_apps(const Workspace& ws, const std::string& tenant, const std::vector<std::string>& apps,
                               const FollowOptions& options);

}  // namespace gaia::ops
