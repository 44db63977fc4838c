#include "render/kubernetes.hpp"

#include <fmt/format.h>
#include <map>

#include "lib/kube_pod.hpp"
#include "render/json_fields.hpp"
#include "render/workload.hpp"

namespace gaia::render {

namespace {

using nlohmann::json;

class Builder {
 public:
  Builder(const Workload& w, const spec::AppSpec& spec, Diagnostics& diags)
      : m_w(w), m_diags(diags), m_file(detail::main_jsonnet_path(spec)), m_context(kubernetes_pod_context(w)) {
    // Pods are annotated with the hash of the workload document as `gaia render` prints
    // it, computed here so that it does not depend on whether the caller set w.hash.
    Workload copy = w;
    to_document(copy);
    m_context.hash = copy.hash;
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
    for (auto& p : kubernetes_role_problems(r)) role_error(r, p.field, std::move(p.message), std::move(p.hint));
  }

  // Selectors are immutable in Deployments and StatefulSets, so they use only labels
  // that never change for a role: not the version.
  json selector_labels(const Role& r) const { return {{"gaia.io/app", m_w.app}, {"gaia.io/role", r.name}}; }

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
            {"metadata", metadata(m_context.config_map, kubernetes_common_labels(m_context))},
            {"data", {{"config.json", m_w.config.dump(2) + "\n"}}}};
  }

  json service(const Role& r, const std::string& name) const {
    json ports = json::array();
    for (const auto& p : r.ports)
      ports.push_back({{"name", p.name}, {"port", p.port}, {"targetPort", p.name}, {"protocol", p.protocol}});
    json spec = {{"selector", selector_labels(r)}};
    if (!ports.empty()) spec["ports"] = ports;
    if (r.stateful() && r.kind == "service") spec["clusterIP"] = "None";
    return {{"apiVersion", "v1"},
            {"kind", "Service"},
            {"metadata", metadata(name, kubernetes_role_labels(r, m_context))},
            {"spec", spec}};
  }

  // The template lib/kube_pod.hpp builds for the backend too; what it cannot express
  // becomes this role's errors.
  json pod_template(const Role& r) {
    std::vector<PodTemplateProblem> problems;
    json t = kubernetes_pod_template(r, m_context, problems);
    for (auto& p : problems) role_error(r, p.field, std::move(p.message), std::move(p.hint));
    return t;
  }

  json deployment(const Role& r, const std::string& name) {
    return {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", metadata(name, kubernetes_role_labels(r, m_context))},
            {"spec",
             {{"replicas", r.replicas},
              {"selector", {{"matchLabels", selector_labels(r)}}},
              {"template", pod_template(r)}}}};
  }

  json stateful_set(const Role& r, const std::string& name) {
    json claims = json::array();
    for (const auto& v : r.volumes) claims.push_back(kubernetes_volume_claim_template(r, v, m_context));
    return {{"apiVersion", "apps/v1"},
            {"kind", "StatefulSet"},
            {"metadata", metadata(name, kubernetes_role_labels(r, m_context))},
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
            {"metadata", metadata(name, kubernetes_role_labels(r, m_context))},
            {"spec",
             {{"parallelism", r.replicas},
              {"completions", r.replicas},
              {"backoffLimit", r.retry_times},
              {"template", pod_template(r)}}}};
  }

  json disruption_budget(const Role& r, const std::string& name) const {
    return {{"apiVersion", "policy/v1"},
            {"kind", "PodDisruptionBudget"},
            {"metadata", metadata(name, kubernetes_role_labels(r, m_context))},
            {"spec", {{"minAvailable", r.min_available}, {"selector", {{"matchLabels", selector_labels(r)}}}}}};
  }

  const Workload& m_w;
  Diagnostics& m_diags;
  std::string m_file;
  PodTemplateContext m_context;
};

}  // namespace

Result<std::vector<json>> to_kubernetes(const Workload& w, const spec::AppSpec& spec) {
  Diagnostics diags;
  Builder builder(w, spec, diags);
  std::vector<json> manifests = builder.build();
  if (!diags.empty()) return fail(std::move(diags));
  return manifests;
}

}  // namespace gaia::render
