// gaia diff -f PATH...: what `gaia apply` would change, as a readable semantic diff:
// per app deploy / update (field by field, secrets masked unless --show-secrets) /
// unchanged / reuse / prune, where new instances would land, and the apps outside the
// set it would affect. The decision is plan_apply on the state read from the store, the
// one apply commits.
//
// Exit codes follow diff(1) and `git diff --exit-code`: 0 no changes, 2 changes, 1 any
// error, usage errors included (cli/app.cpp maps them), so an error never reads as
// "no differences" nor as "changes".
#include <fmt/format.h>

#include "cli/apply_view.hpp"
#include "cli/context.hpp"
#include "cli/secret_flags.hpp"
#include "ops/apply_set.hpp"

namespace gaia::cli {

namespace {

struct DiffArgs {
  ApplyFlags set;
  std::vector<std::string> positional;
  std::string output = "text";
  bool show_secrets = false;
};

int run_diff(const Globals& g, const DiffArgs& a) {
  ApplyFlags f = a.set;
  f.paths.insert(f.paths.end(), a.positional.begin(), a.positional.end());
  if (f.paths.empty())
    return report_error(g, "nothing to diff", "gaia diff -f DIR [-f DIR...] (app directories or folders of them)");
  auto request = f.request(g);
  if (!request) return report(g, request.error());
  request->show_secrets = a.show_secrets;
  if (auto source = ops::apply_source(*request); !source) return report(g, source.error());
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto decided = ops::decide_set((*session)->workspace(), *request);
  if (!decided) return report(g, decided.error());
  const ApplyPlan& plan = decided->plan;
  ApplyView view{.dry_run = true, .show_secrets = a.show_secrets};
  const std::string& tenant = decided->set.request.tenant;
  if (a.output == "json") std::printf("%s\n", apply_plan_json(plan, tenant, decided->source, view).dump(2).c_str());
  else std::fputs(format_apply_plan(g, plan, tenant, decided->source, view).c_str(), stdout);
  return plan.changed() ? k_changes : k_ok;
}

}  // namespace

void register_diff(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("diff", "Show what `gaia apply` would change (exit 0: none, 2: changes, 1: error)");
  cmd->footer(
      "Examples:\n"
      "  gaia diff -f specs/                     # per app: deploy, update (fields), unchanged, prune\n"
      "  gaia diff -f specs/ --prune --source prod\n"
      "  gaia diff -f specs/ -o json | jq '.apps[] | select(.action != \"unchanged\")'\n"
      "Exit codes: 0 no changes, 2 changes, 1 error (usage errors included): an error never looks like\n"
      "\"no differences\".");
  auto a = std::make_shared<DiffArgs>();
  cmd->add_option("PATH", a->positional, "App directories or folders of them (like -f)");
  a->set.add_to(cmd);
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  add_show_secrets(cmd, a->show_secrets);
  cmd->callback([&g, code, a] { *code = run_diff(g, *a); });
}

int usage_exit_code(const CLI::App& app) {
  // CLI11 records a subcommand as parsed before parsing its own flags, so a bad flag of
  // `gaia diff` is seen here as diff's.
  for (const auto* sub : app.get_subcommands())
    if (sub->get_name() == "diff") return k_error;
  return k_usage;
}

}  // namespace gaia::cli
