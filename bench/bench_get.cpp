// What `gaia get apps` costs on a large cluster (issue 13).
//
//  get-apps-10k  10,000 apps in the default tenant, each of two roles (6 + 4 replicas:
//                100,000 instances on 5,000 nodes, one instance in ten still pending),
//                written through State::update into a real SQLite file in a temp dir.
//                Then what `gaia get apps` reads, in process, both ways in the same run:
//                the full load of the cluster with the per-app count the command made
//                before (every instance decoded, and scanned once per app), and
//                State::load_apps (apps and per-app serving counts only). Both must give
//                the same counts. Then the app summaries the fill's commits kept, which a
//                table now reads (lib/app_summary.hpp): they must say the same. Last, the
//                real `gaia get apps` binary on that store
//                (XDG_STATE_HOME pointed at it), wall time and the child's peak RSS;
//                with GAIA_BENCH_BASELINE_CLI=PATH, also that binary (an earlier build)
//                in the same run, and whether it printed the same text.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "bench/child.hpp"
#include "cli/cluster_view.hpp"
#include "controllers/submit.hpp"
#include "lib/app_summary.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"

namespace gaia::bench {
namespace {

constexpr int k_get_apps = 10000;
constexpr int k_get_nodes = 5000;
constexpr int k_get_apps_per_commit = 1000;

// The clusters the cases fill: apps of two roles, `server` and `worker` replicas each.
struct GetAppsShape {
  int apps, nodes, server, worker, apps_per_commit;
  int instances() const { return apps * (server + worker); }
};
constexpr GetAppsShape k_get_10k{k_get_apps, k_get_nodes, 6, 4, k_get_apps_per_commit};
// One million instances on 10,000 nodes: 10,000 apps of 60 + 40.
constexpr GetAppsShape k_get_1m{10000, 10000, 60, 40, 100};

// Two roles per app, 6 + 4 replicas, as a small service and its workers.
GenApp get_bench_app(int n, const GetAppsShape& shape) {
  GenApp g;
  g.tenant = "default";
  g.name = fmt::format("app{:05d}", n);
  Rng rng(static_cast<uint64_t>(n) + 13);
  for (auto [name, replicas] : {std::pair{"server", shape.server}, std::pair{"worker", shape.worker}}) {
    Role r;
    r.name = name;
    r.image = fmt::format("registry.local/{}/{}:1.0", g.name, name);
    r.replicas = replicas;
    r.resources = draw_size(rng, basic_sizes());
    r.priority = Priority{Band::Prod, 100, true};
    g.roles.push_back(std::move(r));
    g.instances += static_cast<size_t>(replicas);
  }
  return g;
}

// The cluster: nodes, the default tenant, then apps with their instances, 1,000 apps per
// commit. The writer follows changes, so each update reads only the commit before it.
void fill_get_apps(Store& store, const GetAppsShape& shape) {
  SystemClock clock;
  StateOptions follow;
  follow.follow_changes = true;
  State state(store, clock, follow);
  auto nodes = make_nodes(shape.nodes);
  check(state.update_shared("op-fill", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_nodes = nodes;
    b.put_tenants.push_back(Tenant{"default", {}, {}});
    return {};
  }), "writing nodes");
  int placed = 0;
  for (int from = 0; from < shape.apps; from += shape.apps_per_commit) {
    // update_shared: no copy of the whole state per commit (a million instances).
    check(state.update_shared("op-fill", [&](const ClusterState&, Batch& b) -> Result<void> {
      for (int n = from; n < from + shape.apps_per_commit; ++n) {
        GenApp g = get_bench_app(n, shape);
        AppRecord r = to_deploy(g).record;
        r.status = "Ready";
        // Long ago, so AGE reads the same in every run of the command (in days).
        r.created = r.updated = "2026-01-01T00:00:00Z";
        for (const auto& role : g.roles)
          for (int o = 0; o < role.replicas; ++o) {
            Instance i = new_instance(g.tenant, g.name, r.version, role, o);
            int k = placed++;
            if (k % 10 == 9) {
              i.pending_reason = "no node has enough cpu";
            } else {
              i.node = nodes[static_cast<size_t>(k) % nodes.size()].name;
              i.state = InstanceState::Running;
              i.address = fmt::format("10.{}.{}.{}", 64 + k / 65536, (k / 256) % 256, k % 256);
              i.generation = 1;
            }
            b.put_instances.push_back(std::move(i));
          }
        b.put_apps.push_back(std::move(r));
      }
      b.event("Filled", fmt::format("apps {}..{}", from, from + shape.apps_per_commit - 1));
      return {};
    }), "writing apps");
  }
}

// Runs `binary` get apps `runs` times on the default context of `home` (a new process
// each time, as a user runs it), adding each wall time to `ms` and raising `rss` to the
// highest peak RSS; checks it printed a header and a row per app (`apps`) and returns
// what it printed.
std::string run_get_apps_cli(const std::string& binary, int runs, const std::filesystem::path& home, int apps,
                             std::vector<double>& ms, double& rss) {
  const std::vector<std::string> env = gaia_environment(home);
  const auto out = home / "get.out";
  const auto err = home / "get.err";
  for (int k = 0; k < runs; ++k) {
    ChildRun r = run_child({binary, "get", "apps"}, env, out, err);
    if (r.exit_code != 0)
      throw std::runtime_error(fmt::format("{} get apps exited with {} (see {})", binary, r.exit_code, err.string()));
    ms.push_back(r.ms);
    rss = std::max(rss, r.peak_rss_mb);
  }
  if (size_t lines = count_lines(out); lines != static_cast<size_t>(apps) + 1)
    throw std::runtime_error(fmt::format("{} get apps printed {} lines, want {}", binary, lines, apps + 1));
  std::ifstream in(out);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

Figures run_get_apps_10k() {
  TempDir scratch("gaia-bench-get-apps");
  // GAIA_BENCH_GET_DIR=DIR keeps the store in DIR (filled once) for profiling the
  // command by hand: XDG_STATE_HOME=DIR/state perf record gaia get apps.
  const char* kept = std::getenv("GAIA_BENCH_GET_DIR");
  const std::filesystem::path home_dir = kept && *kept ? std::filesystem::path(kept) : scratch.path();
  const auto db = home_dir / "state" / "gaia" / "gaia.db";
  const bool filled = std::filesystem::exists(db);
  double fill_ms = 0;
  if (!filled) {
    fill_ms = time_ms([&] { fill_get_apps(*open_home_store(home_dir), k_get_10k); });
  }
  SystemClock clock;

  // What the command read before, as a new process does it: open the store, load every
  // object, count each app's serving instances with a scan of all instances.
  std::map<std::string, int> full_counts;
  std::vector<double> full_ms;
  // Two samples: each takes seconds (the scan per app is quadratic).
  for (int k = 0; k < 2; ++k)
    full_ms.push_back(time_ms([&] {
      auto store = open_home_store(home_dir);
      State state(*store, clock);
      auto st = check(state.load(), "full load");
      full_counts.clear();
      for (const auto& [id, app] : st.apps) full_counts[id] = cli::app_instance_counts(st, app).first;
    }));

  // What it reads now.
  std::map<std::string, int> apps_counts;
  std::vector<double> apps_ms;
  for (int k = 0; k < 10; ++k)
    apps_ms.push_back(time_ms([&] {
      auto store = open_home_store(home_dir);
      State state(*store, clock);
      auto read = check(state.load_apps(), "apps load");
      apps_counts.clear();
      for (const auto& [id, app] : read.apps) apps_counts[id] = read.serving_count(id);
    }));
  if (apps_counts != full_counts || full_counts.size() != static_cast<size_t>(k_get_apps))
    throw std::runtime_error("State::load_apps counts differ from the full load's");
  int serving = 0;
  for (const auto& [id, n] : apps_counts) serving += n;

  // What a table reads since the summaries: one record per app, kept by the commits
  // (lib/app_summary.hpp). They must say what the apps and instances say.
  std::vector<double> summaries_ms;
  std::vector<AppSummary> summaries;
  for (int k = 0; k < 10; ++k)
    summaries_ms.push_back(time_ms([&] {
      auto store = open_home_store(home_dir);
      auto read = check(read_app_summaries(*store, ""), "summaries read");
      if (!read) throw std::runtime_error("the fill's commits did not keep the app summaries");
      summaries = std::move(*read);
    }));
  {
    auto store = open_home_store(home_dir);
    State state(*store, clock);
    if (nlohmann::json(summaries) != nlohmann::json(app_summaries_of(check(state.load_apps(), "apps load"))))
      throw std::runtime_error("the app summaries differ from the apps and their instances");
  }

  // The real command, as a user runs it: a new process on the default context.
  std::vector<double> cli_ms;
  double cli_rss = -1;
  std::string printed = run_get_apps_cli(GAIA_CLI_PATH, 10, home_dir, k_get_apps, cli_ms, cli_rss);
  // The binary of an earlier build, to compare in the same run (the command's code
  // before this case's change lives only in git history).
  std::vector<double> baseline_ms;
  double baseline_rss = -1;
  const char* baseline = std::getenv("GAIA_BENCH_BASELINE_CLI");
  bool same_text = true;
  if (baseline && *baseline) same_text = run_get_apps_cli(baseline, 5, home_dir, k_get_apps, baseline_ms, baseline_rss) == printed;

  Figures f;
  f["apps"] = k_get_apps;
  f["instances"] = k_get_apps * 10;
  f["nodes"] = k_get_nodes;
  f["serving_instances"] = serving;
  f["store"] = "SQLite, WAL, synchronous FULL (defaults)";
  f["db_mb"] = round3(static_cast<double>(std::filesystem::file_size(db)) / (1024.0 * 1024.0));
  f["fill_ms"] = round3(fill_ms);
  add_latency(f, full_ms, "full_load_counts_");
  add_latency(f, apps_ms, "load_apps_");
  add_latency(f, summaries_ms, "read_summaries_");
  add_latency(f, cli_ms, "cli_get_apps_");
  f["cli_get_apps_peak_rss_mb"] = cli_rss;
  if (!baseline_ms.empty()) {
    f["baseline_cli"] = baseline;
    add_latency(f, baseline_ms, "baseline_cli_get_apps_");
    f["baseline_cli_get_apps_peak_rss_mb"] = baseline_rss;
    f["baseline_cli_same_output"] = same_text;
  }
  f["cpu_ms"] = round3(cpu_ms());
  return f;
}

// get-apps-1m: the same command on a million instances (10,000 apps of 60 + 40 replicas
// on 10,000 nodes, one in ten pending), to check the bound of 2 GiB peak RSS
// for `gaia get apps` at that scale. The real binary only (three runs); the full load
// it replaced is get-apps-10k's baseline.
Figures run_get_apps_1m() {
  TempDir scratch("gaia-bench-get-apps-1m");
  const std::filesystem::path home_dir = scratch.path();
  const auto db = home_dir / "state" / "gaia" / "gaia.db";
  double fill_ms = time_ms([&] { fill_get_apps(*open_home_store(home_dir), k_get_1m); });
  std::vector<double> ms;
  double rss = -1;
  run_get_apps_cli(GAIA_CLI_PATH, 3, home_dir, k_get_1m.apps, ms, rss);
  Figures f;
  f["apps"] = k_get_1m.apps;
  f["instances"] = k_get_1m.instances();
  f["nodes"] = k_get_1m.nodes;
  f["store"] = "SQLite, WAL, synchronous FULL (defaults)";
  f["db_mb"] = round3(static_cast<double>(std::filesystem::file_size(db)) / (1024.0 * 1024.0));
  f["fill_ms"] = round3(fill_ms);
  add_latency(f, ms, "cli_get_apps_");
  f["cli_get_apps_peak_rss_mb"] = rss;
  f["cpu_ms"] = round3(cpu_ms());
  return f;
}

const Registration k_get_apps_10k{"get-apps-10k",
                                  "`gaia get apps` on 10,000 apps and 100,000 instances (SQLite): the full load "
                                  "against State::load_apps in process, and the real binary",
                                  &run_get_apps_10k};
const Registration k_get_apps_1m{"get-apps-1m",
                                 "`gaia get apps` on 10,000 apps and 1,000,000 instances on 10,000 nodes "
                                 "(SQLite): the real binary's time and peak RSS",
                                 &run_get_apps_1m};

}  // namespace
}  // namespace gaia::bench
