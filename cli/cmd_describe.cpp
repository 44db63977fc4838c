// gaia describe node|app|instance NAME: everything gaia knows about one object, in
// kubectl's "Key: value" layout, ending with its most recent timeline events; with
// -o json|yaml the same content as one object for scripts. Secret config values are
// masked (lib/secrets.hpp) unless --show-secrets.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "controllers/lifecycle.hpp"
#include "controllers/propagation.hpp"
#include "controllers/replicas.hpp"
#include "cli/cluster_view.hpp"
#include "cli/context.hpp"
#include "cli/secret_flags.hpp"
#include "cli/table.hpp"
#include "lib/codec.hpp"
#include "lib/instance_ref.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"
#include "ops/bundle.hpp"
#include "ops/propagate.hpp"
#include "ops/secrets.hpp"
#include "render/sandbox.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

using json = nlohmann::json;

constexpr size_t kRecentEvents = 10;

struct DescribeArgs {
  std::string kind;
  std::string name;
  std::string output;  // "" for text, json or yaml.
  bool show_secrets = false;

  bool structured() const { return !output.empty(); }
};

int64_t millis(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

std::string rfc3339_ms(int64_t ms) { return format_rfc3339(Clock::time_point(std::chrono::milliseconds(ms))); }

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

// The object's most recent events, messages passed through `mask` (secret values an
// older gaia may have written); nothing when the timeline cannot be read.
std::optional<std::vector<TimelineEvent>> recent_events(Session& session, const EventFilter& f,
                                                        const SecretValues& mask) {
  auto events = session.state->events_after(0);
  if (!events) return std::nullopt;
  auto recent = select_events(*events, f, kRecentEvents);
  for (auto& e : recent) e.message = mask.mask_text(e.message);
  return recent;
}

void print_events(const std::optional<std::vector<TimelineEvent>>& recent, Clock::time_point now) {
  if (!recent) {
    field("Events", "<cannot read the timeline>");
    return;
  }
  Table t({"AGE", "TYPE", "REASON", "MESSAGE"});
  for (const auto& e : *recent) t.add_row({age(e.time, now), e.type, e.reason, e.message});
  section(fmt::format("Events (last {})", kRecentEvents), t);
}

json events_json(const std::optional<std::vector<TimelineEvent>>& recent) {
  if (!recent) return nullptr;  // null, not []: "unreadable" must not look like "none".
  json out = json::array();
  for (const auto& e : *recent) out.push_back(e);
  return out;
}

json topology_json(const Node* n) {
  if (!n) return nullptr;
  return {{"zone", n->zone}, {"rack", n->rack}, {"switch", n->switch_}};
}

int unknown(const Globals& g, const std::string& kind, const std::string& name, const std::vector<std::string>& known,
            const std::string& list_cmd) {
  std::string hint;
  if (auto close = spec::did_you_mean(name, known)) hint = fmt::format("did you mean '{}'?", *close);
  else hint = fmt::format("`{}` lists them", list_cmd);
  return report_error(g, fmt::format("no {} named '{}'", kind, name), hint);
}


int describe_node(const Globals& g, Session& session, const ClusterState& state, const DescribeArgs& args) {
  const Node* n = state.find_node(args.name);
  if (!n) {
    std::vector<std::string> known;
    for (const auto& x : state.snapshot.nodes) known.push_back(x.name);
    return unknown(g, "node", args.name, known, "gaia get nodes");
  }
  auto usage = node_usage(state);
  const NodeUsage& u = usage[n->name];
  auto now = session.clock.now();
  std::vector<const Instance*> on;
  for (const auto& i : state.snapshot.instances)
    if (i.node == n->name) on.push_back(&i);
  EventFilter f;
  f.nodes = {n->name};
  auto events = recent_events(session, f, SecretValues());
  auto hb = state.heartbeats.find(n->name);
  if (args.structured()) {
    json j = node_json(*n, u);
    j["heartbeat"] = hb == state.heartbeats.end()
                         ? json(nullptr)
                         : json{{"time", rfc3339_ms(hb->second.at_ms)}, {"agent", hb->second.agent}};
    json instances = json::array();
    for (const Instance* i : on)
      instances.push_back({{"name", i->key()}, {"state", std::string(instance_state_name(i->state))},
                           {"priority", i->priority.to_string()}, {"request", json(i->request)}, {"address", i->address}});
    j["instances"] = instances;
    j["events"] = events_json(events);
    print_structured(j, args.output);
    return k_ok;
  }
  field("Name", n->name);
  field("State", n->down_reason.empty() ? std::string(node_state_name(n->state))
                                        : fmt::format("{} ({})", node_state_name(n->state), n->down_reason));
  if (hb != state.heartbeats.end())
    field("Heartbeat", fmt::format("{} ago, from {}", age(rfc3339_ms(hb->second.at_ms), now), hb->second.agent));
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
  for (const Instance* i : on)
    inst.add_row({i->key(), std::string(instance_state_name(i->state)), i->priority.to_string(),
                  format_cpu(i->request.cpu_millis), format_bytes_short(i->request.memory_bytes),
                  std::to_string(i->request.gpu), i->address.empty() ? "-" : i->address});
  section(fmt::format("Instances ({})", inst.rows()), inst);
  print_events(events, now);
  return k_ok;
}

// The spec bundle a config change re-renders the app from: its hash, how many files it
// holds and their size, or why they cannot be told.
struct BundleInfo {
  std::string hash;  // Empty for apps submitted before bundles existed.
  size_t files = 0, bytes = 0;
  std::string problem;  // Unreadable, missing, broken.
};

BundleInfo bundle_info(Session& session, const AppRecord& a) {
  BundleInfo out{a.bundle, 0, 0, ""};
  if (a.bundle.empty()) return out;
  auto text = session.state->bundle(a.bundle);
  if (!text) out.problem = fmt::format("unreadable: {}", text.error().front().message);
  else if (!*text) out.problem = "missing from the store";
  else if (auto bundle = ops::parse_bundle(**text, a.bundle, "the bundle"); !bundle) out.problem = bundle.error().front().message;
  else {
    out.files = bundle->files.size();
    out.bytes = bundle->content_bytes();
  }
  return out;
}

std::string bundle_text(const BundleInfo& b) {
  if (b.hash.empty()) return "<none> (re-rendered from the spec folder)";
  if (!b.problem.empty()) return fmt::format("{} ({})", b.hash, b.problem);
  return fmt::format("{} ({} file{}, {})", b.hash, b.files, b.files == 1 ? "" : "s", render::format_byte_size(b.bytes));
}

json bundle_json(const BundleInfo& b) {
  if (b.hash.empty()) return nullptr;
  json j = {{"hash", b.hash}, {"files", b.files}, {"bytes", b.bytes}};
  if (!b.problem.empty()) j["problem"] = b.problem;
  return j;
}

// One recorded config or label read, as describe shows it (provenance): the value (with
// secrets masked), and whether the center now holds it (`current`, `default`, `stale`).
struct ReadView {
  const ConfigRead* read;
  json value;
  std::string status;
};

int describe_app(const Globals& g, Session& session, const ClusterState& state, const DescribeArgs& args) {
  const AppRecord* a = state.find_app(g.tenant, args.name);
  if (!a) {
    std::vector<std::string> known;
    for (const auto& [id, x] : state.apps)
      if (x.tenant == g.tenant) known.push_back(x.name);
    return unknown(g, fmt::format("app in tenant {}", g.tenant), args.name, known, "gaia get apps -A");
  }
  auto now = session.clock.now();
  // Secret keys of every deployed app (another app may list a key this one reads), and
  // the values this app's render copied them into (outputs, event messages).
  SecretKeys keys;
  SecretValues values;
  if (!args.show_secrets) {
    keys = deployed_secret_keys(g, session, state);
    values = ops::app_secret_values(*a, keys);
  }
  auto mask_read = [&](const ConfigRead& r, const json& v) { return args.show_secrets ? v : keys.mask_read(r.kind, r.key, v); };
  auto shown = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };

  auto [running, desired] = app_instance_counts(state, *a);
  BundleInfo bundle = bundle_info(session, *a);
  std::vector<const AppRecord*> deps_found;
  std::vector<const AppRecord*> dependents;
  for (const auto& d : a->dependencies) deps_found.push_back(state.find_app(a->tenant, d));
  // Its dependents here, and those of other tenants bound to it as the release it
  // exports them (shown as TENANT/NAME).
  const std::string ref = a->tenant + "/" + a->name;
  for (const auto& [id, x] : state.apps) {
    const std::string& wanted = x.tenant == a->tenant ? a->name : ref;
    if (std::find(x.dependencies.begin(), x.dependencies.end(), wanted) != x.dependencies.end()) dependents.push_back(&x);
  }
  auto dependent_name = [&](const AppRecord* x) { return x->tenant == a->tenant ? x->name : x->tenant + "/" + x->name; };
  json outputs = values.mask_json(a->workload.outputs);
  // Provenance: each config-center and label value the render used, the revision it
  // read, and whether the center holds a different value now (then a config or label
  // change did not reach this app: `gaia config set` re-renders readers of what it sets).
  std::vector<ReadView> reads;
  auto centers = StoreConfigSource::load(*session.store);
  std::optional<ConfigSnapshot> center_now;
  if (centers) center_now = ops::app_snapshot(*centers, *a);
  for (const auto& r : a->workload.reads) {
    ReadView v{&r, mask_read(r, r.value), "-"};
    if (center_now) {
      auto cur = read_now(r, *center_now);
      if (read_holds(r, *center_now)) v.status = r.defaulted ? "default (key not set)" : "current";
      else if (!cur) v.status = "stale: now unset";
      else v.status = fmt::format("stale: now {} (revision {})", shown(mask_read(r, cur->value)), cur->revision);
    }
    reads.push_back(std::move(v));
  }
  std::vector<const Instance*> instances;
  for (const auto& i : state.snapshot.instances)
    if (i.tenant == a->tenant && i.app == a->name) instances.push_back(&i);
  EventFilter f;
  f.apps = {a->tenant + "/" + a->name};
  auto events = recent_events(session, f, values);
  // Roles whose replicas `gaia scale` set: they beat the spec's count until the next
  // submit or apply of a changed spec, so a user must see them to understand a count.
  auto scale_of = [&](const Role& r) -> std::optional<int> {
    auto it = a->scale.find(r.name);
    return it == a->scale.end() ? std::nullopt : std::optional<int>(it->second);
  };

  if (args.structured()) {
    json deps = json::array(), users = json::array(), roles = json::array(), read_list = json::array(), inst = json::array();
    for (size_t k = 0; k < a->dependencies.size(); ++k) {
      const AppRecord* x = deps_found[k];
      deps.push_back({{"name", a->dependencies[k]}, {"deployed", x != nullptr}, {"version", x ? x->version : ""},
                      {"status", x ? x->status : ""}});
    }
    for (const AppRecord* x : dependents)
      users.push_back({{"name", dependent_name(x)}, {"version", x->version}, {"status", x->status}});
    for (const auto& r : a->workload.roles) {
      auto scaled = scale_of(r);
      roles.push_back({{"name", r.name}, {"kind", r.kind}, {"replicas", desired_replicas(*a, r)},
                       {"spec_replicas", r.replicas}, {"scale_override", scaled ? json(*scaled) : json(nullptr)},
                       {"resources", json(r.resources)}, {"limits", json(r.limit())},
                       {"qos_class", r.burstable() ? "Burstable" : "Guaranteed"}, {"after", r.after},
                       {"priority", r.priority.to_string()}, {"image", r.image}});
    }
    for (const auto& v : reads)
      read_list.push_back({{"kind", v.read->kind}, {"key", v.read->key}, {"value", v.value}, {"defaulted", v.read->defaulted},
                           {"revision", v.read->revision}, {"status", v.status}});
    int64_t now_ms = millis(now);
    StartGates gates(state);
    for (const Instance* i : instances)
      inst.push_back({{"name", i->key()}, {"role", i->role}, {"node", i->node},
                      {"state", std::string(instance_state_name(i->state))}, {"address", i->address},
                      {"reason", instance_reason(*i, now_ms, &gates)}});
    json j = {{"name", a->name},
              {"tenant", a->tenant},
              {"version", a->version},
              {"status", a->status},
              {"instances_running", running},
              {"instances_desired", desired},
              {"failed_roles", a->failed_roles},
              {"priority", a->workload.priority.to_string()},
              {"spec_dir", a->spec_dir},
              {"bundle", bundle_json(bundle)},
              {"source", a->source},
              {"created", a->created},
              {"updated", a->updated},
              {"workload_hash", a->workload.hash},
              {"op", a->op},
              {"dependencies", deps},
              {"dependents", users},
              {"exports", a->exports},
              {"roles", roles},
              {"scale", a->scale},
              {"outputs", outputs},
              {"reads", read_list},
              {"instances", inst},
              {"events", events_json(events)}};
    print_structured(j, args.output);
    return k_ok;
  }

  field("Name", a->name);
  field("Tenant", a->tenant);
  field("Version", a->version);
  field("Status", fmt::format("{} ({}/{} instances running)", a->status, running, desired));
  std::vector<std::string> failed_roles;  // Roles that ran out of retry_times (the restart controller).
  for (const auto& [role, why] : a->failed_roles) failed_roles.push_back(fmt::format("{}: {}", role, why));
  field_lines("Failed roles", failed_roles);
  field("Priority", a->workload.priority.to_string());
  field("Spec", a->spec_dir.empty() ? "<unknown>" : a->spec_dir);
  field("Bundle", bundle_text(bundle));
  if (!a->source.empty()) field("Source", a->source);
  field("Created", a->created.empty() ? "<unknown>" : fmt::format("{} ({} ago)", a->created, age(a->created, now)));
  field("Updated", a->updated.empty() ? "<unknown>" : a->updated);
  field("Workload hash", a->workload.hash.empty() ? "<none>" : a->workload.hash);
  if (!a->op.empty()) field("Operation", a->op);
  std::vector<std::string> dep_lines, dependent_lines;
  for (size_t k = 0; k < a->dependencies.size(); ++k) {
    const AppRecord* x = deps_found[k];
    const std::string& d = a->dependencies[k];
    dep_lines.push_back(x ? fmt::format("{} {} ({})", d, x->version, x->status) : d + " (not deployed)");
  }
  for (const AppRecord* x : dependents)
    dependent_lines.push_back(fmt::format("{} {} ({})", dependent_name(x), x->version, x->status));
  field_lines("Dependencies", dep_lines);
  field_lines("Dependents", dependent_lines);
  if (!a->exports.empty()) field("Exported to", fmt::format("{}", fmt::join(a->exports, ", ")));
  Table roles({"ROLE", "KIND", "REPLICAS", "CPU", "MEMORY", "GPU", "DISK", "PRIORITY", "IMAGE"});
  std::vector<std::string> overrides, order;
  // A Burstable role shows REQUEST/LIMIT where the two differ.
  auto cell = [](int64_t request, int64_t limit, auto format) {
    return request == limit ? format(request) : fmt::format("{}/{}", format(request), format(limit));
  };
  for (const auto& r : a->workload.roles) {
    auto scaled = scale_of(r);
    Resources lim = r.limit();
    roles.add_row({r.name, r.kind, std::to_string(desired_replicas(*a, r)) + (scaled ? " (scaled)" : ""),
                   cell(r.resources.cpu_millis, lim.cpu_millis, format_cpu),
                   cell(r.resources.memory_bytes, lim.memory_bytes, format_bytes), std::to_string(r.resources.gpu),
                   cell(r.resources.disk_bytes, lim.disk_bytes, format_bytes), r.priority.to_string(),
                   r.image.empty() ? "-" : r.image});
    if (!r.after.empty()) order.push_back(fmt::format("{} starts after {}", r.name, fmt::join(r.after, ", ")));
    if (scaled) overrides.push_back(fmt::format("{}: {} replicas (the spec says {})", r.name, *scaled, r.replicas));
  }
  section("Roles", roles);
  if (!order.empty()) field_lines("Start order", order);
  field_lines("Scale overrides", overrides);
  std::vector<std::string> output_lines;
  if (outputs.is_object())
    for (auto it = outputs.begin(); it != outputs.end(); ++it) output_lines.push_back(fmt::format("{} = {}", it.key(), shown(it.value())));
  field_lines("Outputs", output_lines);
  Table read_table({"KIND", "KEY", "VALUE", "REVISION", "STATUS"});
  for (const auto& v : reads)
    read_table.add_row({v.read->kind, v.read->key, v.read->defaulted ? "(default) " + shown(v.value) : shown(v.value),
                        v.read->defaulted ? "-" : std::to_string(v.read->revision), v.status});
  section("Config reads", read_table);
  Table inst({"NAME", "ROLE", "NODE", "STATE", "ADDRESS", "REASON"});
  StartGates gates(state);
  for (const Instance* i : instances)
    inst.add_row({i->key(), i->role, i->node.empty() ? "-" : i->node, std::string(instance_state_name(i->state)),
                  i->address.empty() ? "-" : i->address, instance_reason(*i, millis(now), &gates)});
  section(fmt::format("Instances ({})", inst.rows()), inst);
  print_events(events, now);
  return k_ok;
}

// Why an instance is not running and when it runs again: the reason (why it waits, or
// why it failed), and for a failed one the next restart, or why there is none. Every
// command named in `next_restart_text` is one that succeeds as written.
struct InstanceStatus {
  std::string reason;             // Empty when there is nothing to say.
  std::optional<int64_t> restart_at_ms;  // Failed and a restart is scheduled.
  std::string role_failed;        // Failed for good: the role ran out of retry_times.
  std::string next_restart_text;  // For text output; empty unless Failed.
};

InstanceStatus instance_status(const ClusterState& state, const Instance& i, int64_t now_ms) {
  InstanceStatus s;
  if (!i.pending_reason.empty()) s.reason = i.pending_reason;
  else if (i.state == InstanceState::Placed) s.reason = StartGates(state).reason(i);
  if (i.state != InstanceState::Failed) return s;
  if (s.reason.empty()) s.reason = i.failure.empty() ? "failed" : i.failure;
  const AppRecord* app = state.find_app(i.tenant, i.app);
  if (app)
    if (auto it = app->failed_roles.find(i.role); it != app->failed_roles.end()) s.role_failed = it->second;
  if (!s.role_failed.empty()) {
    s.next_restart_text = fmt::format("none: role {} failed ({}); it stays down until a changed spec is submitted", i.role,
                                      s.role_failed);
  } else if (i.restart_at_ms > now_ms) {
    s.restart_at_ms = i.restart_at_ms;
    s.next_restart_text = fmt::format("{} (in {}s; the first gaia command that runs the controllers after that, or "
                                      "`gaia controller run`, restarts it)",
                                      rfc3339_ms(i.restart_at_ms), (i.restart_at_ms - now_ms + 999) / 1000);
  } else if (i.restart_at_ms > 0) {
    s.restart_at_ms = i.restart_at_ms;
    s.next_restart_text = fmt::format("{} (due: the next gaia command that runs the controllers, or `gaia controller "
                                      "run`, restarts it)",
                                      rfc3339_ms(i.restart_at_ms));
  } else {
    s.next_restart_text = "not set yet (the restart controller sets it when the controllers next run)";
  }
  return s;
}

int describe_instance(const Globals& g, Session& session, const ClusterState& state, const DescribeArgs& args) {
  std::string key = instance_key_from_ref(args.name, g.tenant);
  const Instance* i = state.find_instance(key);
  if (!i) {
    std::vector<std::string> known;
    for (const auto& x : state.snapshot.instances) known.push_back(x.key());
    return unknown(g, "instance", args.name, known, "gaia get instances -A");
  }
  auto now = session.clock.now();
  InstanceStatus status = instance_status(state, *i, millis(now));
  const Node* n = state.find_node(i->node);
  EventFilter f;
  f.instances = {i->key()};
  auto events = recent_events(session, f, SecretValues());
  if (args.structured()) {
    json j = instance_json(*i);
    j["topology"] = topology_json(n);
    j["reason"] = status.reason;
    j["next_restart"] = status.restart_at_ms ? json(rfc3339_ms(*status.restart_at_ms)) : json(nullptr);
    j["role_failed"] = status.role_failed;
    j["events"] = events_json(events);
    print_structured(j, args.output);
    return k_ok;
  }
  field("Name", i->key());
  field("DNS name", i->dns_name());
  field("Tenant", i->tenant);
  field("App", i->app);
  field("Role", i->role);
  field("Ordinal", std::to_string(i->ordinal));
  field("State", std::string(instance_state_name(i->state)));
  if (!status.reason.empty()) field("Reason", status.reason);
  if (!status.next_restart_text.empty()) field("Next restart", status.next_restart_text);
  field("Node", i->node.empty() ? "<none>" : i->node);
  if (n)
    field("Topology", fmt::format("zone {}, rack {}, switch {}", n->zone.empty() ? "-" : n->zone,
                                  n->rack.empty() ? "-" : n->rack, n->switch_.empty() ? "-" : n->switch_));
  field("Address", i->address.empty() ? "<none>" : i->address);
  field("Priority", i->priority.to_string());
  field("Requests", resources_text(i->request));
  field("Limits", i->limit ? resources_text(*i->limit) : "the requests");
  field("QoS class", i->limit ? "Burstable" : "Guaranteed");
  if (i->reservation) field("Reservation", resources_text(*i->reservation));
  if (i->usage) field("Usage", resources_text(*i->usage) + (i->throttled ? " (cpu throttled)" : ""));
  // A restarted instance keeps its last failure; a failed one shows it as its Reason.
  if (!i->failure.empty() && i->state != InstanceState::Failed)
    field("Last failure", i->failure + (i->internal_failure ? " (internal)" : ""));
  else if (i->state == InstanceState::Failed && i->internal_failure)
    field("Failure kind", "internal (gaia's own fault: does not count against retry_times)");
  std::vector<std::string> ports;
  for (const auto& [pname, port] : i->ports) ports.push_back(fmt::format("{} -> {}", pname, port));
  field_lines("Ports", ports);
  // A claim volume has no node: it is in its class's pool and follows the instance.
  Table vols({"VOLUME", "NODE", "GROUP", "SIZE", "IOPS"});
  for (const auto& v : i->volumes)
    vols.add_row({v.volume, claim_binding(v) ? "-" : v.node, claim_binding(v) ? v.group + " (claim)" : v.group,
                  format_bytes(v.size_bytes), std::to_string(v.iops)});
  section("Volumes", vols);
  field_lines("Labels", label_lines(i->labels));
  field("Restarts", std::to_string(i->restarts));
  field("Migrations", std::to_string(i->migrations));
  print_events(events, now);
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
  if (kind == "node") return describe_node(g, **session, *state, a);
  if (kind == "app") return describe_app(g, **session, *state, a);
  return describe_instance(g, **session, *state, a);
}

}  // namespace

void register_describe(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<DescribeArgs>();
  auto* cmd = app.add_subcommand("describe", "Show one node, app or instance in detail, with its recent events");
  cmd->add_option("KIND", a->kind, "node, app or instance")->required();
  cmd->add_option("NAME", a->name, "Its name (instances: key, DNS name, or app/role/ordinal)")->required();
  cmd->add_option("-o,--output", a->output, "json or yaml (the same content as one object; default: text)")
      ->check(CLI::IsMember({"json", "yaml"}));
  add_show_secrets(cmd, a->show_secrets);
  cmd->footer(
      "Examples:\n  gaia describe node node-3\n  gaia describe app hdfs\n  gaia describe instance hdfs/datanode/0\n"
      "  gaia describe app web -o json | jq .scale     # roles whose replicas `gaia scale` set");
  cmd->callback([&g, a, code] { *code = run_describe(g, *a); });
}

}  // namespace gaia::cli
