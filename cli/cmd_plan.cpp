// gaia plan DIR...: what a submit would do, computed by the very same decision on the
// state read from the store, and printed without writing anything: apps deployed or
// reused, instances placed (node, address, why), preemptions, what stays pending and why.
// With --out FILE it plans an apply instead (the decision `gaia diff` shows) and saves
// it, with the hash of every input and the store revision, for `gaia apply FILE`.
#include <fmt/format.h>

#include "cli/apply_set.hpp"
#include "cli/context.hpp"
#include "cli/saved_plan.hpp"
#include "cli/submission.hpp"

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
};

// `gaia plan -f PATH... --out FILE`: the apply decision, printed as `gaia diff` prints
// it, and saved with everything `gaia apply FILE` checks for drift.
int run_plan_out(const Globals& g, const PlanArgs& a, Session& s, const ClusterState& loaded,
                 const StoreConfigSource& center) {
  ApplyFlags f;
  f.paths = a.dirs;
  f.source = a.source;
  f.tenant = a.tenant;
  f.prune = a.prune;
  f.flags = a.flags;
  auto source = apply_source(f);
  if (!source) return report(g, source.error());
  auto set = load_apply_set(g, f, *source, loaded, &center);
  if (!set) return report(g, set.error());
  ApplyPlan plan = plan_apply(loaded, set->request);

  SavedPlan p;
  p.gaia_version = gaia_version();
  std::error_code ec;
  p.store = std::filesystem::weakly_canonical(std::filesystem::absolute(s.context.store, ec), ec).string();
  p.revision = loaded.revision;
  p.created = s.state->now_rfc3339();
  p.tenant = set->request.tenant;
  p.source = *source;
  p.prune = a.prune;
  for (const auto& d : a.dirs)
    p.paths.push_back(std::filesystem::weakly_canonical(std::filesystem::absolute(d, ec), ec).string());
  auto expanded = expand_spec_paths(p.paths);
  if (!expanded) return report(g, expanded.error());
  for (const auto& d : *expanded) p.set_dirs.push_back(d.string());
  p.overrides = {{"set", a.flags.sets}, {"values", a.flags.values}, {"config_file", a.flags.config_file}};
  p.scope = input_scope(g, f, *set->submission);
  auto hashes = hash_inputs(p.scope, a.out);
  if (!hashes) return report(g, hashes.error());
  p.inputs = std::move(*hashes);
  p.request = set->request;
  p.decision = decision_summary(plan);
  if (auto w = write_saved_plan(a.out, p); !w) return report(g, w.error());

  ApplyView view{.dry_run = true};
  if (a.output == "json") {
    auto j = apply_plan_json(plan, p.tenant, p.source, view);
    j["out"] = a.out;
    j["inputs"] = p.inputs.size();
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  std::fputs(format_apply_plan(g, plan, p.tenant, p.source, view).c_str(), stdout);
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
  auto& state = *(*session)->state;
  auto loaded = state.load();
  if (!loaded) return report(g, loaded.error());
  auto center = StoreConfigSource::load(*(*session)->store);
  if (!center) return report(g, center.error());
  if (!a.out.empty()) return run_plan_out(g, a, **session, *loaded, *center);
  auto sub = prepare_submission(g, tenant, a.dirs, a.flags, state, &*center);
  if (!sub) return report(g, sub.error());
  SubmitOutcome out = plan_submit(*loaded, (*sub)->apps);
  warn_unknown_tenant(g, *loaded, tenant);
  OutcomeView view{.dry_run = true, .explain_scores = true};
  if (a.output == "json") {
    auto j = outcome_json(**sub, out, view);
    j["revision"] = loaded->revision;  // For `gaia apply --check-revision N` in pipelines.
    std::printf("%s\n", j.dump(2).c_str());
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
  a->flags.add_to(cmd);
  cmd->callback([&g, code, a] {
    PlanArgs all = *a;
    all.dirs.insert(all.dirs.end(), a->files.begin(), a->files.end());
    *code = run_plan(g, all);
  });
}

}  // namespace gaia::cli
