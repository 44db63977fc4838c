#pragma once
// The Kubernetes pod template of a role: what `gaia render --target kubernetes` puts in
// its Deployments, StatefulSets and Jobs, and what the Kubernetes backend (kube/)
// creates pods from. It lives here, below both, so that what users render is exactly
// what the backend creates; render/kubernetes.hpp documents the whole mapping.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/priority.hpp"
#include "lib/workload.hpp"

namespace gaia {

// The volume holding the app's ConfigMap, mounted read-only at kKubernetesConfigMount
// in every container; a role's own volume may not take its name.
inline constexpr std::string_view kKubernetesConfigVolume = "gaia-config";
inline constexpr std::string_view kKubernetesConfigMount = "/etc/gaia";

// What a pod template needs beside the role: the app it belongs to.
struct PodTemplateContext {
  std::string app, tenant, version;
  std::string hash;        // The workload's content hash (annotation gaia.io/hash).
  std::string config_map;  // Name of the ConfigMap mounted at /etc/gaia ("<app>-config").
};

// The context of a workload's roles: its app, tenant, version and hash, and the
// ConfigMap "<app>-config".
PodTemplateContext kubernetes_pod_context(const Workload& w);
// "<app>-config": the ConfigMap holding the evaluated config (key config.json).
std::string kubernetes_config_map_name(std::string_view app);

// A problem Kubernetes cannot express, for the caller to turn into its own error.
struct PodTemplateProblem {
  std::string field;  // Relative to the role ("anti_affinity.required[0]"); empty for the role itself.
  std::string message;
  std::string hint;
};

// {"metadata": {labels, annotations}, "spec": {...}}: the pod template of the role.
// Node constraints Kubernetes cannot express are appended to problems (the template
// then leaves them out); a caller must not create pods from a template with problems.
nlohmann::json kubernetes_pod_template(const Role& r, const PodTemplateContext& c,
                                       std::vector<PodTemplateProblem>& problems);

// The checks of a single pod that need no template: an image, fixed ports with valid
// names, no volume named kKubernetesConfigVolume, no app.kubernetes.io/ labels.
std::vector<PodTemplateProblem> kubernetes_role_problems(const Role& r);

// The claim of one of a role's volumes, named after the volume: a StatefulSet's
// volumeClaimTemplates entry (ReadWriteOnce, storageClassName = the volume class, the
// role's labels, iops as the annotation gaia.io/iops).
nlohmann::json kubernetes_volume_claim_template(const Role& r, const Volume& v, const PodTemplateContext& c);

// Labels every object of the app carries: gaia.io/{app,tenant,version} and
// app.kubernetes.io/{name,managed-by}.
nlohmann::json kubernetes_common_labels(const PodTemplateContext& c);
// The common labels plus gaia.io/role, app.kubernetes.io/component and the role's own.
nlohmann::json kubernetes_role_labels(const Role& r, const PodTemplateContext& c);
// A valid label value for s: characters other than [A-Za-z0-9._-] become '_' (a
// version "1.0.0+build.5" has a '+'), cut to 63 characters and trimmed to start and end
// with an alphanumeric.
std::string kubernetes_label_value(std::string_view s);

// The PriorityClass of a priority: "gaia-<band>-<level>" (suffix "-np" when
// non-preemptible) with value Priority::rank().
std::string kubernetes_priority_class_name(const Priority& p);
int64_t kubernetes_priority_value(const Priority& p);
// node -> kubernetes.io/hostname, zone -> topology.kubernetes.io/zone, rack ->
// gaia.io/rack, switch -> gaia.io/switch; other keys unchanged.
std::string kubernetes_node_label_key(std::string_view key);

}  // namespace gaia
