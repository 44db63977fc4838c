// gaia submit DIR...: resolves the chain against the apps running in the store, renders
// it, and commits plan_submit's decision (deploying dependencies first; a dependent is
// placed once its dependencies are ready). Prints the plan, then, with --wait, progress
// until every instance of the submitted apps runs; on a timeout it names each blocking
// instance and why.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "cli/context.hpp"
#include "cli/controller_loop.hpp"
#include "cli/progress.hpp"
#include "cli/propagation_view.hpp"
#include "cli/render_flags.hpp"
#include "cli/submission_view.hpp"
#include "lib/timeline.hpp"
#include "ops/submission.hpp"

namespace gaia::cli {

namespace {

struct SubmitArgs {
  std::vector<std::string> dirs;
  std::string tenant;
  std::string output = "text";
  bool wait = false;
  std::string timeout = "5m";
  std::string name;
  RenderFlags flags;
};

// --wait: the controllers (the placement of what is pending, restarts and so on) run
// until every instance of `apps` runs or the timeout passes. Their placements are shown
// as they happen, under a status line counting the submitted apps' instances.
Result<ops::AppsWait> wait_for(const Globals& g, Session& session, const std::string& tenant,
                               const std::vector<std::string>& apps, std::chrono::milliseconds timeout, bool print) {
  FollowOptions view;
  view.timeout = timeout;
  view.print = print;
  view.lines = [&g](const Batch& batch) {
    std::vector<std::string> lines;
    for (const auto& e : batch.events)
      if (e.reason == "Scheduled")
        lines.push_back(fmt::format("  {} {} {}", green(g, stdout, "placed"), e.instance, e.message));
    return lines;
  };
  // "12/40 instances running (28 waiting: 20 ResourceFit, 8 Dependency)".
  view.status = [&](const ClusterState& st) {
    size_t total = 0;
    for (const auto& i : st.snapshot.instances)
      if (i.tenant == tenant && std::ranges::find(apps, i.app) != apps.end()) ++total;
    std::vector<Waiting> waiting;
    for (const auto& b : ops::blocking_instances(st, tenant, apps)) waiting.push_back({b.state, b.reason});
    return progress_summary(total - std::min(total, waiting.size()), total, waiting);
  };
  FollowProgress progress(g, view);
  return ops::wait_for_apps(session.workspace(), tenant, apps, progress.options());
}

int run_submit(const Globals& g, const SubmitArgs& a) {
  if (!a.flags.running_file.empty())
    return report_error(g, "--running is not used by submit", "submit resolves against the apps running in the store");
  auto timeout = parse_duration(a.timeout);
  if (!timeout) return report(g, timeout.error());
  auto timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(*timeout);
  if (timeout_ms.count() <= 0)
    return report_error(g, fmt::format("--timeout {}: must be positive", a.timeout), "write a duration such as 30s, 5m or 1h");
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  auto submitted = ops::submit(s.workspace(), ops::SubmitRequest{tenant, a.dirs, a.flags.settings(g), a.name});
  if (!submitted) return report(g, submitted.error());
  KeptUntilExit keep(g, s, *submitted);
  const ops::Submission& sub = *submitted->submission;
  const SubmitOutcome& out = submitted->outcome;
  const ClusterState& committed = *submitted->controllers.state;
  warn_unknown_tenant(g, committed, tenant);

  bool json = a.output == "json";
  OutcomeView view{.dry_run = false, .explain_scores = true};
  if (!json && !g.quiet) {
    if (committed.snapshot.nodes.empty())
      std::fprintf(stderr, "%s the cluster has no nodes: create one with `gaia cluster create`\n",
                   yellow(g, stderr, "warning:").c_str());
    std::fputs(format_outcome(g, sub, out, view).c_str(), stdout);
    if (std::string summary = controller_summary(submitted->controllers.outcome.batch); !summary.empty())
      std::printf("%s %s\n", bold(g, stdout, "controllers:").c_str(), summary.c_str());
    if (out.changed()) std::printf("operation %s (see `gaia events --op %s`)\n", s.op.c_str(), s.op.c_str());
    std::fflush(stdout);
  }

  auto apps = sub.app_names();
  if (a.wait) {
    bool print = !json && !g.quiet;
    if (print && !ops::blocking_instances(committed, tenant, apps).empty())
      std::printf("\n%s\n", bold(g, stdout, fmt::format("waiting up to {} for every instance to run:", a.timeout)).c_str());
    auto w = wait_for(g, s, tenant, apps, timeout_ms, print);
    if (!w) return report(g, w.error());
    if (json) {
      auto j = outcome_json(sub, out, view);
      j["op"] = s.op;
      j["wait"] = nlohmann::json{{"done", w->done}, {"timeout", a.timeout}, {"blocking", blockers_json(w->blockers)}};
      std::printf("%s\n", j.dump(2).c_str());
    }
    if (!w->done) {
      std::fprintf(stderr, "%s %zu instance(s) of %s still not running after %s:\n", red(g, stderr, "error:").c_str(),
                   w->blockers.size(), fmt::format("{}", fmt::join(apps, ", ")).c_str(), a.timeout.c_str());
      std::fputs(format_blockers(w->blockers).c_str(), stderr);
      std::fprintf(stderr, "  hint: `gaia explain INSTANCE` shows every filter per node; add nodes "
                           "(`gaia node add`) or free capacity (`gaia delete APP`)\n");
      return k_error;
    }
    if (print) std::printf("%s every instance of %s is running\n", green(g, stdout, "ready:").c_str(),
                           fmt::format("{}", fmt::join(apps, ", ")).c_str());
    return k_ok;
  }

  if (json) {
    auto j = outcome_json(sub, out, view);
    j["op"] = s.op;
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  auto blockers = ops::blocking_instances(committed, tenant, apps);
  if (!blockers.empty() && !g.quiet) {
    std::printf("\n%s %zu instance(s) not running yet (submitted; they are retried when capacity frees up, or "
                "use --wait):\n",
                yellow(g, stdout, "note:").c_str(), blockers.size());
    std::fputs(format_blockers(blockers).c_str(), stdout);
  }
  return k_ok;
}

}  // namespace

void register_submit(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("submit", "Deploy app specs (and the chain they depend on) on the cluster");
  cmd->footer(
      "Examples:\n"
      "  gaia submit examples/web --wait                 # the whole chain, dependencies first\n"
      "  gaia submit examples/spark --set workers=8 --wait --timeout 30s\n"
      "  gaia submit examples/web --tenant shop -o json\n"
      "  gaia submit examples/hdfs --name hdfs-analytics   # a second release of hdfs beside the first\n"
      "Exit codes: 0 submitted (instances may be pending without --wait), 1 error or --wait timed out.");
  auto a = std::make_shared<SubmitArgs>();
  cmd->add_option("DIR", a->dirs, "App directories (or folders of them) submitted together")->required();
  cmd->add_option("--tenant", a->tenant, "Tenant to deploy in (default: the global --tenant)")->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--name", a->name,
                  "Release name to deploy the one spec as (default: its app's name); names its instances, endpoints "
                  "and DNS names, and lets several releases of one app run in a tenant")
      ->type_name("RELEASE");
  cmd->add_flag("--wait", a->wait, "Wait until every instance of the submitted apps runs (retrying pending ones)");
  cmd->add_option("--timeout", a->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  a->flags.add_to(cmd);
  cmd->callback([&g, code, a] { *code = run_submit(g, *a); });
}

}  // namespace gaia::cli
