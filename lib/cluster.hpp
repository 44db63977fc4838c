#pragma once
// The cluster model (docs/cluster-file.md): nodes, tenants, instances, and the snapshot
// that scheduling and reconciling decisions are pure functions of.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/labels.hpp"
#include "lib/priority.hpp"
#include "lib/workload.hpp"

namespace gaia {

enum class NodeState { Ready, Cordoned, Down };
std::string_view node_state_name(NodeState s);

// Storage classes (docs/cluster-file.md#storage-classes): the names a cluster gives its
// kinds of storage, which volumes in specs ask for by name. A local class is disk on a
// node: nodes offer it through volume groups of that class, a volume takes space in one
// of them, and a stateful instance stays on the node that holds its data. A claim class
// is storage reached over the network (a Kubernetes PersistentVolumeClaim of that
// StorageClass, a SAN or NFS pool): it comes from a pool the whole cluster shares, any
// node its selector matches can attach it, and the data follows its instance when the
// instance moves, even off a node that went down.
enum class StorageKind { Local, Claim };
std::string_view storage_kind_name(StorageKind k);

struct StorageClass {
  std::string name;
  StorageKind kind = StorageKind::Local;
  std::string description;
  // Claim classes: the pool's size (-1: unbounded) and the node labels a node needs to
  // attach it (empty: every node). Local classes take their capacity from volume groups.
  int64_t capacity_bytes = -1;
  std::map<std::string, std::string> node_selector;
  bool operator==(const StorageClass&) const = default;
};

// Why `name` cannot name a storage class ("" when it can): Kubernetes StorageClass
// names are lowercase RFC 1123 subdomains, so gaia's are too.
std::string storage_class_name_problem(std::string_view name);

// The classes a cluster has when its cluster file declares none: hdd and ssd, local.
std::vector<StorageClass> default_storage_classes();

struct VolumeGroup {
  std::string name;
  std::string storage_class = "hdd";  // A local storage class of the cluster.
  int64_t size_bytes = 0;
  int64_t iops = 0;
};

// A volume that outlived its instance (docs/cli.md#gaia-scale): a scale down keeps the
// volumes of the stateful instances it removes, as a StatefulSet keeps its
// PersistentVolumeClaims, and the instance of the same role and ordinal gets them back
// when a scale up creates it again. The record lives on the node that holds the data, so
// the volume keeps taking its space in that node's volume group and goes when the node
// goes. Only `gaia scale --delete-volumes` and deleting the app delete it.
struct KeptVolume {
  std::string tenant, app, role;
  int ordinal = 0;
  std::string volume;  // Role volume name.
  std::string group;   // Volume group on the node.
  int64_t size_bytes = 0;
  int64_t iops = 0;
};

struct Node {
  std::string name;
  std::string address;         // Host IP (v4 or v6).
  std::string instance_subnet; // CIDR instances on this node get addresses from.
  Resources capacity;
  int port_min = 20000, port_max = 29999;  // Range allocated to instances' ports.
  std::map<std::string, std::string> labels;  // zone, rack, switch, disk, gpu-model, pool...
  std::vector<VolumeGroup> volume_groups;
  std::vector<KeptVolume> kept_volumes;  // Of instances a scale down removed.
  std::vector<std::string> cached_images;
  NodeState state = NodeState::Ready;
  // Set by `gaia drain`: the node is cordoned and the migration controller moves its
  // instances off in batches that keep each role's min_available.
  bool draining = false;
  // Why the node is Down: set by `gaia node fail` and by the heartbeat check (the
  // reason starts with "heartbeat" then, so only that check brings the node back when
  // its agent reports again); "" while the node is not Down.
  std::string down_reason;
  // Why the node is Cordoned when a backend that owns the nodes cordoned it (it is
  // unschedulable there, or no longer listed); "" for a cordon by `gaia node cordon`
  // or a drain, so only the backend's own cordons are lifted by the backend.
  std::string cordon_reason;
  // Topology, filled from labels or the subnet table: "" when unknown.
  std::string zone, rack, switch_;

  bool schedulable() const { return state == NodeState::Ready; }
};

struct Quota {
  int64_t cpu_millis = -1;  // -1: unlimited.
  int64_t memory_bytes = -1;
  int64_t gpu = -1;
  int64_t instances = -1;
};

struct Tenant {
  std::string name;
  Quota quota;
  std::map<std::string, std::string> pool_selector;  // Node labels required for its instances.
};

// The lifecycle (docs/backends.md): Pending -> Placed (bound to a node, start asked of
// the backend) -> Running (observed ready) -> Succeeded (a batch copy exited 0) or
// Failed (with a reason); Terminating while a stateful instance's copy is being stopped
// before it may move, after which it is Pending again.
enum class InstanceState { Pending, Placed, Running, Failed, Succeeded, Terminating };
std::string_view instance_state_name(InstanceState s);

// A volume held by a stateful instance: where it lives, so the instance sticks to it.
// Where a volume's data is. A volume of a local class is on `node`, in its volume group
// `group`; a volume of a claim class has no node (node is "") and `group` names its
// class, whose pool holds it.
struct VolumeBinding {
  std::string volume;  // Role volume name.
  std::string node;
  std::string group;   // Volume group on that node; the class of a claim volume.
  int64_t size_bytes = 0;
  int64_t iops = 0;
};

struct Instance {
  std::string tenant, app, role;
  int ordinal = 0;
  std::string node;  // "" while pending.
  InstanceState state = InstanceState::Pending;
  Resources request;
  // The role's limits when they differ from the request (a Burstable instance); unset
  // means "the request". Usage above it is killed (memory) or throttled (cpu).
  std::optional<Resources> limit;
  // What the node keeps aside for this instance. Unset means "the request". Reclamation
  // may lower a prod instance's reservation below its request; non-prod scheduling fits
  // against capacity net of reservations and so may use the difference, while prod and
  // sys scheduling always fits against requests.
  std::optional<Resources> reservation;
  Priority priority;
  // Includes gaia.io/app, gaia.io/role; shared with copies until changed.
  Labels labels;
  std::string address;
  std::map<std::string, int> ports;  // Port name -> allocated host port.
  std::vector<VolumeBinding> volumes;
  std::string pending_reason;
  int restarts = 0, migrations = 0;
  // Run-time facts the controllers keep (times in milliseconds since the epoch, 0 when
  // unset): when the instance last started, when a failed one may restart next, and why
  // it failed.
  int64_t started_ms = 0;
  int64_t restart_at_ms = 0;
  std::string failure;
  // Workload hash of the render the instance was created from; a rollout replaces the
  // instances whose hash differs from their app's.
  std::string hash;
  // Observed usage (the sim backend's usage model); unset when not observed yet.
  std::optional<Resources> usage;
  // CPU usage above the node's capacity: throttled, reported, never killed for it.
  bool throttled = false;
  // Whether `failure` was gaia's own (say the node agent crashed): restarting after it
  // does not spend the role's retry_times.
  bool internal_failure = false;
  // When the reservation last snapped back to the request after a usage spike (0:
  // never); reclamation lowers it again only a start-up period later.
  int64_t snapped_back_ms = 0;
  // Raised each time the instance is bound to a node, so a copy the backend reports is
  // known to belong to the current placement or to an earlier one (lib/backend.hpp).
  int64_t generation = 0;
  // Exit code of the last copy that exited (Failed or Succeeded); 0 otherwise.
  int exit_code = 0;

  // "<ordinal>.<role>.<app>.<tenant>" — unique and the base of the DNS-style name.
  std::string key() const;
  // The same key written into `out` (its buffer reused): for loops over every instance,
  // where a new string per instance costs more than the work done with it.
  void key_into(std::string& out) const;
  Resources reserved() const { return reservation.value_or(request); }
  Resources limits() const { return limit.value_or(request); }
  std::string dns_name() const { return key() + ".gaia"; }
};

// Whether the instance does its work: running, or a batch instance that finished.
inline bool serving(const Instance& i) {
  return i.state == InstanceState::Running || i.state == InstanceState::Succeeded;
}

// Whether the instance holds resources on its node: bound, running, or still stopping.
inline bool occupies_node(const Instance& i) {
  return !i.node.empty() && (i.state == InstanceState::Placed || i.state == InstanceState::Running ||
                             i.state == InstanceState::Terminating);
}

// Scheduler profile: weights of the score plugins (0 disables one).
struct SchedulerProfile {
  std::string strategy = "spread";  // spread (least allocated) | stack (most allocated)
  int w_allocation = 1;
  int w_balance = 1;
  int w_locality = 2;
  int w_image = 1;
  int w_affinity = 1;
  int w_spread = 1;
  // ScarceResources: keeps nodes with GPUs for work that asks for GPUs. Work without a
  // GPU request scores 0 there and 100 elsewhere, so it lands on a GPU node only when
  // no plain node fits or the other scores outweigh this one (data locality, say).
  int w_scarce = 2;
  // Share of feasible-looking nodes scored per run of identical instances, like
  // kube-scheduler's percentageOfNodesToScore. 100 (the default) scores every node and
  // gives exact decisions; lower values trade placement quality for speed on very large
  // clusters. Sampling is deterministic: a rotating window over nodes in index order,
  // never fewer than 100 nodes, and the rest are scored before giving up on a fit.
  int percentage_of_nodes_to_score = 100;
};

// Everything a decision looks at. Cheap to copy for what-if planning at the sizes we
// target (tens of thousands of instances).
struct Snapshot {
  std::vector<Node> nodes;
  std::vector<Tenant> tenants;
  std::vector<Instance> instances;  // Placed and pending.
  // Roles by "<tenant>/<app>/<role>", for spec-level facts (affinity, near, volumes).
  std::map<std::string, Role> roles;
  SchedulerProfile profile;
  // The cluster's storage classes; empty means default_storage_classes().
  std::vector<StorageClass> storage_classes;
  // Claim volumes kept after a scale down (their instance is gone, their data is not),
  // keyed like kept volumes on nodes; they still take room in their class's pool.
  std::vector<KeptVolume> kept_claims;
};

// The snapshot's classes: storage_classes, or for a cluster that declares none the
// defaults and, as local classes, any other class its volume groups offer.
std::vector<StorageClass> effective_storage_classes(const Snapshot& s);
// The class `name` of the snapshot's cluster, or nullptr. A cluster that declares no
// classes has hdd and ssd, and treats any class its volume groups name as local.
const StorageClass* find_storage_class(const Snapshot& s, std::string_view name);
// Whether a binding holds claim storage (no node: the data follows the instance).
inline bool claim_binding(const VolumeBinding& b) { return b.node.empty(); }
// Whether node `n` can attach claim class `c`: every label of its selector matches, with
// zone, rack and switch also read from the node's topology (a cluster file's subnet
// table sets those without labels).
bool can_attach_class(const Node& n, const StorageClass& c);
// Where a volume's data is, for messages: "on node-3", or "in claim class gold" for a
// claim volume (its `node` is "" and its `group` names the class).
std::string volume_place(const std::string& node, const std::string& group);

}  // namespace gaia
