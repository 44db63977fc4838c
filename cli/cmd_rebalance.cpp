// gaia rebalance [--dry-run] [--max-moves N] [--target PCT]: a bounded plan of moves that
// lets pending instances that fit nowhere fit, then defragments
// (controllers/rebalance.hpp). The plan is always printed first, with the allocation of
// the nodes in use before and after; without --dry-run it is then committed and the
// controllers run inline, so the scheduler places what the moves made room for.
#include <fmt/format.h>

#include <cmath>

#include "cli/controller_loop.hpp"
#include "cli/migration_view.hpp"
#include "cli/table.hpp"
#include "controllers/rebalance.hpp"

namespace gaia::cli {

namespace {

struct RebalanceArgs {
  bool dry_run = false;
  int max_moves = 10;
  double target = 0;
  std::string output = "text";
};

// Moves listed one by one up to this many; a larger plan shows the first ones and how
// many more (-o json lists them all).
constexpr size_t k_moves_shown = 50;

std::string plan_text(const RebalancePlan& p) {
  std::string out;
  if (p.moves.empty()) {
    // When the planner stopped for a reason of its own (no moves allowed, the target
    // already reached), that reason follows below; claiming there was nothing worth
    // doing would contradict it.
    out += p.stopped.empty()
               ? "nothing to move: no pending instance a few moves would make fit, and no node worth emptying\n"
               : "nothing to move\n";
  } else {
    out += fmt::format("plan: {} move(s)\n", p.moves.size());
    Table t({"#", "INSTANCE", "FROM", "TO", "WHY"});
    size_t n = 0;
    for (const auto& m : p.moves) {
      if (n == k_moves_shown) break;
      t.add_row({std::to_string(++n), m.instance, m.from, m.to, m.purpose});
    }
    std::string table = t.render(table_options_for(stdout));
    for (size_t start = 0; start < table.size();) {
      size_t end = table.find('\n', start);
      out += "  " + table.substr(start, end - start + 1);
      start = end + 1;
    }
    if (p.moves.size() > k_moves_shown)
      out += fmt::format("  ... and {} more move(s) (`-o json` lists them all)\n", p.moves.size() - k_moves_shown);
  }
  for (const auto& f : p.fits) out += fmt::format("then {} fits on {}\n", f.instance, f.node);
  if (!p.emptied.empty()) {
    if (p.emptied.size() <= 20)
      out += fmt::format("nodes emptied: {}\n", fmt::join(p.emptied, ", "));
    else
      out += fmt::format("nodes emptied: {} ({}, ...)\n", p.emptied.size(),
                         fmt::join(p.emptied.begin(), p.emptied.begin() + 10, ", "));
  }
  out += fmt::format("allocation of nodes in use: before {:.1f}% on {} node(s), after {:.1f}% on {} node(s)\n",
                     p.allocation_before, p.nodes_in_use_before, p.allocation_after, p.nodes_in_use_after);
  if (!p.stopped.empty()) out += fmt::format("defragmentation stopped: {}\n", p.stopped);
  for (const auto& note : p.notes) out += fmt::format("note: {}\n", note);
  return out;
}

nlohmann::json plan_json(const RebalancePlan& p) {
  nlohmann::json j{{"moves", nlohmann::json::array()}, {"fits", nlohmann::json::array()}};
  for (const auto& m : p.moves)
    j["moves"].push_back({{"instance", m.instance}, {"from", m.from}, {"to", m.to}, {"purpose", m.purpose}});
  for (const auto& f : p.fits) j["fits"].push_back({{"instance", f.instance}, {"node", f.node}});
  j["emptied"] = p.emptied;
  // Fractions of capacity (0 to 1), as `gaia map` and `gaia sim replay` give them; the
  // text shows percentages.
  j["allocation_before"] = p.allocation_before / 100.0;
  j["allocation_after"] = p.allocation_after / 100.0;
  j["nodes_in_use_before"] = p.nodes_in_use_before;
  j["nodes_in_use_after"] = p.nodes_in_use_after;
  j["stopped"] = p.stopped;
  j["schedules"] = p.schedules;
  j["notes"] = p.notes;
  return j;
}

int run_rebalance(const Globals& g, const RebalanceArgs& a) {
  if (a.max_moves < 0) {
    report_error(g, fmt::format("--max-moves {}: must be 0 or more", a.max_moves), "e.g. --max-moves 5");
    return k_usage;
  }
  if (!std::isfinite(a.target) || a.target < 0 || a.target > 100) {
    report_error(g, fmt::format("--target {}: expected a percentage between 0 (none) and 100", a.target),
                 "e.g. --target 90 stops once the nodes in use are 90% allocated");
    return k_usage;
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  RebalanceOptions options;
  options.max_moves = a.max_moves;
  options.target_pct = a.target;
  int64_t now = to_millis(s.clock.now());
  bool json = a.output == "json";
  if (a.dry_run) {
    auto st = s.state->load();
    if (!st) return report(g, st.error());
    RebalancePlan p = plan_rebalance(*st, options, now);
    if (json) {
      auto j = plan_json(p);
      j["dry_run"] = true;
      std::printf("%s\n", j.dump(2).c_str());
      return k_ok;
    }
    if (!g.quiet) std::fputs(plan_text(p).c_str(), stdout);
    print_dry_run_note(g);
    return k_ok;
  }
  RebalancePlan plan;
  auto committed = s.state->update(s.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    plan = plan_rebalance(st, options, now);
    b = plan.batch;
    return {};
  });
  if (!committed) return report(g, committed.error());
  if (!json && !g.quiet) std::fputs(plan_text(plan).c_str(), stdout);
  if (plan.empty()) {
    if (json) std::printf("%s\n", plan_json(plan).dump(2).c_str());
    return k_ok;
  }
  auto run = ops::run_controllers(s.workspace());
  if (!run) return report(g, run.error());
  if (json) {
    auto j = plan_json(plan);
    j["op"] = s.op;
    std::printf("%s\n", j.dump(2).c_str());
    return k_ok;
  }
  if (!g.quiet) {
    fmt::print("applied {} move(s)\n", plan.moves.size());
    // A large plan starts as many copies: the first events, then how many more.
    auto lines = controller_event_lines(g, run->outcome.batch);
    for (size_t k = 0; k < lines.size() && k < k_moves_shown; ++k) std::printf("%s\n", lines[k].c_str());
    if (lines.size() > k_moves_shown) fmt::print("  ... and {} more event(s)\n", lines.size() - k_moves_shown);
    fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  }
  return k_ok;
}

}  // namespace

void register_rebalance(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("rebalance", "Move a few instances so pending ones fit, or to pack nodes (plan first)");
  cmd->footer(
      "Examples:\n"
      "  gaia rebalance --dry-run           # print the plan only\n"
      "  gaia rebalance --max-moves 3       # print the plan, then apply it\n"
      "  gaia rebalance --max-moves 5000 --target 90 -o json\n"
      "First it makes room for pending instances that fit nowhere (moving at most --max-moves smaller\n"
      "instances, each of which fits elsewhere), then it empties the nodes with the fewest instances onto\n"
      "the other nodes in use, until --max-moves or --target. Only running instances move; every move\n"
      "counts against the instance's migrate_times, no role loses more than running - min_available\n"
      "instances at once, and no move preempts anyone. To defragment continuously instead:\n"
      "`gaia controller options --rebalance-budget N`.");
  auto a = std::make_shared<RebalanceArgs>();
  cmd->add_flag("--dry-run", a->dry_run, "Print the plan; write nothing");
  cmd->add_option("--max-moves", a->max_moves, "Most instances moved")->capture_default_str();
  cmd->add_option("--target", a->target,
                  "Stop defragmenting once the nodes in use are this percent allocated (default 0: no target)")
      ->type_name("PCT");
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_rebalance(g, *a); });
}

}  // namespace gaia::cli
