#pragma once
// The mapping between gaia's model and Kubernetes objects (docs/kubernetes.md), as pure
// functions so it is tested without a server:
// - a copy of an instance is a pod named <app>-<role>-<ordinal>-g<generation> (with a
//   "<tenant>-" prefix for tenants other than "default"), in the context's namespace,
//   labelled gaia.io/owner (which gaia store it belongs to), gaia.io/instance and
//   gaia.io/generation, with schedulerName gaia and no node: gaia binds it through the
//   pods/binding subresource after its own decision. Its template is the one
//   `gaia render --target kubernetes` emits (lib/kube_pod.hpp);
// - pod phase and readiness become the copy's phase (Pending -> Starting, Running and
//   Ready -> Running, Running not ready -> Starting, Succeeded -> Exited 0, Failed ->
//   Failed with the container's reason and exit code); a pod being deleted is still live;
// - a Node becomes an InventoryNode: allocatable cpu, memory, nvidia.com/gpu and
//   ephemeral-storage as capacity; labels kept, with zone/rack/switch read from
//   topology.kubernetes.io/zone, gaia.io/rack and gaia.io/switch; InternalIP as address;
//   the Ready condition as health, spec.unschedulable as cordoned; volume groups (local
//   storage for stateful roles) from the annotation gaia.io/volume-groups.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/backend.hpp"
#include "lib/kube_pod.hpp"
#include "lib/state.hpp"

namespace gaia::kube {

inline constexpr const char* k_label_owner = "gaia.io/owner";
inline constexpr const char* k_label_instance = "gaia.io/instance";
inline constexpr const char* k_label_generation = "gaia.io/generation";
inline constexpr const char* k_annotation_node = "gaia.io/node";
// On a Node: the local storage gaia may place volumes on, "ssd=1Ti:20000,hdd=4Ti"
// (class=size[:iops]).
inline constexpr const char* k_annotation_volume_groups = "gaia.io/volume-groups";

// Object names: a DNS subdomain of lowercase letters, digits and '-'.
std::string object_prefix(const std::string& tenant);
std::string pod_name(const std::string& instance_key, int64_t generation);
std::string config_map_name(const std::string& tenant, const std::string& app);
std::string service_name(const std::string& tenant, const std::string& app, const std::string& role);
// "<volume>-<app>-<role>-<ordinal>", as a StatefulSet names its claims: the claim of one
// instance's volume, kept across its pods.
std::string claim_name(const Instance& i, const std::string& volume);

struct PodOptions {
  std::string namespace_name;
  std::string owner;
  std::string scheduler_name = "gaia";
};

// The pod for one copy, or the problems Kubernetes cannot express (a role without an
// image, port 0...), as text naming the role and field.
std::expected<nlohmann::json, std::string> pod_manifest(const StartSpec& s, const PodOptions& o);
// The objects an app's pods need, applied before them by server-side apply: the
// PriorityClass of the role's priority, the app's ConfigMap, the role's Service (when it
// has ports) and PodDisruptionBudget (a service role with min_available > 0), and the
// instance's PersistentVolumeClaims (a service role with volumes).
std::vector<nlohmann::json> supporting_objects(const StartSpec& s, const PodOptions& o);

// The kinds supporting_objects() makes per app or role, which unused_objects() judges:
// (kind, collection path under the namespace).
struct SupportingKind {
  const char* kind;
  const char* path;  // "/api/v1/namespaces/{ns}/services"
};
const std::vector<SupportingKind>& per_app_kinds();

struct ObjectRef {
  std::string kind, name;
};
// Of `objects` (ConfigMaps, Services and PodDisruptionBudgets of the namespace, each with
// its "kind", which a list's items lack, set by the caller), the ones
// store `owner` made for an app or role that `state` no longer has and of which no
// instance is left: what a delete or a role dropped by a resubmit leaves behind, and a
// budget whose role no longer asks for one (min_available 0, or a batch role), which
// would otherwise keep refusing evictions. Objects of other owners, and objects without
// gaia's app labels, are never chosen.
std::vector<ObjectRef> unused_objects(const std::vector<nlohmann::json>& objects, const ClusterState& state,
                                      const std::string& owner);

// A pod of gaia's as a copy; nothing for a pod without gaia's labels.
std::optional<ObservedCopy> copy_of_pod(const nlohmann::json& pod);

// The Binding that places pod `name` on `node` (POSTed to the pod's binding subresource).
nlohmann::json pod_binding(const std::string& name, const std::string& namespace_name, const std::string& node);

// A pod waiting for a binding that will never come: one whose create answer was lost (an
// API server restart between create and bind), so the controller sees its copy starting
// and never starts it again. Of `pods`, the ones `owner` created that are unbound, not
// being deleted, and carry the node gaia chose for them: (pod name, node).
std::vector<std::pair<std::string, std::string>> pods_to_bind(const std::vector<nlohmann::json>& pods,
                                                              const std::string& owner);
InventoryNode inventory_of_node(const nlohmann::json& node);

// The storage classes of a Kubernetes cluster, for `gaia cluster create --backend
// kubernetes`: every class its nodes offer through the gaia.io/volume-groups annotation
// is local (node disks gaia places volumes on); every other StorageClass object
// (storage.k8s.io/v1) is a claim class, unbounded, attachable where its
// allowedTopologies say when they name one value per label (else everywhere, and
// Kubernetes itself keeps the volume's pod where the volume can go). Local classes come
// first, in node order; claim classes in name order. Empty when the cluster has neither,
// so it keeps the defaults.
std::vector<StorageClass> storage_classes_of(const std::vector<nlohmann::json>& storage_classes,
                                             const std::vector<Node>& nodes);

// An API timestamp (RFC 3339, lib/timeline.hpp) in milliseconds since the epoch; 0 when
// absent or unparsable, which the callers read as "unknown".
int64_t time_ms(const std::string& text);

}  // namespace gaia::kube
