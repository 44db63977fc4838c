#include "render/kubernetes.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "lib/quantity.hpp"
#include "render/json_fields.hpp"
#include "render/workload.hpp"

namespace gaia::render {

namespace {

using nlohmann::json;

constexpr std::string_view kConfigVolume = "gaia-config";
constexpr std::string_view kConfigMount = "/etc/gaia";
// Beyond this many alternatives a negated multi-label node term is more likely a
// mistake than an intent, and the manifest would be unreadable.
constexpr size_t kMaxNodeSelectorTerms = 64;

using Expressions = std::vector<json>;

// A version such as "1.0.0+build.5" is not a valid label value ('+'); labels carry it
// with such characters replaced by '_'.
std::string label_value(std::string_view s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
              c == '.';
    out += ok ? c : '_';
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.back()))) out.pop_back();
  while (!out.empty() && !std::isalnum(static_cast<unsigned char>(out.front()))) out.erase(out.begin());
  return out;
}

std::string instance_label_key(const std::string& key) {
  if (key == "app" || key == "role" || key == "tenant" || key == "version") return "gaia.io/" + key;
  return key;
}

std::string topology_key(std::string_view topology) { return kubernetes_node_label_key(topology); }

json expression(const std::string& key, const std::string& op, const std::vector<std::string>& values) {
  json e = {{"key", key}, {"operator", op}};
  if (op == "In" || op == "NotIn") e["values"] = values;
  return e;
}

std::string negate(const std::string& op) {
  if (op == "In") return "NotIn";
  if (op == "NotIn") return "In";
  if (op == "Exists") return "DoesNotExist";
  return "Exists";
}

class Builder {
 public:
  Builder(const Workload& w, const spec::AppSpec& spec, Diagnostics& diags)
      : m_w(w), m_diags(diags), m_file(detail::main_jsonnet_path(spec)) {
    Workload copy = w;
    to_document(copy);
    m_hash = copy.hash;
  }

  std::vector<json> build() {
    std::vector<json> out;
    if (!spec::is_dns_label(m_w.tenant))
      app_error("", fmt::format("tenant '{}' is not a valid Kubernetes namespace name", m_w.tenant),
                "tenants become namespaces: use a DNS label such as 'default' or 'team-a'");
    std::map<std::string, Priority> classes;
    for (const auto& r : m_w.roles) classes.emplace(kubernetes_priority_class_name(r.priority), r.priority);
    for (const auto& [name, p] : classes) out.push_back(priority_class(name, p));
    out.push_back(config_map());
    for (const auto& r : m_w.roles) {
      check_role(r);
      std::string name = m_w.app + "-" + r.name;
      if (!r.ports.empty() || (r.stateful() && r.kind == "service")) out.push_back(service(r, name));
      if (r.kind == "batch") out.push_back(job(r, name));
      else if (r.stateful()) out.push_back(stateful_set(r, name));
      else out.push_back(deployment(r, name));
      if (r.kind == "service" && r.min_available > 0) out.push_back(disruption_budget(r, name));
    }
    return out;
  }

 private:
  void app_error(std::string path, std::string message, std::string hint) {
    m_diags.push_back({Location{m_file}, std::move(path),
                       fmt::format("app {}: {} (--target kubernetes)", m_w.app, message), std::move(hint)});
  }

  void role_error(const Role& r, const std::string& field, std::string message, std::string hint = {}) {
    std::string path = field.empty() ? "roles." + r.name : "roles." + r.name + "." + field;
    std::string where = field.empty() ? "" : field + ": ";
    m_diags.push_back({Location{m_file}, path,
                       fmt::format("app {}, role {}: {}{} (--target kubernetes)", m_w.app, r.name, where, message),
                       std::move(hint)});
  }

  void check_role(const Role& r) {
    std::string name = m_w.app + "-" + r.name;
    // StatefulSet pods carry a controller-revision-hash label "<name>-<10 chars>", so
    // their names have 11 characters less than the 63 of a label.
    size_t limit = r.stateful() && r.kind == "service" ? 52 : 63;
    if (name.size() > limit)
      role_error(r, "", fmt::format("the object name '{}' has {} characters, more than the {} Kubernetes allows here",
                                    name, name.size(), limit),
                 "shorten the app or role name");
    bool needs_service = !r.ports.empty() || (r.stateful() && r.kind == "service");
    if (needs_service && !(name.front() >= 'a' && name.front() <= 'z'))
      role_error(r, "", fmt::format("the Service name '{}' must start with a letter", name),
                 "Kubernetes Service names are DNS-1035 labels; rename the app");
    if (r.image.empty())
      role_error(r, "image", "Kubernetes runs containers: the role needs an image",
                 "add image: 'repo/name:tag' (command then runs inside it)");
    for (size_t i = 0; i < r.ports.size(); ++i) {
      const Port& p = r.ports[i];
      if (p.port == 0)
        role_error(r, fmt::format("ports[{}].port", i), "port 0 (allocate from the node) has no Kubernetes equivalent",
                   "give a fixed port number");
      bool has_letter = std::any_of(p.name.begin(), p.name.end(), [](char c) { return c >= 'a' && c <= 'z'; });
      if (p.name.size() > 15 || !has_letter || p.name.find("--") != std::string::npos)
        role_error(r, fmt::format("ports[{}].name", i),
                   fmt::format("'{}' is not a valid Kubernetes port name", p.name),
                   "at most 15 characters, at least one letter, no '--'");
    }
    for (size_t i = 0; i < r.volumes.size(); ++i)
      if (r.volumes[i].name == kConfigVolume)
        role_error(r, fmt::format("volumes[{}].name", i),
                   fmt::format("'{}' is the volume gaia uses for the config map", kConfigVolume), "rename the volume");
    for (const auto& [key, value] : r.labels)
      if (key.starts_with("app.kubernetes.io/"))
        role_error(r, "labels." + key, "app.kubernetes.io/ labels are set by gaia", "choose another key");
  }

  json common_labels() const {
    return {{"gaia.io/app", m_w.app},
            {"gaia.io/tenant", m_w.tenant},
            {"gaia.io/version", label_value(m_w.version)},
            {"app.kubernetes.io/name", m_w.app},
            {"app.kubernetes.io/managed-by", "gaia"}};
  }

  // Selectors are immutable in Deployments and StatefulSets, so they use only labels
  // that never change for a role: not the version.
  json selector_labels(const Role& r) const { return {{"gaia.io/app", m_w.app}, {"gaia.io/role", r.name}}; }

  json role_labels(const Role& r) const {
    json labels = common_labels();
    labels["gaia.io/role"] = r.name;
    labels["app.kubernetes.io/component"] = r.name;
    for (const auto& [k, v] : r.labels) labels[k] = v;
    return labels;
  }

  json metadata(const std::string& name, json labels) const {
    return {{"name", name}, {"namespace", m_w.tenant}, {"labels", std::move(labels)}};
  }

  json priority_class(const std::string& name, const Priority& p) const {
    return {{"apiVersion", "scheduling.k8s.io/v1"},
            {"kind", "PriorityClass"},
            // Cluster-scoped and shared by every app that uses the same priority, so it
            // carries no app labels: applying another app must not relabel it.
            {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/managed-by", "gaia"}}}}},
            {"value", kubernetes_priority_value(p)},
            {"globalDefault", false},
            // Kubernetes' "Never" means "does not preempt others", the closest it has to
            // gaia's non-preemptible platform work.
            {"preemptionPolicy", p.preemptible ? "PreemptLowerPriority" : "Never"},
            {"description", fmt::format("gaia priority {}", p.to_string())}};
  }

  json config_map() const {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", metadata(m_w.app + "-config", common_labels())},
            {"data", {{"config.json", m_w.config.dump(2) + "\n"}}}};
  }

  json service(const Role& r, const std::string& name) const {
    json ports = json::array();
    for (const auto& p : r.ports)
      ports.push_back({{"name", p.name}, {"port", p.port}, {"targetPort", p.name}, {"protocol", p.protocol}});
    json spec = {{"selector", selector_labels(r)}};
    if (!ports.empty()) spec["ports"] = ports;
    if (r.stateful() && r.kind == "service") spec["clusterIP"] = "None";
    return {{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", metadata(name, role_labels(r))}, {"spec", spec}};
  }

  json resources(const Role& r) const {
    json q = {{"cpu", format_cpu(r.resources.cpu_millis)}, {"memory", format_bytes(r.resources.memory_bytes)}};
    if (r.resources.gpu > 0) q["nvidia.com/gpu"] = std::to_string(r.resources.gpu);
    if (r.resources.disk_bytes > 0) q["ephemeral-storage"] = format_bytes(r.resources.disk_bytes);
    // Limits equal to requests give the Guaranteed QoS class: the scheduler's
    // reservation is what the container may use.
    return {{"requests", q}, {"limits", q}};
  }

  json probe(const Role& r) const {
    const HealthCheck& h = r.health;
    json p = {{"periodSeconds", h.period_s}, {"timeoutSeconds", h.timeout_s}, {"failureThreshold", h.failure_threshold}};
    if (h.type == "tcp") {
      p["tcpSocket"] = {{"port", h.target}};
    } else if (h.type == "http") {
      size_t slash = h.target.find('/');
      std::string port = h.target.substr(0, slash);
      std::string path = slash == std::string::npos ? "/" : h.target.substr(slash);
      p["httpGet"] = {{"port", port}, {"path", path}};
    } else {
      p["exec"] = {{"command", {"/bin/sh", "-c", h.target}}};
    }
    return p;
  }

  json container(const Role& r) const {
    json c = {{"name", r.name}, {"image", r.image}, {"resources", resources(r)}};
    if (!r.command.empty()) c["command"] = r.command;
    if (!r.env.empty()) {
      json env = json::array();
      for (const auto& [k, v] : r.env) env.push_back({{"name", k}, {"value", v}});
      c["env"] = env;
    }
    if (!r.ports.empty()) {
      json ports = json::array();
      for (const auto& p : r.ports) ports.push_back({{"name", p.name}, {"containerPort", p.port}, {"protocol", p.protocol}});
      c["ports"] = ports;
    }
    json mounts = json::array({{{"name", kConfigVolume}, {"mountPath", kConfigMount}, {"readOnly", true}}});
    for (const auto& v : r.volumes) mounts.push_back({{"name", v.name}, {"mountPath", v.mount_path}});
    c["volumeMounts"] = mounts;
    if (!r.health.type.empty()) {
      c["readinessProbe"] = probe(r);
      c["livenessProbe"] = probe(r);
    }
    return c;
  }

  json claim_spec(const Volume& v) const {
    return {{"accessModes", {"ReadWriteOnce"}},
            {"storageClassName", v.storage_class},
            {"resources", {{"requests", {{"storage", format_bytes(v.size_bytes)}}}}}};
  }

  json claim_metadata(const Role& r, const Volume& v, bool named) const {
    json meta = {{"labels", role_labels(r)}};
    if (named) meta["name"] = v.name;
    if (v.iops > 0) meta["annotations"] = {{"gaia.io/iops", std::to_string(v.iops)}};
    return meta;
  }

  // Node constraints in disjunctive normal form: Kubernetes ORs nodeSelectorTerms and
  // ANDs the expressions inside one, while gaia ANDs all required terms. A negated
  // multi-label anti-affinity term (NOT (a AND b) = NOT a OR NOT b) multiplies terms.
  std::vector<Expressions> required_node_terms(const Role& r) {
    std::vector<Expressions> alternatives(1);
    auto add_all = [&](const json& e) {
      for (auto& alt : alternatives) alt.push_back(e);
    };
    for (const auto& t : r.required_affinity)
      if (t.target == AffinityTerm::Target::Node)
        for (const auto& m : t.match) add_all(expression(kubernetes_node_label_key(m.key), m.op, m.values));
    if (!r.required_topology.empty()) {
      size_t eq = r.required_topology.find('=');
      add_all(expression(topology_key(r.required_topology.substr(0, eq)), "In", {r.required_topology.substr(eq + 1)}));
    }
    for (size_t i = 0; i < r.required_anti_affinity.size(); ++i) {
      const auto& t = r.required_anti_affinity[i];
      if (t.target != AffinityTerm::Target::Node) continue;
      std::vector<Expressions> next;
      for (const auto& alt : alternatives)
        for (const auto& m : t.match) {
          Expressions e = alt;
          e.push_back(expression(kubernetes_node_label_key(m.key), negate(m.op), m.values));
          next.push_back(std::move(e));
        }
      if (next.size() > kMaxNodeSelectorTerms) {
        role_error(r, fmt::format("anti_affinity.required[{}]", i),
                   "node anti-affinity terms with several labels expand to too many node selector terms",
                   "split the term, or use fewer labels per term");
        break;
      }
      alternatives = std::move(next);
    }
    if (alternatives.size() == 1 && alternatives[0].empty()) return {};
    return alternatives;
  }

  json pod_term(const AffinityTerm& t) const {
    json exprs = json::array();
    for (const auto& m : t.match) exprs.push_back(expression(instance_label_key(m.key), m.op, m.values));
    return {{"labelSelector", {{"matchExpressions", exprs}}}, {"topologyKey", topology_key(t.topology)}};
  }

  json pod_terms(const std::vector<AffinityTerm>& required, const std::vector<AffinityTerm>& preferred,
                 json extra_preferred) const {
    json out = json::object();
    json req = json::array(), pref = std::move(extra_preferred);
    for (const auto& t : required)
      if (t.target == AffinityTerm::Target::Instance) req.push_back(pod_term(t));
    for (const auto& t : preferred)
      if (t.target == AffinityTerm::Target::Instance) pref.push_back({{"weight", t.weight}, {"podAffinityTerm", pod_term(t)}});
    if (!req.empty()) out["requiredDuringSchedulingIgnoredDuringExecution"] = req;
    if (!pref.empty()) out["preferredDuringSchedulingIgnoredDuringExecution"] = pref;
    return out;
  }

  json affinity(const Role& r) {
    json out = json::object();
    json node = json::object();
    std::vector<Expressions> required = required_node_terms(r);
    if (!required.empty()) {
      json terms = json::array();
      for (const auto& alt : required) terms.push_back({{"matchExpressions", alt}});
      node["requiredDuringSchedulingIgnoredDuringExecution"] = {{"nodeSelectorTerms", terms}};
    }
    json preferred = json::array();
    for (const auto& t : r.preferred_affinity) {
      if (t.target != AffinityTerm::Target::Node) continue;
      json exprs = json::array();
      for (const auto& m : t.match) exprs.push_back(expression(kubernetes_node_label_key(m.key), m.op, m.values));
      preferred.push_back({{"weight", t.weight}, {"preference", {{"matchExpressions", exprs}}}});
    }
    for (size_t i = 0; i < r.preferred_anti_affinity.size(); ++i) {
      const auto& t = r.preferred_anti_affinity[i];
      if (t.target != AffinityTerm::Target::Node) continue;
      if (t.match.size() != 1) {
        role_error(r, fmt::format("anti_affinity.preferred[{}]", i),
                   "a preferred node anti-affinity term must have exactly one label requirement here",
                   "Kubernetes preferences cannot express NOT (a AND b); split the term");
        continue;
      }
      const auto& m = t.match.front();
      json exprs = json::array({expression(kubernetes_node_label_key(m.key), negate(m.op), m.values)});
      preferred.push_back({{"weight", t.weight}, {"preference", {{"matchExpressions", exprs}}}});
    }
    if (!preferred.empty()) node["preferredDuringSchedulingIgnoredDuringExecution"] = preferred;
    if (!node.empty()) out["nodeAffinity"] = node;

    json near = json::array();
    if (!r.near.empty()) {
      size_t slash = r.near.find('/');
      json selector = {{"matchExpressions",
                        {expression("gaia.io/app", "In", {r.near.substr(0, slash)}),
                         expression("gaia.io/role", "In", {r.near.substr(slash + 1)})}}};
      near.push_back({{"weight", 100}, {"podAffinityTerm", {{"labelSelector", selector}, {"topologyKey", topology_key("node")}}}});
      near.push_back({{"weight", 50}, {"podAffinityTerm", {{"labelSelector", selector}, {"topologyKey", topology_key("zone")}}}});
    }
    json pod = pod_terms(r.required_affinity, r.preferred_affinity, near);
    if (!pod.empty()) out["podAffinity"] = pod;
    json anti = pod_terms(r.required_anti_affinity, r.preferred_anti_affinity, json::array());
    if (!anti.empty()) out["podAntiAffinity"] = anti;
    return out;
  }

  json pod_template(const Role& r) {
    json annotations = {{"gaia.io/hash", m_hash}, {"gaia.io/backoff-ms", std::to_string(r.backoff_ms)}};
    if (!r.required_subnet.empty()) annotations["gaia.io/subnet"] = r.required_subnet;
    json spec = {{"containers", json::array({container(r)})},
                 {"priorityClassName", kubernetes_priority_class_name(r.priority)},
                 {"restartPolicy", r.kind == "batch" ? "OnFailure" : "Always"},
                 // Whole seconds, rounded up: a grace is never cut short.
                 {"terminationGracePeriodSeconds", (r.grace_period_ms + 999) / 1000}};
    json volumes = json::array({{{"name", kConfigVolume}, {"configMap", {{"name", m_w.app + "-config"}}}}});
    if (r.kind == "batch")
      for (const auto& v : r.volumes)
        volumes.push_back({{"name", v.name},
                           {"ephemeral", {{"volumeClaimTemplate", {{"metadata", claim_metadata(r, v, false)},
                                                                   {"spec", claim_spec(v)}}}}}});
    spec["volumes"] = volumes;
    if (!r.node_selector.empty()) {
      json selector = json::object();
      for (const auto& [k, v] : r.node_selector) selector[kubernetes_node_label_key(k)] = v;
      spec["nodeSelector"] = selector;
    }
    if (json a = affinity(r); !a.empty()) spec["affinity"] = a;
    return {{"metadata", {{"labels", role_labels(r)}, {"annotations", annotations}}}, {"spec", spec}};
  }

  json deployment(const Role& r, const std::string& name) {
    return {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", metadata(name, role_labels(r))},
            {"spec",
             {{"replicas", r.replicas},
              {"selector", {{"matchLabels", selector_labels(r)}}},
              {"template", pod_template(r)}}}};
  }

  json stateful_set(const Role& r, const std::string& name) {
    json claims = json::array();
    for (const auto& v : r.volumes) claims.push_back({{"metadata", claim_metadata(r, v, true)}, {"spec", claim_spec(v)}});
    return {{"apiVersion", "apps/v1"},
            {"kind", "StatefulSet"},
            {"metadata", metadata(name, role_labels(r))},
            {"spec",
             {{"replicas", r.replicas},
              {"serviceName", name},
              {"selector", {{"matchLabels", selector_labels(r)}}},
              {"template", pod_template(r)},
              {"volumeClaimTemplates", claims}}}};
  }

  // The Job's selector is generated by Kubernetes (setting it needs manualSelector).
  json job(const Role& r, const std::string& name) {
    return {{"apiVersion", "batch/v1"},
            {"kind", "Job"},
            {"metadata", metadata(name, role_labels(r))},
            {"spec",
             {{"parallelism", r.replicas},
              {"completions", r.replicas},
              {"backoffLimit", r.retry_times},
              {"template", pod_template(r)}}}};
  }

  json disruption_budget(const Role& r, const std::string& name) const {
    return {{"apiVersion", "policy/v1"},
            {"kind", "PodDisruptionBudget"},
            {"metadata", metadata(name, role_labels(r))},
            {"spec", {{"minAvailable", r.min_available}, {"selector", {{"matchLabels", selector_labels(r)}}}}}};
  }

  const Workload& m_w;
  Diagnostics& m_diags;
  std::string m_file;
  std::string m_hash;
};

}  // namespace

std::string kubernetes_priority_class_name(const Priority& p) {
  return fmt::format("gaia-{}-{}{}", band_name(p.band), p.level, p.preemptible ? "" : "-np");
}

int64_t kubernetes_priority_value(const Priority& p) { return p.rank(); }

std::string kubernetes_node_label_key(std::string_view key) {
  if (key == "node") return "kubernetes.io/hostname";
  if (key == "zone") return "topology.kubernetes.io/zone";
  if (key == "rack") return "gaia.io/rack";
  if (key == "switch") return "gaia.io/switch";
  return std::string(key);
}

Result<std::vector<json>> to_kubernetes(const Workload& w, const spec::AppSpec& spec) {
  Diagnostics diags;
  Builder builder(w, spec, diags);
  std::vector<json> manifests = builder.build();
  if (!diags.empty()) return fail(std::move(diags));
  return manifests;
}

}  // namespace gaia::render
