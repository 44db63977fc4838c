// gaia describe node|app|instance NAME: everything gaia knows about one object, in
// kubectl's "Key: value" layout, ending with its most recent timeline events.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "controllers/replicas.hpp"
#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/table.hpp"
#include "lib/instance_ref.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"
#include "ops/bundle.hpp"
#include "ops/propagate.hpp"
#include "render/sandbox.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

constexpr size_t kRecentEvents = 10;

struct DescribeArgs {
  std::string kind;
  std::string name;
};

void field(const std::string& key, const std::string& value) { fmt::print("{:<18}{}\n", key + ":", value); }

// A table under a heading, indented by two spaces.
void section(const std::string& heading, const Table& t, const std::string& empty = "<none>") {
  if (t.empty()) {
    field(heading, empty);
    return;
  }
  fmt::print("{}:\n", heading);
  std::string text = t.render(table_options_for(stdout));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    fmt::print("  {}\n", text.substr(pos, nl - pos));
    pos = nl + 1;
  }
}

// Multi-line values (labels, outputs) continue aligned under the first line.
void field_lines(const std::string& key, const std::vector<std::string>& lines) {
  if (lines.empty()) {
    field(key, "<none>");
    return;
  }
  field(key, lines[0]);
  for (size_t k = 1; k < lines.size(); ++k) fmt::print("{:<18}{}\n", "", lines[k]);
}

std::vector<std::string> label_lines(const std::map<std::string, std::string>& labels) {
  std::vector<std::string> out;
  for (const auto& [k, v] : labels) out.push_back(k + "=" + v);
  return out;
}

std::string resources_text(const Resources& r) {
  std::string s = fmt::format("cpu {}, memory {}", format_cpu(r.cpu_millis), format_bytes(r.memory_bytes));
  if (r.gpu) s += fmt::format(", gpu {}", r.gpu);
  if (r.disk_bytes) s += fmt::format(", disk {}", format_bytes(r.disk_bytes));
  return s;
}

void print_events(Session& session, const EventFilter& f, Clock::time_point now) {
  auto events = session.state->events_after(0);
  if (!events) {
    field("Events", "<cannot read the timeline>");
    return;
  }
  auto recent = select_events(*events, f, kRecentEvents);
  Table t({"AGE", "TYPE", "REASON", "MESSAGE"});
  for (const auto& e : recent) t.add_row({age(e.time, now), e.type, e.reason, e.message});
  section(fmt::format("Events (last {})", kRecentEvents), t);
}

int unknown(const Globals& g, const std::string& kind, const std::string& name, const std::vector<std::string>& known,
            const std::string& list_cmd) {
  std::string hint;
  if (auto close = spec::did_you_mean(name, known)) hint = fmt::format("did you mean '{}'?", *close);
  else hint = fmt::format("`{}` lists them", list_cmd);
  return report_error(g, fmt::format("no {} named '{}'", kind, name), hint);
}

int describe_node(const Globals& g, Session& session, const ClusterState& state, const std::string& name) {
  const Node* n = state.find_node(name);
  if (!n) {
    std::vector<std::string> known;
    for (const auto& x : state.snapshot.nodes) known.push_back(x.name);
    return unknown(g, "node", name, known, "gaia get nodes");
  }
  auto usage = node_usage(state);
  const NodeUsage& u = usage[n->name];
  auto now = session.clock.now();
  field("Name", n->name);
  field("State", n->down_reason.empty() ? std::string(node_state_name(n->state))
                                        : fmt::format("{} ({})", node_state_name(n->state), n->down_reason));
  if (auto hb = state.heartbeats.find(n->name); hb != state.heartbeats.end())
    field("Heartbeat", fmt::format("{} ago, from {}", age(format_rfc3339(Clock::time_point(std::chrono::milliseconds(hb->second.at_ms))), now),
                                   hb->second.agent));
  field("Address", n->address.empty() ? "<none>" : n->address);
  field("Instance subnet", n->instance_subnet.empty() ? "<none>" : n->instance_subnet);
  field("Topology", fmt::format("zone {}, rack {}, switch {}", n->zone.empty() ? "-" : n->zone,
                                n->rack.empty() ? "-" : n->rack, n->switch_.empty() ? "-" : n->switch_));
  field("Ports", fmt::format("{}-{}", n->port_min, n->port_max));
  field_lines("Labels", label_lines(n->labels));
  field("Capacity", resources_text(n->capacity));
  field("Allocated", fmt::format("cpu {}, memory {}, gpu {}, disk {}", cpu_cell(u.allocated.cpu_millis, n->capacity.cpu_millis),
                                 bytes_cell(u.allocated.memory_bytes, n->capacity.memory_bytes),
                                 count_cell(u.allocated.gpu, n->capacity.gpu),
                                 bytes_cell(u.allocated.disk_bytes, n->capacity.disk_bytes)));
  Table vg({"NAME", "CLASS", "SIZE", "USED", "IOPS"});
  for (const auto& v : n->volume_groups) {
    auto it = u.volume_used.find(v.name);
    int64_t used = it == u.volume_used.end() ? 0 : it->second;
    vg.add_row({v.name, v.storage_class, format_bytes(v.size_bytes), bytes_cell(used, v.size_bytes), std::to_string(v.iops)});
  }
  section("Volume groups", vg);
  field("Cached images", n->cached_images.empty() ? "<none>" : fmt::format("{}", fmt::join(n->cached_images, ", ")));
  Table inst({"NAME", "STATE", "PRIORITY", "CPU", "MEMORY", "GPU", "ADDRESS"});
  for (const auto& i : state.snapshot.instances) {
    if (i.node != n->name) continue;
    inst.add_row({i.key(), std::string(instance_state_name(i.state)), i.priority.to_string(),
                  format_cpu(i.request.cpu_millis), format_bytes_short(i.request.memory_bytes),
                  std::to_string(i.request.gpu), i.address.empty() ? "-" : i.address});
  }
  section(fmt::format("Instances ({})", inst.rows()), inst);
  EventFilter f;
  f.nodes = {n->name};
  print_events(session, f, session.clock.now());
  return k_ok;
}

// The spec bundle a config change re-renders the app from: its hash, how many files it
// holds and their size ("<none>" for apps submitted before bundles existed, which
// re-render from the Spec folder).
std::string bundle_text(Session& session, const AppRecord& a) {
  if (a.bundle.empty()) return "<none> (re-rendered from the spec folder)";
  auto text = session.state->bundle(a.bundle);
  if (!text) return fmt::format("{} (unreadable: {})", a.bundle, text.error().front().message);
  if (!*text) return fmt::format("{} (missing from the store)", a.bundle);
  auto bundle = ops::parse_bundle(**text, a.bundle, "the bundle");
  if (!bundle) return fmt::format("{} ({})", a.bundle, bundle.error().front().message);
  size_t files = bundle->files.size();
  return fmt::format("{} ({} file{}, {})", a.bundle, files, files == 1 ? "" : "s",
                     render::format_bytes(bundle->content_bytes()));
}

int describe_app(const Globals& g, Session& session, const ClusterState& state, const std::string& name) {
  const AppRecord* a = state.find_app(g.tenant, name);
  if (!a) {
    std::vector<std::string> known;
    for (const auto& [id, x] : state.apps)
      if (x.tenant == g.tenant) known.push_back(x.name);
    return unknown(g, fmt::format("app in tenant {}", g.tenant), name, known, "gaia get apps -A");
  }
  auto now = session.clock.now();
  auto [running, desired] = app_instance_counts(state, *a);
  field("Name", a->name);
  field("Tenant", a->tenant);
  field("Version", a->version);
  field("Status", fmt::format("{} ({}/{} instances running)", a->status, running, desired));
  std::vector<std::string> failed_roles;  // Roles that ran out of retry_times (the restart controller).
  for (const auto& [role, why] : a->failed_roles) failed_roles.push_back(fmt::format("{}: {}", role, why));
  field_lines("Failed roles", failed_roles);
  field("Priority", a->workload.priority.to_string());
  field("Spec", a->spec_dir.empty() ? "<unknown>" : a->spec_dir);
  field("Bundle", bundle_text(session, *a));
  if (!a->source.empty()) field("Source", a->source);
  field("Created", a->created.empty() ? "<unknown>" : fmt::format("{} ({} ago)", a->created, age(a->created, now)));
  field("Updated", a->updated.empty() ? "<unknown>" : a->updated);
  field("Workload hash", a->workload.hash.empty() ? "<none>" : a->workload.hash);
  if (!a->op.empty()) field("Operation", a->op);
  std::vector<std::string> deps, dependents;
  for (const auto& d : a->dependencies) {
    const AppRecord* x = state.find_app(a->tenant, d);
    deps.push_back(x ? fmt::format("{} {} ({})", d, x->version, x->status) : d + " (not deployed)");
  }
  for (const auto& [id, x] : state.apps)
    if (x.tenant == a->tenant && std::find(x.dependencies.begin(), x.dependencies.end(), a->name) != x.dependencies.end())
      dependents.push_back(fmt::format("{} {} ({})", x.name, x.version, x.status));
  field_lines("Dependencies", deps);
  field_lines("Dependents", dependents);
  Table roles({"ROLE", "KIND", "REPLICAS", "CPU", "MEMORY", "GPU", "DISK", "PRIORITY", "IMAGE"});
  for (const auto& r : a->workload.roles)
    roles.add_row({r.name, r.kind, std::to_string(desired_replicas(*a, r)), format_cpu(r.resources.cpu_millis),
                   format_bytes(r.resources.memory_bytes), std::to_string(r.resources.gpu),
                   format_bytes(r.resources.disk_bytes), r.priority.to_string(), r.image.empty() ? "-" : r.image});
  section("Roles", roles);
  std::vector<std::string> outputs;
  if (a->workload.outputs.is_object())
    for (auto it = a->workload.outputs.begin(); it != a->workload.outputs.end(); ++it)
      outputs.push_back(fmt::format("{} = {}", it.key(), it.value().is_string() ? it.value().get<std::string>()
                                                                               : it.value().dump()));
  field_lines("Outputs", outputs);
  // Provenance: each config-center and label value the render used, the revision it
  // read, and whether the center holds a different value now (then a config or label
  // change did not reach this app: `gaia config set` re-renders readers of what it sets).
  Table reads({"KIND", "KEY", "VALUE", "REVISION", "STATUS"});
  auto centers = StoreConfigSource::load(*session.store);
  std::optional<ConfigSnapshot> center_now;
  if (centers) center_now = ops::app_snapshot(*centers, *a);
  for (const auto& r : a->workload.reads) {
    std::string status = "-";
    if (center_now) {
      auto cur = read_now(r, *center_now);
      if (read_holds(r, *center_now)) status = r.defaulted ? "default (key not set)" : "current";
      else if (!cur) status = "stale: now unset";
      else status = fmt::format("stale: now {} (revision {})", ops::display_value(r.key, cur->value), cur->revision);
    }
    reads.add_row({r.kind, r.key, r.defaulted ? "(default) " + ops::display_value(r.key, r.value) : ops::display_value(r.key, r.value),
                   r.defaulted ? "-" : std::to_string(r.revision), status});
  }
  section("Config reads", reads);
  Table inst({"NAME", "ROLE", "NODE", "STATE", "ADDRESS", "REASON"});
  for (const auto& i : state.snapshot.instances)
    if (i.tenant == a->tenant && i.app == a->name)
      inst.add_row({i.key(), i.role, i.node.empty() ? "-" : i.node, std::string(instance_state_name(i.state)),
                    i.address.empty() ? "-" : i.address, instance_reason(i, std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count())});
  section(fmt::format("Instances ({})", inst.rows()), inst);
  EventFilter f;
  f.apps = {a->tenant + "/" + a->name};
  print_events(session, f, now);
  return k_ok;
}

int describe_instance(const Globals& g, Session& session, const ClusterState& state, const std::string& name) {
  std::string key = instance_key_from_ref(name, g.tenant);
  const Instance* i = state.find_instance(key);
  if (!i) {
    std::vector<std::string> known;
    for (const auto& x : state.snapshot.instances) known.push_back(x.key());
    return unknown(g, "instance", name, known, "gaia get instances -A");
  }
  field("Name", i->key());
  field("DNS name", i->dns_name());
  field("Tenant", i->tenant);
  field("App", i->app);
  field("Role", i->role);
  field("Ordinal", std::to_string(i->ordinal));
  field("State", std::string(instance_state_name(i->state)));
  if (!i->pending_reason.empty()) field("Reason", i->pending_reason);
  field("Node", i->node.empty() ? "<none>" : i->node);
  if (const Node* n = state.find_node(i->node))
    field("Topology", fmt::format("zone {}, rack {}, switch {}", n->zone.empty() ? "-" : n->zone,
                                  n->rack.empty() ? "-" : n->rack, n->switch_.empty() ? "-" : n->switch_));
  field("Address", i->address.empty() ? "<none>" : i->address);
  field("Priority", i->priority.to_string());
  field("Requests", resources_text(i->request));
  if (i->reservation) field("Reservation", resources_text(*i->reservation));
  if (i->usage) field("Usage", resources_text(*i->usage) + (i->throttled ? " (cpu throttled)" : ""));
  if (!i->failure.empty()) field("Last failure", i->failure + (i->internal_failure ? " (internal)" : ""));
  if (i->restart_at_ms)
    field("Restart at", format_rfc3339(Clock::time_point(std::chrono::milliseconds(i->restart_at_ms))));
  std::vector<std::string> ports;
  for (const auto& [pname, port] : i->ports) ports.push_back(fmt::format("{} -> {}", pname, port));
  field_lines("Ports", ports);
  Table vols({"VOLUME", "NODE", "GROUP", "SIZE", "IOPS"});
  for (const auto& v : i->volumes)
    vols.add_row({v.volume, v.node, v.group, format_bytes(v.size_bytes), std::to_string(v.iops)});
  section("Volumes", vols);
  field_lines("Labels", label_lines(i->labels));
  field("Restarts", std::to_string(i->restarts));
  field("Migrations", std::to_string(i->migrations));
  EventFilter f;
  f.instances = {i->key()};
  print_events(session, f, session.clock.now());
  return k_ok;
}

int run_describe(const Globals& g, const DescribeArgs& a) {
  std::string kind = a.kind;
  if (kind == "nodes" || kind == "no") kind = "node";
  if (kind == "apps") kind = "app";
  if (kind == "instances" || kind == "inst") kind = "instance";
  if (kind != "node" && kind != "app" && kind != "instance")
    return report_error(g, fmt::format("unknown kind '{}'", a.kind), "gaia describe node|app|instance NAME");
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto state = (*session)->state->load();
  if (!state) return report(g, state.error());
  if (kind == "node") return describe_node(g, **session, *state, a.name);
  if (kind == "app") return describe_app(g, **session, *state, a.name);
  return describe_instance(g, **session, *state, a.name);
}

}  // namespace

void register_describe(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<DescribeArgs>();
  auto* cmd = app.add_subcommand("describe", "Show one node, app or instance in detail, with its recent events");
  cmd->add_option("KIND", a->kind, "node, app or instance")->required();
  cmd->add_option("NAME", a->name, "Its name (instances: key, DNS name, or app/role/ordinal)")->required();
  cmd->footer("Examples:\n  gaia describe node node-3\n  gaia describe app hdfs\n  gaia describe instance hdfs/datanode/0");
  cmd->callback([&g, a, code] { *code = run_describe(g, *a); });
}

}  // namespace gaia::cli
