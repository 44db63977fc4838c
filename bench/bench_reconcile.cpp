// Controller-loop benchmarks: reconcile-10k.
//
// 1,000 nodes (bench_cluster.hpp, 32 cores and 128 GiB each) hold 10,000 instances of
// make_apps(seed 20240701), placed by plan_submit, every instance Running. On that state:
//
//  idle      reconcile() of every default controller on the converged state, which must
//            return an empty batch: the fixed cost each command pays for running the
//            controllers inline, per 10,000 instances. 20 runs, p50/p99.
//  baseline  reschedule_pending() alone on the same state, 20 runs: what a command paid
//            before the controller loop existed (the scheduler was its only step).
//  churn     100 instances (1%) fail and 5 apps are scaled up by 2 replicas of their
//            first role; one reconcile() restarts, creates and places them. The back-off
//            of the failures is due (the context's time is past it), so all of it
//            happens in this one call. 10 runs on fresh copies, p50/p99.
//
// Each run checks its result: the idle and churn reconciles leave nothing pending or
// failed, and a second reconcile after churn changes nothing.
#include <fmt/format.h>

#include <stdexcept>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"
#include "lib/hash.hpp"

namespace gaia::bench {
namespace {

constexpr uint64_t k_reconcile_seed = 20240701;
constexpr int k_reconcile_nodes = 1000;
constexpr size_t k_instances = 10000;
constexpr int64_t k_now = 1'700'000'000'000;

ClusterState build() {
  ClusterState s;
  s.snapshot.nodes = make_nodes(k_reconcile_nodes);
  s.snapshot.tenants = make_tenants();
  std::vector<AppToDeploy> apps;
  for (const auto& g : make_apps(k_instances, k_reconcile_seed)) {
    AppToDeploy d;
    d.record.tenant = g.tenant;
    d.record.name = g.name;
    d.record.version = "1.0.0";
    d.record.workload.app = g.name;
    d.record.workload.version = "1.0.0";
    d.record.workload.tenant = g.tenant;
    d.record.workload.roles = g.roles;
    d.record.workload.hash = content_hash(g.name + "/1.0.0");
    apps.push_back(std::move(d));
  }
  auto placed = plan_submit(s, apps);
  if (placed.pending != 0) throw std::runtime_error(fmt::format("{} instances pending after setup", placed.pending));
  // The backend started everything it was asked to (what the runner records from its
  // observation); converge once, so run-time bookkeeping (start times, reservations) is
  // in place and what follows measures steady state.
  for (auto& i : placed.after.snapshot.instances)
    if (i.state == InstanceState::Placed) {
      i.state = InstanceState::Running;
      i.started_ms = k_now;
    }
  auto settled = reconcile(placed.after, ControllerContext{k_now, {}});
  if (!settled.converged) throw std::runtime_error("setup did not converge");
  return std::move(settled.after);
}

void check_settled(const ClusterState& s) {
  for (const auto& i : s.snapshot.instances)
    // Controllers bind (Placed); only an observation of the backend makes an instance Running.
    if (i.state != InstanceState::Running && i.state != InstanceState::Placed)
      throw std::runtime_error(fmt::format("{} is {} after reconcile", i.key(), instance_state_name(i.state)));
}

Figures run() {
  Figures f;
  ClusterState s;
  f["setup_ms"] = round3(time_ms([&] { s = build(); }));
  f["nodes"] = k_reconcile_nodes;
  f["instances"] = s.snapshot.instances.size();
  f["seed"] = k_reconcile_seed;
  ControllerContext ctx{k_now + 1000, {}};

  std::vector<double> idle, base, churn;
  for (int r = 0; r < 20; ++r) {
    ReconcileOutcome out;
    idle.push_back(time_ms([&] { out = reconcile(s, ctx); }));
    if (!out.batch.empty()) throw std::runtime_error("reconcile of a converged state changed something");
    SubmitOutcome b;
    base.push_back(time_ms([&] { b = reschedule_pending(s); }));
    if (b.changed()) throw std::runtime_error("reschedule_pending of a settled state changed something");
  }
  add_latency(f, idle, "idle_");
  add_latency(f, base, "baseline_");

  size_t events = 0;
  int passes = 0;
  for (int r = 0; r < 10; ++r) {
    ClusterState c = s;
    // 1% of the instances fail (spread over the cluster), their back-off already due.
    for (size_t k = static_cast<size_t>(r); k < c.snapshot.instances.size(); k += 100) {
      Instance& i = c.snapshot.instances[k];
      i.state = InstanceState::Failed;
      i.failure = "exit code 137";
      i.restart_at_ms = ctx.now_ms - 1;
    }
    int scaled = 0;
    for (auto& [id, app] : c.apps) {
      if (scaled == 5) break;
      const Role& role = app.workload.roles.front();
      app.scale[role.name] = role.replicas + 2;
      ++scaled;
    }
    ReconcileOutcome out;
    churn.push_back(time_ms([&] { out = reconcile(c, ctx); }));
    if (!out.converged) throw std::runtime_error("churn reconcile did not converge");
    check_settled(out.after);
    if (!reconcile(out.after, ctx).batch.empty()) throw std::runtime_error("a second reconcile changed something");
    events = out.batch.events.size();
    passes = out.passes;
  }
  add_latency(f, churn, "churn_");
  f["churn_events"] = events;
  f["churn_passes"] = passes;
  return f;
}

const Registration k_reg{"reconcile-10k",
                         "reconcile() of every controller over 10,000 running instances on 1,000 nodes: idle (converged) "
                         "vs reschedule_pending alone, and after 1% failures plus 5 scale-ups",
                         &run};

}  // namespace
}  // namespace gaia::bench
