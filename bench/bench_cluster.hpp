#pragma once
// Synthetic clusters and workloads for the scheduler and submit benchmarks
// (bench_schedule.cpp, bench_submit.cpp), generated from fixed seeds.
//
// Nodes: 32 cores, 128 GiB, 3 zones, racks of 40 nodes (one switch per rack), every
// tenth node labelled disk=ssd. Each node has a host address in 10.0.0.0/16 and an
// instance subnet /24 in 10.64.0.0/10, so up to 16,384 nodes fit the address plan.
//
// Workloads: apps of 1-4 roles spread over 10 tenants; a role has 10-100 replicas
// (uniform) and one of four request sizes (0.5 core/1 GiB, 1/4, 2/8, 4/16, weighted
// 25/35/25/15, mean ~1.6 cores and ~6 GiB), 80% prod and 20% nonprod. Ten instances per
// node therefore fill about half of the cluster's cpu and memory, a realistic load that
// leaves every instance somewhere to go. The scheduler batches the identical instances
// of a role into one run, so the number of roles (about instances / 55) matters as much
// as the number of instances.

#include <fmt/format.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "bench/bench_util.hpp"
#include "controllers/submit.hpp"
#include "lib/cluster.hpp"
#include "lib/hash.hpp"
#include "lib/workload.hpp"

namespace gaia::bench {

inline constexpr int64_t k_gib = 1024LL * 1024 * 1024;
inline constexpr int k_rack_size = 40;
inline constexpr int k_zones = 3;
inline constexpr int k_tenants = 10;

// schedule-basic-5k's workload, which the submit, apply and store cases fill their
// cluster with, so their figures describe the same cluster.
inline constexpr uint64_t k_basic5k_seed = 20240612;
inline constexpr int k_basic5k_nodes = 5000;
inline constexpr size_t k_basic5k_instances = 50000;

inline std::vector<Node> make_nodes(int count, int64_t cpu_millis = 32000, int64_t mem_gib = 128) {
  if (count > 16384) throw std::logic_error("the address plan of make_nodes holds 16,384 nodes");
  std::vector<Node> nodes;
  nodes.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Node n;
    n.name = fmt::format("n{:05d}", i);
    n.address = fmt::format("10.0.{}.{}", (i + 1) / 256, (i + 1) % 256);
    n.instance_subnet = fmt::format("10.{}.{}.0/24", 64 + i / 256, i % 256);
    n.capacity = Resources{cpu_millis, mem_gib * k_gib, 0, 0};
    int rack = i / k_rack_size;
    n.zone = fmt::format("z{}", rack % k_zones);
    n.rack = fmt::format("r{:03d}", rack);
    n.switch_ = fmt::format("sw{:03d}", rack);
    n.labels = {{"zone", n.zone}, {"rack", n.rack}, {"switch", n.switch_}, {"disk", i % 10 == 0 ? "ssd" : "hdd"}};
    nodes.push_back(std::move(n));
  }
  return nodes;
}

inline std::vector<Tenant> make_tenants() {
  std::vector<Tenant> out;
  for (int t = 0; t < k_tenants; ++t) out.push_back(Tenant{fmt::format("t{}", t), {}, {}});
  return out;
}

struct GenApp {
  std::string tenant, name;
  std::vector<Role> roles;  // Sorted by name, as a rendered workload's are.
  size_t instances = 0;
};

struct WorkloadOptions {
  // Every role gets a required anti-affinity term on its own instances with topology
  // "node": no two replicas of a role share a node.
  bool anti_affinity = false;
  double nonprod_share = 0.2;
  std::string name_prefix = "app";  // Apps are named <prefix><5-digit number>.
};

struct Size {
  int weight;
  int64_t cpu_millis, mem_gib;
};
inline const std::vector<Size>& basic_sizes() {
  static const std::vector<Size> sizes = {{25, 500, 1}, {35, 1000, 4}, {25, 2000, 8}, {15, 4000, 16}};
  return sizes;
}

inline Resources draw_size(Rng& rng, const std::vector<Size>& sizes) {
  int total = 0;
  for (const auto& s : sizes) total += s.weight;
  auto pick = static_cast<int>(rng.below(static_cast<uint64_t>(total)));
  for (const auto& s : sizes) {
    if (pick < s.weight) return Resources{s.cpu_millis, s.mem_gib * k_gib, 0, 0};
    pick -= s.weight;
  }
  return Resources{sizes.back().cpu_millis, sizes.back().mem_gib * k_gib, 0, 0};
}

// Apps whose roles add up to exactly `instances` replicas (the last role is cut short).
inline std::vector<GenApp> make_apps(size_t instances, uint64_t seed, const WorkloadOptions& options = {}) {
  Rng rng(seed);
  std::vector<GenApp> apps;
  size_t total = 0;
  while (total < instances) {
    GenApp app;
    app.tenant = fmt::format("t{}", apps.size() % k_tenants);
    app.name = fmt::format("{}{:05d}", options.name_prefix, apps.size());
    bool nonprod = rng.chance(options.nonprod_share);
    int roles = 1 + static_cast<int>(rng.below(4));
    for (int r = 0; r < roles && total < instances; ++r) {
      Role role;
      role.name = fmt::format("role{}", r);
      role.image = fmt::format("registry.local/{}/{}:1.0", app.name, role.name);
      role.replicas = static_cast<int>(std::min<size_t>(10 + rng.below(91), instances - total));
      role.resources = draw_size(rng, basic_sizes());
      role.priority = Priority{nonprod ? Band::Nonprod : Band::Prod, 100, true};
      if (options.anti_affinity) {
        AffinityTerm anti;
        anti.target = AffinityTerm::Target::Instance;
        anti.match = {{"gaia.io/app", "In", {app.name}}, {"gaia.io/role", "In", {role.name}}};
        anti.topology = "node";
        role.required_anti_affinity = {anti};
      }
      total += static_cast<size_t>(role.replicas);
      app.instances += static_cast<size_t>(role.replicas);
      app.roles.push_back(std::move(role));
    }
    apps.push_back(std::move(app));
  }
  return apps;
}

// A pending instance of a role, labelled exactly as a submit labels them.
inline Instance make_pending(const GenApp& app, const Role& role, int ordinal) {
  return new_instance(app.tenant, app.name, "1.0.0", role, ordinal);
}

// Every replica of a role, pending, made as a submit makes them: the first one built, the
// others copied from it, so they share its labels (lib/labels.hpp) as a submit's do.
inline std::vector<Instance> make_replicas(const GenApp& app, const Role& role) {
  std::vector<Instance> out;
  out.reserve(static_cast<size_t>(std::max(0, role.replicas)));
  for (int k = 0; k < role.replicas; ++k) {
    if (k == 0) {
      out.push_back(make_pending(app, role, 0));
      continue;
    }
    Instance i = out.front();
    i.ordinal = k;
    out.push_back(std::move(i));
  }
  return out;
}

inline std::string role_key(const GenApp& app, const Role& role) {
  return app.tenant + "/" + app.name + "/" + role.name;
}

// Per-node utilisation after a placement: how evenly the cluster is loaded, so a faster
// variant can be checked for not placing worse.
struct Spread {
  double cpu_mean_pct = 0, cpu_stddev_pct = 0, cpu_max_pct = 0;
  int nodes_used = 0;
};

inline Spread cpu_spread(const std::vector<Node>& nodes, const std::vector<int64_t>& used_cpu) {
  Spread s;
  double sum = 0, sq = 0;
  for (size_t n = 0; n < nodes.size(); ++n) {
    double pct = 100.0 * static_cast<double>(used_cpu[n]) / static_cast<double>(nodes[n].capacity.cpu_millis);
    sum += pct;
    sq += pct * pct;
    s.cpu_max_pct = std::max(s.cpu_max_pct, pct);
    if (used_cpu[n] > 0) ++s.nodes_used;
  }
  double count = static_cast<double>(nodes.size());
  s.cpu_mean_pct = sum / count;
  s.cpu_stddev_pct = std::sqrt(std::max(0.0, sq / count - s.cpu_mean_pct * s.cpu_mean_pct));
  return s;
}

inline void add_spread(Figures& out, const std::string& prefix, const Spread& s) {
  out[prefix + "cpu_mean_pct"] = round3(s.cpu_mean_pct);
  out[prefix + "cpu_stddev_pct"] = round3(s.cpu_stddev_pct);
  out[prefix + "cpu_max_pct"] = round3(s.cpu_max_pct);
}

// A generated app as a submit deploys it: its record with the workload, a content hash
// and a minimal document, as the benchmarks of submitting and of rebalancing use it.
inline AppToDeploy to_deploy(const GenApp& g) {
  AppToDeploy d;
  AppRecord& r = d.record;
  r.tenant = g.tenant;
  r.name = g.name;
  r.version = "1.0.0";
  r.workload.app = g.name;
  r.workload.version = r.version;
  r.workload.tenant = g.tenant;
  r.workload.priority = g.roles.front().priority;
  r.workload.roles = g.roles;
  r.workload.hash = content_hash(g.name + "/1.0.0");
  r.document = {{"apiVersion", "gaia/v1"}, {"kind", "App"}, {"metadata", {{"name", g.name}, {"version", r.version}}}};
  r.spec_dir = "/synthetic/" + g.name;
  return d;
}

}  // namespace gaia::bench
