#include "lib/kube_pod.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

#include "lib/quantity.hpp"

namespace gaia {

namespace {

using nlohmann::json;

// Beyond this many alternatives a negated multi-label node term is more likely a
// mistake than an intent, and the manifest would be unreadable.
constexpr size_t kMaxNodeSelectorTerms = 64;

using Expressions = std::vector<json>;

// The implicit instance labels are gaia's own, so on pods they live under gaia.io/.
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

json quantities(const Resources& q) {
  json out = {{"cpu", format_cpu(q.cpu_millis)}, {"memory", format_bytes(q.memory_bytes)}};
  if (q.gpu > 0) out["nvidia.com/gpu"] = std::to_string(q.gpu);
  if (q.disk_bytes > 0) out["ephemeral-storage"] = format_bytes(q.disk_bytes);
  return out;
}

json resources(const Role& r) {
  // Limits equal to requests (no `limits` in the role) give the Guaranteed QoS class:
  // the scheduler's reservation is what the container may use. A role with limits
  // above its requests is Burstable, as the role says.
  json requests = quantities(r.resources), limits = quantities(r.limit());
  // Kubernetes takes a missing request to be the limit: a disk limit without a disk
  // request would reserve disk gaia's scheduler counts as none.
  if (limits.contains("ephemeral-storage") && !requests.contains("ephemeral-storage"))
    requests["ephemeral-storage"] = "0";
  return {{"requests", requests}, {"limits", limits}};
}

json probe(const Role& r) {
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

json container(const Role& r) {
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
  json mounts =
      json::array({{{"name", kKubernetesConfigVolume}, {"mountPath", kKubernetesConfigMount}, {"readOnly", true}}});
  for (const auto& v : r.volumes) mounts.push_back({{"name", v.name}, {"mountPath", v.mount_path}});
  c["volumeMounts"] = mounts;
  if (!r.health.type.empty()) {
    c["readinessProbe"] = probe(r);
    c["livenessProbe"] = probe(r);
  }
  return c;
}

json claim_spec(const Volume& v) {
  return {{"accessModes", {"ReadWriteOnce"}},
          {"storageClassName", v.storage_class},
          {"resources", {{"requests", {{"storage", format_bytes(v.size_bytes)}}}}}};
}

// A generic ephemeral volume's claim takes its name from the pod, so only a
// StatefulSet's claim template is named.
json claim_metadata(const Role& r, const Volume& v, const PodTemplateContext& c, bool named) {
  json meta = {{"labels", kubernetes_role_labels(r, c)}};
  if (named) meta["name"] = v.name;
  if (v.iops > 0) meta["annotations"] = {{"gaia.io/iops", std::to_string(v.iops)}};
  return meta;
}

// Node constraints in disjunctive normal form: Kubernetes ORs nodeSelectorTerms and
// ANDs the expressions inside one, while gaia ANDs all required terms. A negated
// multi-label anti-affinity term (NOT (a AND b) = NOT a OR NOT b) multiplies terms.
std::vector<Expressions> required_node_terms(const Role& r, std::vector<PodTemplateProblem>& problems) {
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
      problems.push_back({fmt::format("anti_affinity.required[{}]", i),
                          "node anti-affinity terms with several labels expand to too many node selector terms",
                          "split the term, or use fewer labels per term"});
      break;
    }
    alternatives = std::move(next);
  }
  if (alternatives.size() == 1 && alternatives[0].empty()) return {};
  return alternatives;
}

json pod_term(const AffinityTerm& t) {
  json exprs = json::array();
  for (const auto& m : t.match) exprs.push_back(expression(instance_label_key(m.key), m.op, m.values));
  return {{"labelSelector", {{"matchExpressions", exprs}}}, {"topologyKey", topology_key(t.topology)}};
}

json pod_terms(const std::vector<AffinityTerm>& required, const std::vector<AffinityTerm>& preferred,
               json extra_preferred) {
  json out = json::object();
  json req = json::array(), pref = std::move(extra_preferred);
  for (const auto& t : required)
    if (t.target == AffinityTerm::Target::Instance) req.push_back(pod_term(t));
  for (const auto& t : preferred)
    if (t.target == AffinityTerm::Target::Instance)
      pref.push_back({{"weight", t.weight}, {"podAffinityTerm", pod_term(t)}});
  if (!req.empty()) out["requiredDuringSchedulingIgnoredDuringExecution"] = req;
  if (!pref.empty()) out["preferredDuringSchedulingIgnoredDuringExecution"] = pref;
  return out;
}

json affinity(const Role& r, std::vector<PodTemplateProblem>& problems) {
  json out = json::object();
  json node = json::object();
  std::vector<Expressions> required = required_node_terms(r, problems);
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
      problems.push_back({fmt::format("anti_affinity.preferred[{}]", i),
                          "a preferred node anti-affinity term must have exactly one label requirement here",
                          "Kubernetes preferences cannot express NOT (a AND b); split the term"});
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
    near.push_back(
        {{"weight", 100}, {"podAffinityTerm", {{"labelSelector", selector}, {"topologyKey", topology_key("node")}}}});
    near.push_back(
        {{"weight", 50}, {"podAffinityTerm", {{"labelSelector", selector}, {"topologyKey", topology_key("zone")}}}});
  }
  json pod = pod_terms(r.required_affinity, r.preferred_affinity, near);
  if (!pod.empty()) out["podAffinity"] = pod;
  json anti = pod_terms(r.required_anti_affinity, r.preferred_anti_affinity, json::array());
  if (!anti.empty()) out["podAntiAffinity"] = anti;
  return out;
}

}  // namespace

PodTemplateContext kubernetes_pod_context(const Workload& w) {
  return {w.app, w.tenant, w.version, w.hash, kubernetes_config_map_name(w.app)};
}

std::string kubernetes_config_map_name(std::string_view app) { return fmt::format("{}-config", app); }

json kubernetes_pod_template(const Role& r, const PodTemplateContext& c, std::vector<PodTemplateProblem>& problems) {
  json annotations = {{"gaia.io/hash", c.hash}, {"gaia.io/backoff-ms", std::to_string(r.backoff_ms)}};
  if (!r.required_subnet.empty()) annotations["gaia.io/subnet"] = r.required_subnet;
  // Kubernetes has no start order between workloads; gaia's backend holds the pods back
  // itself, and the annotation tells a plain `kubectl apply` user what was meant.
  if (!r.after.empty()) annotations["gaia.io/after"] = fmt::format("{}", fmt::join(r.after, ","));
  json spec = {{"containers", json::array({container(r)})},
               {"priorityClassName", kubernetes_priority_class_name(r.priority)},
               {"restartPolicy", r.kind == "batch" ? "OnFailure" : "Always"},
               // Whole seconds, rounded up: a grace is never cut short.
               {"terminationGracePeriodSeconds", (r.grace_period_ms + 999) / 1000}};
  json volumes = json::array({{{"name", kKubernetesConfigVolume}, {"configMap", {{"name", c.config_map}}}}});
  // A batch role has no StatefulSet to own claims, so its volumes live and die with
  // the pod as generic ephemeral volumes.
  if (r.kind == "batch")
    for (const auto& v : r.volumes)
      volumes.push_back({{"name", v.name},
                         {"ephemeral", {{"volumeClaimTemplate", {{"metadata", claim_metadata(r, v, c, false)},
                                                                 {"spec", claim_spec(v)}}}}}});
  spec["volumes"] = volumes;
  if (!r.node_selector.empty()) {
    json selector = json::object();
    for (const auto& [k, v] : r.node_selector) selector[kubernetes_node_label_key(k)] = v;
    spec["nodeSelector"] = selector;
  }
  if (json a = affinity(r, problems); !a.empty()) spec["affinity"] = a;
  return {{"metadata", {{"labels", kubernetes_role_labels(r, c)}, {"annotations", annotations}}}, {"spec", spec}};
}

std::vector<PodTemplateProblem> kubernetes_role_problems(const Role& r) {
  std::vector<PodTemplateProblem> problems;
  if (r.image.empty())
    problems.push_back({"image", "Kubernetes runs containers: the role needs an image",
                        "add image: 'repo/name:tag' (command then runs inside it)"});
  for (size_t i = 0; i < r.ports.size(); ++i) {
    const Port& p = r.ports[i];
    if (p.port == 0)
      problems.push_back({fmt::format("ports[{}].port", i), "port 0 (allocate from the node) has no Kubernetes equivalent",
                          "give a fixed port number"});
    // Kubernetes port names are IANA service names: up to 15 characters with a letter.
    bool has_letter = std::any_of(p.name.begin(), p.name.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    if (p.name.size() > 15 || !has_letter || p.name.find("--") != std::string::npos)
      problems.push_back({fmt::format("ports[{}].name", i),
                          fmt::format("'{}' is not a valid Kubernetes port name", p.name),
                          "at most 15 characters, at least one letter, no '--'"});
  }
  for (size_t i = 0; i < r.volumes.size(); ++i)
    if (r.volumes[i].name == kKubernetesConfigVolume)
      problems.push_back({fmt::format("volumes[{}].name", i),
                          fmt::format("'{}' is the volume gaia uses for the config map", kKubernetesConfigVolume),
                          "rename the volume"});
  for (const auto& [key, value] : r.labels)
    if (key.starts_with("app.kubernetes.io/"))
      problems.push_back({"labels." + key, "app.kubernetes.io/ labels are set by gaia", "choose another key"});
  return problems;
}

json kubernetes_volume_claim_template(const Role& r, const Volume& v, const PodTemplateContext& c) {
  return {{"metadata", claim_metadata(r, v, c, true)}, {"spec", claim_spec(v)}};
}

json kubernetes_common_labels(const PodTemplateContext& c) {
  return {{"gaia.io/app", c.app},
          {"gaia.io/tenant", c.tenant},
          {"gaia.io/version", kubernetes_label_value(c.version)},
          {"app.kubernetes.io/name", c.app},
          {"app.kubernetes.io/managed-by", "gaia"}};
}

json kubernetes_role_labels(const Role& r, const PodTemplateContext& c) {
  json labels = kubernetes_common_labels(c);
  labels["gaia.io/role"] = r.name;
  labels["app.kubernetes.io/component"] = r.name;
  for (const auto& [k, v] : r.labels) labels[k] = v;
  return labels;
}

std::string kubernetes_label_value(std::string_view s) {
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

}  // namespace gaia
