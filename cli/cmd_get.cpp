// gaia get nodes|apps|instances [NAME...] [-l SELECTOR] [-o wide|json|yaml] [-A]: the
// cluster's objects as aligned tables (cli/table.hpp), or as JSON/YAML for scripts.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/table.hpp"
#include "lib/cluster_layout.hpp"
#include "lib/instance_ref.hpp"
#include "lib/quantity.hpp"
#include "lib/selector.hpp"

namespace gaia::cli {

namespace {

struct GetArgs {
  std::string kind;
  std::vector<std::string> names;
  std::string selector;
  std::string output;
  bool all_tenants = false;
};

std::string canonical_kind(const std::string& k) {
  if (k == "node" || k == "nodes" || k == "no") return "nodes";
  if (k == "app" || k == "apps") return "apps";
  if (k == "instance" || k == "instances" || k == "inst" || k == "in") return "instances";
  return "";
}

bool wanted(const std::vector<std::string>& names, const std::string& name) {
  return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
}

void print_table(const Table& t, const std::string& what) {
  if (t.empty()) {
    std::fprintf(stderr, "No %s found.\n", what.c_str());
    return;
  }
  std::fputs(t.render(table_options_for(stdout)).c_str(), stdout);
}

int get_nodes(const ClusterState& state, const GetArgs& a, const std::vector<LabelRequirement>& sel) {
  auto usage = node_usage(state);
  bool wide = a.output == "wide";
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::string> headers = {"NAME", "STATUS", "CPU", "MEMORY", "GPU", "DISK", "INSTANCES"};
  if (wide) headers.insert(headers.end(), {"ADDRESS", "INSTANCE-SUBNET", "ZONE", "RACK", "SWITCH", "LABELS"});
  Table t(headers);
  for (const Node* n : sorted_nodes(state.snapshot)) {
    if (!wanted(a.names, n->name) || !selector_matches(sel, n->labels)) continue;
    const NodeUsage& u = usage[n->name];
    if (a.output == "json" || a.output == "yaml") {
      items.push_back(node_json(*n, u));
      continue;
    }
    std::vector<std::string> row = {n->name,
                                    std::string(node_state_name(n->state)),
                                    cpu_cell(u.allocated.cpu_millis, n->capacity.cpu_millis),
                                    bytes_cell(u.allocated.memory_bytes, n->capacity.memory_bytes),
                                    count_cell(u.allocated.gpu, n->capacity.gpu),
                                    bytes_cell(u.allocated.disk_bytes, n->capacity.disk_bytes),
                                    std::to_string(u.instances)};
    if (wide) {
      std::map<std::string, std::string> other = n->labels;
      for (const char* k : {"zone", "rack", "switch"}) other.erase(k);
      row.insert(row.end(), {n->address, n->instance_subnet, n->zone.empty() ? "-" : n->zone,
                             n->rack.empty() ? "-" : n->rack, n->switch_.empty() ? "-" : n->switch_, labels_text(other)});
    }
    t.add_row(std::move(row));
  }
  if (a.output == "json" || a.output == "yaml") print_structured(items, a.output);
  else print_table(t, "nodes");
  return k_ok;
}

int get_apps(const ClusterState& state, const GetArgs& a, const std::vector<LabelRequirement>& sel,
             const std::string& tenant, Clock::time_point now) {
  bool wide = a.output == "wide";
  std::vector<std::string> headers = {"NAME", "VERSION", "STATUS", "INSTANCES", "AGE"};
  if (a.all_tenants) headers.insert(headers.begin(), "TENANT");
  if (wide) headers.insert(headers.end(), {"PRIORITY", "DEPENDENCIES", "SPEC"});
  Table t(headers);
  nlohmann::json items = nlohmann::json::array();
  for (const auto& [id, app] : state.apps) {
    if (!a.all_tenants && app.tenant != tenant) continue;
    if (!wanted(a.names, app.name) || !selector_matches(sel, app_labels(app))) continue;
    if (a.output == "json" || a.output == "yaml") {
      items.push_back(app_json(state, app));
      continue;
    }
    auto [running, desired] = app_instance_counts(state, app);
    std::vector<std::string> row = {app.name, app.version, app.status, fmt::format("{}/{}", running, desired),
                                    age(app.created, now)};
    if (a.all_tenants) row.insert(row.begin(), app.tenant);
    if (wide)
      row.insert(row.end(), {app.workload.priority.to_string(),
                             app.dependencies.empty() ? "-" : fmt::format("{}", fmt::join(app.dependencies, ",")),
                             app.spec_dir.empty() ? "-" : app.spec_dir});
    t.add_row(std::move(row));
  }
  if (a.output == "json" || a.output == "yaml") print_structured(items, a.output);
  else print_table(t, a.all_tenants ? "apps" : fmt::format("apps in tenant {}", tenant));
  return k_ok;
}

int get_instances(const ClusterState& state, const GetArgs& a, const std::vector<LabelRequirement>& sel,
                  const std::string& tenant, Clock::time_point now) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  bool wide = a.output == "wide";
  std::vector<std::string> headers = {"NAME", "APP", "ROLE", "NODE", "STATE", "ADDRESS", "REASON"};
  if (a.all_tenants) headers.insert(headers.begin(), "TENANT");
  if (wide) headers.insert(headers.end() - 1, {"PRIORITY", "CPU", "MEMORY", "GPU", "PORTS"});
  Table t(headers);
  std::vector<const Instance*> list;
  std::set<std::string> keys;
  for (const auto& n : a.names) keys.insert(instance_key_from_ref(n, tenant));
  for (const auto& i : state.snapshot.instances) {
    if (!a.all_tenants && i.tenant != tenant) continue;
    if (!keys.empty() && !keys.count(i.key())) continue;
    if (!selector_matches(sel, i.labels)) continue;
    list.push_back(&i);
  }
  std::sort(list.begin(), list.end(), [](const Instance* x, const Instance* y) {
    return std::tie(x->tenant, x->app, x->role, x->ordinal) < std::tie(y->tenant, y->app, y->role, y->ordinal);
  });
  if (a.output == "json" || a.output == "yaml") {
    nlohmann::json items = nlohmann::json::array();
    for (const Instance* i : list) items.push_back(instance_json(*i));
    print_structured(items, a.output);
    return k_ok;
  }
  for (const Instance* i : list) {
    std::vector<std::string> row = {i->key(), i->app, i->role, i->node.empty() ? "-" : i->node,
                                    std::string(instance_state_name(i->state)), i->address.empty() ? "-" : i->address,
                                    instance_reason(*i, now_ms)};
    if (a.all_tenants) row.insert(row.begin(), i->tenant);
    if (wide) {
      std::vector<std::string> ports;
      for (const auto& [name, port] : i->ports) ports.push_back(fmt::format("{}:{}", name, port));
      row.insert(row.end() - 1, {i->priority.to_string(), format_cpu(i->request.cpu_millis),
                                 format_bytes_short(i->request.memory_bytes), std::to_string(i->request.gpu),
                                 ports.empty() ? "-" : fmt::format("{}", fmt::join(ports, ","))});
    }
    t.add_row(std::move(row));
  }
  print_table(t, a.all_tenants ? "instances" : fmt::format("instances in tenant {}", tenant));
  return k_ok;
}

int run_get(const Globals& g, const GetArgs& a) {
  std::string kind = canonical_kind(a.kind);
  if (kind.empty())
    return report_error(g, fmt::format("unknown kind '{}'", a.kind), "gaia get nodes | apps | instances");
  auto sel = parse_selector(a.selector);
  if (!sel)
    return report(g, Diagnostics{Diagnostic{{}, "-l",
                                            fmt::format("bad selector '{}' at column {}: {}", a.selector,
                                                        sel.error().column, sel.error().message),
                                            sel.error().hint}});
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto state = (*session)->state->load();
  if (!state) return report(g, state.error());
  if (kind == "nodes") return get_nodes(*state, a, *sel);
  if (kind == "apps") return get_apps(*state, a, *sel, g.tenant, (*session)->clock.now());
  return get_instances(*state, a, *sel, g.tenant, (*session)->clock.now());
}

}  // namespace

void register_get(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<GetArgs>();
  auto* cmd = app.add_subcommand("get", "List nodes, apps or instances");
  cmd->add_option("KIND", a->kind, "nodes, apps or instances")->required();
  cmd->add_option("NAME", a->names, "Only these objects");
  cmd->add_option("-l,--selector", a->selector,
                  "Label selector: k=v, k!=v, k, !k, k in (a,b), k notin (a,b); comma-separated, all must hold");
  cmd->add_option("-o,--output", a->output, "wide, json or yaml")->check(CLI::IsMember({"wide", "json", "yaml"}));
  cmd->add_flag("-A,--all-tenants", a->all_tenants, "Apps and instances of every tenant (default: --tenant)");
  cmd->footer("Examples:\n  gaia get nodes -l disk=ssd -o wide\n  gaia get instances -l 'gaia.io/app in (hdfs,hbase)'\n"
              "  gaia get apps -A -o json");
  cmd->callback([&g, a, code] { *code = run_get(g, *a); });
}

}  // namespace gaia::cli
