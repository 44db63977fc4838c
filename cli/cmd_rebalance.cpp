// gaia rebalance [--dry-run] [--max-moves N]: a bounded plan of moves that lets pending
// instances that fit nowhere fit, then defragments (controllers/rebalance.hpp). The plan
// is always printed first; without --dry-run it is then committed and the controllers
// run inline, so the scheduler places what the moves made room for.
#include <fmt/format.h>

#include "cli/controller_loop.hpp"
#include "cli/migration_view.hpp"
#include "cli/table.hpp"
#include "controllers/rebalance.hpp"

namespace gaia::cli {

namespace {

struct RebalanceArgs {
  bool dry_run = false;
  int max_moves = 10;
  std::string output = "text";
};

std::string plan_text(const RebalancePlan& p) {
  std::string out;
  if (p.moves.empty()) {
    out += "nothing to move: no pending instance a few moves would make fit, and no node worth emptying\n";
  } else {
    out += fmt::format("plan: {} move(s)\n", p.moves.size());
    Table t({"#", "INSTANCE", "FROM", "TO", "WHY"});
    int n = 0;
    for (const auto& m : p.moves) t.add_row({std::to_string(++n), m.instance, m.from, m.to, m.purpose});
    std::string table = t.render(table_options_for(stdout));
    for (size_t start = 0; start < table.size();) {
      size_t end = table.find('\n', start);
      out += "  " + table.substr(start, end - start + 1);
      start = end + 1;
    }
  }
  for (const auto& f : p.fits) out += fmt::format("then {} fits on {}\n", f.instance, f.node);
  if (!p.emptied.empty()) out += fmt::format("nodes emptied: {}\n", fmt::join(p.emptied, ", "));
  out += fmt::format("allocation of nodes in use: {:.1f}% on {} node(s) -> {:.1f}% on {} node(s)\n", p.allocation_before,
                     p.nodes_in_use_before, p.allocation_after, p.nodes_in_use_after);
  for (const auto& note : p.notes) out += fmt::format("note: {}\n", note);
  return out;
}

nlohmann::json plan_json(const RebalancePlan& p) {
  nlohmann::json j{{"moves", nlohmann::json::array()}, {"fits", nlohmann::json::array()}};
  for (const auto& m : p.moves)
    j["moves"].push_back({{"instance", m.instance}, {"from", m.from}, {"to", m.to}, {"purpose", m.purpose}});
  for (const auto& f : p.fits) j["fits"].push_back({{"instance", f.instance}, {"node", f.node}});
  j["emptied"] = p.emptied;
  j["allocation_before"] = p.allocation_before;
  j["allocation_after"] = p.allocation_after;
  j["nodes_in_use_before"] = p.nodes_in_use_before;
  j["nodes_in_use_after"] = p.nodes_in_use_after;
  j["notes"] = p.notes;
  return j;
}

int run_rebalance(const Globals& g, const RebalanceArgs& a) {
  if (a.max_moves < 0) {
    report_error(g, fmt::format("--max-moves {}: must be 0 or more", a.max_moves), "e.g. --max-moves 5");
    return k_usage;
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  RebalanceOptions options;
  options.max_moves = a.max_moves;
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
    print_controller_events(g, run->outcome.batch);
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
      "First it makes room for pending instances that fit nowhere (moving at most --max-moves smaller\n"
      "instances, each of which fits elsewhere), then it empties lightly used nodes onto the others.\n"
      "Every move counts against the instance's migrate_times; no move preempts anyone.");
  auto a = std::make_shared<RebalanceArgs>();
  cmd->add_flag("--dry-run", a->dry_run, "Print the plan; write nothing");
  cmd->add_option("--max-moves", a->max_moves, "Most instances moved")->capture_default_str();
  cmd->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->callback([&g, code, a] { *code = run_rebalance(g, *a); });
}

}  // namespace gaia::cli
