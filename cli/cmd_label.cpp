// gaia label set|unset|list KIND NAME ...: the label center. Node labels are the nodes'
// own (what the scheduler matches; `gaia node label` is the same change); app labels
// (per tenant) and tenant labels live in the store. Renders read them with
// gaia.label(kind, name, key, default); a change re-renders exactly the apps that read
// it and follows the dependency chain, like `gaia config set`. A node label change also
// re-checks required placement: instances whose node no longer satisfies their
// node_selector, required node affinity or tenant pool are moved.
#include <fmt/format.h>

#include <memory>

#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/propagation_view.hpp"
#include "cli/table.hpp"
#include "lib/timeline.hpp"
#include "lib/selector.hpp"
#include "ops/center_changes.hpp"
#include "spec/app_spec.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

using json = nlohmann::json;

struct LabelArgs {
  std::string kind, name;
  std::vector<std::string> args;
  std::string tenant;
  bool dry_run = false;
  bool wait = false;
  std::string timeout = "5m";
  std::string output = "text";
};

// "nodes" -> "node"; "" for an unknown kind.
std::string normalise_kind(const std::string& k) {
  if (k == "node" || k == "nodes" || k == "no") return "node";
  if (k == "app" || k == "apps") return "app";
  if (k == "tenant" || k == "tenants") return "tenant";
  return "";
}

int bad_kind(const Globals& g, const std::string& kind) {
  report_error(g, fmt::format("unknown label kind '{}'", kind), "use node, app or tenant");
  return k_usage;
}

// The label edits of `set` (KEY=VALUE) or `unset` (KEY), checked as `gaia node label`
// checks them.
Result<std::vector<LabelEdit>> parse_edits(const std::vector<std::string>& args, bool set) {
  Diagnostics errors;
  std::vector<std::string> changes;
  for (const auto& a : args) {
    if (set && a.find('=') == std::string::npos) {
      errors.push_back(Diagnostic{{}, "", fmt::format("'{}' is not KEY=VALUE", a),
                                  a.ends_with("-") ? "`gaia label unset KIND NAME KEY` removes a label"
                                                   : "for example tier=gold"});
      continue;
    }
    if (!set && a.find('=') != std::string::npos) {
      errors.push_back(Diagnostic{{}, "", fmt::format("'{}': unset takes label keys, not KEY=VALUE", a),
                                  "for example `gaia label unset app web tier`"});
      continue;
    }
    changes.push_back(set ? a : a + "-");
  }
  if (!errors.empty()) return fail(std::move(errors));
  return parse_label_edits(changes);
}

int run_change(const Globals& g, const LabelArgs& a, bool set) {
  std::string kind = normalise_kind(a.kind);
  if (kind.empty()) return bad_kind(g, a.kind);
  if (a.wait) {
    auto d = parse_duration(a.timeout);
    if (!d || d->count() <= 0) {
      report_error(g, fmt::format("--timeout {}: not a positive duration", a.timeout),
                   "write a duration such as 30s, 5m or 1h");
      return k_usage;
    }
  }
  auto edits = parse_edits(a.args, set);
  if (!edits) {
    report(g, edits.error());
    return k_usage;
  }
  if (kind != "node" && !spec::is_dns_label(a.name)) {
    report_error(g, fmt::format("'{}' is not a valid {} name", a.name, kind),
                 "names are DNS labels: lower-case letters, digits and '-'");
    return k_usage;
  }
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;
  auto centers = StoreConfigSource::load(*s.store);
  if (!centers) return report(g, centers.error());

  ops::CenterChange change;
  auto node_outcome = std::make_shared<NodeOpOutcome>();
  std::string owner = kind == "app" ? tenant : "";
  if (kind == "node") {
    change = ops::node_label_change({a.name}, *edits, true, node_outcome);
  } else {
    std::vector<LabelChange> changes;
    std::vector<std::string> known;
    for (const auto& l : centers->labels())
      if (l.kind == kind && l.tenant == owner && l.name == a.name) known.push_back(l.key);
    for (const auto& e : *edits) {
      const LabelEntry* cur = centers->find_label(kind, owner, a.name, e.key);
      if (!e.value && !cur) {
        auto close = spec::did_you_mean(e.key, known);
        return report_error(g, fmt::format("{} {} has no label '{}'", kind, a.name, e.key),
                            close ? fmt::format("did you mean '{}'?", *close)
                                  : fmt::format("`gaia label list {} {}` shows its labels", kind, a.name));
      }
      if (e.value && cur && cur->value == *e.value) continue;
      changes.push_back(LabelChange{e.key, e.value});
    }
    if (changes.empty()) {
      if (!g.quiet) fmt::print("labels unchanged\n");
      return k_ok;
    }
    change = ops::label_change(kind, tenant, a.name, changes, *centers);
  }
  if (kind == "node") {
    // An unset of a label the node does not have is a typo worth an error, as for apps.
    auto st = s.state->load();
    if (!st) return report(g, st.error());
    if (const Node* n = st->find_node(a.name))
      for (const auto& e : *edits)
        if (!e.value && !n->labels.count(e.key)) {
          std::vector<std::string> known;
          for (const auto& [k, v] : n->labels) known.push_back(k);
          auto close = spec::did_you_mean(e.key, known);
          return report_error(g, fmt::format("node {} has no label '{}'", a.name, e.key),
                              close ? fmt::format("did you mean '{}'?", *close)
                                    : fmt::format("`gaia label list node {}` shows its labels", a.name));
        }
  }
  auto outcome = ops::apply_center_change(s.workspace(), change, a.dry_run);
  if (!outcome) return report(g, outcome.error());
  if (a.output == "json") {
    json j = propagation_json(*outcome);
    j["kind"] = kind;
    j["name"] = a.name;
    if (kind == "app") j["tenant"] = tenant;
    if (!a.dry_run) j["op"] = s.op;
    fmt::print("{}\n", j.dump(2));
    return a.wait ? wait_for_change(g, s, *outcome, a.timeout, false) : k_ok;
  }
  if (g.quiet) return a.wait ? wait_for_change(g, s, *outcome, a.timeout, false) : k_ok;
  if (kind == "node" && !a.dry_run && !node_outcome->changed) {
    fmt::print("labels unchanged\n");
    return k_ok;
  }
  std::vector<std::string> parts;
  for (const auto& e : *edits) parts.push_back(e.value ? e.key + "=" + *e.value : e.key + "-");
  fmt::print("{}{} {}{}: {}\n", a.dry_run ? "would label " : "labeled ", kind, a.name,
             kind == "app" ? " (tenant " + tenant + ")" : "", fmt::join(parts, ", "));
  if (kind == "node" && !a.dry_run) print_retry(g, *node_outcome);
  fmt::print("{}", format_propagation(g, *outcome));
  if (a.dry_run) fmt::print("dry run: nothing was written\n");
  else fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  return a.wait ? wait_for_change(g, s, *outcome, a.timeout, true) : k_ok;
}

int run_list(const Globals& g, const LabelArgs& a) {
  std::string kind = normalise_kind(a.kind);
  if (kind.empty()) return bad_kind(g, a.kind);
  std::string tenant = a.tenant.empty() ? g.tenant : a.tenant;
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto centers = StoreConfigSource::load(*(*session)->store);
  if (!centers) return report(g, centers.error());
  std::vector<const LabelEntry*> shown;
  std::vector<std::string> names;
  for (const auto& l : centers->labels()) {
    if (l.kind != kind || (kind == "app" && l.tenant != tenant)) continue;
    names.push_back(l.name);
    if (!a.name.empty() && l.name != a.name) continue;
    shown.push_back(&l);
  }
  if (!a.name.empty() && kind == "node" && shown.empty()) {
    auto st = (*session)->state->load();
    if (!st) return report(g, st.error());
    if (!st->find_node(a.name)) {
      std::vector<std::string> known;
      for (const auto& n : st->snapshot.nodes) known.push_back(n.name);
      auto close = spec::did_you_mean(a.name, known);
      return report_error(g, fmt::format("no node named '{}'", a.name),
                          close ? fmt::format("did you mean '{}'?", *close) : "`gaia get nodes` lists them");
    }
  }
  if (a.output == "json") {
    json out = json::array();
    for (const auto* l : shown) {
      json j = {{"kind", l->kind}, {"name", l->name}, {"key", l->key}, {"value", l->value}, {"revision", l->revision}};
      if (kind == "app") j["tenant"] = l->tenant;
      out.push_back(std::move(j));
    }
    fmt::print("{}\n", out.dump(2));
    return k_ok;
  }
  if (shown.empty()) {
    fmt::print("no {} labels{}\n", kind, a.name.empty() ? "" : " on " + a.name);
    return k_ok;
  }
  Table t({"KIND", "NAME", "KEY", "VALUE", "REVISION"});
  for (const auto* l : shown)
    t.add_row({l->kind, kind == "app" ? l->tenant + "/" + l->name : l->name, l->key, l->value,
               std::to_string(l->revision)});
  fmt::print("{}", t.render(table_options_for(stdout)));
  return k_ok;
}

void add_common(CLI::App* cmd, LabelArgs& a) {
  cmd->add_option("--tenant", a.tenant, "Tenant of the app (app labels; default: the global --tenant)")
      ->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("-o,--output", a.output, "text or json")->check(CLI::IsMember({"text", "json"}));
}

}  // namespace

void register_label(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("label", "Set, remove and list labels of nodes, apps and tenants");
  cmd->require_subcommand(1);
  cmd->footer(
      "Renders read labels with gaia.label(kind, name, key, default); a change re-renders exactly the apps\n"
      "that read it and their dependents whose imported outputs change. Node labels are what node_selector\n"
      "and affinity match: instances on a node that no longer satisfies them are moved.\n"
      "Examples:\n"
      "  gaia label set node node-3 disk=ssd --dry-run\n"
      "  gaia label set app web tier=gold --tenant shop\n"
      "  gaia label list node");

  auto set = std::make_shared<LabelArgs>();
  auto* l_set = cmd->add_subcommand("set", "Set labels (re-render readers; node labels re-check placement)");
  l_set->add_option("KIND", set->kind, "node, app or tenant")->required();
  l_set->add_option("NAME", set->name, "The node, app or tenant")->required();
  l_set->add_option("LABELS", set->args, "KEY=VALUE...")->required();
  l_set->add_flag("--dry-run", set->dry_run, "Show the impact (re-renders, dependents, moves); write nothing");
  add_common(l_set, *set);
  l_set->add_flag("--wait", set->wait, "Wait until re-rendered apps are rolled out and moved instances run");
  l_set->add_option("--timeout", set->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  l_set->footer(
      "Examples:\n"
      "  gaia label set node node-3 disk=ssd\n"
      "  gaia label set app web tier=gold --tenant shop\n"
      "  gaia label set tenant shop cost-center=42 --dry-run");
  l_set->callback([&g, code, set] { *code = run_change(g, *set, true); });

  auto unset = std::make_shared<LabelArgs>();
  auto* l_unset = cmd->add_subcommand("unset", "Remove labels");
  l_unset->add_option("KIND", unset->kind, "node, app or tenant")->required();
  l_unset->add_option("NAME", unset->name, "The node, app or tenant")->required();
  l_unset->add_option("KEYS", unset->args, "Label keys")->required();
  l_unset->add_flag("--dry-run", unset->dry_run, "Show the impact; write nothing");
  add_common(l_unset, *unset);
  l_unset->add_flag("--wait", unset->wait, "Wait until re-rendered apps are rolled out and moved instances run");
  l_unset->add_option("--timeout", unset->timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
  l_unset->footer("Examples:\n  gaia label unset node node-3 disk\n  gaia label unset app web tier");
  l_unset->callback([&g, code, unset] { *code = run_change(g, *unset, false); });

  auto list = std::make_shared<LabelArgs>();
  auto* l_list = cmd->add_subcommand("list", "List labels of a kind, or of one object");
  l_list->add_option("KIND", list->kind, "node, app or tenant")->required();
  l_list->add_option("NAME", list->name, "Only this node, app or tenant");
  add_common(l_list, *list);
  l_list->footer("Examples:\n  gaia label list node\n  gaia label list app web --tenant shop -o json");
  l_list->callback([&g, code, list] { *code = run_list(g, *list); });
}

}  // namespace gaia::cli
