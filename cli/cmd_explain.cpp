// gaia explain INSTANCE [--node N]: why an instance is where it is, or why it is
// pending — per-filter node counts, the preemption it would need, and the score terms of
// the chosen node against the runner-up — computed by the scheduler's own plugins over
// the cluster as it is in the store.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/context.hpp"
#include "controllers/explain.hpp"
#include "lib/instance_ref.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

struct ExplainArgs {
  std::string instance;
  std::string node;
  std::string output;  // "" (text) or json
  std::string tenant;
};

nlohmann::json node_json(const NodeExplanation& n) {
  nlohmann::json j{{"node", n.node}, {"feasible", n.feasible}};
  j["failures"] = nlohmann::json::array();
  for (const auto& f : n.failures) j["failures"].push_back({{"filter", f.filter}, {"message", f.message}});
  if (n.feasible) {
    j["total"] = n.total;
    j["scores"] = nlohmann::json::array();
    for (const auto& s : n.scores)
      j["scores"].push_back({{"plugin", s.plugin}, {"applicable", s.applicable}, {"raw", s.raw},
                             {"weight", s.weight}, {"weighted", s.weighted}});
  }
  return j;
}

nlohmann::json explanation_json(const Explanation& e) {
  nlohmann::json j{{"instance", e.instance}, {"placed", e.placed}, {"summary", e.summary}, {"fitting", e.fitting}};
  if (e.placed) j["node"] = e.node;
  j["failing"] = nlohmann::json::array();
  for (const auto& c : e.failing) {
    nlohmann::json f{{"filter", c.filter}, {"nodes", c.nodes}};
    if (!c.detail.empty()) f["detail"] = c.detail;
    j["failing"].push_back(std::move(f));
  }
  j["preemptions"] = nlohmann::json::array();
  for (const auto& p : e.preemptions)
    j["preemptions"].push_back({{"victim", p.victim}, {"node", p.node}, {"preemptor", p.preemptor}});
  if (e.chosen) j["chosen"] = node_json(*e.chosen);
  if (e.runner_up) j["runner_up"] = node_json(*e.runner_up);
  j["nodes"] = nlohmann::json::array();
  for (const auto& n : e.nodes) j["nodes"].push_back(node_json(n));
  return j;
}

// The hint for a name that matches no instance: the closest key, else the instances of
// an app of that name, else a few keys to show the form.
std::string unknown_instance_hint(const Snapshot& s, const std::string& ref, const std::string& key) {
  std::vector<std::string> all;
  for (const auto& i : s.instances) all.push_back(i.key());
  if (all.empty()) return "there are no instances in the store; deploy an app with `gaia submit DIR` first";
  if (auto guess = spec::did_you_mean(key, all)) return fmt::format("did you mean {}?", *guess);
  std::vector<std::string> of_app;
  for (const auto& i : s.instances)
    if (i.app == ref || i.app + "." + i.tenant == ref) of_app.push_back(i.key());
  if (!of_app.empty()) return fmt::format("instances of app {}: {}", ref, spec::join_limited(of_app, 10));
  return fmt::format("name an instance as <ordinal>.<role>.<app>.<tenant>, its DNS name (<key>.gaia) or app/role/ordinal; "
                     "instances: {}",
                     spec::join_limited(all, 5));
}

int run_explain(const Globals& g, const ExplainArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto state = (*session)->state->load();
  if (!state) return report(g, state.error());
  const Snapshot& snap = state->snapshot;

  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  std::string key = instance_key_from_ref(a.instance, tenant);
  if (!state->find_instance(key))
    return report(g, {Diagnostic{{}, "INSTANCE", fmt::format("no instance '{}'", a.instance),
                                 unknown_instance_hint(snap, a.instance, key)}});
  std::optional<std::string> node;
  if (!a.node.empty()) {
    if (!state->find_node(a.node)) {
      std::vector<std::string> names;
      for (const auto& n : snap.nodes) names.push_back(n.name);
      auto guess = spec::did_you_mean(a.node, names);
      return report(g, {Diagnostic{{}, "--node", fmt::format("no node '{}'", a.node),
                                   guess ? fmt::format("did you mean {}?", *guess)
                                         : fmt::format("nodes: {}", spec::join_limited(names, 10))}});
    }
    node = a.node;
  }
  auto e = explain(snap, key, node);
  if (!e) return report(g, e.error());
  if (a.output == "json") std::fputs((explanation_json(*e).dump(2) + "\n").c_str(), stdout);
  else std::fputs(format_explanation(*e).c_str(), stdout);
  return k_ok;
}

}  // namespace

void register_explain(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<ExplainArgs>();
  auto* cmd = app.add_subcommand("explain", "Why an instance is on its node, or why it is pending");
  cmd->footer(
      "INSTANCE is a key <ordinal>.<role>.<app>.<tenant>, its DNS name (<key>.gaia), or app/role/ordinal in the\n"
      "current tenant.\n"
      "Examples:\n"
      "  gaia explain shop/web/0             # placed: chosen node vs runner-up, score terms\n"
      "  gaia explain 0.db.shop.default.gaia # pending: nodes rejected per filter, preemption it would need\n"
      "  gaia explain shop/web/0 --node n7   # every filter that fails on n7, and its score terms");
  cmd->add_option("INSTANCE", a->instance, "The instance to explain")->required();
  cmd->add_option("--node", a->node, "Explain only this node: every failing filter and the score terms")
      ->type_name("NODE");
  cmd->add_option("--tenant", a->tenant, "Tenant for the app/role/ordinal shorthand (default: the global --tenant)")
      ->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("-o,--output", a->output, "json for the whole explanation as one JSON document")
      ->check(CLI::IsMember({"json"}));
  cmd->callback([&g, a, code] { *code = run_explain(g, *a); });
}

}  // namespace gaia::cli
