// gaia plan DIR...: what a submit would do, computed by the very same decision on the
// state read from the store, and printed without writing anything: apps deployed or
// reused, instances placed (node, address, why), preemptions, what stays pending and why.
// With --out FILE it plans an apply instead (the decision `gaia diff` shows) and saves
// it, with the hash of every input and the store revision, for `gaia apply FILE`.
#include <fmt/format.h>

#include "cli/apply_view.hpp"
#include "cli/context.hpp"
#include "cli/render_flags.hpp"
#include "cli/submission_view.hpp"
#include "ops/saved_plan.hpp"
#include "ops/submission.hpp"

namespace gaia::cli {

namespace {

struct PlanArgs {
  std::vector<std::string> dirs;
  std::string tenant;
  std::string output = "text";
  RenderFlags flags;
  std::vector<std::string> files;  // -f (joined to dirs before running)
  std::string out;     // --out FILE: save an apply plan.
  std::string source;  // --source (with --out)
  bool prune = false;  // --prune (with --out)
  std::string name;    // --name: the release the one spec is planned as.
};

// `gaia plan -f PATH... --out FILE`: the apply decision, printed as `gaia diff` prints
// it, and saved with everything `gaia apply FILE` checks for drift.
int run_plan_out(const Globals& g, const PlanArgs& a, Session& s) {
  ApplyFlags f;
  f.paths = a.dirs;
  f.source = a.source;
  f.tenant = a.tenant;
  f.prune = a.prune;
  f.flags = a.flags;
  auto request = f.request(g);
  if (!request) return report(g, request.error());
  auto saved = ops::save_plan(s.workspace(), *request, s.context.store, a.out);
  if (!saved) return report(g, saved.error());
  const ops::SavedPlan& p = saved->saved;

  ApplyView view{.dry_run = true};
  if (a.output == "json") {
    auto j = apply_plan_json(saved->plan, p.tenant, p.source, view);
    j["out"] = a.out;
    j["inputs"] = p.inputs.size();
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  std::fputs(format_apply_plan(g, saved->plan, p.tenant, p.source, view).c_str(), stdout);
  std::printf("plan saved to %s (store revision %lld, %zu input file(s) hashed); apply exactly this plan with "
              "`gaia apply %s`\n",
              a.out.c_str(), static_cast<long long>(p.revision), p.inputs.size(), a.out.c_str());
  return k_ok;
}

int run_plan(const Globals& g, const PlanArgs& a) {
  if (!a.flags.running_file.empty())
    return report_error(g, "--running is not used by plan", "plan resolves against the apps running in the store");
  if (a.dirs.empty()) {
    report_error(g, "nothing to plan", "gaia plan DIR... or gaia plan -f DIR... [--out plan.json]");
    return k_usage;
  }
  if (a.out.empty() && (a.prune || !a.source.empty())) {
    report_error(g, "--prune and --source plan an apply: they need --out FILE", "gaia plan -f DIR --prune --out plan.json; "
                                                                               "`gaia diff -f DIR --prune` only shows it");
    return k_usage;
  }
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  if (!a.out.empty()) {
    if (!a.name.empty()) {
      report_error(g, "--name plans a submit of one spec; it does not go with --out",
                   "gaia plan DIR --name RELEASE shows it; then gaia submit DIR --name RELEASE");
      return k_usage;
    }
    return run_plan_out(g, a, **session);
  }
  auto planned = ops::plan((*session)->workspace(), ops::SubmitRequest{tenant, a.dirs, a.flags.settings(g), a.name});
  if (!planned) return report(g, planned.error());
  warn_unknown_tenant(g, planned->state, tenant);
  OutcomeView view{.dry_run = true, .explain_scores = true};
  if (a.output == "json") {
    auto j = outcome_json(*planned->submission, planned->outcome, view);
    j["revision"] = planned->state.revision;  // For `gaia apply --check-revision N` in pipelines.
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (planned->state.snapshot.nodes.empty())
    std::fprintf(stderr, "%s the cluster has no nodes: create one with `gaia cluster create`\n",
                 yellow(g, stderr, "warning:").c_str());
  std::fputs(format_outcome(g, *planned->submission, planned->outcome, view).c_str(), stdout);
  return k_ok;
}

}  // namespace

void register_plan(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("plan", "Show what submitting the specs would do, without writing anything");
  cmd->footer(
      "Examples:\n"
      "  gaia plan examples/web                  # apps, placements and why, preemptions, pending\n"
      "  gaia plan examples/spark --set workers=20\n"
      "  gaia plan examples/web -o json             # .revision: the store revision it was planned at\n"
      "  gaia plan -f specs/ --prune --out plan.json && gaia apply plan.json   # apply exactly the reviewed plan");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("DIR", a->dirs, "App directories (or folders of them) submitted together");
  cmd->add_option("-f,--filename", a->files, "Same as DIR (repeatable), as `gaia apply -f` takes it")->type_name("PATH");
  cmd->add_option("--out", a->out, "Save an apply plan (inputs hashed, store revision) for `gaia apply FILE`")
      ->type_name("FILE");
  cmd->add_option("--source", a->source, "With --out: the source owning what the set creates (as for apply)")
      ->type_name("NAME");
  cmd->add_flag("--prune", a->prune, "With --out: also plan deleting what the source created and left the set");
  cmd->add_option("--tenant", a->tenant, "Tenant to plan in (default: the global --tenant)")->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--name", a->name, "Release name the one spec would be submitted as (as submit --name)")
      ->type_name("RELEASE");
  a->flags.add_to(cmd);
  cmd->callback([&g, code, a] {
    PlanArgs all = *a;
    all.dirs.insert(all.dirs.end(), a->files.begin(), a->files.end());
    *code = run_plan(g, all);
  });
}

}  // namespace gaia::cli
