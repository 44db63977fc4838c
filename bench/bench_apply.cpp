// apply-100-50k: one submission of many apps onto a full cluster, the way `gaia apply`
// of a folder of specs plans them (controllers/apply.cpp calls plan_submit once with
// every app of the set).
//
// The cluster is schedule-basic-5k's (5,000 nodes) filled in memory with its 50,000
// instances through plan_submit (no store: this case measures the planning alone).
// Then a set of 100 small apps (one role of 5 replicas each, 0.5 core and 1 GiB) is
// planned on it with the scheduler's index kept across the apps (KeptIndex, the
// default) and, as the baseline in the same run, with a fresh index per app
// (ScheduleTuning::keep_index off), alternating, 5 times each. Both must decide the
// same: every placement's node, address and score, and every event, are compared.
#include <fmt/format.h>

#include <stdexcept>

#include "bench/bench_cluster.hpp"
#include "bench/bench_submit.hpp"
#include "bench/bench_util.hpp"
#include "controllers/submit.hpp"

namespace gaia::bench {
namespace {

constexpr int k_apply_apps = 100;
constexpr int k_apply_replicas = 5;
constexpr int k_apply_runs = 5;

std::vector<AppToDeploy> apply_set() {
  std::vector<AppToDeploy> apps;
  for (int k = 0; k < k_apply_apps; ++k) {
    GenApp g;
    g.tenant = "t0";
    g.name = fmt::format("set{:03d}", k);
    Role role;
    role.name = "web";
    role.image = fmt::format("registry.local/{}/web:1.0", g.name);
    role.replicas = k_apply_replicas;
    role.resources = Resources{500, k_gib, 0, 0};
    role.priority = Priority{Band::Prod, 100, true};
    g.roles.push_back(std::move(role));
    g.instances = static_cast<size_t>(k_apply_replicas);
    apps.push_back(to_deploy(g));
  }
  return apps;
}

// What a plan decided, for the comparison of the two ways of planning it.
std::string decided(const SubmitOutcome& out) {
  std::string s;
  for (const auto& i : out.batch.put_instances) s += fmt::format("{} {} {}\n", i.key(), i.node, i.address);
  for (const auto& e : out.batch.events) s += fmt::format("{} {} {}\n", e.reason, e.instance, e.message);
  return s;
}

Figures run_apply_100_50k() {
  ClusterState current;
  current.snapshot.nodes = make_nodes(k_basic5k_nodes);
  current.snapshot.tenants = make_tenants();
  double fill_ms = time_ms([&] {
    for (auto& apps : submission_stream(k_basic5k_instances, k_basic5k_seed, 500)) current = plan_submit(current, apps).after;
  });
  if (current.snapshot.instances.size() != k_basic5k_instances)
    throw std::runtime_error(fmt::format("the fill made {} instances", current.snapshot.instances.size()));

  const auto set = apply_set();
  ScheduleTuning fresh;
  fresh.keep_index = false;
  std::vector<double> kept_ms, fresh_ms;
  std::string kept_text, fresh_text;
  size_t placed = 0;
  for (int run = 0; run < k_apply_runs; ++run) {
    SubmitOutcome a, b;
    kept_ms.push_back(time_ms([&] { a = plan_submit(current, set); }));
    fresh_ms.push_back(time_ms([&] { b = plan_submit(current, set, fresh); }));
    kept_text = decided(a);
    fresh_text = decided(b);
    if (kept_text != fresh_text) throw std::runtime_error("the kept index decided otherwise than a fresh one");
    placed = a.placed;
  }
  if (placed != static_cast<size_t>(k_apply_apps * k_apply_replicas))
    throw std::runtime_error(fmt::format("placed {} of {}", placed, k_apply_apps * k_apply_replicas));

  Figures out;
  out["nodes"] = k_basic5k_nodes;
  out["instances_before"] = k_basic5k_instances;
  out["apps"] = k_apply_apps;
  out["placements"] = placed;
  out["fill_ms"] = round3(fill_ms);
  out["plan_p50_ms"] = round3(percentile(kept_ms, 50));
  out["plan_max_ms"] = round3(percentile(kept_ms, 100));
  out["baseline"] = "a fresh scheduler index per app (ScheduleTuning::keep_index off), same run";
  out["baseline_plan_p50_ms"] = round3(percentile(fresh_ms, 50));
  out["baseline_plan_max_ms"] = round3(percentile(fresh_ms, 100));
  out["speedup_p50"] = round3(percentile(fresh_ms, 50) / percentile(kept_ms, 50));
  out["cpu_ms"] = round3(cpu_ms());
  return out;
}

const Registration k_apply_100_50k{"apply-100-50k",
                                   "one plan of 100 small apps onto schedule-basic-5k's full cluster (50,000 "
                                   "instances), as `gaia apply` of a folder plans it, against a fresh index per app",
                                   &run_apply_100_50k};

}  // namespace
}  // namespace gaia::bench
