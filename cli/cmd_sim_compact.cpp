// gaia sim compact: Borg's cell compaction (controllers/compaction.hpp) on a generated
// workload, one row per placement policy (docs/policies.md). Reads and writes no store:
// the cell and the workload come from the generator and its seed.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli/common.hpp"
#include "cli/plot.hpp"
#include "cli/table.hpp"
#include "controllers/compaction.hpp"

namespace gaia::cli {

namespace {

struct CompactArgs {
  int machines = 1000;
  int seeds = 5;
  uint64_t workload_seed = 1;
  double fill = 0.7;
  double pending = 0.2;  // Percent.
  std::vector<std::string> policies;
  int jobs = 0;  // 0: one worker per core.
  std::string plot;
  std::string output = "text";
};

struct PlotRow {
  std::string policy;
  int min, p50, max;
};

// Bars of the p50 cell size per policy, with the range over the removal orders.
std::string compact_plot_script(const std::vector<PlotRow>& rows, const std::string& terminal, const std::string& title) {
  std::vector<std::vector<double>> data;
  for (size_t i = 0; i < rows.size(); ++i)
    data.push_back({static_cast<double>(i), static_cast<double>(rows[i].p50), static_cast<double>(rows[i].min),
                    static_cast<double>(rows[i].max)});
  std::string xtics;
  for (size_t i = 0; i < rows.size(); ++i) xtics += fmt::format("{}{} {}", i ? ", " : "", plot_quote(rows[i].policy), i);
  std::string out = terminal + "\n" + plot_data_block("cells", data);
  out += fmt::format("set title {}\nset ylabel 'machines needed (p50; bar: min to max)'\n", plot_quote(title));
  out += fmt::format("set xtics ({}) rotate by -30\nset xrange [-0.6:{}]\nset yrange [0:*]\nset grid ytics\n",
                     xtics, static_cast<double>(rows.size()) - 0.4);
  out += "set style fill solid 0.6 border -1\nset boxwidth 0.6\nunset key\n";
  out += "plot $cells using 1:2 with boxes lc rgb '#4477aa', $cells using 1:2:3:4 with yerrorbars lc rgb '#222222' pt 0, "
         "$cells using 1:2:(sprintf('%d', $2)) with labels offset 0,1\n";
  return out;
}

// Draws the plot when asked, after the report is printed; false (reported) on failure.
bool plot_compaction(const Globals& g, const CompactArgs& a, const sim::SimWorkload& w, const std::vector<PlotRow>& rows,
                     const std::string& terminal) {
  if (a.plot.empty()) return true;
  std::string title = fmt::format("Cell compaction: {} machines, {} instances, {} removal order{}", a.machines,
                                  w.instances.size(), a.seeds, a.seeds == 1 ? "" : "s");
  if (auto ok = run_gnuplot(compact_plot_script(rows, terminal, title), a.plot); !ok) {
    report(g, ok.error());
    return false;
  }
  return true;
}

int run_compact(const Globals& g, const CompactArgs& a) {
  std::string terminal;
  if (!a.plot.empty()) {
    auto term = plot_terminal(a.plot, 1000, 600);
    if (!term) {
      report(g, term.error());
      return k_usage;
    }
    terminal = *term;
    // Before the runs, which take minutes on a large cell: a plot that cannot be drawn
    // is known at once.
    if (auto ok = check_plot_target(a.plot); !ok) return report(g, ok.error());
  }
  // The policies in the standard order (gaia's default first, the row the others are
  // compared with); an unknown name was refused by the flag's check.
  std::vector<sim::CompactionPolicy> chosen;
  std::set<std::string> wanted(a.policies.begin(), a.policies.end());
  for (const auto& p : sim::standard_policies())
    if (wanted.empty() || wanted.count(p.name)) chosen.push_back(p);

  sim::TraceShape shape;
  shape.machines = a.machines;
  shape.seed = a.workload_seed;
  shape.fill = a.fill;
  sim::SimWorkload w = sim::generate_workload(shape);
  sim::CompactionOptions o;
  o.seeds = a.seeds;
  o.pending_allowed = a.pending / 100.0;
  o.threads = a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  Table t({"POLICY", "MIN", "P50", "P90", "MAX", "P50 VS FIRST ROW", "PENDING", "GPU PENDING", "SECONDS"});
  nlohmann::json out = nlohmann::json::array();
  int baseline = 0;
  bool any_unfit = false;
  std::vector<PlotRow> plot_rows;
  for (const auto& p : chosen) {
    auto start = std::chrono::steady_clock::now();
    sim::CompactionResult r = sim::compact(w, p, o);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    int p50 = sim::machines_percentile(r, 50);
    if (baseline == 0) baseline = p50;
    int64_t pending = 0, gpu_pending = 0;
    bool fits = true;
    for (const auto& run : r.runs) {
      pending += run.pending;
      gpu_pending += run.gpu_pending;
      fits = fits && run.fits_at_all;
    }
    any_unfit = any_unfit || !fits;
    plot_rows.push_back({p.name, sim::machines_percentile(r, 0), p50, sim::machines_percentile(r, 100)});
    std::string vs = (&p == &chosen.front() || baseline <= 0) ? "-" : fmt::format("{:+.1f}%", 100.0 * (p50 - baseline) / baseline);
    t.add_row({p.name + (fits ? "" : " (does not fit)"), std::to_string(sim::machines_percentile(r, 0)),
               std::to_string(p50), std::to_string(sim::machines_percentile(r, 90)),
               std::to_string(sim::machines_percentile(r, 100)), vs,
               fmt::format("{:.1f}", static_cast<double>(pending) / static_cast<double>(r.runs.size())),
               fmt::format("{:.1f}", static_cast<double>(gpu_pending) / static_cast<double>(r.runs.size())),
               fmt::format("{:.1f}", seconds)});
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& run : r.runs)
      runs.push_back({{"seed", run.seed}, {"machines", run.machines}, {"pending", run.pending},
                      {"gpu_pending", run.gpu_pending}, {"fits", run.fits_at_all}});
    out.push_back({{"policy", p.name},
                   {"cell_machines", r.machines},
                   {"instances", r.instances},
                   {"min", sim::machines_percentile(r, 0)},
                   {"p50", p50},
                   {"p90", sim::machines_percentile(r, 90)},
                   {"max", sim::machines_percentile(r, 100)},
                   {"schedules", r.schedules},
                   {"seconds", seconds},
                   {"runs", runs}});
  }
  if (a.output == "json") {
    nlohmann::json doc = {{"machines", a.machines}, {"instances", w.instances.size()}, {"workload_seed", a.workload_seed},
                          {"seeds", a.seeds},       {"fill", a.fill},                 {"pending_allowed_percent", a.pending},
                          {"policies", out}};
    fmt::print("{}\n", doc.dump(2));
    return plot_compaction(g, a, w, plot_rows, terminal) ? 0 : 1;
  }
  fmt::print("Cell of {} machine{}, {} instances (workload seed {}, fill {:.0f}%); smallest cell that fits with at "
             "most {}% pending, over {} removal order{}:\n",
             a.machines, a.machines == 1 ? "" : "s", w.instances.size(), a.workload_seed, a.fill * 100, a.pending,
             a.seeds, a.seeds == 1 ? "" : "s");
  std::fputs(t.render().c_str(), stdout);
  if (any_unfit)
    fmt::print(stderr,
               "warning: a policy marked (does not fit) leaves more than {}% pending even on three times the cell; its "
               "sizes are that limit, not an answer\n  hint: give more --machines (a cell of a few machines cannot hold "
               "the jobs the generator makes), or a lower --fill\n",
               a.pending);
  std::fflush(stdout);
  if (!plot_compaction(g, a, w, plot_rows, terminal)) return 1;
  if (!a.plot.empty()) fmt::print("Plot written to {}\n", a.plot);
  return 0;
}

}  // namespace

void register_sim_compact(CLI::App* sim, Globals& g, int* code) {
  auto* cmd = sim->add_subcommand("compact", "Judge placement policies by the machines they need (Borg's compaction)");
  cmd->footer(
      "Generates a cell and a workload shaped like published cluster traces (prod and non-prod,\n"
      "heavy-tailed sizes, usage below request, GPU and constrained jobs), then for each policy and\n"
      "each removal order finds the smallest cell that still fits the workload with at most --pending\n"
      "percent of instances left pending. Nothing is read from or written to the store.\n"
      "Policies: gaia, best-fit, best-fit-scarce, k8s-least-allocated, gaia-segregated, gaia-bucketed,\n"
      "gaia-reclaim.\n"
      "Examples:\n"
      "  gaia sim compact --machines 1000 --seeds 5\n"
      "  gaia sim compact --policy gaia --policy best-fit -o json\n"
      "  gaia sim compact --machines 200 --plot compaction.svg\n"
      "Exit codes: 0 ok, 1 error, 2 bad flags.");
  auto a = std::make_shared<CompactArgs>();
  // Out-of-range values are usage errors (exit 2), like a value that is not a number.
  cmd->add_option("--machines", a->machines, "Machines in the generated cell (default 1000)")
      ->check(CLI::Range(1, 20000));
  cmd->add_option("--seeds", a->seeds, "Removal orders to try, each its own seed (default 5)")->check(CLI::Range(1, 1000));
  cmd->add_option("--workload-seed", a->workload_seed, "Seed of the generated cell and workload (default 1)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--fill", a->fill, "The workload's cpu requests as a share of the cell's cpu (default 0.7)")
      ->check(CLI::Range(0.01, 1.0));
  cmd->add_option("--pending", a->pending, "Percent of instances that may stay pending (default 0.2, as in Borg)")
      ->check(CLI::Range(0.0, 99.0));
  std::vector<std::string> names;
  for (const auto& p : sim::standard_policies()) names.push_back(p.name);
  cmd->add_option("--policy", a->policies, "Only these policies (repeatable; default: all)")
      ->check(CLI::IsMember(names));
  cmd->add_option("-j,--jobs", a->jobs, "Removal orders searched side by side (default: one per core)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--plot", a->plot, "Also draw the cell sizes into FILE (.svg or .png; needs gnuplot)");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_compact(g, *a); });
}

}  // namespace gaia::cli
