// gaia plan DIR...: what a submit would do, computed by the very same decision on the
// state read from the store, and printed without writing anything: apps deployed or
// reused, instances placed (node, address, why), preemptions, what stays pending and why.
#include <fmt/format.h>

#include "cli/context.hpp"
#include "cli/submission.hpp"

namespace gaia::cli {

namespace {


struct PlanArgs {
  std::vector<std::string> dirs;
  std::string tenant;
  std::string output = "text";
  RenderFlags flags;
};

int run_plan(const Globals& g, const PlanArgs& a) {
  if (!a.flags.running_file.empty())
    return report_error(g, "--running is not used by plan", "plan resolves against the apps running in the store");
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto& state = *(*session)->state;
  auto loaded = state.load();
  if (!loaded) return report(g, loaded.error());
  auto sub = prepare_submission(g, tenant, a.dirs, a.flags, state);
  if (!sub) return report(g, sub.error());
  SubmitOutcome out = plan_submit(*loaded, (*sub)->apps);
  warn_unknown_tenant(g, *loaded, tenant);
  OutcomeView view{.dry_run = true, .explain_scores = true};
  if (a.output == "json") {
    std::printf("%s\n", outcome_json(**sub, out, view).dump(2).c_str());
    return k_ok;
  }
  if (loaded->snapshot.nodes.empty())
    std::fprintf(stderr, "%s the cluster has no nodes: create one with `gaia cluster create`\n",
                 yellow(g, stderr, "warning:").c_str());
  std::fputs(format_outcome(g, **sub, out, view).c_str(), stdout);
  return k_ok;
}

}  // namespace

void register_plan(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("plan", "Show what submitting the specs would do, without writing anything");
  cmd->footer(
      "Examples:\n"
      "  gaia plan examples/web                  # apps, placements and why, preemptions, pending\n"
      "  gaia plan examples/spark --set workers=20\n"
      "  gaia plan examples/web -o json");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("DIR", a->dirs, "App directories (or folders of them) submitted together")->required();
  cmd->add_option("--tenant", a->tenant, "Tenant to plan in (default: the global --tenant)")->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  a->flags.add_to(cmd);
  cmd->callback([&g, code, a] { *code = run_plan(g, *a); });
}

}  // namespace gaia::cli
