#include "spec/plan_format.hpp"

#include <fmt/format.h>

namespace gaia::spec {
namespace {

std::string status(const PlanNode& node) {
  std::string out = fmt::format("{} {}", action_name(node.action), node.version.to_string());
  if (node.replaces) out += fmt::format(", replaces {}", node.replaces->to_string());
  if (node.action == Action::Reuse && !node.ready) out += ", not ready";
  return out;
}

const std::string& app_of(const PlanNode& node) { return node.app.empty() ? node.name : node.app; }

// A release named after its app is shown by its name alone, another as "NAME (release
// of APP)".
std::string node_name(const PlanNode& node) {
  std::string name = node.tenant.empty() ? node.name : node.tenant + "/" + node.name;
  if (app_of(node) == node.name) return name;
  return fmt::format("{} (release of {})", name, app_of(node));
}

std::string label(const PlanNode& node, std::string_view alias) {
  std::string out = app_of(node);
  if (!alias.empty() && alias != default_alias(out)) out += fmt::format(" as {}", alias);
  if (!node.tenant.empty()) out += fmt::format(", tenant {}", node.tenant);
  if (app_of(node) != node.name) out += fmt::format(", release {}", node.name);
  return out;
}

// Why an edge binds where it does, when that is not simply the release named after the
// app: "; bound: named by release:".
std::string binding_suffix(const PlanNode& child, const PlanEdge& e) {
  if (e.reason.empty()) return {};
  if (app_of(child) == child.name && child.tenant.empty() && !e.reason.starts_with("named by") &&
      e.reason.find("was bound to") == std::string::npos)
    return {};
  return fmt::format("; bound: {}", e.reason);
}

// ", when search.enabled" for an edge whose dependency is conditional (and applies).
std::string condition_suffix(const PlanNode& parent, std::string_view alias) {
  if (!parent.spec) return {};
  for (const Dependency& d : parent.spec->dependencies)
    if (d.alias == alias && d.when) return fmt::format(", when {}", d.when->text);
  return {};
}

std::string skipped_text(const SkippedDependency& s) {
  return fmt::format("skipped: when {}, and {}", s.condition, s.value);
}

std::string dot_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '\\';  // Backslashes stay: "\n" is Graphviz's line break.
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string format_plan_tree(const Plan& plan, const TreeOptions& options) {
  const char* tee = options.ascii ? "|-- " : "├── ";
  const char* elbow = options.ascii ? "`-- " : "└── ";
  const char* pipe = options.ascii ? "|   " : "│   ";
  const char* blank = "    ";

  struct Frame {
    size_t node;
    size_t next;
    std::string prefix;
  };
  std::vector<char> expanded(plan.nodes.size(), 0);
  std::vector<Frame> stack;
  std::string out;
  for (size_t root : plan.roots) {
    const PlanNode& r = plan.nodes[root];
    if (expanded[root]) {
      out += fmt::format("{} ({}, see above)\n", node_name(r), status(r));
      continue;
    }
    out += fmt::format("{} ({})\n", node_name(r), status(r));
    expanded[root] = 1;
    stack.push_back({root, 0, ""});
    while (!stack.empty()) {
      Frame& f = stack.back();
      const PlanNode& parent = plan.nodes[f.node];
      const auto& edges = parent.dependencies;
      // The dependencies that apply, then those a condition left out.
      size_t count = edges.size() + parent.skipped.size();
      if (f.next == count) {
        stack.pop_back();
        continue;
      }
      size_t k = f.next++;
      bool last = f.next == count;
      if (k >= edges.size()) {
        const SkippedDependency& sk = parent.skipped[k - edges.size()];
        std::string name = sk.alias != default_alias(sk.name) ? fmt::format("{} as {}", sk.name, sk.alias) : sk.name;
        out += fmt::format("{}{}{} ({})\n", f.prefix, last ? elbow : tee, name, skipped_text(sk));
        continue;
      }
      const PlanEdge& e = edges[k];
      const PlanNode& child = plan.nodes[e.node];
      std::string line = f.prefix + (last ? elbow : tee) + label(child, e.alias);
      std::string cond = condition_suffix(parent, e.alias) + binding_suffix(child, e);
      if (expanded[e.node] && (!child.dependencies.empty() || !child.skipped.empty())) {
        out += fmt::format("{} ({}{}, see above)\n", line, status(child), cond);
        continue;
      }
      out += fmt::format("{} ({}{})\n", line, status(child), cond);
      if (expanded[e.node]) continue;
      expanded[e.node] = 1;
      std::string prefix = f.prefix + (last ? blank : pipe);  // `f` dies with the push below.
      stack.push_back({e.node, 0, std::move(prefix)});
    }
  }
  return out;
}

std::string format_plan_dot(const Plan& plan) {
  std::string out = "digraph gaia {\n  node [shape=box];\n";
  for (const PlanNode& n : plan.nodes) {
    std::string lbl = fmt::format("{}\\n{}", node_name(n), status(n));
    out += fmt::format("  {} [label={}{}];\n", dot_quote(n.id()), dot_quote(lbl),
                       n.action == Action::Reuse ? ", style=dashed" : "");
  }
  for (const PlanNode& n : plan.nodes)
    for (const PlanEdge& e : n.dependencies) {
      const PlanNode& to = plan.nodes[e.node];
      std::string attrs = e.alias != default_alias(app_of(to)) ? fmt::format(" [label={}]", dot_quote(e.alias)) : "";
      out += fmt::format("  {} -> {}{};\n", dot_quote(n.id()), dot_quote(to.id()), attrs);
    }
  out += "}\n";
  return out;
}

nlohmann::json plan_to_json(const Plan& plan) {
  using nlohmann::json;
  json nodes = json::array();
  for (const PlanNode& n : plan.nodes) {
    json requirers = json::array();
    for (const Requirement& r : n.requirers)
      requirers.push_back({{"app", plan.nodes[r.requirer].id()}, {"range", r.range.text()}, {"alias", r.alias}});
    json deps = json::array();
    for (const PlanEdge& e : n.dependencies) {
      json d = {{"alias", e.alias}, {"app", plan.nodes[e.node].id()}, {"release", plan.nodes[e.node].name}};
      if (!plan.nodes[e.node].tenant.empty()) d["tenant"] = plan.nodes[e.node].tenant;
      if (!e.reason.empty()) d["bound"] = e.reason;
      if (std::string c = condition_suffix(n, e.alias); !c.empty()) d["when"] = c.substr(7);  // After ", when ".
      deps.push_back(std::move(d));
    }
    json skipped = json::array();
    for (const SkippedDependency& sk : n.skipped)
      skipped.push_back({{"name", sk.name}, {"alias", sk.alias}, {"when", sk.condition}, {"because", sk.value}});
    nodes.push_back({
        {"name", n.name},
        {"app", app_of(n)},
        {"tenant", n.tenant.empty() ? plan.tenant : n.tenant},
        {"version", n.version.to_string()},
        {"action", std::string(action_name(n.action))},
        {"root", n.root},
        {"dir", n.spec ? json(n.spec->dir.string()) : json(nullptr)},
        {"replaces", n.replaces ? json(n.replaces->to_string()) : json(nullptr)},
        {"ready", n.ready},
        {"requirers", std::move(requirers)},
        {"dependencies", std::move(deps)},
        {"skipped", std::move(skipped)},
    });
  }
  json roots = json::array(), order = json::array();
  for (size_t r : plan.roots) roots.push_back(plan.nodes[r].id());
  for (size_t i : plan.order) order.push_back(plan.nodes[i].id());
  return {{"tenant", plan.tenant}, {"roots", roots}, {"order", order}, {"nodes", nodes}};
}

std::string format_repo_dependents(const std::vector<RepoDependent>& dependents, std::string_view name) {
  if (dependents.empty()) return fmt::format("no app in the spec repository depends on {}\n", name);
  std::string out;
  for (const RepoDependent& d : dependents)
    out += fmt::format("{}{} requires {} {}\n", std::string(static_cast<size_t>(d.depth - 1) * 2, ' '), d.spec->id(),
                       d.on, d.range);
  return out;
}

nlohmann::json repo_dependents_to_json(const std::vector<RepoDependent>& dependents) {
  nlohmann::json out = nlohmann::json::array();
  for (const RepoDependent& d : dependents)
    out.push_back({{"app", d.spec->id()}, {"on", d.on}, {"range", d.range}, {"depth", d.depth}});
  return out;
}

}  // namespace gaia::spec
