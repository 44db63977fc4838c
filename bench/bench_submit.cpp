// End-to-end placement benchmark: submit-e2e-5k.
//
// The workload of schedule-basic-5k (5,000 nodes, 50,000 instances, same seed and
// generator) placed the way `gaia submit` places it, with every placement committed to
// a real SQLite store (store/sqlite_store.hpp, default options: WAL, synchronous FULL)
// in a temp dir:
//
//  1. The cluster (nodes, tenants, profile) is written through State::update.
//  2. The apps arrive in submissions of at least 500 instances (whole apps), as in
//     schedule-basic-5k's submissions. Each submission is plan_submit on the current
//     state (instances created, scheduled with controllers/scheduler.hpp, addresses
//     allocated, one Scheduled event per placement plus the app's events), then
//     State::commit of the whole batch (one SQLite transaction, fsynced), under a fresh
//     operation id. The state after the commit is carried to the next submission, as a
//     long-running submitter would, so the figure is scheduling + deciding + committing.
//     `placements_per_s` and the per-submission latency come from this stream.
//  3. The store is then loaded back and checked: every instance bound (Placed) to a node,
//     with an address, and one event per placement.
//  4. Five more submissions go through State::update exactly as cmd_submit.cpp does
//     (load, plan_submit, commit, load again: the second one only reads the changes) on
//     the full cluster, each with a fresh State as a new process has, to show what one
//     `gaia submit` costs once 50,000 instances exist (the first load dominates).
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "bench/bench_submit.hpp"
#include "controllers/submit.hpp"
#include "lib/clock.hpp"
#include "lib/hash.hpp"
#include "ops/submit_stream.hpp"
#include "store/sqlite_store.hpp"
#include "lib/app_summary.hpp"
#include "lib/state.hpp"

namespace gaia::bench {
namespace {

constexpr uint64_t k_late_seed = 20240614;
constexpr int k_submit_submissions = 100;
constexpr size_t k_late_instances = 2500;  // Five CLI-path submissions of ~500.
constexpr int k_late_submissions = 5;

// Whole apps in submissions of about `chunk` instances.
std::vector<std::vector<AppToDeploy>> group(const std::vector<GenApp>& apps, size_t chunk) {
  std::vector<std::vector<AppToDeploy>> out;
  size_t in_current = chunk;
  for (const auto& a : apps) {
    if (in_current >= chunk) {
      out.emplace_back();
      in_current = 0;
    }
    out.back().push_back(to_deploy(a));
    in_current += a.instances;
  }
  return out;
}

uintmax_t file_size_or_zero(const std::filesystem::path& p) {
  std::error_code ec;
  auto size = std::filesystem::file_size(p, ec);
  return ec ? 0 : size;
}

}  // namespace

std::vector<StreamCommit> place_stream(State& state, ClusterState& current,
                                       std::vector<std::vector<AppToDeploy>>& stream) {
  SystemClock clock;
  // A submitter that stays up: each submission planned on what the last one left while
  // that one commits (ops/submit_stream.hpp).
  SubmitStream submitter(state, std::move(current), [&](size_t) { return new_operation_id(clock); });
  for (auto& apps : stream)
    check(submitter.submit(apps), "submitting to the stream");
  auto finished = submitter.finish();
  if (finished.failure) throw std::runtime_error("commit failed: " + format_diagnostics(*finished.failure));
  current = std::move(finished.last);
  return std::move(finished.commits);
}

std::vector<std::vector<AppToDeploy>> submission_stream(size_t instances, uint64_t seed, size_t chunk) {
  return group(make_apps(instances, seed), chunk);
}

// The case on any store: `describe` names it in the figures. `db` is the SQLite file
// whose size is reported (empty for a server).
Figures submit_e2e(Store& store, const std::string& describe, const std::filesystem::path& db) {
  SystemClock clock;
  State state(store, clock);
  size_t commits = 0, events = 0;

  // 1. The cluster.
  std::vector<Node> nodes = make_nodes(k_basic5k_nodes);
  double cluster_ms = time_ms([&] {
    check(state.update(new_operation_id(clock),
                       [&](const ClusterState&, Batch& b) -> Result<void> {
                         b.put_nodes = nodes;
                         b.put_tenants = make_tenants();
                         b.profile = SchedulerProfile{};
                         b.event("ClusterCreated", fmt::format("{} nodes", nodes.size()));
                         return {};
                       }),
          "writing the cluster");
  });
  ++commits;
  ++events;

  // 2. The stream of submissions.
  auto stream = group(make_apps(k_basic5k_instances, k_basic5k_seed), k_basic5k_instances / k_submit_submissions);
  ClusterState current = check(state.load(), "loading the cluster");
  std::vector<double> per_placement_us;
  double plan_ms = 0, commit_ms = 0, cpu_before = cpu_ms();
  size_t placed = 0, pending = 0;
  Timer stream_wall;
  for (const auto& step : place_stream(state, current, stream)) {
    plan_ms += step.plan_ms;
    commit_ms += step.commit_ms;
    ++commits;
    events += step.events;
    placed += step.placed;
    pending += step.pending;
    if (step.placed) per_placement_us.push_back((step.plan_ms + step.commit_ms) * 1000.0 / static_cast<double>(step.placed));
  }
  double stream_ms = stream_wall.elapsed_ms();
  double stream_cpu_ms = cpu_ms() - cpu_before;
  if (placed != k_basic5k_instances || pending != 0)
    throw std::runtime_error(fmt::format("placed {} of {} instances, {} pending", placed, k_basic5k_instances, pending));

  // 3. Read it all back and check it.
  ClusterState loaded;
  double load_ms = time_ms([&] { loaded = check(state.load(), "loading the store"); });
  size_t running = 0;
  for (const auto& i : loaded.snapshot.instances)
    if (i.state == InstanceState::Placed && !i.node.empty() && !i.address.empty()) ++running;
  if (running != k_basic5k_instances || loaded.snapshot.instances.size() != k_basic5k_instances)
    throw std::runtime_error(fmt::format("the store holds {} instances, {} running with an address",
                                         loaded.snapshot.instances.size(), running));
  if (loaded.seq != static_cast<int64_t>(events))
    throw std::runtime_error(fmt::format("{} events in the store, {} written", loaded.seq, events));
  auto scheduled = check(state.events_after(0), "reading the timeline");
  size_t scheduled_events = std::count_if(scheduled.begin(), scheduled.end(),
                                          [](const TimelineEvent& e) { return e.reason == "Scheduled"; });
  if (scheduled_events != k_basic5k_instances)
    throw std::runtime_error(fmt::format("{} Scheduled events for {} placements", scheduled_events, k_basic5k_instances));

  // 4. `gaia submit`'s own path on the full cluster.
  WorkloadOptions late_options;
  late_options.name_prefix = "late";
  auto late = group(make_apps(k_late_instances, k_late_seed, late_options), k_late_instances / k_late_submissions);
  std::vector<double> late_ms;
  size_t late_placed = 0;
  for (auto& apps : late) {
    size_t placed_here = 0;
    late_ms.push_back(time_ms([&] {
      // A fresh State per submission, as a new `gaia submit` process has: its first load
      // reads everything, the one after its commit only what changed (follow_changes, as
      // every CLI session sets it).
      StateOptions cli_options;
      cli_options.follow_changes = true;
      State cli_state(store, clock, cli_options);
      check(cli_state.update(new_operation_id(clock),
                         [&](const ClusterState& st, Batch& b) -> Result<void> {
                           SubmitOutcome out = plan_submit(st, apps);
                           placed_here = out.placed;
                           events += out.batch.events.size();
                           b = std::move(out.batch);
                           return {};
                         }),
            "gaia submit path");
    }));
    ++commits;
    late_placed += placed_here;
  }

  Figures out;
  out["nodes"] = k_basic5k_nodes;
  out["instances"] = k_basic5k_instances;
  out["seed"] = k_basic5k_seed;
  out["store"] = describe;
  out["cluster_write_ms"] = round3(cluster_ms);
  out["submissions"] = stream.size();
  out["placements"] = placed;
  out["placements_per_s"] = round3(static_cast<double>(placed) * 1000.0 / stream_ms);
  out["cpu_placements_per_s"] = round3(static_cast<double>(placed) * 1000.0 / stream_cpu_ms);
  out["latency_basis"] = fmt::format(
      "per submission ({} of >= {} instances, whole apps): plan_submit + State::commit wall time / its placements",
      stream.size(), k_basic5k_instances / k_submit_submissions);
  out["p50_us"] = round3(percentile(per_placement_us, 50));
  out["p99_us"] = round3(percentile(per_placement_us, 99));
  out["mean_us"] = round3(mean(per_placement_us));
  out["stream_wall_ms"] = round3(stream_ms);
  out["stream_cpu_ms"] = round3(stream_cpu_ms);
  out["plan_ms"] = round3(plan_ms);
  out["commit_ms"] = round3(commit_ms);
  out["load_all_ms"] = round3(load_ms);
  out["gaia_submit_path_submissions"] = late.size();
  out["gaia_submit_path_placements"] = late_placed;
  out["gaia_submit_path_p50_ms"] = round3(percentile(late_ms, 50));
  out["gaia_submit_path_max_ms"] = round3(percentile(late_ms, 100));
  out["gaia_submit_path_placements_per_s"] = round3(static_cast<double>(late_placed) * 1000.0 / (mean(late_ms) * static_cast<double>(late_ms.size())));
  out["commits"] = commits;
  out["events_written"] = events;
  out["events_per_s"] = round3(static_cast<double>(events) * 1000.0 / stream_ms);
  if (!db.empty()) {
    out["store_db_mb"] = round3(static_cast<double>(file_size_or_zero(db)) / 1048576.0);
    out["store_wal_mb"] = round3(static_cast<double>(file_size_or_zero(db.string() + "-wal")) / 1048576.0);
  }
  out["cpu_ms"] = round3(cpu_ms());
  return out;
}

namespace {

Figures run_submit_e2e_5k() {
  TempDir dir("gaia-bench-submit");
  const auto db = dir.path() / "store.db";
  auto opened = SqliteStore::open(db);
  if (!opened) throw std::runtime_error("cannot open the store: " + opened.error().to_string());
  return submit_e2e(**opened, "SQLite, WAL, synchronous FULL (defaults)", db);
}

const Registration k_submit_e2e_5k{"submit-e2e-5k",
                                   "schedule-basic-5k's 50,000 instances placed with plan_submit and committed with "
                                   "their events to a SQLite store in a temp dir, submissions of >= 500",
                                   &run_submit_e2e_5k};

}  // namespace
}  // namespace gaia::bench
