// gaia get nodes|apps|instances [NAME...] [-l SELECTOR] [-o wide|json|yaml] [-A] [-w]:
// the cluster's objects as aligned tables (cli/table.hpp), or as JSON/YAML for scripts;
// a NAME that matches nothing is an error, and --watch prints again on every change.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <set>

#include "controllers/lifecycle.hpp"
#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/interrupt.hpp"
#include "cli/secret_flags.hpp"
#include "cli/table.hpp"
#include "lib/app_summary.hpp"
#include "lib/cluster_layout.hpp"
#include "lib/instance_ref.hpp"
#include "lib/quantity.hpp"
#include "lib/selector.hpp"
#include "lib/timeline.hpp"
#include "ops/secrets.hpp"
#include "render/yaml_emit.hpp"

namespace gaia::cli {

namespace {

struct GetArgs {
  std::string kind;
  std::vector<std::string> names;
  std::string selector;
  std::string output;
  bool all_tenants = false;
  bool watch = false;
  std::string timeout;
};

// What one `get` shows: the text for stdout (a table, JSON or YAML), the note for an
// empty table, and the NAMEs that matched no object at all.
struct Listing {
  std::string text;
  std::string none;  // "No nodes found." when the table is empty.
  std::vector<std::string> missing;
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

bool structured(const GetArgs& a) { return a.output == "json" || a.output == "yaml"; }

std::string structured_text(const nlohmann::json& items, const std::string& format) {
  return format == "yaml" ? render::emit_yaml(items) : items.dump(2) + "\n";
}

// The labels a selector sees: the object's own, plus the short form of gaia's keys
// (`app` for `gaia.io/app`), since affinity terms in specs call them `app`, `role`,
// `tenant` and `version` and users type `-l app=web` the same way. A label of the
// object's own under the short key wins.
std::map<std::string, std::string> selectable(std::map<std::string, std::string> labels) {
  constexpr std::string_view prefix = "gaia.io/";
  std::vector<std::pair<std::string, std::string>> short_forms;
  for (const auto& [k, v] : labels)
    if (k.starts_with(prefix) && k.size() > prefix.size()) short_forms.emplace_back(k.substr(prefix.size()), v);
  for (auto& [k, v] : short_forms) labels.try_emplace(std::move(k), std::move(v));
  return labels;
}

void fit_table(Table& t, const std::vector<std::pair<std::string, ColumnFit>>& fits) {
  for (const auto& [header, fit] : fits) t.set_fit(header, fit);
}

// On a narrow terminal the least useful columns go first (higher priority numbers),
// names are never cut, and free text (reasons, labels) wraps instead of being cut.
constexpr ColumnFit k_name{0, Fit::Keep};
ColumnFit optional_column(int priority) { return ColumnFit{priority, Fit::Cut}; }

std::string table_text(const Table& t) { return t.empty() ? "" : t.render(table_options_for(stdout)); }

Listing get_nodes(const ClusterState& state, const GetArgs& a, const std::vector<LabelRequirement>& sel) {
  auto usage = node_usage(state);
  bool wide = a.output == "wide";
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::string> headers = {"NAME", "STATUS", "CPU", "MEMORY", "GPU", "DISK", "INSTANCES"};
  if (wide) headers.insert(headers.end(), {"ADDRESS", "INSTANCE-SUBNET", "ZONE", "RACK", "SWITCH", "LABELS"});
  Table t(headers);
  fit_table(t, {{"NAME", k_name}, {"STATUS", k_name}, {"GPU", optional_column(3)}, {"DISK", optional_column(2)},
                {"INSTANCES", optional_column(1)}, {"ADDRESS", optional_column(4)},
                {"INSTANCE-SUBNET", optional_column(6)}, {"SWITCH", optional_column(5)},
                {"RACK", optional_column(4)}, {"ZONE", optional_column(3)}, {"LABELS", ColumnFit{2, Fit::Wrap}}});
  Listing out;
  std::set<std::string> found;
  for (const Node* n : sorted_nodes(state.snapshot)) {
    if (!wanted(a.names, n->name)) continue;
    found.insert(n->name);
    if (!selector_matches(sel, selectable(n->labels))) continue;
    const NodeUsage& u = usage[n->name];
    if (structured(a)) {
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
  for (const auto& name : a.names)
    if (!found.count(name)) out.missing.push_back(fmt::format("node {}", name));
  out.text = structured(a) ? structured_text(items, a.output) : table_text(t);
  out.none = "No nodes found.";
  return out;
}

// The apps table, from their summaries (lib/app_summary.hpp): what it shows of each app
// is its summary.
Listing get_apps_table(const std::vector<AppSummary>& apps, const GetArgs& a, const std::vector<LabelRequirement>& sel,
                       const std::string& tenant, Clock::time_point now) {
  bool wide = a.output == "wide";
  std::vector<std::string> headers = {"NAME", "VERSION", "STATUS", "INSTANCES", "AGE"};
  // Which app each release runs, once some release is named otherwise than its app.
  bool releases = std::any_of(apps.begin(), apps.end(), [&](const AppSummary& s) {
    return (a.all_tenants || s.tenant == tenant) && s.app_name() != s.name;
  });
  if (releases) headers.insert(headers.begin() + 1, "APP");
  if (a.all_tenants) headers.insert(headers.begin(), "TENANT");
  if (wide) headers.insert(headers.end(), {"PRIORITY", "DEPENDENCIES", "SPEC"});
  Table t(headers);
  fit_table(t, {{"TENANT", k_name}, {"NAME", k_name}, {"APP", k_name}, {"STATUS", k_name}, {"VERSION", optional_column(1)},
                {"AGE", optional_column(2)}, {"PRIORITY", optional_column(3)},
                {"DEPENDENCIES", ColumnFit{4, Fit::Wrap}}, {"SPEC", optional_column(5)}});
  Listing out;
  std::set<std::string> found;
  for (const AppSummary& app : apps) {
    if (!a.all_tenants && app.tenant != tenant) continue;
    if (!wanted(a.names, app.name)) continue;
    found.insert(app.name);
    if (!selector_matches(sel, selectable(app_labels(app.name, app.tenant, app.version, app.status)))) continue;
    std::vector<std::string> row = {app.name, app.version, app.status, fmt::format("{}/{}", app.serving, app.desired),
                                    age(app.created, now)};
    if (releases) row.insert(row.begin() + 1, app.app_name());
    if (a.all_tenants) row.insert(row.begin(), app.tenant);
    if (wide)
      row.insert(row.end(), {app.priority,
                             app.dependencies.empty() ? "-" : fmt::format("{}", fmt::join(app.dependencies, ",")),
                             app.spec_dir.empty() ? "-" : app.spec_dir});
    t.add_row(std::move(row));
  }
  for (const auto& name : a.names)
    if (!found.count(name))
      out.missing.push_back(a.all_tenants ? fmt::format("app {}", name) : fmt::format("app {} in tenant {}", name, tenant));
  out.text = table_text(t);
  out.none = a.all_tenants ? "No apps found." : fmt::format("No apps in tenant {} found.", tenant);
  return out;
}

// Reads only AppsState (State::load_apps): the apps and how many instances of each
// serve, not every instance. JSON and YAML show whole records; a table, their summaries.
Listing get_apps(const AppsState& state, const GetArgs& a, const std::vector<LabelRequirement>& sel,
                 const std::string& tenant, Clock::time_point now, const SecretKeys& secrets) {
  if (!structured(a)) return get_apps_table(app_summaries_of(state), a, sel, tenant, now);
  nlohmann::json items = nlohmann::json::array();
  Listing out;
  std::set<std::string> found;
  for (const auto& [id, app] : state.apps) {
    if (!a.all_tenants && app.tenant != tenant) continue;
    if (!wanted(a.names, app.name)) continue;
    found.insert(app.name);
    if (!selector_matches(sel, selectable(app_labels(app)))) continue;
    // The record holds what the renders read and copied (env, outputs, reads): its
    // secret values are masked, as everywhere (lib/secrets.hpp).
    items.push_back(ops::app_secret_values(app, secrets).mask_json(app_json(app, state.serving_count(id))));
  }
  for (const auto& name : a.names)
    if (!found.count(name))
      out.missing.push_back(a.all_tenants ? fmt::format("app {}", name) : fmt::format("app {} in tenant {}", name, tenant));
  out.text = structured_text(items, a.output);
  out.none = a.all_tenants ? "No apps found." : fmt::format("No apps in tenant {} found.", tenant);
  return out;
}

Listing get_instances(const ClusterState& state, const GetArgs& a, const std::vector<LabelRequirement>& sel,
                      const std::string& tenant, Clock::time_point now) {
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  bool wide = a.output == "wide";
  std::vector<std::string> headers = {"NAME", "APP", "ROLE", "NODE", "STATE", "ADDRESS", "REASON"};
  if (a.all_tenants) headers.insert(headers.begin(), "TENANT");
  if (wide) headers.insert(headers.end() - 1, {"PRIORITY", "CPU", "MEMORY", "GPU", "PORTS"});
  Table t(headers);
  // The name holds the app and role, so those columns go first on a narrow terminal.
  fit_table(t, {{"TENANT", k_name}, {"NAME", k_name}, {"NODE", k_name}, {"STATE", k_name},
                {"APP", optional_column(4)}, {"ROLE", optional_column(3)}, {"ADDRESS", optional_column(2)},
                {"PRIORITY", optional_column(5)}, {"CPU", optional_column(6)}, {"MEMORY", optional_column(6)},
                {"GPU", optional_column(7)}, {"PORTS", ColumnFit{5, Fit::Wrap}}, {"REASON", ColumnFit{0, Fit::Wrap}}});
  std::vector<const Instance*> list;
  // Each NAME as given (a key, a DNS name, app/role/ordinal) and the key it stands for.
  std::vector<std::pair<std::string, std::string>> refs;
  std::set<std::string> keys, found;
  for (const auto& n : a.names) {
    refs.emplace_back(n, instance_key_from_ref(n, tenant));
    keys.insert(refs.back().second);
  }
  for (const auto& i : state.snapshot.instances) {
    if (!a.all_tenants && i.tenant != tenant) continue;
    if (!keys.empty() && !keys.count(i.key())) continue;
    found.insert(i.key());
    if (!selector_matches(sel, selectable(i.labels))) continue;
    list.push_back(&i);
  }
  std::sort(list.begin(), list.end(), [](const Instance* x, const Instance* y) {
    return std::tie(x->tenant, x->app, x->role, x->ordinal) < std::tie(y->tenant, y->app, y->role, y->ordinal);
  });
  Listing out;
  for (const auto& [given, key] : refs)
    if (!found.count(key))
      out.missing.push_back(given == key ? fmt::format("instance {}", key) : fmt::format("instance {} ({})", given, key));
  out.none = a.all_tenants ? "No instances found." : fmt::format("No instances in tenant {} found.", tenant);
  if (structured(a)) {
    nlohmann::json items = nlohmann::json::array();
    for (const Instance* i : list) items.push_back(instance_json(*i));
    out.text = structured_text(items, a.output);
    return out;
  }
  StartGates gates(state);
  for (const Instance* i : list) {
    std::vector<std::string> row = {i->key(), i->app, i->role, i->node.empty() ? "-" : i->node,
                                    std::string(instance_state_name(i->state)), i->address.empty() ? "-" : i->address,
                                    instance_reason(*i, now_ms, &gates)};
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
  out.text = table_text(t);
  return out;
}

Listing list_objects(const std::string& kind, const ClusterState& state, const GetArgs& a,
                     const std::vector<LabelRequirement>& sel, const std::string& tenant, Clock::time_point now,
                     const SecretKeys& secrets) {
  if (kind == "nodes") return get_nodes(state, a, sel);
  if (kind == "apps") return get_apps(apps_state_of(state), a, sel, tenant, now, secrets);
  return get_instances(state, a, sel, tenant, now);
}

// Prints a listing; a NAME that matched nothing is an error (exit 1), as with kubectl,
// after whatever did match.
int print_listing(const Globals& g, const Listing& l, const std::string& kind) {
  if (!l.text.empty()) std::fputs(l.text.c_str(), stdout);
  else if (l.missing.empty()) std::fprintf(stderr, "%s\n", l.none.c_str());
  std::fflush(stdout);
  if (l.missing.empty()) return k_ok;
  Diagnostics errors;
  for (const auto& m : l.missing)
    errors.push_back(Diagnostic{{}, "", fmt::format("{} not found", m),
                                fmt::format("`gaia get {}` lists them{}", kind,
                                            kind == "nodes" ? "" : "; -A looks in every tenant")});
  return report(g, errors);
}

int watch_objects(const Globals& g, const GetArgs& a, const std::string& kind, const std::vector<LabelRequirement>& sel,
                  Session& s, std::optional<std::chrono::milliseconds> timeout) {
  // Signals end the loop between changes, cleanly (exit 0), as for events -f.
  catch_stop_signals();
  auto deadline = timeout ? std::optional(std::chrono::steady_clock::now() + *timeout) : std::nullopt;
  std::string shown;  // The last text printed: it is printed again only when it changed.
  bool first = true;
  bool printed = false;  // Something is on stdout already.
  std::string outage;
  while (!stop_requested()) {
    auto read = load_for_watch(g, s, outage);
    if (!read) continue;
    auto& state = *read;
    if (!state) return report(g, state.error());
    SecretKeys secrets = kind == "apps" && structured(a) ? deployed_secret_keys(g, s, *state) : SecretKeys();
    Listing l = list_objects(kind, *state, a, sel, g.tenant, s.clock.now(), secrets);
    // A watch is of objects that exist: a NAME that is not there is the same error as
    // without --watch.
    if (first && !l.missing.empty()) return print_listing(g, l, kind);
    std::string text = l.text.empty() ? l.none + "\n" : l.text;
    if (first || text != shown) {
      // Each new listing is whole (a table sized to its rows); on stdout, after a blank
      // line from the one before. "No instances found." stays on stderr, as without -w.
      if (l.text.empty()) {
        std::fputs(text.c_str(), stderr);
      } else {
        if (printed) std::fputs("\n", stdout);
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
        printed = true;
      }
      shown = text;
    }
    first = false;
    // Wakes on a change to the store; the state then loads only what changed.
    for (;;) {
      if (stop_requested()) return k_ok;
      auto slice = std::chrono::milliseconds(250);
      if (deadline) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return k_ok;
        slice = std::min(slice, left);
      }
      auto changed = s.state->wait_for_change("", slice);
      if (!changed && is_transient(changed.error())) {
        nap(std::chrono::milliseconds(500));
        break;  // Load again: the store may have changed while it was away.
      }
      if (!changed) return report(g, changed.error());
      if (*changed) break;
    }
  }
  return k_ok;
}

int run_get(const Globals& g, const GetArgs& a) {
  std::string kind = canonical_kind(a.kind);
  if (kind.empty())
    return report_error(g, fmt::format("unknown kind '{}'", a.kind), "gaia get nodes | apps | instances");
  std::optional<std::chrono::milliseconds> timeout;
  if (!a.timeout.empty()) {
    if (!a.watch) return report_error(g, "--timeout only applies with --watch", "add -w, or drop --timeout");
    auto d = parse_duration(a.timeout);
    if (!d) return report(g, d.error());
    timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  }
  auto sel = parse_selector(a.selector);
  if (!sel)
    return report(g, Diagnostics{Diagnostic{{}, "-l",
                                            fmt::format("bad selector '{}' at column {}: {}", a.selector,
                                                        sel.error().column, sel.error().message),
                                            sel.error().hint}});
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  if (a.watch) return watch_objects(g, a, kind, *sel, **session, timeout);
  if (kind == "apps" && !structured(a)) {
    // A table shows the apps' summaries, which every commit keeps: one small record per
    // app and nothing else read (lib/app_summary.hpp). Summaries not kept (a store an
    // older gaia wrote) are made from the apps and their instances instead.
    auto summaries = read_app_summaries((*session)->state->store(), a.all_tenants ? "" : g.tenant + "/");
    if (!summaries) return report(g, summaries.error());
    if (*summaries) {
      if (g.verbose >= 1) std::fprintf(stderr, "get apps: %zu app summaries\n", (*summaries)->size());
      return print_listing(g, get_apps_table(**summaries, a, *sel, g.tenant, (*session)->clock.now()), kind);
    }
    if (g.verbose >= 1) std::fprintf(stderr, "get apps: summaries not kept yet; reading the apps\n");
  }
  if (kind == "apps") {
    // At 10,000 apps and 100,000 instances a full load was most of the command's time;
    // the listing needs the apps and a count per app (docs/benchmarks.md).
    auto apps = (*session)->state->load_apps();
    if (!apps) return report(g, apps.error());
    SecretKeys secrets = structured(a) ? deployed_secret_keys(g, **session, apps->apps) : SecretKeys();
    return print_listing(g, get_apps(*apps, a, *sel, g.tenant, (*session)->clock.now(), secrets), kind);
  }
  auto state = (*session)->state->load();
  if (!state) return report(g, state.error());
  return print_listing(g, list_objects(kind, *state, a, *sel, g.tenant, (*session)->clock.now(), SecretKeys()), kind);
}

}  // namespace

void register_get(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<GetArgs>();
  auto* cmd = app.add_subcommand("get", "List nodes, apps or instances");
  cmd->add_option("KIND", a->kind, "nodes, apps or instances")->required();
  cmd->add_option("NAME", a->names, "Only these objects (one that does not exist is an error)");
  cmd->add_option("-l,--selector", a->selector,
                  "Label selector: k=v, k!=v, k, !k, k in (a,b), k notin (a,b); comma-separated, all must hold; "
                  "app, role, tenant, version stand for gaia.io/app, ...");
  cmd->add_option("-o,--output", a->output, "wide, json or yaml")->check(CLI::IsMember({"wide", "json", "yaml"}));
  cmd->add_flag("-A,--all-tenants", a->all_tenants, "Apps and instances of every tenant (default: --tenant)");
  cmd->add_flag("-w,--watch", a->watch, "Keep running and print the list again whenever it changes (Ctrl-C ends)");
  cmd->add_option("--timeout", a->timeout, "With --watch: stop after this long (e.g. 30s)")->type_name("D");
  cmd->footer("Examples:\n  gaia get nodes -l disk=ssd -o wide\n  gaia get instances -l 'app in (hdfs,hbase)'\n"
              "  gaia get instances -l app=web,role=frontend\n  gaia get apps -A -o json\n"
              "  gaia get instances -w                 # print again on every change");
  cmd->callback([&g, a, code] { *code = run_get(g, *a); });
}

}  // namespace gaia::cli
