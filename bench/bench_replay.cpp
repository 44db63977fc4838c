// replay-1k: `gaia sim replay` on a synthetic trace in Alibaba's cluster-trace-v2018
// format, 1,000 machines and six hours of DAG jobs and online services, generated with
// a fixed seed as CSV text, then parsed and replayed. Figures: parse speed, replay speed
// in trace events per second and trace time per wall second, and the same replay with
// the locality score off as the comparison in the same run.
#include <fmt/format.h>

#include <random>

#include "bench/bench_util.hpp"
#include "controllers/replay.hpp"
#include "controllers/trace.hpp"

namespace gaia::bench {
namespace {

std::map<std::string, std::string> synthetic_alibaba_trace(int machines, int64_t span_s, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)); };
  std::string mm, tasks, containers;
  for (int m = 1; m <= machines; ++m)
    mm += fmt::format("m_{},0,{},{},96,100,USING\n", m, m / 200, static_cast<char>('A' + (m / 40) % 5));
  // A machine in fifty leaves service for twenty minutes somewhere in the trace.
  for (int m = 50; m <= machines; m += 50) {
    int64_t t = uniform(600, span_s - 1800);
    mm += fmt::format("m_{},{},{},{},96,100,OFFLINE\n", m, t, m / 200, static_cast<char>('A' + (m / 40) % 5));
    mm += fmt::format("m_{},{},{},{},96,100,USING\n", m, t + 1200, m / 200, static_cast<char>('A' + (m / 40) % 5));
  }
  // Online services hold about a third of the cpu; a tenth of them deploy mid-trace.
  int64_t cid = 0;
  for (int u = 0; u < machines / 4; ++u) {
    int64_t n = uniform(4, 16), cpu = 100 * uniform(2, 8);
    int64_t t = u % 10 == 9 ? uniform(1, span_s - 1) : 0;
    for (int64_t i = 0; i < n; ++i) containers += fmt::format("c_{},m_1,{},app_{},started,{},{},3.13\n", ++cid, t, u, cpu, cpu);
  }
  // Batch jobs: map, reduce, sometimes a join, arriving all through the span.
  int64_t job = 0;
  for (int64_t t = 1; t < span_s; t += uniform(5, 25)) {
    ++job;
    int64_t nm = uniform(1, 60), dm = uniform(60, 1800), cpu = 50 * uniform(1, 4);
    tasks += fmt::format("M1,{},j_{},1,Terminated,{},{},{},0.8\n", nm, job, t, t + dm, cpu);
    int64_t s2 = t + dm + uniform(1, 30);
    tasks += fmt::format("R2_1,{},j_{},1,Terminated,{},{},100,1.2\n", std::max<int64_t>(1, nm / 5), job, s2, s2 + uniform(60, 900));
    if (job % 5 == 0) tasks += fmt::format("task_{:x},{},j_{},1,Terminated,{},{},100,0.4\n", rng() % 0xffffff, uniform(1, 30), job, t, t + uniform(30, 600));
  }
  return {{"machine_meta.csv", mm}, {"batch_task.csv", tasks}, {"container_meta.csv", containers}};
}

Figures run_replay_1k() {
  constexpr int kMachines = 1000;
  constexpr int64_t kSpan = 6 * 3600;
  auto files = synthetic_alibaba_trace(kMachines, kSpan, 20181);
  size_t bytes = 0;
  for (const auto& [name, text] : files) bytes += text.size();
  Result<sim::Trace> trace;
  double parse_ms = time_ms([&] { trace = sim::parse_alibaba_v2018(files, "synthetic"); });
  if (!trace) throw std::runtime_error(format_diagnostics(trace.error()));

  Figures out;
  out["machines"] = kMachines;
  out["trace_hours"] = kSpan / 3600;
  out["csv_mb"] = round3(static_cast<double>(bytes) / 1e6);
  out["parse_ms"] = round3(parse_ms);
  out["parse_mb_per_s"] = round3(static_cast<double>(bytes) / 1e6 / (parse_ms / 1000.0));
  auto one = [&](bool near, const std::string& prefix) {
    sim::ReplayOptions o;
    o.near = near;
    sim::ReplayReport r;
    double cpu_before = cpu_ms();
    double ms = time_ms([&] { r = sim::replay(*trace, o); });
    double cpu = cpu_ms() - cpu_before;
    out[prefix + "tasks"] = r.tasks;
    out[prefix + "instances"] = r.instances;
    out[prefix + "events"] = r.events;
    out[prefix + "schedules"] = r.schedules;
    out[prefix + "wall_ms"] = round3(ms);
    out[prefix + "cpu_ms"] = round3(cpu);
    out[prefix + "events_per_s"] = round3(static_cast<double>(r.events) / (ms / 1000.0));
    out[prefix + "trace_s_per_wall_s"] = round3(static_cast<double>(r.end_s - r.start_s) / (ms / 1000.0));
    out[prefix + "preemptions"] = r.preemptions;
    out[prefix + "lost"] = r.lost;
    out[prefix + "wait_p50_s"] = sim::wait_percentile(r, 50);
    out[prefix + "wait_p99_s"] = sim::wait_percentile(r, 99);
    double node = r.near_placements ? static_cast<double>(r.near_node) / static_cast<double>(r.near_placements) : 0;
    out[prefix + "near_same_node"] = round3(node);
  };
  one(true, "");
  one(false, "no_near_");
  return out;
}

const Registration k_replay_1k{"replay-1k",
                               "parse and replay a synthetic 1,000-machine, 6-hour trace in Alibaba's v2018 format; "
                               "the same replay without the locality score as comparison",
                               &run_replay_1k};

}  // namespace
}  // namespace gaia::bench
