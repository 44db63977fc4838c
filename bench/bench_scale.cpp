// scale-1m: the scheduler at the largest size, 1,000,000 instances on 10,000
// nodes (256 cores and 1 TiB each, so the generated workload fills about 60%). One call
// places every instance, as after restoring a whole cluster; then, with all of them
// running, one more app of 1,000 instances is scheduled, which is what one `gaia submit`
// costs at that size (indexing the whole snapshot dominates). Figures: time of both and
// the process's peak RSS (the snapshot itself included), against the 2 GiB.
#include <fmt/format.h>

#include <stdexcept>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "controllers/scheduler.hpp"

namespace gaia::bench {
namespace {

constexpr int k_scale_nodes = 10000;
constexpr size_t k_scale_instances = 1000000;
constexpr size_t k_scale_submit = 1000;

Figures run_scale_1m() {
  Snapshot s;
  s.nodes = make_nodes(k_scale_nodes, 256000, 1024);
  s.tenants = make_tenants();
  std::vector<GenApp> apps = make_apps(k_scale_instances, 20261127);
  WorkloadOptions more;
  more.name_prefix = "late";
  std::vector<GenApp> late = make_apps(k_scale_submit, 20261128, more);
  for (const auto* set : {&apps, &late})
    for (const auto& a : *set)
      for (const auto& r : a.roles) s.roles[role_key(a, r)] = r;
  s.instances.reserve(k_scale_instances + k_scale_submit);
  for (const auto& a : apps)
    for (const auto& r : a.roles)
      for (auto& i : make_replicas(a, r)) s.instances.push_back(std::move(i));

  Figures out;
  out["nodes"] = k_scale_nodes;
  out["instances"] = k_scale_instances;
  out["apps"] = apps.size();
  out["snapshot_rss_mb"] = round3(peak_rss_mb());

  Decision all;
  double cpu_before = cpu_ms();
  double ms = time_ms([&] { all = schedule(s); });
  out["one_call_wall_ms"] = round3(ms);
  out["one_call_cpu_ms"] = round3(cpu_ms() - cpu_before);
  out["one_call_placements_per_s"] = round3(static_cast<double>(all.placements.size()) / (ms / 1000.0));
  if (all.placements.size() != k_scale_instances)
    throw std::runtime_error(fmt::format("{} of {} instances placed", all.placements.size(), k_scale_instances));
  // Bind them, as the controllers would, in snapshot order (placements follow the queue).
  {
    std::unordered_map<std::string, size_t> at;
    at.reserve(s.instances.size());
    for (size_t i = 0; i < s.instances.size(); ++i) at.emplace(s.instances[i].key(), i);
    for (const auto& p : all.placements) {
      Instance& i = s.instances[at.at(p.instance)];
      i.node = p.node;
      i.state = InstanceState::Running;
    }
  }
  all = Decision{};

  std::vector<std::string> keys;
  for (const auto& a : late)
    for (const auto& r : a.roles)
      for (auto& i : make_replicas(a, r)) {
        s.instances.push_back(std::move(i));
        keys.push_back(s.instances.back().key());
      }
  std::vector<double> samples;
  Decision one;
  for (int rep = 0; rep < 5; ++rep) samples.push_back(time_ms([&] { one = schedule(s, keys); }));
  if (one.placements.size() != keys.size())
    throw std::runtime_error(fmt::format("the late app: {} of {} placed", one.placements.size(), keys.size()));
  out["submit_instances"] = keys.size();
  out["submit_p50_ms"] = round3(percentile(samples, 50));
  out["submit_max_ms"] = round3(*std::max_element(samples.begin(), samples.end()));
  out["within_2_gib"] = peak_rss_mb() <= 2048.0;
  return out;
}

const Registration k_scale_1m{"scale-1m",
                              "1,000,000 instances on 10,000 nodes: one call placing all, then one app of 1,000 "
                              "scheduled onto the full cluster; peak RSS against 2 GiB",
                              &run_scale_1m};

}  // namespace
}  // namespace gaia::bench
