// gaia apply -f PATH... | gaia apply PLAN.json: converges the store to a set of specs
// (CI pipelines). The set is resolved and rendered together, plan_apply decides what to
// deploy, update and (with --prune) delete, and the decision is committed in one store
// transaction: re-decided on a concurrent write, refused when --check-revision or a
// saved plan's revision no longer holds. Then the controllers run inline, and --wait
// follows them until every applied app runs.
#include <fmt/format.h>

#include <optional>

#include "cli/apply_set.hpp"
#include "cli/context.hpp"
#include "cli/controller_loop.hpp"
#include "cli/saved_plan.hpp"
#include "lib/timeline.hpp"

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

Diagnostic revision_moved(int64_t now, int64_t wanted) {
  return Diagnostic{{}, "--check-revision",
                    fmt::format("the store is at revision {}, not {}: it changed since it was read, so nothing was applied",
                                now, wanted),
                    fmt::format("review the changes again (`gaia diff -f PATH...`), then apply with --check-revision {}",
                                now)};
}

// What the apply committed, and how to print it.
struct Applied {
  ApplyPlan plan;
  ClusterState state;  // After the commit (or as read, when nothing changed).
  std::string tenant, source;
};

// Prints the decision, runs the controllers when something was written, and waits.
int finish(const Globals& g, const ApplyArgs& a, Session& s, Applied& applied) {
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
  std::vector<std::string> names;
  for (const auto& c : applied.plan.apps)
    if (c.action != "prune" && c.action != "keep") names.push_back(c.name);
  if (applied.plan.changed()) {
    if (print) std::printf("applied at store revision %lld (operation %s; `gaia events --op %s` shows every event)\n",
                           static_cast<long long>(applied.state.revision), s.op.c_str(), s.op.c_str());
    // Inline controllers only after a write: an apply that changed nothing writes nothing.
    auto run = run_controllers(s);
    if (!run) return report(g, run.error());
    if (print) print_controller_events(g, run->outcome.batch);
    applied.state = std::move(run->state);
  }
  if (json) {
    j["op"] = applied.plan.changed() ? s.op : "";
    j["revision_after"] = applied.state.revision;
  }
  if (!a.wait) {
    if (json) std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  auto timeout = parse_duration(a.timeout);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  if (print && !blocking_instances(applied.state, applied.tenant, names).empty())
    std::printf("\n%s\n", bold(g, stdout, fmt::format("waiting up to {} for every instance to run:", a.timeout)).c_str());
  FollowOptions options;
  options.timeout = ms;
  options.print = print;
  const std::string tenant = applied.tenant;
  auto f = follow_controllers(g, s, [&](const ClusterState& st) { return blocking_instances(st, tenant, names).empty(); },
                              options);
  if (!f) return report(g, f.error());
  auto blockers = blocking_instances(f->state, tenant, names);
  if (json) {
    j["revision_after"] = f->state.revision;
    j["wait"] = {{"done", f->done}, {"timeout", a.timeout}, {"blocking", blockers_json(blockers)}};
    std::printf("%s\n", j.dump(2).c_str());
  }
  if (!f->done) {
    std::fprintf(stderr, "%s %zu instance(s) still not running after %s:\n", red(g, stderr, "error:").c_str(),
                 blockers.size(), a.timeout.c_str());
    std::fputs(format_blockers(blockers).c_str(), stderr);
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
  auto source = apply_source(f);
  if (!source) return report(g, source.error());
  auto loaded = s.state->load();
  if (!loaded) return report(g, loaded.error());
  if (a.check_revision && loaded->revision != *a.check_revision)
    return report(g, {revision_moved(loaded->revision, *a.check_revision)});
  auto center = StoreConfigSource::load(*s.store);
  if (!center) return report(g, center.error());
  auto set = load_apply_set(g, f, *source, *loaded, &*center);
  if (!set) return report(g, set.error());
  warn_unknown_tenant(g, *loaded, set->request.tenant);

  Applied applied{{}, *loaded, set->request.tenant, *source};
  if (a.dry_run) {
    applied.plan = plan_apply(*loaded, set->request);
    return finish(g, a, s, applied);
  }
  // Decided inside the transaction: a concurrent writer makes it decide again on what
  // that writer committed (resolving the set again if the apps it reuses changed), so two
  // applies never interleave; with --check-revision the retry fails instead.
  auto committed = s.state->update(s.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    if (a.check_revision && st.revision != *a.check_revision) return fail(revision_moved(st.revision, *a.check_revision));
    if (resolution_fingerprint(st, set->request.tenant) != set->fingerprint) {
      auto again = load_apply_set(g, f, *source, st, &*center);
      if (!again) return fail(again.error());
      *set = std::move(*again);
    }
    applied.plan = plan_apply(st, set->request);
    b = applied.plan.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  applied.state = std::move(*committed);
  return finish(g, a, s, applied);
}

int apply_saved(const Globals& g, const ApplyArgs& a, Session& s, const std::string& file) {
  if (!a.set.paths.empty() || a.set.prune || !a.set.source.empty() || !a.set.tenant.empty() ||
      !a.set.flags.sets.empty() || !a.set.flags.values.empty() || !a.set.flags.config_file.empty())
    return report_error(g, "a saved plan carries its own paths, tenant, source, --prune and overrides",
                        fmt::format("apply it alone (`gaia apply {}`), or plan again with the flags you want", file));
  auto p = read_saved_plan(file);
  if (!p) return report(g, p.error());
  auto loaded = s.state->load();
  if (!loaded) return report(g, loaded.error());
  if (a.check_revision && loaded->revision != *a.check_revision)
    return report(g, {revision_moved(loaded->revision, *a.check_revision)});
  std::error_code ec;
  std::string store = fs::weakly_canonical(fs::absolute(s.context.store, ec), ec).string();
  auto drift = plan_drift(*p, file, store, loaded->revision, gaia_version());
  std::vector<std::string> shown;
  for (const auto& path : p->paths) shown.push_back(display_path(path));
  std::string replan = fmt::format("plan again (`gaia plan -f {} --out {}`), review it, and apply the new plan",
                                   fmt::join(shown, " -f "), file);
  if (!drift.empty()) {
    Diagnostics ds;
    for (const auto& d : drift) ds.push_back(Diagnostic{{file}, "", "drifted since the plan was made: " + d, ""});
    ds.back().hint = replan + "; nothing was applied";
    return report(g, ds);
  }
  Applied applied{{}, *loaded, p->tenant, p->source};
  auto decide = [&](const ClusterState& st) -> Result<void> {
    if (st.revision != p->revision)
      return fail(Diagnostic{{file}, "", fmt::format("drifted since the plan was made: the store is at revision {}, the plan "
                                                     "was made at revision {}", st.revision, p->revision),
                             replan + "; nothing was applied"});
    applied.plan = plan_apply(st, p->request);
    if (decision_summary(applied.plan) != p->decision)
      return fail(Diagnostic{{file}, "decision", "the decision made now differs from the reviewed one", replan});
    return {};
  };
  if (a.dry_run) {
    if (auto d = decide(*loaded); !d) return report(g, d.error());
    return finish(g, a, s, applied);
  }
  auto committed = s.state->update(s.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    if (auto d = decide(st); !d) return d;
    b = applied.plan.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  applied.state = std::move(*committed);
  return finish(g, a, s, applied);
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
