#include "kube/kube_objects.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <map>
#include <set>

#include "lib/hash.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"

namespace gaia::kube {

using nlohmann::json;

namespace {

// Lowercase letters, digits and '-' only; anything else becomes '-'.
std::string dns_safe(std::string_view text) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    out.push_back(std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '-');
  }
  return out;
}

struct KeyParts {
  std::string ordinal, role, app, tenant;
};

KeyParts split_key(const std::string& key) {
  KeyParts p;
  size_t a = key.find('.');
  size_t b = a == std::string::npos ? a : key.find('.', a + 1);
  size_t c = b == std::string::npos ? b : key.find('.', b + 1);
  if (c == std::string::npos) {
    p.app = key;
    return p;
  }
  p.ordinal = key.substr(0, a);
  p.role = key.substr(a + 1, b - a - 1);
  p.app = key.substr(b + 1, c - b - 1);
  p.tenant = key.substr(c + 1);
  return p;
}

std::string label_of(const json& obj, const char* key) {
  const json* labels = nullptr;
  if (auto m = obj.find("metadata"); m != obj.end())
    if (auto l = m->find("labels"); l != m->end() && l->is_object()) labels = &*l;
  if (!labels) return {};
  auto it = labels->find(key);
  return it != labels->end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t quantity(const json& map, const char* key, bool cpu) {
  auto it = map.find(key);
  if (it == map.end()) return 0;
  std::string text = it->is_string() ? it->get<std::string>() : it->dump();
  auto v = cpu ? parse_cpu(text) : parse_bytes(text);
  return v ? *v : 0;
}

PodTemplateContext template_context(const StartSpec& s) {
  PodTemplateContext c;
  c.app = s.instance.app;
  c.tenant = s.instance.tenant;
  c.version = s.app_version;
  c.config_map = config_map_name(s.instance.tenant, s.instance.app);
  // The template's hash annotation tells which rendering a pod came from: the role and
  // the config, as the render target hashes the workload.
  c.hash = content_hash(json{{"role", s.role.name}, {"config", s.config}, {"version", s.app_version}}.dump());
  return c;
}

json metadata(const std::string& name, const PodOptions& o, json labels) {
  labels[k_label_owner] = o.owner;
  labels["app.kubernetes.io/managed-by"] = "gaia";
  return {{"name", name}, {"namespace", o.namespace_name}, {"labels", std::move(labels)}};
}

}  // namespace

std::string object_prefix(const std::string& tenant) { return tenant == "default" || tenant.empty() ? "" : dns_safe(tenant) + "-"; }

std::string pod_name(const std::string& instance_key, int64_t generation) {
  KeyParts p = split_key(instance_key);
  std::string name = fmt::format("{}{}-{}-{}-g{}", object_prefix(p.tenant), dns_safe(p.app), dns_safe(p.role),
                                 dns_safe(p.ordinal), generation);
  if (name.size() > 253) name = name.substr(0, 236) + "-" + content_hash(instance_key).substr(0, 16);
  return name;
}

std::string config_map_name(const std::string& tenant, const std::string& app) {
  return object_prefix(tenant) + dns_safe(app) + "-config";
}

std::string service_name(const std::string& tenant, const std::string& app, const std::string& role) {
  return object_prefix(tenant) + dns_safe(app) + "-" + dns_safe(role);
}

std::string claim_name(const Instance& i, const std::string& volume) {
  return fmt::format("{}-{}{}-{}-{}", dns_safe(volume), object_prefix(i.tenant), dns_safe(i.app), dns_safe(i.role),
                     i.ordinal);
}

std::expected<json, std::string> pod_manifest(const StartSpec& s, const PodOptions& o) {
  const Role& r = s.role;
  std::vector<PodTemplateProblem> problems = kubernetes_role_problems(r);
  PodTemplateContext ctx = template_context(s);
  json tmpl = kubernetes_pod_template(r, ctx, problems);
  if (!problems.empty()) {
    std::vector<std::string> texts;
    for (const auto& p : problems)
      texts.push_back(fmt::format("{}{}{}", p.field.empty() ? "" : p.field + ": ", p.message,
                                  p.hint.empty() ? "" : " (" + p.hint + ")"));
    return std::unexpected(fmt::format("role {} cannot run on Kubernetes: {}", r.name, fmt::join(texts, "; ")));
  }
  const Instance& i = s.instance;
  json labels = tmpl["metadata"]["labels"];
  labels[k_label_instance] = i.key();
  labels[k_label_generation] = std::to_string(i.generation);
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata(pod_name(i.key(), i.generation), o, labels)}};
  json annotations = tmpl["metadata"].value("annotations", json::object());
  // Where gaia decided to run it, before the binding says so: a pod left unbound by a
  // crash between create and bind is bound to this node by the next cycle.
  annotations[k_annotation_node] = i.node;
  pod["metadata"]["annotations"] = annotations;
  json spec = tmpl["spec"];
  spec["schedulerName"] = o.scheduler_name;
  spec["hostname"] = dns_safe(fmt::format("{}-{}-{}", i.app, i.role, i.ordinal)).substr(0, 63);
  // gaia's environment for the instance (its name, tenant, ordinal, its dependencies'
  // addresses) merged over the role's, as the process backend does.
  if (!s.env.empty() && spec.contains("containers") && !spec["containers"].empty()) {
    json& c = spec["containers"][0];
    json env = c.value("env", json::array());
    for (const auto& [k, v] : s.env) {
      auto same = std::find_if(env.begin(), env.end(), [&](const json& e) { return e.value("name", "") == k; });
      if (same != env.end()) (*same)["value"] = v;
      else env.push_back({{"name", k}, {"value", v}});
    }
    c["env"] = env;
  }
  // A stateful service role's volumes are claims of their own per instance, kept when
  // the pod goes (supporting_objects applies them), so a copy started again, on the
  // node gaia keeps for it, finds its data. Batch roles' volumes are ephemeral in the
  // template already.
  if (r.kind != "batch")
    for (const auto& v : r.volumes)
      spec["volumes"].push_back({{"name", v.name},
                                 {"persistentVolumeClaim", {{"claimName", claim_name(i, v.name)}}}});
  pod["spec"] = spec;
  return pod;
}

std::vector<json> supporting_objects(const StartSpec& s, const PodOptions& o) {
  const Role& r = s.role;
  const Instance& i = s.instance;
  std::vector<json> out;
  out.push_back({{"apiVersion", "scheduling.k8s.io/v1"},
                 {"kind", "PriorityClass"},
                 {"metadata", {{"name", kubernetes_priority_class_name(r.priority)},
                               {"labels", {{"app.kubernetes.io/managed-by", "gaia"}}}}},
                 {"value", kubernetes_priority_value(r.priority)},
                 {"globalDefault", false},
                 {"preemptionPolicy", r.priority.preemptible ? "PreemptLowerPriority" : "Never"},
                 {"description", fmt::format("gaia priority {}", r.priority.to_string())}});
  PodTemplateContext ctx = template_context(s);
  json common = kubernetes_common_labels(ctx);
  // The app's incarnation: an app deleted and submitted again applies objects that
  // differ from its predecessor's, so their resourceVersion changes and the removal of
  // the predecessor's leftovers (remove_unused, a delete with the listed
  // resourceVersion as precondition) cannot take them.
  auto per_app = [&](json meta) {
    if (!s.app_created.empty()) meta["annotations"] = {{"gaia.io/app-created", s.app_created}};
    return meta;
  };
  out.push_back({{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", per_app(metadata(config_map_name(i.tenant, i.app), o, common))},
                 {"data", {{"config.json", s.config.dump(2) + "\n"}}}});
  json selector = {{"gaia.io/app", i.app}, {"gaia.io/role", r.name}, {"gaia.io/tenant", i.tenant}, {k_label_owner, o.owner}};
  json role_labels = kubernetes_role_labels(r, ctx);
  if (!r.ports.empty()) {
    json ports = json::array();
    for (const auto& p : r.ports)
      ports.push_back({{"name", p.name}, {"port", p.port}, {"targetPort", p.name}, {"protocol", p.protocol}});
    json spec = {{"selector", selector}, {"ports", ports}};
    if (r.stateful() && r.kind == "service") spec["clusterIP"] = "None";
    out.push_back({{"apiVersion", "v1"},
                   {"kind", "Service"},
                   {"metadata", per_app(metadata(service_name(i.tenant, i.app, r.name), o, role_labels))},
                   {"spec", spec}});
  }
  if (r.kind != "batch")
    for (const auto& v : r.volumes) {
      json claim = kubernetes_volume_claim_template(r, v, ctx);
      json meta = claim.value("metadata", json::object());
      json labels = meta.value("labels", json::object());
      labels[k_label_instance] = i.key();
      json m = metadata(claim_name(i, v.name), o, labels);
      if (meta.contains("annotations")) m["annotations"] = meta["annotations"];
      out.push_back({{"apiVersion", "v1"}, {"kind", "PersistentVolumeClaim"}, {"metadata", m}, {"spec", claim["spec"]}});
    }
  if (r.kind == "service" && r.min_available > 0)
    out.push_back({{"apiVersion", "policy/v1"},
                   {"kind", "PodDisruptionBudget"},
                   {"metadata", per_app(metadata(service_name(i.tenant, i.app, r.name), o, role_labels))},
                   {"spec", {{"minAvailable", r.min_available}, {"selector", {{"matchLabels", selector}}}}}});
  return out;
}

json pod_binding(const std::string& name, const std::string& namespace_name, const std::string& node) {
  return {{"apiVersion", "v1"},
          {"kind", "Binding"},
          {"metadata", {{"name", name}, {"namespace", namespace_name}}},
          {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
}

const std::vector<SupportingKind>& per_app_kinds() {
  static const std::vector<SupportingKind> kinds = {
      {"ConfigMap", "/api/v1/namespaces/{ns}/configmaps"},
      {"Service", "/api/v1/namespaces/{ns}/services"},
      {"PodDisruptionBudget", "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"},
  };
  return kinds;
}

std::vector<ObjectRef> unused_objects(const std::vector<json>& objects, const ClusterState& state,
                                      const std::string& owner) {
  // What is still in use: every app and role the store has, and those of instances still
  // recorded (a deleted app's copies being stopped still need their Service).
  std::set<std::string> apps, roles;
  for (const auto& [id, record] : state.apps) apps.insert(id);
  for (const auto& [id, role] : state.snapshot.roles) roles.insert(id);
  for (const Instance& i : state.snapshot.instances) {
    apps.insert(i.tenant + "/" + i.app);
    roles.insert(i.tenant + "/" + i.app + "/" + i.role);
  }
  // Object names can coincide across tenants (tenant shop's app web and the default
  // tenant's app shop-web both name their ConfigMap shop-web-config): a name a live app
  // or role maps to is never removed, whoever applied it last.
  std::set<std::string> live_names;
  for (const auto& id : apps) {
    auto slash = id.find('/');
    live_names.insert("ConfigMap/" + config_map_name(id.substr(0, slash), id.substr(slash + 1)));
  }
  for (const auto& id : roles) {
    auto a = id.find('/'), b = id.find('/', a + 1);
    std::string name = service_name(id.substr(0, a), id.substr(a + 1, b - a - 1), id.substr(b + 1));
    live_names.insert("Service/" + name);
    live_names.insert("PodDisruptionBudget/" + name);
  }
  std::vector<ObjectRef> out;
  for (const json& obj : objects) {
    if (label_of(obj, k_label_owner) != owner || owner.empty()) continue;
    std::string kind = str(obj, "kind"), name = str(obj.value("metadata", json::object()), "name");
    std::string tenant = label_of(obj, "gaia.io/tenant"), app = label_of(obj, "gaia.io/app");
    if (name.empty() || tenant.empty() || app.empty()) continue;
    std::string app_id = tenant + "/" + app;
    if (kind == "ConfigMap") {
      if (!apps.count(app_id) && !live_names.count(kind + "/" + name)) out.push_back({kind, name});
      continue;
    }
    if (kind != "Service" && kind != "PodDisruptionBudget") continue;
    std::string role = label_of(obj, "gaia.io/role");
    if (role.empty()) continue;
    std::string role_id = app_id + "/" + role;
    bool unused = !roles.count(role_id);
    if (!unused && kind == "PodDisruptionBudget") {
      auto it = state.snapshot.roles.find(role_id);
      unused = it != state.snapshot.roles.end() && (it->second.kind != "service" || it->second.min_available <= 0);
    }
    // A name a live role maps to stays, unless it is this role's own budget, no longer
    // asked for.
    bool own_budget_dropped = kind == "PodDisruptionBudget" && roles.count(role_id);
    if (unused && !own_budget_dropped && live_names.count(kind + "/" + name)) unused = false;
    if (unused) out.push_back({kind, name});
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> pods_to_bind(const std::vector<json>& pods, const std::string& owner) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const json& p : pods) {
    const json& meta = p.value("metadata", json::object());
    if (!str(p.value("spec", json::object()), "nodeName").empty() || meta.contains("deletionTimestamp")) continue;
    if (label_of(p, k_label_owner) != owner) continue;
    std::string node = str(meta.value("annotations", json::object()), k_annotation_node);
    std::string name = str(meta, "name");
    if (!node.empty() && !name.empty()) out.emplace_back(std::move(name), std::move(node));
  }
  return out;
}

std::optional<ObservedCopy> copy_of_pod(const json& pod) {
  std::string instance = label_of(pod, k_label_instance);
  std::string generation = label_of(pod, k_label_generation);
  if (instance.empty() || generation.empty()) return std::nullopt;
  ObservedCopy c;
  c.instance = instance;
  auto [end, ec] = std::from_chars(generation.data(), generation.data() + generation.size(), c.generation);
  if (ec != std::errc() || end != generation.data() + generation.size()) return std::nullopt;
  const json& meta = pod.value("metadata", json::object());
  const json& spec = pod.value("spec", json::object());
  const json& status = pod.value("status", json::object());
  c.node = str(spec, "nodeName");
  if (c.node.empty()) c.node = str(meta.value("annotations", json::object()), k_annotation_node);
  c.address = str(status, "podIP");
  std::string phase = str(status, "phase");
  c.started_ms = time_ms(str(status, "startTime"));
  bool ready = false;
  for (const auto& cond : status.value("conditions", json::array()))
    if (str(cond, "type") == "Ready") ready = str(cond, "status") == "True";
  // The pod's own reason says whose doing an end was (the kubelet's "Evicted"); the
  // first container that ended tells the app's side.
  const std::string pod_reason = str(status, "reason");
  std::string reason = pod_reason;
  int exit_code = 0;
  for (const auto& cs : status.value("containerStatuses", json::array())) {
    const json& state = cs.value("state", json::object());
    if (auto t = state.find("terminated"); t != state.end()) {
      exit_code = t->value("exitCode", 0);
      if (std::string r = str(*t, "reason"); !r.empty()) reason = r;
      break;
    }
    if (auto w = state.find("waiting"); w != state.end())
      if (std::string r = str(*w, "reason"); !r.empty() && reason.empty()) reason = r;
  }
  if (phase == "Succeeded") {
    c.phase = CopyPhase::Exited;
    c.exit_code = 0;
    c.reason = "completed";
  } else if (phase == "Failed") {
    c.phase = CopyPhase::Failed;
    c.exit_code = exit_code;
    c.reason = reason.empty() ? "the pod failed" : reason;
    if (exit_code != 0) c.reason += fmt::format(" (exit code {})", exit_code);
    // Evicted by the kubelet (node pressure) or lost with its node: Kubernetes' doing,
    // not the app's, so a restart does not spend its retries.
    c.internal = pod_reason == "Evicted" || pod_reason == "NodeLost" || pod_reason == "Shutdown";
  } else if (phase == "Running" && ready && !meta.contains("deletionTimestamp")) {
    c.phase = CopyPhase::Running;
  } else {
    c.phase = CopyPhase::Starting;
    c.reason = reason;
  }
  return c;
}

InventoryNode inventory_of_node(const json& node) {
  InventoryNode inv;
  const json& meta = node.value("metadata", json::object());
  const json& spec = node.value("spec", json::object());
  const json& status = node.value("status", json::object());
  Node& n = inv.node;
  n.name = str(meta, "name");
  const json labels = meta.value("labels", json::object());
  for (const auto& [k, v] : labels.items())
    if (v.is_string()) n.labels[k] = v.get<std::string>();
  auto label = [&](std::initializer_list<const char*> keys) -> std::string {
    for (const char* k : keys)
      if (auto it = n.labels.find(k); it != n.labels.end()) return it->second;
    return {};
  };
  n.zone = label({"topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone", "zone"});
  n.rack = label({"gaia.io/rack", "rack"});
  n.switch_ = label({"gaia.io/switch", "switch"});
  // gaia's selectors name topology by its short keys (zone=, rack=, switch=).
  if (!n.zone.empty()) n.labels["zone"] = n.zone;
  if (!n.rack.empty()) n.labels["rack"] = n.rack;
  if (!n.switch_.empty()) n.labels["switch"] = n.switch_;
  for (const auto& a : status.value("addresses", json::array()))
    if (str(a, "type") == "InternalIP" && n.address.empty()) n.address = str(a, "address");
  const json& alloc = status.value("allocatable", status.value("capacity", json::object()));
  n.capacity.cpu_millis = quantity(alloc, "cpu", true);
  n.capacity.memory_bytes = quantity(alloc, "memory", false);
  if (auto g = alloc.find("nvidia.com/gpu"); g != alloc.end()) {
    auto v = parse_count(g->is_string() ? g->get<std::string>() : g->dump());
    n.capacity.gpu = v ? *v : 0;
  }
  n.capacity.disk_bytes = quantity(alloc, "ephemeral-storage", false);
  // Local storage gaia may place volumes on, as Kubernetes has no such notion per
  // node: the annotation gaia.io/volume-groups, "ssd=1Ti:20000,hdd=4Ti" (class=size,
  // then the IOPS it sustains, optional).
  const json& annotations = meta.value("annotations", json::object());
  std::string groups = str(annotations, k_annotation_volume_groups);
  for (size_t pos = 0; pos < groups.size();) {
    size_t comma = groups.find(',', pos);
    std::string item = groups.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? groups.size() : comma + 1;
    size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    std::string rest = item.substr(eq + 1);
    size_t colon = rest.find(':');
    auto size = parse_bytes(rest.substr(0, colon));
    if (!size) continue;
    VolumeGroup g;
    if (colon != std::string::npos)
      if (auto iops = parse_count(rest.substr(colon + 1))) g.iops = *iops;
    g.name = item.substr(0, eq);
    g.storage_class = g.name;
    g.size_bytes = *size;
    n.volume_groups.push_back(std::move(g));
  }
  inv.unschedulable = spec.value("unschedulable", false);
  inv.ready = false;
  inv.not_ready_reason = "no Ready condition reported";
  for (const auto& cond : status.value("conditions", json::array())) {
    if (str(cond, "type") != "Ready") continue;
    inv.ready = str(cond, "status") == "True";
    inv.not_ready_reason = inv.ready ? "" : fmt::format("{}{}", str(cond, "reason"),
                                                       str(cond, "message").empty() ? "" : ": " + str(cond, "message"));
    if (!inv.ready) inv.not_ready_since_ms = time_ms(str(cond, "lastTransitionTime"));
  }
  return inv;
}

int64_t time_ms(const std::string& text) {
  auto t = parse_rfc3339(text);
  return t ? std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch()).count() : 0;
}

std::vector<StorageClass> storage_classes_of(const std::vector<json>& storage_classes, const std::vector<Node>& nodes) {
  std::vector<StorageClass> out;
  std::set<std::string> seen;
  for (const auto& n : nodes)
    for (const auto& g : n.volume_groups)
      if (seen.insert(g.storage_class).second)
        out.push_back(StorageClass{g.storage_class, StorageKind::Local, "node disks (gaia.io/volume-groups)", -1, {}});
  std::vector<StorageClass> claims;
  for (const auto& sc : storage_classes) {
    std::string name = str(sc.value("metadata", json::object()), "name");
    if (name.empty() || seen.count(name) || !storage_class_name_problem(name).empty()) continue;
    StorageClass c{name, StorageKind::Claim, "", -1, {}};
    if (std::string provisioner = str(sc, "provisioner"); !provisioner.empty())
      c.description = "provisioner " + provisioner;
    // One topology term whose every expression names a single value is a selector gaia
    // can check; anything wider is left to Kubernetes.
    const json& topologies = sc.value("allowedTopologies", json::array());
    if (topologies.is_array() && topologies.size() == 1) {
      std::map<std::string, std::string> selector;
      bool simple = true;
      for (const auto& e : topologies[0].value("matchLabelExpressions", json::array())) {
        const json& values = e.value("values", json::array());
        if (!values.is_array() || values.size() != 1 || !values[0].is_string()) {
          simple = false;
          break;
        }
        std::string key = str(e, "key");
        // gaia's nodes carry the zone under its short key too (inventory_of_node).
        if (key == "topology.kubernetes.io/zone" || key == "failure-domain.beta.kubernetes.io/zone") key = "zone";
        selector[key] = values[0].get<std::string>();
      }
      if (simple) c.node_selector = std::move(selector);
    }
    claims.push_back(std::move(c));
  }
  std::sort(claims.begin(), claims.end(), [](const StorageClass& a, const StorageClass& b) { return a.name < b.name; });
  out.insert(out.end(), claims.begin(), claims.end());
  if (claims.empty()) return {};  // Only what the nodes offer: the defaults say the same.
  return out;
}

}  // namespace gaia::kube
