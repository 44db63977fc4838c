// gaia apply -f PATH... | gaia apply PLAN.json: converges the store to a set of specs
// (CI pipelines). The set is resolved and rendered together, plan_apply decides what to
// deploy, update and (with --prune) delete, and the decision is committed in one store
// transaction: re-decided on a concurrent write, refused when --check-revision or a
// saved plan's revision no longer holds. Then the controllers run inline, and --wait
// follows them until every applied app runs.
#include <fmt/format.h>

#include <optional>

#include "cli/apply_view.hpp"
#include "cli/context.hpp"
#include "cli/controller_loop.hpp"
#include "cli/submission_view.hpp"
#include "lib/timeline.hpp"
#include "ops/apply_set.hpp"
#include "ops/saved_plan.hpp"

namespace gaia::cli {

namespace {

namespace fs = std::filesystem;

struct ApplyArgs {
  ApplyFlags set;
  std::vector<std::string> positional;
  bool dry_run = false;
  std::optional<int64_t> check_revision;
  std::string output = "text";
  bool wait = false;
  std::string timeout = "5m";
};

bool is_plan_file(const std::string& path) {
  std::error_code ec;
  return path.ends_with(".json") && fs::is_regular_file(path, ec);
}

// Prints the decision and what the controllers did after it, then waits.
int finish(const Globals& g, const ApplyArgs& a, Session& s, const ops::Applied& applied) {
  bool json = a.output == "json";
  bool print = !json && !g.quiet;
  ApplyView view{.dry_run = a.dry_run};
  nlohmann::json j;
  if (json) j = apply_plan_json(applied.plan, applied.tenant, applied.source, view);
  else if (!g.quiet || a.dry_run) std::fputs(format_apply_plan(g, applied.plan, applied.tenant, applied.source, view).c_str(), stdout);
  if (a.dry_run) {
    if (json) std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (applied.plan.changed()) {
    if (print) std::printf("applied at store revision %lld (operation %s; `gaia events --op %s` shows every event)\n",
                           static_cast<long long>(applied.state.revision), s.op.c_str(), s.op.c_str());
    if (print && applied.controllers) print_controller_events(g, applied.controllers->outcome.batch);
  }
  const ClusterState& after = applied.final_state();
  if (json) {
    j["op"] = applied.plan.changed() ? s.op : "";
    j["revision_after"] = after.revision;
  }
  if (!a.wait) {
    if (json) std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  auto timeout = parse_duration(a.timeout);
  auto names = applied.waited_apps();
  if (print && !ops::blocking_instances(after, applied.tenant, names).empty())
    std::printf("\n%s\n", bold(g, stdout, fmt::format("waiting up to {} for every instance to run:", a.timeout)).c_str());
  FollowOptions options;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  options.print = print;
  Result<ops::AppsWait> w = ops::AppsWait{};
  {
    FollowProgress progress(g, options);
    w = ops::wait_for_apps(s.workspace(), applied.tenant, names, progress.options());
  }
  if (!w) return report(g, w.error());
  if (json) {
    j["revision_after"] = w->state.revision;
    j["wait"] = {{"done", w->done}, {"timeout", a.timeout}, {"blocking", blockers_json(w->blockers)}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  if (!w->done) {
    std::fprintf(stderr, "%s %zu instance(s) still not running after %s:\n", red(g, stderr, "error:").c_str(),
                 w->blockers.size(), a.timeout.c_str());
    std::fputs(format_blockers(w->blockers).c_str(), stderr);
    std::fprintf(stderr, "  hint: `gaia explain INSTANCE` shows every filter per node; add nodes (`gaia node add`) "
                         "or free capacity\n");
    return k_error;
  }
  if (print) std::printf("%s every instance of the applied apps is running\n", green(g, stdout, "ready:").c_str());
  return k_ok;
}

int apply_dirs(const Globals& g, const ApplyArgs& a, Session& s) {
  ApplyFlags f = a.set;
  f.paths.insert(f.paths.end(), a.positional.begin(), a.positional.end());
  auto request = f.request(g);
  if (!request) return report(g, request.error());
  auto applied = ops::apply_set(s.workspace(), *request, ops::ApplyOptions{a.dry_run, a.check_revision});
  if (!applied) return report(g, applied.error());
  warn_unknown_tenant(g, applied->state, applied->tenant);
  return finish(g, a, s, *applied);
}

int apply_saved(const Globals& g, const ApplyArgs& a, Session& s, const std::string& file) {
  if (!a.set.paths.empty() || a.set.prune || !a.set.source.empty() || !a.set.tenant.empty() ||
      !a.set.flags.sets.empty() || !a.set.flags.values.empty() || !a.set.flags.config_file.empty())
    return report_error(g, "a saved plan carries its own paths, tenant, source, --prune and overrides",
                        fmt::format("apply it alone (`gaia apply {}`), or plan again with the flags you want", file));
  auto applied = ops::apply_saved_plan(s.workspace(), file, s.context.store, ops::ApplyOptions{a.dry_run, a.check_revision});
  if (!applied) return report(g, applied.error());
  return finish(g, a, s, *applied);
}

int run_apply(const Globals& g, const ApplyArgs& a) {
  std::vector<std::string> all = a.set.paths;
  all.insert(all.end(), a.positional.begin(), a.positional.end());
  if (all.empty()) {
    report_error(g, "nothing to apply", "gaia apply -f DIR [-f DIR...] (app directories or folders of them), or gaia apply PLAN.json");
    return k_usage;
  }
  auto timeout = parse_duration(a.timeout);
  if (!timeout) return report(g, timeout.error());
  if (std::chrono::duration_cast<std::chrono::milliseconds>(*timeout).count() <= 0)
    return report_error(g, fmt::format("--timeout {}: must be positive", a.timeout), "write a duration such as 30s, 5m or 1h");
  if (a.wait && a.dry_run) {
    report_error(g, "--wait and --dry-run exclude each other", "--dry-run writes nothing, so there is nothing to wait for");
    return k_usage;
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  std::optional<std::string> plan_file;
  for (const auto& p : all)
    if (is_plan_file(p)) plan_file = p;
  if (plan_file && all.size() > 1)
    return report_error(g, fmt::format("{} is a saved plan: it is applied on its own", *plan_file),
                        fmt::format("gaia apply {}", *plan_file));
  if (plan_file) {
    ApplyArgs rest = a;
    rest.set.paths.clear();
    return apply_saved(g, rest, **session, *plan_file);
  }
  return apply_dirs(g, a, **session);
}

}  // namespace

void register_apply(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("apply", "Converge the cluster to a folder of specs (deploy, update, --prune)");
  cmd->footer(
      "Examples:\n"
      "  gaia apply -f specs/                         # every app directory under specs/\n"
      "  gaia apply -f specs/ --prune --source prod   # also delete what source 'prod' created and left the set\n"
      "  gaia apply -f specs/ --dry-run               # the decision, nothing written (same as gaia diff)\n"
      "  gaia apply -f specs/ --check-revision 42     # refuse if the store moved since revision 42\n"
      "  gaia plan -f specs/ --out plan.json && gaia apply plan.json   # apply exactly the reviewed plan\n"
      "Exit codes: 0 applied (or nothing to change), 1 error (nothing applied) or --wait timed out, 2 usage.");
  auto a = std::make_shared<ApplyArgs>();
  cmd->add_option("PATH", a->positional, "App directories or folders of them (like -f), or one saved PLAN.json");
  a->set.add_to(cmd);
  cmd->add_flag("--dry-run", a->dry_run, "Print the decision without writing anything");
  cmd->add_option("--check-revision", a->check_revision, "Refuse unless the store is at this revision (optimistic lock)")
      ->type_name("N");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_flag("--wait", a->wait, "Wait until every instance of the applied apps runs");
  cmd->add_option("--timeout", a->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  cmd->callback([&g, code, a] { *code = run_apply(g, *a); });
}

}  // namespace gaia::cli
