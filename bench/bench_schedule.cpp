// Scheduler benchmarks: schedule-basic-{1k,5k,10k}, schedule-antiaffinity-5k.
//
// A synthetic cluster and workload (bench/bench_cluster.hpp) are scheduled three ways
// with controllers/scheduler.hpp, plus a baseline:
//
//  - one call: every instance pending, one schedule() call, as after a large submit or a
//    controller restart. This gives `placements_per_s` (the in-process throughput, the
//    figure scheduler_perf reports for kube-scheduler).
//  - submissions: the apps arrive in submissions of at least 1% of the instances (whole
//    apps, so 50-100 submissions); each
//    is one schedule() call on a snapshot holding every earlier placement, so each call
//    pays for indexing the cluster as it stands. `p50_us`/`p99_us` are per call, the
//    call's wall time divided by its placements ("latency_basis" says so).
//  - sampled: the one call again with percentage_of_nodes_to_score = 10.
//  - naive baseline: written here, the per-instance loop of a scheduler without runs:
//    for every instance, scan every node, filter on cpu and memory (and the role's
//    anti-affinity), score it (least allocated plus balanced allocation, as
//    kube-scheduler's defaults) and take the best. No batching, no heap, no sampling.
//
// Every variant reports how evenly it loaded the cluster (cpu per node: mean, stddev,
// max), so a faster variant is seen not to place worse.
#include <fmt/format.h>

#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "controllers/scheduler.hpp"

namespace gaia::bench {
namespace {

constexpr uint64_t k_schedule_seed = 20240612;
constexpr int k_submissions = 100;
constexpr int k_sample_pct = 10;

struct Scenario {
  std::vector<Node> nodes;
  std::vector<GenApp> apps;
  size_t instances = 0;
  size_t roles = 0;
  bool anti_affinity = false;
};

Scenario make_scenario(int nodes, size_t instances, bool anti_affinity) {
  Scenario sc;
  sc.nodes = make_nodes(nodes);
  WorkloadOptions options;
  options.anti_affinity = anti_affinity;
  sc.apps = make_apps(instances, k_schedule_seed, options);
  sc.instances = instances;
  sc.anti_affinity = anti_affinity;
  for (const auto& a : sc.apps) sc.roles += a.roles.size();
  return sc;
}

// Nodes, tenants and every role; instances are added by the caller.
Snapshot base_snapshot(const Scenario& sc, int pct) {
  Snapshot s;
  s.nodes = sc.nodes;
  s.tenants = make_tenants();
  for (const auto& a : sc.apps)
    for (const auto& r : a.roles) s.roles[role_key(a, r)] = r;
  s.profile.percentage_of_nodes_to_score = pct;
  s.instances.reserve(sc.instances);
  return s;
}

void add_app_instances(Snapshot& s, const GenApp& app, std::vector<std::string>* keys) {
  for (const auto& r : app.roles)
    for (auto& i : make_replicas(app, r)) {
      s.instances.push_back(std::move(i));
      if (keys) keys->push_back(s.instances.back().key());
    }
}

// Cpu in use per node after applying `d` to `s` (whose instances were all pending).
std::vector<int64_t> used_cpu_after(const Snapshot& s, const std::vector<Placement>& placements) {
  std::unordered_map<std::string, size_t> node_ix, inst_ix;
  for (size_t n = 0; n < s.nodes.size(); ++n) node_ix[s.nodes[n].name] = n;
  for (size_t i = 0; i < s.instances.size(); ++i) inst_ix[s.instances[i].key()] = i;
  std::vector<int64_t> used(s.nodes.size(), 0);
  for (const auto& p : placements) used[node_ix.at(p.node)] += s.instances[inst_ix.at(p.instance)].request.cpu_millis;
  return used;
}

// The most replicas of one role on one node: 1 means every role is spread one per node.
int max_role_replicas_per_node(const Snapshot& s, const std::vector<Placement>& placements) {
  std::unordered_map<std::string, const Instance*> by_key;
  for (const auto& i : s.instances) by_key[i.key()] = &i;
  std::unordered_map<std::string, int> count;
  int most = 0;
  for (const auto& p : placements) {
    const Instance* i = by_key.at(p.instance);
    most = std::max(most, ++count[i->tenant + "/" + i->app + "/" + i->role + "@" + p.node]);
  }
  return most;
}

struct OneCall {
  int max_role_per_node = 0;
  size_t placements = 0, unschedulable = 0;
  double wall_ms = 0, cpu_ms = 0;
  Spread spread;
};

OneCall one_call(const Scenario& sc, int pct, const std::string& strategy = "spread") {
  Snapshot s = base_snapshot(sc, pct);
  s.profile.strategy = strategy;
  std::vector<std::string> keys;
  keys.reserve(sc.instances);
  for (const auto& a : sc.apps) add_app_instances(s, a, &keys);
  OneCall out;
  Decision d;
  double cpu_before = cpu_ms();
  out.wall_ms = time_ms([&] { d = schedule(s, keys); });
  out.cpu_ms = cpu_ms() - cpu_before;
  out.placements = d.placements.size();
  out.unschedulable = d.unschedulable.size();
  out.spread = cpu_spread(s.nodes, used_cpu_after(s, d.placements));
  out.max_role_per_node = max_role_replicas_per_node(s, d.placements);
  return out;
}

struct Submissions {
  size_t calls = 0, placements = 0, unschedulable = 0;
  double wall_ms = 0, cpu_ms = 0;
  std::vector<double> per_placement_us;  // One sample per call.
};

Submissions submissions(const Scenario& sc) {
  Snapshot s = base_snapshot(sc, 100);
  std::unordered_map<std::string, size_t> inst_ix;
  const size_t chunk = std::max<size_t>(1, sc.instances / k_submissions);
  Submissions out;
  size_t next_app = 0;
  while (next_app < sc.apps.size()) {
    std::vector<std::string> keys;
    const size_t first = s.instances.size();
    while (next_app < sc.apps.size() && keys.size() < chunk) add_app_instances(s, sc.apps[next_app++], &keys);
    for (size_t i = first; i < s.instances.size(); ++i) inst_ix[keys[i - first]] = i;
    Decision d;
    double cpu_before = cpu_ms();
    double ms = time_ms([&] { d = schedule(s, keys); });
    out.cpu_ms += cpu_ms() - cpu_before;
    out.wall_ms += ms;
    ++out.calls;
    out.placements += d.placements.size();
    out.unschedulable += d.unschedulable.size();
    if (!d.placements.empty()) out.per_placement_us.push_back(ms * 1000.0 / static_cast<double>(d.placements.size()));
    // Bind the placements, as the controllers do, before the next submission arrives.
    for (const auto& p : d.placements) {
      Instance& i = s.instances[inst_ix.at(p.instance)];
      i.node = p.node;
      i.ports = p.ports;
      i.state = InstanceState::Running;
    }
  }
  return out;
}

struct Naive {
  size_t instances = 0, placements = 0;
  double wall_ms = 0, cpu_ms = 0;
  Spread spread;
};

// The baseline: one full scan of the nodes per instance. Node state is kept in flat
// arrays so the baseline is not slowed by anything but its algorithm.
Naive naive_place(const Scenario& sc, size_t limit) {
  const size_t n = sc.nodes.size();
  std::vector<int64_t> cap_cpu(n), cap_mem(n), used_cpu(n, 0), used_mem(n, 0);
  std::vector<double> inv_cpu(n), inv_mem(n);
  std::vector<int> role_mark(n, -1);  // Last role placed on the node (roles come in runs).
  for (size_t k = 0; k < n; ++k) {
    cap_cpu[k] = sc.nodes[k].capacity.cpu_millis;
    cap_mem[k] = sc.nodes[k].capacity.memory_bytes;
    inv_cpu[k] = 1.0 / static_cast<double>(cap_cpu[k]);
    inv_mem[k] = 1.0 / static_cast<double>(cap_mem[k]);
  }
  Naive out;
  double cpu_before = cpu_ms();
  Timer wall;
  int role_id = 0;
  for (const auto& app : sc.apps) {
    for (const auto& role : app.roles) {
      for (int r = 0; r < role.replicas && out.instances < limit; ++r, ++out.instances) {
        const int64_t cpu = role.resources.cpu_millis, mem = role.resources.memory_bytes;
        int best = -1;
        double best_score = -1;
        for (size_t k = 0; k < n; ++k) {
          if (used_cpu[k] + cpu > cap_cpu[k] || used_mem[k] + mem > cap_mem[k]) continue;
          if (sc.anti_affinity && role_mark[k] == role_id) continue;
          double fc = static_cast<double>(used_cpu[k] + cpu) * inv_cpu[k];
          double fm = static_cast<double>(used_mem[k] + mem) * inv_mem[k];
          double score = ((1 - fc) + (1 - fm)) * 50.0 + (1 - std::abs(fc - fm)) * 100.0;
          if (score > best_score) {
            best_score = score;
            best = static_cast<int>(k);
          }
        }
        if (best < 0) continue;
        used_cpu[best] += cpu;
        used_mem[best] += mem;
        role_mark[best] = role_id;
        ++out.placements;
      }
      ++role_id;
    }
  }
  out.wall_ms = wall.elapsed_ms();
  out.cpu_ms = cpu_ms() - cpu_before;
  out.spread = cpu_spread(sc.nodes, used_cpu);
  return out;
}

double per_s(size_t count, double ms) { return ms > 0 ? round3(static_cast<double>(count) * 1000.0 / ms) : 0.0; }

Figures run_schedule_case(int nodes, size_t instances, bool anti_affinity, size_t naive_limit) {
  Scenario sc = make_scenario(nodes, instances, anti_affinity);
  Figures out;
  out["nodes"] = nodes;
  out["instances"] = instances;
  out["roles"] = sc.roles;
  out["apps"] = sc.apps.size();
  out["seed"] = k_schedule_seed;
  out["anti_affinity"] = anti_affinity ? "required, topology node, within each role" : "none";

  OneCall full = one_call(sc, 100);
  if (full.placements != instances)
    throw std::runtime_error(fmt::format("only {} of {} instances placed ({} unschedulable)", full.placements,
                                         instances, full.unschedulable));
  out["placements"] = full.placements;
  out["placements_per_s"] = per_s(full.placements, full.wall_ms);
  out["cpu_placements_per_s"] = per_s(full.placements, full.cpu_ms);
  out["one_call_wall_ms"] = round3(full.wall_ms);
  out["one_call_cpu_ms"] = round3(full.cpu_ms);
  add_spread(out, "", full.spread);
  out["max_role_replicas_per_node"] = full.max_role_per_node;

  Submissions sub = submissions(sc);
  if (sub.placements != instances)
    throw std::runtime_error(fmt::format("submissions placed {} of {} instances", sub.placements, instances));
  out["latency_basis"] = fmt::format(
      "per schedule() call: {} calls of >= {} instances (whole apps) each on the snapshot as it stands, "
      "call wall time / its placements",
      sub.calls, instances / k_submissions);
  out["p50_us"] = round3(percentile(sub.per_placement_us, 50));
  out["p99_us"] = round3(percentile(sub.per_placement_us, 99));
  out["mean_us"] = round3(mean(sub.per_placement_us));
  out["submissions_placements_per_s"] = per_s(sub.placements, sub.wall_ms);
  out["submissions_cpu_ms"] = round3(sub.cpu_ms);

  OneCall sampled = one_call(sc, k_sample_pct);
  if (sampled.placements != instances)
    throw std::runtime_error(fmt::format("sampled: only {} of {} placed", sampled.placements, instances));
  out["sampled_pct"] = k_sample_pct;
  out["sampled_placements_per_s"] = per_s(sampled.placements, sampled.wall_ms);
  out["sampled_cpu_ms"] = round3(sampled.cpu_ms);
  add_spread(out, "sampled_", sampled.spread);

  Naive naive = naive_place(sc, std::min(naive_limit, instances));
  if (naive.placements != naive.instances)
    throw std::runtime_error(fmt::format("naive placer placed {} of {}", naive.placements, naive.instances));
  out["naive_instances"] = naive.instances;
  out["naive_placements_per_s"] = per_s(naive.placements, naive.wall_ms);
  out["naive_cpu_ms"] = round3(naive.cpu_ms);
  if (naive.instances == instances) add_spread(out, "naive_", naive.spread);
  out["speedup_vs_naive_cpu"] = round3((naive.cpu_ms / static_cast<double>(naive.placements)) /
                                       (full.cpu_ms / static_cast<double>(full.placements)));
  double stack_cpu_ms = 0;
  if (anti_affinity) {
    // With the default spread profile the replicas of a role land on distinct nodes
    // anyway, so the constraint rarely binds. The stack (most allocated) profile packs
    // them together, so there it binds on every placement.
    OneCall stack = one_call(sc, 100, "stack");
    if (stack.placements != instances || stack.max_role_per_node != 1)
      throw std::runtime_error(fmt::format("stack + anti-affinity: {} of {} placed, up to {} replicas of a role on a node",
                                           stack.placements, instances, stack.max_role_per_node));
    out["stack_placements_per_s"] = per_s(stack.placements, stack.wall_ms);
    out["stack_cpu_ms"] = round3(stack.cpu_ms);
    out["stack_nodes_used"] = stack.spread.nodes_used;
    out["stack_max_role_replicas_per_node"] = stack.max_role_per_node;
    // The same workload without the constraint, to show that it binds under stack.
    OneCall unconstrained = one_call(make_scenario(nodes, instances, false), 100, "stack");
    out["stack_without_anti_affinity_max_role_replicas_per_node"] = unconstrained.max_role_per_node;
    out["stack_without_anti_affinity_nodes_used"] = unconstrained.spread.nodes_used;
    stack_cpu_ms = stack.cpu_ms + unconstrained.cpu_ms;
  }
  out["cpu_ms"] = round3(full.cpu_ms + sub.cpu_ms + sampled.cpu_ms + naive.cpu_ms + stack_cpu_ms);
  return out;
}

// preempt-20k: 20,000 running nonprod instances (roles of 10-100, 1/2/4 cores at
// 4 GiB per core, levels nonprod:50/100/150) fill a cluster: they are shuffled and
// packed next-fit onto 32-core nodes, so every node is full but for a hole smaller
// than the next instance. Then prod apps (roles of 10-100, 4 or 8 cores; 2,000
// instances) arrive one schedule() call per app; none fits without evicting, so each
// placement runs the preemption search over the whole cluster. Victims go back to
// pending; after the stream they are retried in one call (where the higher nonprod
// levels may preempt lower ones in turn).
//
// Baseline: kube-scheduler's DefaultPreemption victim selection written here per
// arrival: on every node remove all lower-priority instances, add back ("reprieve")
// the highest priority ones while the arrival still fits, then pick the node with the
// lowest highest-victim priority, then the lowest priority sum, then the fewest victims.
constexpr size_t k_preempt_running = 20000;
constexpr size_t k_preempt_arrivals = 2000;

struct PreemptScenario {
  Snapshot s;
  std::vector<GenApp> arrivals;
};

PreemptScenario make_preempt_scenario() {
  Rng rng(k_schedule_seed + 1);
  PreemptScenario sc;
  sc.s.tenants = make_tenants();
  const std::vector<Size> low_sizes = {{40, 1000, 4}, {40, 2000, 8}, {20, 4000, 16}};
  const std::vector<Size> high_sizes = {{60, 4000, 16}, {40, 8000, 32}};
  std::vector<Instance> running;
  for (size_t a = 0; running.size() < k_preempt_running; ++a) {
    GenApp app;
    app.tenant = fmt::format("t{}", a % k_tenants);
    app.name = fmt::format("batch{:05d}", a);
    Role role;
    role.name = "worker";
    role.kind = "batch";
    role.replicas = static_cast<int>(std::min<size_t>(10 + rng.below(91), k_preempt_running - running.size()));
    role.resources = draw_size(rng, low_sizes);
    role.priority = Priority{Band::Nonprod, 50 * (1 + static_cast<int>(rng.below(3))), true};
    for (auto& i : make_replicas(app, role)) {
      i.state = InstanceState::Running;
      running.push_back(std::move(i));
    }
    sc.s.roles[role_key(app, role)] = role;
  }
  for (size_t k = running.size(); k > 1; --k) std::swap(running[k - 1], running[rng.below(k)]);
  // Next-fit packing onto as many nodes as it takes.
  const Node shape = make_nodes(1).front();
  int64_t free_cpu = 0, free_mem = 0;
  int node_count = 0;
  std::vector<int> node_of(running.size());
  for (size_t k = 0; k < running.size(); ++k) {
    const Instance& i = running[k];
    if (i.request.cpu_millis > free_cpu || i.request.memory_bytes > free_mem) {
      ++node_count;
      free_cpu = shape.capacity.cpu_millis;
      free_mem = shape.capacity.memory_bytes;
    }
    node_of[k] = node_count - 1;
    free_cpu -= i.request.cpu_millis;
    free_mem -= i.request.memory_bytes;
  }
  sc.s.nodes = make_nodes(node_count);
  for (size_t k = 0; k < running.size(); ++k) running[k].node = sc.s.nodes[node_of[k]].name;
  sc.s.instances = std::move(running);
  size_t arriving = 0;
  for (size_t a = 0; arriving < k_preempt_arrivals; ++a) {
    GenApp app;
    app.tenant = fmt::format("t{}", a % k_tenants);
    app.name = fmt::format("prod{:05d}", a);
    for (int r = 0, roles = 1 + static_cast<int>(rng.below(2)); r < roles && arriving < k_preempt_arrivals; ++r) {
      Role role;
      role.name = fmt::format("role{}", r);
      role.replicas = static_cast<int>(std::min<size_t>(10 + rng.below(91), k_preempt_arrivals - arriving));
      role.resources = draw_size(rng, high_sizes);
      role.priority = Priority{Band::Prod, 100, true};
      arriving += static_cast<size_t>(role.replicas);
      app.instances += static_cast<size_t>(role.replicas);
      sc.s.roles[role_key(app, role)] = role;
      app.roles.push_back(std::move(role));
    }
    sc.arrivals.push_back(std::move(app));
  }
  sc.s.instances.reserve(sc.s.instances.size() + arriving);
  return sc;
}

struct KubeBaseline {
  size_t placed = 0, victims = 0;
  double wall_ms = 0, cpu_ms = 0;
};

// The baseline on its own copy of the cluster state, in flat arrays.
KubeBaseline kube_style_preemption(const PreemptScenario& sc) {
  struct Occ {
    int64_t cpu, mem, rank;
  };
  const size_t n = sc.s.nodes.size();
  std::unordered_map<std::string, size_t> node_ix;
  for (size_t k = 0; k < n; ++k) node_ix[sc.s.nodes[k].name] = k;
  std::vector<std::vector<Occ>> occ(n);
  std::vector<int64_t> free_cpu(n), free_mem(n);
  for (size_t k = 0; k < n; ++k) {
    free_cpu[k] = sc.s.nodes[k].capacity.cpu_millis;
    free_mem[k] = sc.s.nodes[k].capacity.memory_bytes;
  }
  for (const auto& i : sc.s.instances) {
    size_t k = node_ix.at(i.node);
    occ[k].push_back({i.request.cpu_millis, i.request.memory_bytes, i.priority.rank()});
    free_cpu[k] -= i.request.cpu_millis;
    free_mem[k] -= i.request.memory_bytes;
  }
  KubeBaseline out;
  double cpu_before = cpu_ms();
  Timer wall;
  std::vector<size_t> order, victims, best_victims;
  constexpr size_t k_none = SIZE_MAX;
  for (const auto& app : sc.arrivals)
    for (const auto& role : app.roles)
      for (int r = 0; r < role.replicas; ++r) {
        const int64_t cpu = role.resources.cpu_millis, mem = role.resources.memory_bytes, rank = role.priority.rank();
        size_t best = k_none;
        for (size_t k = 0; k < n && best == k_none; ++k)  // A node that fits as it is wins outright.
          if (free_cpu[k] >= cpu && free_mem[k] >= mem) best = k;
        if (best == k_none) {
          std::tuple<int64_t, int64_t, size_t> best_cost{};
          for (size_t k = 0; k < n; ++k) {
            // Remove every lower-priority occupant, then reprieve the highest first.
            int64_t fc = free_cpu[k], fm = free_mem[k];
            order.clear();
            for (size_t o = 0; o < occ[k].size(); ++o)
              if (occ[k][o].rank < rank) {
                order.push_back(o);
                fc += occ[k][o].cpu;
                fm += occ[k][o].mem;
              }
            if (fc < cpu || fm < mem) continue;
            std::stable_sort(order.begin(), order.end(),
                             [&](size_t a, size_t b) { return occ[k][a].rank > occ[k][b].rank; });
            victims.clear();
            int64_t max_rank = 0, sum_rank = 0;
            for (size_t o : order) {
              if (fc - occ[k][o].cpu >= cpu && fm - occ[k][o].mem >= mem) {
                fc -= occ[k][o].cpu;  // Reprieved: it stays.
                fm -= occ[k][o].mem;
                continue;
              }
              max_rank = std::max(max_rank, occ[k][o].rank);
              sum_rank += occ[k][o].rank;
              victims.push_back(o);
            }
            std::tuple<int64_t, int64_t, size_t> cost{max_rank, sum_rank, victims.size()};
            if (best == k_none || cost < best_cost) {
              best = k;
              best_cost = cost;
              best_victims = victims;
            }
          }
          if (best == k_none) continue;
          // Evict, highest index first so the remaining indices stay valid.
          std::sort(best_victims.rbegin(), best_victims.rend());
          for (size_t o : best_victims) {
            free_cpu[best] += occ[best][o].cpu;
            free_mem[best] += occ[best][o].mem;
            occ[best].erase(occ[best].begin() + static_cast<std::ptrdiff_t>(o));
          }
          out.victims += best_victims.size();
        }
        occ[best].push_back({cpu, mem, rank});
        free_cpu[best] -= cpu;
        free_mem[best] -= mem;
        ++out.placed;
      }
  out.wall_ms = wall.elapsed_ms();
  out.cpu_ms = cpu_ms() - cpu_before;
  return out;
}

struct PreemptStream {
  std::vector<double> per_placement_us;
  std::vector<std::string> victims;
  std::unordered_set<std::string> preemptors;
  size_t placed = 0, unschedulable = 0;
  double wall_ms = 0, arrivals_cpu_ms = 0;
  Decision rq;
  double requeue_ms = 0, requeue_cpu_ms = 0;
};

// The arrivals app by app on a copy of the scenario, then the victims' retry.
PreemptStream stream_preempt_arrivals(const PreemptScenario& sc, const ScheduleTuning& tuning) {
  Snapshot s = sc.s;
  std::unordered_map<std::string, size_t> inst_ix;
  for (size_t i = 0; i < s.instances.size(); ++i) inst_ix[s.instances[i].key()] = i;
  auto apply = [&](const Decision& d, std::vector<std::string>* victims) {
    for (const auto& p : d.preemptions) {
      Instance& v = s.instances[inst_ix.at(p.victim)];
      v.node.clear();
      v.ports.clear();
      v.state = InstanceState::Pending;
      if (victims) victims->push_back(p.victim);
    }
    for (const auto& p : d.placements) {
      Instance& i = s.instances[inst_ix.at(p.instance)];
      i.node = p.node;
      i.ports = p.ports;
      i.state = InstanceState::Running;
    }
  };
  PreemptStream out;
  for (const auto& app : sc.arrivals) {
    std::vector<std::string> keys;
    const size_t first = s.instances.size();
    add_app_instances(s, app, &keys);
    for (size_t i = first; i < s.instances.size(); ++i) inst_ix[keys[i - first]] = i;
    Decision d;
    double cpu_before = cpu_ms();
    double ms = time_ms([&] { d = schedule(s, keys, tuning); });
    out.arrivals_cpu_ms += cpu_ms() - cpu_before;
    out.wall_ms += ms;
    out.placed += d.placements.size();
    out.unschedulable += d.unschedulable.size();
    for (const auto& p : d.preemptions) out.preemptors.insert(p.preemptor);
    if (!d.placements.empty()) out.per_placement_us.push_back(ms * 1000.0 / static_cast<double>(d.placements.size()));
    apply(d, &out.victims);
  }
  if (out.placed != k_preempt_arrivals)
    throw std::runtime_error(fmt::format("{} of {} prod arrivals placed ({} unschedulable)", out.placed,
                                         k_preempt_arrivals, out.unschedulable));
  // The victims try again, all in one call.
  double rq_cpu_before = cpu_ms();
  out.requeue_ms = time_ms([&] { out.rq = schedule(s, out.victims, tuning); });
  out.requeue_cpu_ms = cpu_ms() - rq_cpu_before;
  return out;
}

Figures run_preempt_20k() {
  PreemptScenario sc = make_preempt_scenario();
  KubeBaseline kube = kube_style_preemption(sc);
  // The same stream with every node searched for every arrival (the search before
  // victim plans were kept across a run's arrivals): the baseline in the same run, and
  // it must choose the same victims.
  PreemptStream every = stream_preempt_arrivals(sc, ScheduleTuning{.keep_victim_plans = false});
  PreemptStream run = stream_preempt_arrivals(sc, ScheduleTuning{});
  if (every.victims != run.victims || every.rq.preemptions.size() != run.rq.preemptions.size() ||
      every.rq.placements.size() != run.rq.placements.size())
    throw std::runtime_error("kept victim plans chose other victims than searching every node");
  const size_t placed = run.placed;
  const double wall_ms = run.wall_ms, arrivals_cpu_ms = run.arrivals_cpu_ms;
  const auto& per_placement_us = run.per_placement_us;
  const auto& victims = run.victims;
  const auto& preemptors = run.preemptors;
  const Decision& rq = run.rq;
  const double requeue_ms = run.requeue_ms, requeue_cpu_ms = run.requeue_cpu_ms;

  Figures out;
  out["nodes"] = sc.s.nodes.size();
  out["running_nonprod"] = k_preempt_running;
  out["arrivals_prod"] = k_preempt_arrivals;
  out["arrival_calls"] = sc.arrivals.size();
  out["seed"] = k_schedule_seed + 1;
  out["placements"] = placed;
  out["placements_per_s"] = per_s(placed, wall_ms);
  out["cpu_placements_per_s"] = per_s(placed, arrivals_cpu_ms);
  out["latency_basis"] = fmt::format("per schedule() call of one arriving app ({} calls), call wall time / its placements",
                                     sc.arrivals.size());
  out["p50_us"] = round3(percentile(per_placement_us, 50));
  out["p99_us"] = round3(percentile(per_placement_us, 99));
  out["mean_us"] = round3(mean(per_placement_us));
  out["arrivals_wall_ms"] = round3(wall_ms);
  out["arrivals_cpu_ms"] = round3(arrivals_cpu_ms);
  out["arrivals_that_preempted"] = preemptors.size();
  out["victims"] = victims.size();
  out["victims_per_preempting_arrival"] = round3(static_cast<double>(victims.size()) / static_cast<double>(std::max<size_t>(1, preemptors.size())));
  out["requeue_ms"] = round3(requeue_ms);
  out["requeue_cpu_ms"] = round3(requeue_cpu_ms);
  out["requeue_placed"] = rq.placements.size();
  out["requeue_preemptions"] = rq.preemptions.size();
  out["requeue_unschedulable"] = rq.unschedulable.size();
  out["kube_baseline_placements"] = kube.placed;
  out["kube_baseline_placements_per_s"] = per_s(kube.placed, kube.wall_ms);
  out["kube_baseline_cpu_ms"] = round3(kube.cpu_ms);
  out["kube_baseline_victims"] = kube.victims;
  out["every_node_placements_per_s"] = per_s(every.placed, every.wall_ms);
  out["every_node_cpu_placements_per_s"] = per_s(every.placed, every.arrivals_cpu_ms);
  out["every_node_same_victims"] = true;
  out["cpu_ms"] = round3(arrivals_cpu_ms + requeue_cpu_ms + kube.cpu_ms + every.arrivals_cpu_ms + every.requeue_cpu_ms);
  return out;
}

const Registration k_preempt{"preempt-20k",
                             "20,000 running nonprod instances fill ~1,500 nodes; 2,000 prod instances arrive app by "
                             "app and must preempt; kube-style reprieve preemption as baseline",
                             &run_preempt_20k};

const Registration k_basic_1k{"schedule-basic-1k",
                              "schedule 10,000 instances (roles of 10-100) on 1,000 nodes: one call, submissions "
                              "of 1%, 10% sampling, naive per-instance scan as baseline",
                              [] { return run_schedule_case(1000, 10000, false, 10000); }};
const Registration k_basic_5k{"schedule-basic-5k", "as schedule-basic-1k with 5,000 nodes and 50,000 instances",
                              [] { return run_schedule_case(5000, 50000, false, 50000); }};
// The naive baseline is quadratic: at 10,000 nodes it places the first 20,000 instances.
const Registration k_basic_10k{"schedule-basic-10k",
                               "as schedule-basic-1k with 10,000 nodes and 100,000 instances (naive baseline "
                               "on the first 20,000)",
                               [] { return run_schedule_case(10000, 100000, false, 20000); }};
const Registration k_anti_5k{"schedule-antiaffinity-5k",
                             "schedule-basic-5k where every role has required anti-affinity on its own "
                             "instances (topology node); also under the stack profile, where it binds",
                             [] { return run_schedule_case(5000, 50000, true, 50000); }};

}  // namespace
}  // namespace gaia::bench
