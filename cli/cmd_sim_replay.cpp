// gaia sim replay: a published cluster trace (Alibaba's or Google's) run through the real scheduler over
// simulated time (controllers/replay.hpp, docs/policies.md#trace-replay). Reads the
// trace's files and writes no store; the report goes to stdout, the plot to --plot.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "cli/plot.hpp"
#include "cli/table.hpp"
#include "controllers/compaction.hpp"
#include "controllers/replay.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"

namespace gaia::cli {

namespace {

struct ReplayArgs {
  std::string trace;
  std::string format = "auto";
  std::string policy = "gaia";
  std::string tick = "10s", step, until;
  std::string memory_unit = "512Gi";
  int cpu_unit = 64;
  int rebalance_budget = 0;
  std::string rebalance_period = "10m";
  bool period_given = false;
  bool no_near = false;
  std::string plot;
  std::string output = "text";
};

// Policies a replay can use: those that are a scheduler profile alone (segregation,
// bucketing and reclamation are compaction experiments over a whole workload).
std::vector<std::string> replay_policy_names() {
  std::vector<std::string> out;
  for (const auto& p : sim::standard_policies())
    if (!p.segregate && !p.bucket && !p.reclaim) out.push_back(p.name);
  return out;
}

// Trace time as an offset from its start: "+0s", "+2h05m", "+1d3h".
std::string trace_offset(int64_t s) {
  if (s < 60) return fmt::format("+{}s", s);
  if (s < 3600) return fmt::format("+{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("+{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("+{}d{}h", s / 86400, (s % 86400) / 3600);
}

std::string span_text(int64_t s) { return trace_offset(s).substr(1); }

std::string pct(double f) { return fmt::format("{:.1f}%", f * 100.0); }

// A duration flag in whole seconds of trace time, at least one.
Result<int64_t> seconds_flag(const std::string& flag, const std::string& text) {
  auto d = parse_duration(text);
  if (!d) return fail(Diagnostic{{}, flag, fmt::format("{} is not a duration", text), "write it like 10s, 5m or 2h"});
  int64_t s = std::chrono::duration_cast<std::chrono::seconds>(*d).count();
  if (s < 1)
    return fail(Diagnostic{{}, flag, fmt::format("{} must be at least 1s", text), "the trace's times are whole seconds"});
  return s;
}

// The trace's files, opened to be read a line at a time.
struct TraceFiles {
  std::map<std::string, std::ifstream> open;
  std::map<std::string, std::istream*> streams;  // Alibaba's, by file name.
  sim::TraceParts machine_parts, task_parts;     // Google's, in order.
};

Result<void> open_file(const std::filesystem::path& p, TraceFiles& out, std::istream** stream) {
  auto& f = out.open.emplace(p.string(), std::ifstream(p, std::ios::binary)).first->second;
  if (!f) return fail(Diagnostic{{p.string(), 0, 0}, "", "cannot open the file", "check its permissions"});
  *stream = &f;
  return {};
}

// A table of Google's trace: `<name>.csv`, or a folder `<name>/` of part files (the
// published `part-00000-of-00500.csv`, uncompressed), read in name order.
Result<void> open_google_table(const std::filesystem::path& dir, const std::string& name, TraceFiles& out,
                               sim::TraceParts& parts) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_regular_file(dir / (name + ".csv"), ec)) files.push_back(dir / (name + ".csv"));
  if (std::filesystem::is_directory(dir / name, ec)) {
    for (const auto& e : std::filesystem::directory_iterator(dir / name, ec)) {
      std::string base = e.path().filename().string();
      if (base.ends_with(".gz"))
        return fail(Diagnostic{{e.path().string(), 0, 0}, "", "compressed part files are not read",
                               fmt::format("uncompress them first: gunzip {}/{}/*.gz", dir.string(), name)});
      if (e.is_regular_file() && base.ends_with(".csv")) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
  }
  for (const auto& p : files) {
    std::istream* in = nullptr;
    if (auto ok = open_file(p, out, &in); !ok) return ok;
    parts.emplace_back(p.string(), in);
  }
  return {};
}

Result<std::string> open_trace_dir(const std::string& dir, const std::string& format, TraceFiles& out) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return fail(Diagnostic{{dir, 0, 0}, "", "not a directory",
                           "give the directory holding the trace's files (machine_meta.csv, batch_task.csv, ... for "
                           "Alibaba's; machine_events and task_events for Google's)"});
  std::filesystem::path root(dir);
  std::string fmt_name = format;
  if (fmt_name == "auto") {
    bool alibaba = std::filesystem::exists(root / "machine_meta.csv", ec);
    bool google = std::filesystem::exists(root / "machine_events.csv", ec) || std::filesystem::exists(root / "machine_events", ec);
    if (alibaba == google)
      return fail(Diagnostic{{dir, 0, 0}, "",
                             alibaba ? "holds files of both formats" : "holds no trace: no machine_meta.csv or machine_events",
                             "give --format alibaba-v2018 or google-2011, or the directory of one trace"});
    fmt_name = alibaba ? "alibaba-v2018" : "google-2011";
  }
  if (fmt_name == "google-2011") {
    if (auto ok = open_google_table(root, "machine_events", out, out.machine_parts); !ok) return fail(ok.error());
    if (auto ok = open_google_table(root, "task_events", out, out.task_parts); !ok) return fail(ok.error());
    return fmt_name;
  }
  for (const auto& name : sim::alibaba_v2018_files()) {
    std::filesystem::path p = root / name;
    if (!std::filesystem::exists(p, ec)) continue;
    std::istream* in = nullptr;
    if (auto ok = open_file(p, out, &in); !ok) return fail(ok.error());
    out.streams[name] = in;
  }
  return fmt_name;
}

std::string replay_plot_script(const sim::ReplayReport& r, const std::string& terminal, const std::string& title) {
  std::vector<std::vector<double>> rows;
  bool usage = r.usage_known > 0;
  for (const auto& s : r.samples)
    // Where no running instance has known usage the used lines have a gap, not a 0.
    rows.push_back({static_cast<double>(s.time_s - r.start_s) / 3600.0, s.cpu_alloc * 100, s.mem_alloc * 100,
                    s.usage_known > 0 ? s.cpu_used * 100 : std::nan(""), s.usage_known > 0 ? s.mem_used * 100 : std::nan(""),
                    static_cast<double>(s.pending)});
  std::string out = terminal + "\n" + plot_data_block("replay", rows);
  out += "set multiplot layout 2,1 title " + plot_quote(title) + "\n";
  // Fixed margins, so the two panels' time axes line up whatever their keys hold.
  out += "set lmargin 10\nset rmargin 30\n";
  out += "set datafile missing 'nan'\nset key outside right top\nset grid\nset xlabel 'trace time (hours)'\n";
  out += "set ylabel 'percent of capacity'\nset yrange [0:*]\n";
  out += "plot $replay using 1:2 with lines lw 2 title 'cpu allocated', $replay using 1:3 with lines lw 2 title 'memory allocated'";
  if (usage)
    out += ", $replay using 1:4 with lines dt 2 title 'cpu used (known usage)', $replay using 1:5 with lines dt 2 title "
           "'memory used (known usage)'";
  out += "\nset ylabel 'instances pending'\n";
  out += "plot $replay using 1:6 with lines lw 2 title 'pending'\n";
  out += "unset multiplot\n";
  return out;
}

nlohmann::json replay_json(const sim::ReplayReport& r, const sim::Trace& trace, const ReplayArgs& a,
                           const sim::ReplayOptions& o, double seconds) {
  nlohmann::json skipped = nlohmann::json::object();
  for (const auto& [why, count] : trace.skipped) skipped[why] = count;
  nlohmann::json settings = {{"tick_s", o.tick_s},
                             {"step_s", o.step_s},
                             {"until_s", o.until_s},
                             {"near", o.near},
                             {"rebalance_budget", o.rebalance_budget},
                             {"rebalance_period_s", o.rebalance_period_s},
                             {"memory_unit", a.memory_unit},
                             {"cpu_unit", a.cpu_unit}};
  nlohmann::json samples = nlohmann::json::array();
  for (const auto& s : r.samples)
    samples.push_back({{"time_s", s.time_s},
                       {"machines_up", s.machines_up},
                       {"cpu_alloc", s.cpu_alloc},
                       {"mem_alloc", s.mem_alloc},
                       {"cpu_used", s.cpu_used},
                       {"mem_used", s.mem_used},
                       {"running", s.running},
                       {"pending", s.pending},
                       {"usage_known", s.usage_known}});
  nlohmann::json waits = {{"placements", r.waits_s.size()}};
  for (double p : {50.0, 90.0, 99.0, 100.0}) waits[fmt::format("p{:g}_s", p)] = sim::wait_percentile(r, p);
  return {{"trace", a.trace},
          {"format", r.format},
          {"policy", a.policy},
          {"machines", r.machines},
          {"jobs", r.jobs},
          {"tasks", r.tasks},
          {"instances", r.instances},
          {"start_s", r.start_s},
          {"end_s", r.end_s},
          {"events", r.events},
          {"schedules", r.schedules},
          {"seconds", seconds},
          {"placements", r.placements},
          {"finished", r.finished},
          {"pending_at_end", r.pending_at_end},
          {"oldest_pending_s", r.oldest_pending_s},
          {"migrations", r.migrations},
          {"waiting_at_end", r.waiting_at_end},
          {"preemptions", r.preemptions},
          {"lost", r.lost},
          {"pending_time", waits},
          {"near", {{"placements", r.near_placements}, {"same_node", r.near_node}, {"same_rack", r.near_rack},
                    {"data_gone", r.near_gone}}},
          {"usage_known", r.usage_known},
          {"mean_cpu_alloc", r.mean_cpu_alloc},
          {"mean_mem_alloc", r.mean_mem_alloc},
          {"skipped", skipped},
          {"settings", settings},
          {"samples", samples}};
}

void print_replay(const sim::ReplayReport& r, const sim::Trace& trace, const ReplayArgs& a, double seconds) {
  fmt::print("Replayed {} ({}, policy {}): {} machines, {} jobs, {} tasks, {} instances over {} of trace time\n",
             a.trace, r.format, a.policy, r.machines, r.jobs, r.tasks, r.instances, span_text(r.end_s - r.start_s));
  fmt::print("  in {:.2f}s: {} events, {} scheduling passes ({:.0f} events/s)\n\n", seconds, r.events, r.schedules,
             seconds > 0 ? static_cast<double>(r.events) / seconds : 0.0);
  bool usage = r.usage_known > 0;
  std::vector<std::string> head = {"TIME", "MACHINES", "CPU ALLOC", "MEM ALLOC"};
  if (usage) head.insert(head.end(), {"CPU USED", "MEM USED"});
  head.insert(head.end(), {"RUNNING", "PENDING"});
  Table t(head);
  // At most 13 rows, evenly spaced, the last one included; -o json has every sample.
  size_t n = r.samples.size(), rows = std::min<size_t>(n, 13);
  for (size_t k = 0; k < rows; ++k) {
    const auto& s = r.samples[rows == 1 ? 0 : k * (n - 1) / (rows - 1)];
    std::vector<std::string> row = {trace_offset(s.time_s - r.start_s), std::to_string(s.machines_up), pct(s.cpu_alloc),
                                    pct(s.mem_alloc)};
    if (usage) {
      bool known = s.usage_known > 0;
      row.insert(row.end(), {known ? pct(s.cpu_used) : "-", known ? pct(s.mem_used) : "-"});
    }
    row.insert(row.end(), {std::to_string(s.running), std::to_string(s.pending)});
    t.add_row(row);
  }
  std::fputs(t.render().c_str(), stdout);
  fmt::print("\nMean allocation over the replay (weighted by time): cpu {}, memory {}\n", pct(r.mean_cpu_alloc),
             pct(r.mean_mem_alloc));
  if (usage)
    fmt::print("Usage is known for {} of the placed instances (batch_instance.csv); the USED columns count only them, "
               "and show - where none of them runs\n",
               pct(r.usage_known));
  fmt::print("Pending time over {} placements (an instance preempted or lost is placed again and counted again): p50 "
             "{}, p90 {}, p99 {}, max {}\n",
             r.waits_s.size(),
             span_text(sim::wait_percentile(r, 50)), span_text(sim::wait_percentile(r, 90)),
             span_text(sim::wait_percentile(r, 99)), span_text(sim::wait_percentile(r, 100)));
  if (r.pending_at_end > 0 || r.waiting_at_end > 0)
    fmt::print("At the end: {} instances still pending (the longest for {}, not in the percentiles above), {} tasks "
               "waiting for tasks before them\n",
               r.pending_at_end, span_text(r.oldest_pending_s), r.waiting_at_end);
  fmt::print("Preemptions: {} (evicted for higher-priority work, queued again); lost with their machine: {}\n",
             r.preemptions, r.lost);
  if (r.near_placements > 0) {
    double n_ = static_cast<double>(r.near_placements);
    int64_t elsewhere = r.near_placements - r.near_node - r.near_rack - r.near_gone;
    fmt::print("Near their data ({} placements of tasks that read earlier tasks' output): {} same node, {} same rack, "
               "{} elsewhere{}\n",
               r.near_placements, pct(r.near_node / n_), pct(r.near_rack / n_), pct(elsewhere / n_),
               r.near_gone > 0 ? fmt::format(", {} with the data gone", pct(r.near_gone / n_)) : "");
  } else {
    bool dags = std::any_of(trace.tasks.begin(), trace.tasks.end(), [](const auto& t) { return !t.deps.empty(); });
    fmt::print("Near their data: {}\n", dags ? "no task that reads an earlier task's output was placed"
                                              : "no task of the trace reads an earlier task's output");
  }
  if (a.rebalance_budget > 0)
    fmt::print("Migrations: {} (the rebalance controller, at most {} per {}; each restarts its instance)\n", r.migrations,
               a.rebalance_budget, a.rebalance_period);
  else
    fmt::print("Migrations: none (no --rebalance-budget: running work is not moved)\n");
  for (const auto& [why, count] : trace.skipped) fmt::print("Skipped {} row{} of {}\n", count, count == 1 ? "" : "s", why);
}

int run_replay(const Globals& g, const ReplayArgs& a) {
  Diagnostics errs;
  auto tick = seconds_flag("--tick", a.tick);
  if (!tick) errs.insert(errs.end(), tick.error().begin(), tick.error().end());
  Result<int64_t> step = a.step.empty() ? Result<int64_t>(0) : seconds_flag("--step", a.step);
  if (!step) errs.insert(errs.end(), step.error().begin(), step.error().end());
  Result<int64_t> until = a.until.empty() ? Result<int64_t>(0) : seconds_flag("--until", a.until);
  if (!until) errs.insert(errs.end(), until.error().begin(), until.error().end());
  auto period = seconds_flag("--rebalance-period", a.rebalance_period);
  if (a.period_given && a.rebalance_budget == 0)
    errs.push_back(Diagnostic{{}, "--rebalance-period", "has no effect without --rebalance-budget",
                              "give --rebalance-budget N to run the rebalance controller in the replay"});
  if (!period) errs.insert(errs.end(), period.error().begin(), period.error().end());
  auto unit = parse_bytes(a.memory_unit);
  if (!unit || *unit <= 0)
    errs.push_back(Diagnostic{{}, "--memory-unit", fmt::format("{} is not a memory size", a.memory_unit),
                              "what the trace's largest machine has, like 512Gi"});
  std::string terminal;
  if (!a.plot.empty()) {
    auto term = plot_terminal(a.plot, 1000, 700);
    if (!term) errs.insert(errs.end(), term.error().begin(), term.error().end());
    else terminal = *term;
  }
  if (!errs.empty()) {
    report(g, errs);
    return k_usage;
  }
  if (!a.plot.empty())
    if (auto ok = check_plot_target(a.plot); !ok) return report(g, ok.error());
  TraceFiles files;
  auto format = open_trace_dir(a.trace, a.format, files);
  if (!format) return report(g, format.error());
  Result<sim::Trace> trace;
  if (*format == "google-2011") {
    sim::GoogleOptions read;
    read.cores_at_1 = a.cpu_unit;
    read.memory_at_1 = *unit;
    read.until_s = *until;
    trace = sim::parse_google_2011(files.machine_parts, files.task_parts, read);
  } else {
    sim::AlibabaOptions read;
    read.memory_at_100 = *unit;
    read.until_s = *until;
    trace = sim::parse_alibaba_v2018(files.streams, a.trace, read);
  }
  if (!trace) return report(g, trace.error());

  sim::ReplayOptions o;
  for (const auto& p : sim::standard_policies())
    if (p.name == a.policy) o.profile = p.profile;
  o.tick_s = *tick;
  o.step_s = *step;
  o.until_s = *until;
  o.near = !a.no_near;
  o.rebalance_budget = a.rebalance_budget;
  o.rebalance_period_s = *period;
  auto start = std::chrono::steady_clock::now();
  sim::ReplayReport r = sim::replay(*trace, o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!a.plot.empty()) {
  }
  // The report first: a plot that fails after a long replay must not take it along.
  if (a.output == "json")
    fmt::print("{}\n", replay_json(r, *trace, a, o, seconds).dump(2));
  else
    print_replay(r, *trace, a, seconds);
  std::fflush(stdout);
  if (!a.plot.empty()) {
    std::string title = fmt::format("{} ({}), policy {}", std::filesystem::path(a.trace).filename().string(), r.format,
                                    a.policy);
    if (auto ok = run_gnuplot(replay_plot_script(r, terminal, title), a.plot); !ok) return report(g, ok.error());
    if (a.output != "json") fmt::print("Plot written to {}\n", a.plot);
  }
  return 0;
}

}  // namespace

void register_sim_replay(CLI::App* sim, Globals& g, int* code) {
  auto* cmd = sim->add_subcommand("replay", "Replay a published cluster trace through the scheduler");
  cmd->footer(
      "Runs a trace's machines, arrivals and departures through the real scheduler over simulated\n"
      "time and reports allocation and utilization over time, pending-time percentiles,\n"
      "preemptions, work lost with machines, and how often tasks land near the data earlier tasks\n"
      "wrote. TRACE is a directory of Alibaba cluster-trace-v2018 files (machine_meta.csv and\n"
      "batch_task.csv, optionally container_meta.csv and batch_instance.csv) or of Google\n"
      "cluster-data-2011-2 tables (machine_events and task_events, as .csv files or folders of\n"
      "uncompressed part files). Nothing is read from or written to the store.\n"
      "Examples:\n"
      "  gaia sim replay examples/traces/alibaba-v2018-sample\n"
      "  gaia sim replay TRACE --policy best-fit --plot replay.svg\n"
      "  gaia sim replay TRACE --until 6h -o json\n"
      "  gaia sim replay examples/traces/google-2011-sample --cpu-unit 32\n"
      "Exit codes: 0 ok, 1 error (unreadable or malformed trace), 2 bad flags.");
  auto a = std::make_shared<ReplayArgs>();
  cmd->add_option("TRACE", a->trace, "Directory holding the trace's files")->required();
  cmd->add_option("--format", a->format, "Trace format: auto (by the files), alibaba-v2018 or google-2011")
      ->check(CLI::IsMember({"auto", "alibaba-v2018", "google-2011"}));
  cmd->add_option("--policy", a->policy, "Placement policy (default gaia)")->check(CLI::IsMember(replay_policy_names()));
  cmd->add_option("--tick", a->tick, "Time between scheduling passes, in trace time (default 10s)");
  cmd->add_option("--step", a->step, "Time between samples of the timeline (default: about 100 samples)");
  cmd->add_option("--until", a->until, "Stop at this trace time (default: when the work is done)");
  cmd->add_option("--memory-unit", a->memory_unit,
                  "Memory of the trace's largest machine, to which it normalises (default 512Gi)");
  cmd->add_option("--cpu-unit", a->cpu_unit, "Cores of the largest machine of a Google trace (default 64)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--rebalance-budget", a->rebalance_budget,
                  "Run the rebalance controller with at most N moves per period (default 0: off)")
      ->check(CLI::Range(0, 1000000));
  auto* period_opt =
      cmd->add_option("--rebalance-period", a->rebalance_period, "The rebalance controller's period (default 10m)");
  cmd->add_flag("--no-near", a->no_near, "Do not place tasks near the output of the tasks before them");
  cmd->add_option("--plot", a->plot, "Also draw the timeline into FILE (.svg or .png; needs gnuplot)");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a, period_opt] {
    a->period_given = period_opt->count() > 0;
    *code = run_replay(g, *a);
  });
}

}  // namespace gaia::cli
