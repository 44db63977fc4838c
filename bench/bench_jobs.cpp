// schedule-jobs-10k: the scheduler on a workload shaped like published cluster traces
// (controllers/compaction.hpp's generator: 10,000 machines of a few shapes, heavy-tailed
// job sizes, so most runs are one or two instances), scheduled in one call. This is
// the pass `gaia sim compact` repeats. The bounded search (controllers/node_order.hpp)
// is measured against scoring every node per run, in the same run, and the two
// decisions must be identical or the case fails.
#include <fmt/format.h>

#include <stdexcept>

#include "bench/bench_util.hpp"
#include "controllers/compaction.hpp"
#include "controllers/scheduler.hpp"

namespace gaia::bench {
namespace {

Figures run_schedule_jobs_10k() {
  sim::TraceShape shape;
  shape.machines = 10000;
  shape.seed = 1;
  sim::SimWorkload w = sim::generate_workload(shape);
  Figures out;
  out["instances"] = w.instances.size();
  out["jobs"] = w.roles.size();
  // The whole cell, and a tight one (the size compaction ends at for this workload):
  // there placements fail, and prod work preempts non-prod.
  for (int machines : {10000, 8150}) {
    Snapshot s;
    s.nodes.assign(w.machines.begin(), w.machines.begin() + machines);
    s.roles = w.roles;
    s.instances = w.instances;
    std::vector<std::string> keys;
    for (const auto& i : s.instances) keys.push_back(i.key());
    std::string prefix = fmt::format("m{}_", machines);
    Decision decided[2];
    for (int bounded = 1; bounded >= 0; --bounded) {
      double cpu_before = cpu_ms();
      double ms = time_ms([&] { decided[bounded] = schedule(s, keys, ScheduleTuning{bounded == 1}); });
      double cpu = cpu_ms() - cpu_before;
      std::string p = prefix + (bounded ? "bounded_" : "every_node_");
      const Decision& d = decided[bounded];
      out[p + "wall_ms"] = round3(ms);
      out[p + "cpu_ms"] = round3(cpu);
      out[p + "placements_per_s"] = round3(static_cast<double>(d.placements.size()) / (ms / 1000.0));
    }
    const Decision& a = decided[1];
    const Decision& b = decided[0];
    bool same = a.placements.size() == b.placements.size() && a.preemptions.size() == b.preemptions.size() &&
                a.unschedulable.size() == b.unschedulable.size();
    for (size_t i = 0; same && i < a.placements.size(); ++i)
      same = a.placements[i].instance == b.placements[i].instance && a.placements[i].node == b.placements[i].node &&
             a.placements[i].score == b.placements[i].score;
    for (size_t i = 0; same && i < a.preemptions.size(); ++i)
      same = a.preemptions[i].victim == b.preemptions[i].victim && a.preemptions[i].node == b.preemptions[i].node;
    if (!same) throw std::runtime_error(fmt::format("{} machines: the bounded search decided differently", machines));
    out[prefix + "placements"] = a.placements.size();
    out[prefix + "preemptions"] = a.preemptions.size();
    out[prefix + "pending"] = a.unschedulable.size();
    out[prefix + "same_decision"] = true;
    out[prefix + "speedup"] = round3(out[prefix + "every_node_wall_ms"].get<double>() / out[prefix + "bounded_wall_ms"].get<double>());
  }
  return out;
}

const Registration k_schedule_jobs_10k{
    "schedule-jobs-10k",
    "a trace-shaped workload (many one-instance jobs) on 10,000 and 8,150 machines in one call: bounded search "
    "against scoring every node, same decision required",
    &run_schedule_jobs_10k};

}  // namespace
}  // namespace gaia::bench
