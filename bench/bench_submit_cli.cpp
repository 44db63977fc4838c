// What one `gaia submit` costs on a full cluster (issue 13: "one command").
//
//  submit-cli-50k  schedule-basic-5k's cluster (5,000 nodes) filled with its 50,000
//                  instances (submit-e2e-5k's stream, committed to a real SQLite file in
//                  a temp dir), then the real gaia binary submits a one-role app of 500
//                  replicas (0.5 core, 1 GiB each) to it, as a user does, each time under
//                  a new release name so every command places 500 new instances. The
//                  fill placed its instances without the sim backend, so the first
//                  command also starts their 50,000 copies (reported apart, as
//                  settle_ms). The second submits a copy of the spec that differs by a
//                  comment, so it renders (cold render cache); the next ones find the
//                  spec in the cache, as a re-submit or a CI job after `gaia validate`
//                  does. Every command must exit 0, and the store must hold each
//                  release's 500 instances placed on nodes afterwards.
//
// With GAIA_BENCH_BASELINE_CLI=PATH, the warm commands alternate between this build's
// binary and that one (an earlier build), on the same store, so both are measured under
// the same load in one run. A baseline from before the state kept between commands
// (docs/store.md) commits without chaining the store's history hash, so after each of
// its commands this build reads the store afresh: against such a baseline, compare whole
// runs of each build's own gaia-bench in turn instead.
//
// GAIA_BENCH_SUBMIT_DIR=DIR keeps the store in DIR (filled once) for profiling the
// command by hand: XDG_STATE_HOME=DIR/state XDG_CACHE_HOME=DIR/cache perf record gaia
// submit DIR/app --tenant t0 --name x1.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "bench/bench_cluster.hpp"
#include "bench/bench_submit.hpp"
#include "bench/bench_util.hpp"
#include "bench/child.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"

namespace gaia::bench {
namespace {

constexpr int k_cli_replicas = 500;
constexpr int k_cli_warm_runs = 8;

void fill_cli_cluster(Store& store) {
  SystemClock clock;
  State state(store, clock);
  check(state.update("op-fill", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_nodes = make_nodes(k_basic5k_nodes);
    b.put_tenants = make_tenants();
    b.profile = SchedulerProfile{};
    b.put_settings[keys::k_backend_setting] = "sim";
    return {};
  }), "writing the cluster");
  auto stream = submission_stream(k_basic5k_instances, k_basic5k_seed, 500);
  ClusterState current = check(state.load(), "loading the cluster");
  size_t placed = 0;
  for (const auto& step : place_stream(state, current, stream)) placed += step.placed;
  if (placed != k_basic5k_instances) throw std::runtime_error(fmt::format("the fill placed {} instances", placed));
}

void write_cli_app(const std::filesystem::path& dir, const std::string& comment) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "app.yaml") << "name: batch\nversion: 1.0.0\ndescription: 500 identical workers\n"
                                     "priority: prod:100\n";
  std::ofstream(dir / "config.jsonnet") << "{}\n";
  std::ofstream(dir / "main.jsonnet") << fmt::format(
      "// {}\n"
      "function(config, deps, app) {{\n"
      "  roles: {{\n"
      "    worker: {{ kind: 'service', image: 'registry.local/batch/worker:1.0', replicas: {},\n"
      "              resources: {{ cpu: '500m', memory: '1Gi' }} }},\n"
      "  }},\n"
      "}}\n",
      comment, k_cli_replicas);
}

Figures run_submit_cli_50k() {
  TempDir scratch("gaia-bench-submit-cli");
  const char* kept = std::getenv("GAIA_BENCH_SUBMIT_DIR");
  const std::filesystem::path home = kept && *kept ? std::filesystem::path(kept) : scratch.path();
  double fill_ms = 0;
  if (!std::filesystem::exists(home / "state" / "gaia" / "gaia.db"))
    fill_ms = time_ms([&] { fill_cli_cluster(*open_home_store(home)); });
  const auto app = home / "app";
  write_cli_app(app, "500 workers");
  // The same app with another comment: another render cache key.
  const auto cold_app = home / "app-cold";
  write_cli_app(cold_app, fmt::format("rendered afresh by process {}", ::getpid()));
  std::filesystem::remove_all(home / "cache");  // The first command renders.

  std::vector<std::string> env = gaia_environment(home);
  const auto out = home / "submit.out";
  const auto err = home / "submit.err";
  std::vector<std::string> releases;
  auto submit = [&](const std::string& binary, const std::filesystem::path& dir) {
    std::string release = fmt::format("b{}-{}", ::getpid(), releases.size());
    releases.push_back(release);
    ChildRun r = run_child({binary, "submit", dir.string(), "--tenant", "t0", "--name", release}, env, out, err);
    if (r.exit_code != 0)
      throw std::runtime_error(fmt::format("{} submit exited with {} (see {})", binary, r.exit_code, err.string()));
    return r;
  };
  ChildRun settle = submit(GAIA_CLI_PATH, app);
  ChildRun cold = submit(GAIA_CLI_PATH, cold_app);
  const char* baseline = std::getenv("GAIA_BENCH_BASELINE_CLI");
  std::vector<double> warm_ms, baseline_ms;
  double warm_rss = 0, baseline_rss = 0;
  for (int k = 0; k < k_cli_warm_runs; ++k) {
    ChildRun r = submit(GAIA_CLI_PATH, app);
    warm_ms.push_back(r.ms);
    warm_rss = std::max(warm_rss, r.peak_rss_mb);
    if (baseline && *baseline) {
      ChildRun b = submit(baseline, app);
      baseline_ms.push_back(b.ms);
      baseline_rss = std::max(baseline_rss, b.peak_rss_mb);
    }
  }

  // Every release placed in full.
  auto store = open_home_store(home);
  SystemClock clock;
  State state(*store, clock);
  auto st = check(state.load(), "loading the store");
  std::map<std::string, int> placed;
  for (const auto& i : st.snapshot.instances)
    if (i.tenant == "t0" && !i.node.empty()) ++placed[i.app];
  for (const auto& r : releases)
    if (placed[r] != k_cli_replicas)
      throw std::runtime_error(fmt::format("release {} has {} of {} instances placed", r, placed[r], k_cli_replicas));

  Figures f;
  f["nodes"] = k_basic5k_nodes;
  f["instances_before"] = k_basic5k_instances;
  f["instances_after"] = st.snapshot.instances.size();
  f["replicas_per_submit"] = k_cli_replicas;
  f["store"] = "SQLite, WAL, synchronous FULL (defaults)";
  f["fill_ms"] = round3(fill_ms);
  f["settle_ms"] = round3(settle.ms);
  f["cold_render_ms"] = round3(cold.ms);
  add_latency(f, warm_ms, "warm_");
  // Each command in turn: a command starts from what the one before it left (the state
  // file), so the order tells where the time went.
  f["warm_runs_ms"] = warm_ms;
  f["warm_placements_per_s"] = round3(k_cli_replicas * 1000.0 / percentile(warm_ms, 50));
  f["warm_peak_rss_mb"] = warm_rss;
  if (!baseline_ms.empty()) {
    f["baseline_cli"] = baseline;
    add_latency(f, baseline_ms, "baseline_warm_");
    f["baseline_warm_runs_ms"] = baseline_ms;
    f["baseline_warm_peak_rss_mb"] = baseline_rss;
    f["speedup_p50"] = round3(percentile(baseline_ms, 50) / percentile(warm_ms, 50));
  }
  f["cpu_ms"] = round3(cpu_ms());
  return f;
}

const Registration k_submit_cli_50k{"submit-cli-50k",
                                    "the real `gaia submit` of 500 replicas onto 5,000 nodes holding 50,000 "
                                    "instances (SQLite), cold render then warm",
                                    &run_submit_cli_50k};

}  // namespace
}  // namespace gaia::bench
