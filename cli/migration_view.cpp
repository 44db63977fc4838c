#include "cli/migration_view.hpp"

#include <fmt/format.h>

#include "cli/table.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

std::optional<Diagnostic> unknown_node(const ClusterState& state, const std::string& name, const std::string& field) {
  if (state.find_node(name)) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& n : state.snapshot.nodes) names.push_back(n.name);
  std::string hint;
  if (names.empty()) hint = "the cluster has no nodes: create it with `gaia cluster create`";
  else if (auto guess = spec::did_you_mean(name, names)) hint = fmt::format("did you mean {}?", *guess);
  else hint = fmt::format("nodes: {} (`gaia get nodes` lists them)", spec::join_limited(names, 8));
  return Diagnostic{{}, field, fmt::format("no node named '{}'", name), hint};
}

std::optional<Diagnostic> unknown_instance(const ClusterState& state, const std::string& ref, const std::string& key) {
  if (state.find_instance(key)) return std::nullopt;
  std::vector<std::string> all;
  for (const auto& i : state.snapshot.instances) all.push_back(i.key());
  std::string hint;
  if (all.empty()) {
    hint = "there are no instances in the store; deploy an app with `gaia submit DIR` first";
  } else if (auto guess = spec::did_you_mean(key, all)) {
    hint = fmt::format("did you mean {}?", *guess);
  } else {
    std::vector<std::string> of_app;
    for (const auto& i : state.snapshot.instances)
      if (i.app == ref) of_app.push_back(i.key());
    hint = of_app.empty() ? fmt::format("name an instance as <ordinal>.<role>.<app>.<tenant> or app/role/ordinal; "
                                        "instances: {}",
                                        spec::join_limited(all, 5))
                          : fmt::format("instances of app {}: {}", ref, spec::join_limited(of_app, 10));
  }
  return Diagnostic{{}, "", fmt::format("no instance '{}'", ref), hint};
}

namespace {

std::string note_of(const MoveReport& m) {
  if (!m.to.empty() && m.to != m.from) return m.locality;
  return m.reason;
}

std::string state_cell(const Globals& g, const MoveReport& m) {
  if (m.state == "Running") return green(g, stdout, m.state);
  return yellow(g, stdout, m.state);
}

}  // namespace

std::string format_moves(const Globals& g, const WhatIf& report, const std::string& heading) {
  std::string out = heading + "\n";
  if (report.moves.empty()) {
    out += "  (no instances)\n";
  } else {
    Table t({"INSTANCE", "FROM", "TO", "STATE", "NOTE"});
    for (const auto& m : report.moves)
      t.add_row({m.instance, m.from, m.to.empty() ? "-" : m.to, state_cell(g, m), note_of(m)});
    std::string table = t.render(table_options_for(stdout));
    for (size_t start = 0; start < table.size();) {
      size_t end = table.find('\n', start);
      out += "  " + table.substr(start, end - start + 1);
      start = end + 1;
    }
  }
  if (!report.preempted.empty()) {
    out += fmt::format("{} {} instance(s) elsewhere to make room:\n", yellow(g, stdout, "preempting"),
                       report.preempted.size());
    for (const auto& p : report.preempted)
      out += fmt::format("  {} on {} -> {}\n", p.instance, p.from,
                         p.to.empty() ? "pending: " + p.reason : fmt::format("{} ({})", p.to, p.state));
  }
  size_t stays = 0, pending = 0, moved = 0;
  for (const auto& m : report.moves) {
    if (m.to == m.from) ++stays;
    else if (m.to.empty()) ++pending;
    else ++moved;
  }
  out += fmt::format("{} moved, {} pending, {} still on the node", moved, pending, stays);
  if (!report.preempted.empty()) out += fmt::format(", {} preempted", report.preempted.size());
  out += "\n";
  return out;
}

nlohmann::json moves_json(const WhatIf& report) {
  auto one = [](const MoveReport& m) {
    nlohmann::json j{{"instance", m.instance}, {"from", m.from}, {"state", m.state}};
    j["to"] = m.to.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.to);
    if (!m.reason.empty()) j["reason"] = m.reason;
    if (!m.locality.empty()) j["locality"] = m.locality;
    return j;
  };
  nlohmann::json j{{"moves", nlohmann::json::array()}, {"preempted", nlohmann::json::array()}};
  for (const auto& m : report.moves) j["moves"].push_back(one(m));
  for (const auto& m : report.preempted) j["preempted"].push_back(one(m));
  return j;
}

void print_dry_run_note(const Globals& g) {
  if (!g.quiet) fmt::print("{}\n", dim(g, stdout, "dry run: nothing was written"));
}

}  // namespace gaia::cli
