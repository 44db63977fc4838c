#pragma once
// What `gaia apply`, `gaia diff` and `gaia plan --out` show of an apply set
// (ops/apply_set.hpp): the flags naming the set, and the decision as text or JSON.

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/render_flags.hpp"
#include "controllers/apply.hpp"
#include "ops/apply_set.hpp"

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
  // The set as ops/ takes it. A --running file is refused: sets are resolved against the
  // apps running in the store.
  Result<ops::SetRequest> request(const Globals& g) const;
};

struct ApplyView {
  bool dry_run = true;       // diff, plan, apply --dry-run: nothing was written.
  size_t max_instances = 10;  // Instance lines per app in text (the rest are counted).
  // The plan kept secret values (`gaia diff --show-secrets`): print them, marked.
  bool show_secrets = false;
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
