// Defragmentation benchmarks: rebalance-1k, rebalance-trace-1k, rebalance-controller-1k
// (docs/benchmarks.md, "Defragmentation"; docs/policies.md, "Defragmentation").
//
// The cluster of rebalance-1k: 1,000 nodes (bench_cluster.hpp: 32 cores, 128 GiB) whose
// scheduler profile packs (strategy stack), filled by plan_submit with 19,500 instances
// of make_apps(seed 20240701), about 97% of the cluster's cpu. Then a random 40% of the
// instances (seed 20240702) are deleted, as departures leave a cluster over time (each
// role keeps what survived as its replicas): 954 nodes stay in use, each at about 58%.
//
// "Allocation" is throughout what `gaia rebalance` reports: the allocation rate of the
// nodes in use (Ready nodes holding at least one instance), the mean of their cpu and
// memory requests over their capacity (controllers/rebalance.hpp allocation_rate).
//
//  before        the fragmented cluster.
//  fresh         the surviving instances scheduled from scratch, in one schedule()
//                call, onto the same 1,000 empty nodes with the cluster's profile: what
//                a fresh packing achieves.
//  fresh_packed  the same with the profile the defragmentation packs with (stack, no
//                even-spread score): the stricter reference.
//  after         plan_rebalance on the fragmented cluster with no move limit
//                (max_moves 1,000,000, max_tries 1,000,000): its figures, moves, wall
//                time and scheduling runs; then again with the default max_tries (20)
//                and with a target of 90%.
//  after_vs_*    after / fresh (the aim: at least 0.9).
//
// `ideal` (uniform nodes only) is the bound no packing beats: the requests over the
// capacity of the fewest nodes that could hold them (the larger of the cpu and memory
// counts).
//
// rebalance-trace-1k does the same on the trace-shaped workload of `gaia sim compact`;
// rebalance-controller-1k runs the rebalance controller on the first cluster with
// min_available at half of each role's replicas (see run_controller_case).
//
// The cases check every plan: no node over capacity by requests, no role below
// min_available, no instance moved twice, every move a Migrated event.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "controllers/compaction.hpp"
#include "controllers/rebalance.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/scheduler.hpp"
#include "controllers/submit.hpp"
#include "lib/hash.hpp"

namespace gaia::bench::rebalance_case {
namespace {

constexpr uint64_t k_workload_seed = 20240701;
constexpr uint64_t k_delete_seed = 20240702;
constexpr int k_nodes = 1000;
constexpr size_t k_instances = 19500;
constexpr double k_deleted = 0.4;
constexpr int64_t k_now = 1'700'000'000'000;

struct Fragmented {
  ClusterState state;
  size_t placed = 0, deleted = 0;
  double setup_ms = 0;
};

Fragmented build(int min_available_pct) {
  Fragmented f;
  f.setup_ms = time_ms([&] {
    ClusterState s;
    s.snapshot.nodes = make_nodes(k_nodes);
    s.snapshot.tenants = make_tenants();
    s.snapshot.profile.strategy = "stack";
    std::vector<AppToDeploy> apps;
    for (const auto& g : make_apps(k_instances, k_workload_seed)) apps.push_back(to_deploy(g));
    SubmitOutcome placed = plan_submit(s, apps);
    if (placed.pending != 0) throw std::runtime_error(fmt::format("{} instances pending", placed.pending));
    s = std::move(placed.after);
    f.placed = s.snapshot.instances.size();
    Rng rng(k_delete_seed);
    std::vector<Instance> kept;
    kept.reserve(s.snapshot.instances.size());
    for (auto& i : s.snapshot.instances) {
      if (rng.chance(k_deleted)) {
        ++f.deleted;
        continue;
      }
      i.state = InstanceState::Running;
      kept.push_back(std::move(i));
    }
    s.snapshot.instances = std::move(kept);
    // The deletions are scale-downs: each role keeps as replicas what survived, and
    // min_available is that share of them.
    std::unordered_map<std::string, int> survivors;
    for (const auto& i : s.snapshot.instances) ++survivors[i.tenant + "/" + i.app + "/" + i.role];
    for (auto& [key, app] : s.apps)
      for (auto& r : app.workload.roles) {
        std::string id = key + "/" + r.name;
        r.replicas = survivors[id];
        r.min_available = r.replicas * min_available_pct / 100;
        s.snapshot.roles[id] = r;
      }
    f.state = std::move(s);
  });
  return f;
}

// The surviving instances scheduled from scratch on the same empty nodes; `pending`
// counts those that found no node (none in the uniform workload; a few picky ones in
// the trace-shaped one).
ClusterState fresh_packing(const ClusterState& s, double* ms, size_t* pending = nullptr, bool packed = false) {
  ClusterState fresh = s;
  if (packed) {
    fresh.snapshot.profile.strategy = "stack";
    fresh.snapshot.profile.w_spread = 0;
  }
  for (auto& i : fresh.snapshot.instances) {
    i.node.clear();
    i.address.clear();
    i.ports.clear();
    i.volumes.clear();
    i.state = InstanceState::Pending;
  }
  Decision d;
  *ms = time_ms([&] { d = schedule(fresh.snapshot); });
  if (!pending && (!d.unschedulable.empty() || !d.preemptions.empty()))
    throw std::runtime_error(fmt::format("the fresh packing left {} instance(s) unplaced", d.unschedulable.size()));
  if (pending) *pending = d.unschedulable.size() + d.preemptions.size();
  std::unordered_map<std::string, size_t> at;
  for (size_t k = 0; k < fresh.snapshot.instances.size(); ++k) at[fresh.snapshot.instances[k].key()] = k;
  for (const auto& p : d.placements) {
    Instance& i = fresh.snapshot.instances[at.at(p.instance)];
    i.node = p.node;
    i.state = InstanceState::Running;
  }
  for (const auto& v : d.preemptions) {
    Instance& i = fresh.snapshot.instances[at.at(v.victim)];
    i.node.clear();
    i.state = InstanceState::Pending;
  }
  return fresh;
}

double ideal_rate(const ClusterState& s) {
  double cpu = 0, mem = 0;
  for (const auto& i : s.snapshot.instances) {
    cpu += static_cast<double>(i.request.cpu_millis);
    mem += static_cast<double>(i.request.memory_bytes);
  }
  const Node& n = s.snapshot.nodes.front();
  double nodes = std::max(std::ceil(cpu / static_cast<double>(n.capacity.cpu_millis)),
                          std::ceil(mem / static_cast<double>(n.capacity.memory_bytes)));
  return 50.0 * (cpu / (nodes * static_cast<double>(n.capacity.cpu_millis)) +
                 mem / (nodes * static_cast<double>(n.capacity.memory_bytes)));
}

void check_capacity(const ClusterState& s) {
  std::unordered_map<std::string, Resources> used;
  for (const auto& i : s.snapshot.instances) {
    if (!occupies_node(i)) continue;
    used[i.node].cpu_millis += i.request.cpu_millis;
    used[i.node].memory_bytes += i.request.memory_bytes;
  }
  for (const auto& n : s.snapshot.nodes) {
    const Resources& u = used[n.name];
    if (u.cpu_millis > n.capacity.cpu_millis || u.memory_bytes > n.capacity.memory_bytes)
      throw std::runtime_error(n.name + " is over capacity after the plan");
  }
}

// Every role keeps min_available running instances (moved ones are not running yet).
void check_min_available(const ClusterState& s) {
  std::unordered_map<std::string, int> running;
  for (const auto& i : s.snapshot.instances)
    if (i.state == InstanceState::Running) ++running[i.tenant + "/" + i.app + "/" + i.role];
  for (const auto& [id, role] : s.snapshot.roles)
    if (running[id] < role.min_available)
      throw std::runtime_error(fmt::format("{}: {} running, min_available {}", id, running[id], role.min_available));
}

void check_plan(const RebalancePlan& p) {
  check_capacity(p.after);
  check_min_available(p.after);
  std::unordered_set<std::string> moved;
  for (const auto& m : p.moves)
    if (!moved.insert(m.instance).second) throw std::runtime_error(m.instance + " moved twice");
  size_t events = 0;
  for (const auto& e : p.batch.events)
    if (e.reason == "Migrated") ++events;
  if (events != p.moves.size()) throw std::runtime_error(fmt::format("{} moves, {} Migrated events", p.moves.size(), events));
}

Figures measure(const Fragmented& f, bool uniform) {
  const ClusterState& s = f.state;
  Figures out;
  out["nodes"] = s.snapshot.nodes.size();
  out["placed"] = f.placed;
  out["deleted"] = f.deleted;
  out["instances"] = s.snapshot.instances.size();
  out["setup_ms"] = round3(f.setup_ms);

  double fresh_ms = 0;
  size_t fresh_pending = 0;
  ClusterState fresh = fresh_packing(s, &fresh_ms, &fresh_pending);
  auto [fresh_rate, fresh_nodes] = allocation_rate(fresh);
  // The same with the profile the defragmentation packs with (no even-spread score).
  double packed_ms = 0;
  size_t packed_pending = 0;
  auto [packed_rate, packed_nodes] = allocation_rate(fresh_packing(s, &packed_ms, &packed_pending, true));

  RebalanceOptions options;
  options.max_moves = 1'000'000;
  options.max_tries = 1'000'000;
  RebalancePlan plan;
  double cpu_before = cpu_ms();
  double ms = time_ms([&] { plan = plan_rebalance(s, options, k_now); });
  double cpu = cpu_ms() - cpu_before;
  check_plan(plan);
  // The same with the default bound on scheduling runs (20), as `gaia rebalance` plans.
  RebalanceOptions bounded;
  bounded.max_moves = 1'000'000;
  RebalancePlan short_plan;
  double short_ms = time_ms([&] { short_plan = plan_rebalance(s, bounded, k_now); });
  check_plan(short_plan);
  // And with a target of 90% allocation.
  RebalanceOptions targeted = bounded;
  targeted.target_pct = 90;
  RebalancePlan target_plan;
  double target_ms = time_ms([&] { target_plan = plan_rebalance(s, targeted, k_now); });
  check_plan(target_plan);

  out["before_pct"] = round3(plan.allocation_before);
  out["before_nodes"] = plan.nodes_in_use_before;
  out["after_pct"] = round3(plan.allocation_after);
  out["after_nodes"] = plan.nodes_in_use_after;
  out["fresh_pct"] = round3(fresh_rate);
  out["fresh_nodes"] = fresh_nodes;
  if (uniform) out["ideal_pct"] = round3(ideal_rate(s));
  out["fresh_pending"] = fresh_pending;
  out["fresh_packed_pct"] = round3(packed_rate);
  out["fresh_packed_nodes"] = packed_nodes;
  out["fresh_packed_pending"] = packed_pending;
  out["after_vs_fresh"] = round3(plan.allocation_after / fresh_rate);
  out["after_vs_fresh_packed"] = round3(plan.allocation_after / packed_rate);
  out["before_vs_fresh"] = round3(plan.allocation_before / fresh_rate);
  out["moves"] = plan.moves.size();
  out["emptied"] = plan.emptied.size();
  out["plan_ms"] = round3(ms);
  out["plan_cpu_ms"] = round3(cpu);
  out["schedules"] = plan.schedules;
  out["stopped"] = plan.stopped;
  out["fresh_schedule_ms"] = round3(fresh_ms);
  out["tries20_after_pct"] = round3(short_plan.allocation_after);
  out["tries20_after_vs_fresh"] = round3(short_plan.allocation_after / fresh_rate);
  out["tries20_moves"] = short_plan.moves.size();
  out["tries20_plan_ms"] = round3(short_ms);
  out["target90_after_pct"] = round3(target_plan.allocation_after);
  out["target90_after_vs_fresh"] = round3(target_plan.allocation_after / fresh_rate);
  out["target90_moves"] = target_plan.moves.size();
  out["target90_plan_ms"] = round3(target_ms);
  return out;
}

Figures run_case() {
  Figures out;
  out["seed"] = k_workload_seed;
  Figures m = measure(build(0), true);
  for (auto it = m.begin(); it != m.end(); ++it) out[it.key()] = it.value();
  return out;
}

// The trace-shaped workload of `gaia sim compact` (controllers/compaction.hpp: seed 1,
// 1,000 machines of three sizes and 5% GPU machines, heavy-tailed requests up to 16
// cores, 10% of jobs on ssd machines, filled to 70% of the cpu), scheduled with the
// stack profile, 40% of it deleted the same way.
Fragmented build_trace() {
  Fragmented f;
  f.setup_ms = time_ms([&] {
    sim::TraceShape shape;
    shape.machines = k_nodes;
    sim::SimWorkload w = sim::generate_workload(shape);
    ClusterState s;
    s.snapshot.nodes = w.machines;
    s.snapshot.roles = w.roles;
    s.snapshot.instances = w.instances;
    s.snapshot.profile.strategy = "stack";
    Decision d = schedule(s.snapshot);
    std::unordered_map<std::string, size_t> at;
    for (size_t k = 0; k < s.snapshot.instances.size(); ++k) at[s.snapshot.instances[k].key()] = k;
    for (const auto& p : d.placements) {
      Instance& i = s.snapshot.instances[at.at(p.instance)];
      i.node = p.node;
      i.state = InstanceState::Running;
      i.ports = p.ports;
      for (const auto& v : p.volumes) i.volumes.push_back(v);
    }
    f.placed = d.placements.size();
    Rng rng(k_delete_seed);
    std::vector<Instance> kept;
    for (auto& i : s.snapshot.instances) {
      if (i.state != InstanceState::Running) continue;  // The few that found no machine.
      if (rng.chance(k_deleted)) {
        ++f.deleted;
        continue;
      }
      kept.push_back(std::move(i));
    }
    s.snapshot.instances = std::move(kept);
    std::unordered_map<std::string, int> survivors;
    for (const auto& i : s.snapshot.instances) ++survivors[i.tenant + "/" + i.app + "/" + i.role];
    for (auto& [id, r] : s.snapshot.roles) r.replicas = survivors[id];
    f.state = std::move(s);
  });
  return f;
}

Figures run_trace_case() {
  Figures out;
  out["workload_seed"] = 1;
  Figures m = measure(build_trace(), false);
  for (auto it = m.begin(); it != m.end(); ++it) out[it.key()] = it.value();
  return out;
}

// Every bound instance runs, as the sim backend has it after a commit.
void start_all(ClusterState& s) {
  for (auto& i : s.snapshot.instances)
    if (i.state == InstanceState::Placed) i.state = InstanceState::Running;
}

// The controller option on the same cluster, with min_available at half of each role's
// replicas (so a plan may move half of a role's running instances at once):
// rebalance_controller with a budget of k_budget moves per period, each period's moves
// started before the next (as the sim backend does), until a period moves nothing. Also
// one plan of `gaia rebalance` with no move limit on that cluster.
constexpr int k_budget = 500;

Figures run_controller_case() {
  Fragmented f = build(50);
  ClusterState s = std::move(f.state);
  Figures out;
  out["nodes"] = k_nodes;
  out["instances"] = s.snapshot.instances.size();
  out["min_available_pct"] = 50;
  out["budget"] = k_budget;
  double fresh_ms = 0;
  auto [fresh_rate, fresh_nodes] = allocation_rate(fresh_packing(s, &fresh_ms));
  auto [before_rate, before_nodes] = allocation_rate(s);
  out["before_pct"] = round3(before_rate);
  out["before_nodes"] = before_nodes;
  out["fresh_pct"] = round3(fresh_rate);
  out["fresh_nodes"] = fresh_nodes;
  // One plan of `gaia rebalance` with no move limit: whole nodes, within min_available.
  RebalanceOptions once;
  once.max_moves = 1'000'000;
  RebalancePlan one = plan_rebalance(s, once, k_now);
  check_plan(one);
  out["one_plan_after_pct"] = round3(one.allocation_after);
  out["one_plan_after_vs_fresh"] = round3(one.allocation_after / fresh_rate);
  out["one_plan_moves"] = one.moves.size();
  ControllerContext ctx{k_now, {}};
  ctx.options.rebalance_budget = k_budget;
  std::vector<double> rates;
  std::vector<double> period_ms;
  size_t moves = 0;
  int reached = 0;
  for (int period = 1; period <= 100; ++period) {
    ControllerResult r;
    period_ms.push_back(time_ms([&] { r = rebalance_controller(s, ctx); }));
    size_t moved = 0;
    for (const auto& e : r.batch.events)
      if (e.reason == "Migrated") ++moved;
    s = apply_batch(std::move(s), r.batch);
    check_capacity(s);
    check_min_available(s);
    start_all(s);
    ctx.now_ms += ctx.options.rebalance_period_ms;
    if (moved == 0) break;
    moves += moved;
    double rate = allocation_rate(s).first;
    rates.push_back(round3(rate));
    if (!reached && rate >= 0.9 * fresh_rate) reached = period;
  }
  auto [after_rate, after_nodes] = allocation_rate(s);
  out["after_pct"] = round3(after_rate);
  out["after_nodes"] = after_nodes;
  out["after_vs_fresh"] = round3(after_rate / fresh_rate);
  out["moves"] = moves;
  out["periods_with_moves"] = rates.size();
  out["period_reaching_90pct_of_fresh"] = reached;
  out["allocation_by_period"] = rates;
  add_latency(out, period_ms, "period_");
  return out;
}

const Registration k_rebalance{"rebalance-1k",
                               "defragment a 1,000-node packing cluster after 40% of 19,500 instances left: "
                               "plan_rebalance with no move limit against a fresh packing of the survivors",
                               [] { return run_case(); }};
const Registration k_trace{"rebalance-trace-1k",
                           "the same on the trace-shaped workload of `gaia sim compact` (1,000 machines of four "
                           "shapes, seed 1, 70% fill, stack profile) after 40% of its instances left",
                           [] { return run_trace_case(); }};
const Registration k_controller{"rebalance-controller-1k",
                                "the same cluster with min_available at half the replicas, defragmented by the "
                                "rebalance controller at 500 moves per period until a period moves nothing",
                                [] { return run_controller_case(); }};

}  // namespace
}  // namespace gaia::bench::rebalance_case
