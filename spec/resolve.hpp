#pragma once
// Dependency resolution (docs/spec.md section 8): a pure function from the specs being
// submitted, the spec repository and the apps running in the tenant to a plan, a DAG of
// apps to reuse or deploy in topological order.
//
// Each dependency name gets exactly one version per tenant: (1) a running app of that
// name whose version satisfies every range that apps in the plan place on the name is
// reused; else (2) the highest repository version satisfying all of them is deployed and
// its own dependencies resolved in turn. Because a version chosen for one name decides
// which ranges other names see, resolution iterates to a fixpoint; ranges from versions
// that end up not chosen play no part in the result.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"
#include "lib/running_apps.hpp"
#include "spec/app_spec.hpp"
#include "spec/repository.hpp"

namespace gaia::spec {

enum class Action { Reuse, Deploy };
std::string_view action_name(Action a);  // "reuse", "deploy"

// One range placed on a node's name by an app in the plan.
struct Requirement {
  size_t requirer = 0;  // Index into Plan::nodes.
  std::string alias;    // Name under deps.* in the requirer's templates.
  semver::Range range;
  std::vector<std::string> imports;
  Location location;  // Of the dependency entry in the requirer's app.yaml.
};

struct PlanEdge {
  std::string alias;
  size_t node = 0;  // Index into Plan::nodes.
  // Why the dependency binds to that release: "named by release:", "the release named
  // after the app", "running hdfs-b (3.1.0) satisfies ^3", ...
  std::string reason;
};

// A dependency of a deployed app left out because its `when:` does not hold.
struct SkippedDependency {
  std::string name;       // The app it would depend on.
  std::string alias;
  std::string condition;  // As written: "search.enabled".
  std::string value;      // What decided: "search.enabled is false".
};

struct PlanNode {
  std::string name;  // The release name (unique in its tenant).
  // The tenant of a release another tenant exports (always reused); empty: the plan's.
  std::string tenant;
  std::string app;   // The app (app.yaml's name) the release runs.
  semver::Version version;
  Action action = Action::Deploy;
  const AppSpec* spec = nullptr;  // For Deploy: the spec to render. nullptr for Reuse.
  bool root = false;              // Given directly (always deployed).
  // Deploy of a name that already runs in the tenant at another version: that version.
  std::optional<semver::Version> replaces;
  // Reuse: the running app's output values and readiness.
  nlohmann::json outputs = nlohmann::json::object();
  bool ready = true;
  std::vector<Requirement> requirers;  // In the order they were found.
  std::vector<PlanEdge> dependencies;  // In app.yaml order; empty for Reuse.
  std::vector<SkippedDependency> skipped;  // Conditional ones that do not apply.

  std::string id() const { return (tenant.empty() ? name : tenant + "/" + name) + "@" + version.to_string(); }
};

// A spec given directly, and the release it is deployed as (empty: its own name).
struct RootSpec {
  const AppSpec* spec = nullptr;
  std::string release;
};

struct Plan {
  std::string tenant;
  std::vector<PlanNode> nodes;  // Breadth-first from the roots.
  std::vector<size_t> roots;    // Indices of the specs given directly, in the order given.
  std::vector<size_t> order;    // Deploy order: dependencies first; ties broken by name.
  // Things the user should know that do not stop the plan (e.g. a fallback choice).
  Diagnostics warnings;

  // The node of a release of the plan's own tenant.
  std::optional<size_t> find(std::string_view name) const;
};

// The evaluated config of an app the plan deploys (config.jsonnet with the config center
// and, for a root, the --set/--values overrides), for the `when:` of its dependencies.
// Asked once per spec that has a conditional dependency. The resolver is pure; ops/
// gives it one that evaluates the Jsonnet (ops::config_evaluator).
using ConfigEvaluator = std::function<Result<nlohmann::json>(const AppSpec& spec, bool root)>;

// Resolves `roots` (the specs being submitted; they are deployed as given, and the
// pointers must outlive the plan, as must `repo`) against the repository and the running
// apps of `tenant` (entries of other tenants are ignored). Every independent error is
// collected: missing apps and versions, conflicting ranges, imports of undeclared
// outputs, cycles, broken repository entries for the names the resolution touches, and
// conditions naming what is not a parameter. A dependency whose `when:` does not hold is
// left out (PlanNode::skipped); without `config` every conditional dependency applies.
Result<Plan> resolve(const std::vector<const AppSpec*>& roots, const SpecRepository& repo,
                     const std::vector<RunningApp>& running, const std::string& tenant,
                     const ConfigEvaluator& config = {});
// The same with release names for the roots (`gaia submit --name`). Resolution is keyed
// by release: each release has one version, and a dependency binds to the release its
// `release:` names, else to the release of its app given in the same submission, else
// to a running release of its app whose version satisfies its range (the one named
// after the app first), else to the release named after the app (docs/spec.md section 8, Releases).
Result<Plan> resolve_releases(const std::vector<RootSpec>& roots, const SpecRepository& repo,
                     const std::vector<RunningApp>& running, const std::string& tenant,
                     const ConfigEvaluator& config = {});

// Which of `spec`'s dependencies apply on its evaluated `config`: one flag per entry of
// spec.dependencies (true for those without `when:`), the skipped ones described in
// `skipped`. Errors are located at the condition in app.yaml.
Result<std::vector<bool>> active_dependencies(const AppSpec& spec, const nlohmann::json& config,
                                              std::vector<SkippedDependency>* skipped = nullptr);

// Apps that depend on `name` in a plan, directly or through others, nearest first
// (breadth-first), as node indices. Empty when `name` is not in the plan.
std::vector<size_t> reverse_dependents(const Plan& plan, std::string_view name);

// An app version in the repository that depends on a name (for `gaia deps --reverse`).
struct RepoDependent {
  const AppSpec* spec = nullptr;  // The dependent app version.
  std::string on;                 // The name it depends on directly.
  std::string range;              // The range it places on `on`, as written.
  int depth = 1;                  // 1 = depends on the queried name directly.
};
// Every app version in the repository depending on `name`, directly (depth 1) or through
// other names (depth 2, ...), sorted by depth, name, then version highest first. A
// name's dependents are listed once, at the smallest depth.
std::vector<RepoDependent> reverse_dependents(const SpecRepository& repo, std::string_view name);

}  // namespace gaia::spec
