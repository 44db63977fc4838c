#pragma once
// `gaia render --target kubernetes`: the manifests `kubectl apply -f -` accepts for a
// validated workload. All objects of an app live in the namespace named after the
// tenant and carry the labels gaia.io/{app,role,tenant,version} and
// app.kubernetes.io/{name,managed-by}.
//
// Mapping (documented here because users see it in their clusters):
// - a service role without volumes -> Deployment; with volumes -> StatefulSet with one
//   volumeClaimTemplate per volume (storageClassName = the volume class) and a headless
//   Service; a batch role -> Job (parallelism = completions = replicas, backoffLimit =
//   retry_times; its volumes become generic ephemeral volumes);
// - roles with ports -> Service "<app>-<role>" (headless for StatefulSets);
// - service roles with migration.min_available > 0 -> PodDisruptionBudget;
// - the evaluated config -> ConfigMap "<app>-config" (key config.json), mounted
//   read-only at /etc/gaia in every container;
// - each distinct priority -> PriorityClass "gaia-<band>-<level>" (suffix "-np" when
//   non-preemptible, which maps to preemptionPolicy Never) with value
//   Priority::rank() = band * 10000 + level: nonprod 0-1000, prod 10000-11000,
//   sys 20000-21000, far below the 1e9 Kubernetes reserves for its own classes;
// - topology node/zone/rack/switch -> kubernetes.io/hostname,
//   topology.kubernetes.io/zone, gaia.io/rack, gaia.io/switch; node label keys with
//   those names (in node terms and node_selector) are mapped the same way, and the
//   implicit instance labels app/role/tenant/version become gaia.io/<key>;
// - near "<app>/<role>" -> preferred pod affinity to that role (weight 100 on the same
//   node, 50 in the same zone); network.subnet, which Kubernetes cannot schedule by,
//   and restart backoff, volume iops are kept as gaia.io/* annotations.
// What Kubernetes cannot express (port 0, a role without an image, names too long for
// the generated objects) is an error naming the role and field.
//
// The pod template (containers, resources, probes, volumes, affinity, labels and
// annotations) is built by lib/kube_pod.hpp, shared with the Kubernetes backend.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"
#include "lib/kube_pod.hpp"
#include "lib/workload.hpp"
#include "spec/app_spec.hpp"

namespace gaia::render {

// The manifests in apply order: PriorityClasses (by name), the ConfigMap, then per role
// (by name) its Service, its Deployment/StatefulSet/Job and its PodDisruptionBudget.
Result<std::vector<nlohmann::json>> to_kubernetes(const Workload& w, const spec::AppSpec& spec);

// The pod template and its helpers live in lib/ so the Kubernetes backend creates the
// same pods; these names keep the render:: spellings callers already use.
using gaia::kubernetes_node_label_key;
using gaia::kubernetes_priority_class_name;
using gaia::kubernetes_priority_value;

}  // namespace gaia::render
