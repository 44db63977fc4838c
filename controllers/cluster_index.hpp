#pragma once
// The scheduler's view of a Snapshot: built once per schedule() or explain() call (or
// once per submission, brought up to date between its apps by extend()) and then
// updated incrementally as instances are placed or evicted, so no decision ever
// rescans the whole cluster. Everything is addressed by dense integer ids (node index,
// instance index, role id, interned label id, topology domain id) to keep the per-node
// evaluation loop free of hashing and allocation.

#include <array>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/cluster.hpp"
#include "lib/string_hash.hpp"

namespace gaia::sched {

// Topology levels, innermost first. Domain ids are per level; -1 means "unknown".
enum Topo : int { kTopoNode = 0, kTopoSwitch = 1, kTopoRack = 2, kTopoZone = 3 };
constexpr int kTopoCount = 4;
// "node", "switch", "rack", "zone" -> Topo; -1 for anything else.
int topo_from_name(std::string_view name);
std::string_view topo_name(int topo);

// What the preemptible occupants of one priority on a node hold.
struct RankLoad {
  int64_t rank = 0;
  int count = 0;
  Resources req, res;  // Sums of their requests and of their reservations.
};

struct NodeIx {
  const Node* node = nullptr;
  Resources cap;
  Resources alloc_req;  // Sum of occupants' requests.
  Resources alloc_res;  // Sum of occupants' reservations.
  // Reciprocals of cpu, memory and gpu capacity (0 when there is none): scoring runs
  // for every node of every run, and multiplications are much cheaper than divisions.
  double inv_cpu = 0, inv_mem = 0, inv_gpu = 0;
  std::array<int, kTopoCount> dom{};
  int name_rank = 0;        // Position in name order, for deterministic tie breaks.
  int ports_in_range = 0;   // Used host ports inside [port_min, port_max].
  std::vector<int> ports;   // Used host ports, sorted.
  std::vector<int64_t> vg_free_size, vg_free_iops;  // Parallel to node->volume_groups.
  std::vector<int> occupants;                        // Instance indices.
  // Preemptible occupants by priority, lowest first (a handful of priorities per node):
  // preemption rules a node out without visiting its occupants when even evicting all
  // it may evict would not make room.
  std::vector<RankLoad> preemptible;
  // Sum over preemptible occupants below `rank`: of reservations when `reservations`,
  // else of requests.
  Resources preemptible_below(int64_t rank, bool reservations) const;

  int64_t range_size() const { return node->port_max >= node->port_min ? node->port_max - node->port_min + 1 : 0; }
  bool port_used(int p) const;
};

struct InstIx {
  const Instance* inst = nullptr;
  int role = -1;
  int tenant = -1;
  int node = -1;  // Node index while it occupies one, else -1.
  bool running = false;
  Resources reservation;
  // Interned label ids (tenant-scoped). Instances of a role with equal labels share one
  // list, owned by the index: a list per instance cost an allocation each to build and
  // to free, for every schedule() call.
  const std::vector<int>* labels = nullptr;
  std::vector<int> held_ports;  // Host ports it holds on its node.
};

struct RoleIx {
  std::string key;  // "<tenant>/<app>/<role>"
  std::string key_tail;  // ".<role>.<app>.<tenant>": what follows the ordinal in instance keys.
  // Every instance of the role, placed or not, as (ordinal, index) in that order:
  // instance_index() finds keys here instead of in a map of every key.
  std::vector<std::pair<int, int>> by_ordinal;
  const Role* role = nullptr;  // Null when the snapshot has no spec for it.
  int tenant = -1;
  std::vector<int> members;  // Occupying instances.
  int running = 0;           // Members in state Running (what min_available counts).
};

// A claim storage class's shared pool (lib/cluster.hpp StorageClass).
struct ClaimPool {
  const StorageClass* cls = nullptr;
  int64_t free = 0;  // Bytes left; INT64_MAX for a pool without a size.
};

struct TenantIx {
  std::string name;
  const Tenant* tenant = nullptr;  // Null: unknown tenant, no quota and no pool.
  Resources used;                   // Requests of occupying instances.
  int64_t count = 0;                // Occupying instances.
};

class ClusterIndex {
 public:
  explicit ClusterIndex(const Snapshot& snapshot);
  // Instances point into the index's own label lists: a copy would point into this one.
  ClusterIndex(const ClusterIndex&) = delete;
  ClusterIndex& operator=(const ClusterIndex&) = delete;
  ClusterIndex(ClusterIndex&&) = default;

  const Snapshot& snapshot() const { return *m_snapshot; }
  // Brings the index to `sn`, which is its snapshot (or a copy of it, anywhere in
  // memory) with every placement since applied (bind_instance, its ports and volumes)
  // and new instances appended at the end; nothing else may differ (no node, tenant,
  // role spec's content or instance changed otherwise). The new instances are indexed;
  // nothing else is read again. Returns false, leaving the index unusable, when it can
  // tell that is not so (an eviction since, nodes or tenants that came or went, a
  // placement not applied as made): the caller then builds a new one. Nodes that new
  // instances already occupy are added to `occupied`, for what the caller keeps in
  // step with node use.
  bool extend(const Snapshot& sn, std::vector<int>* occupied = nullptr);
  const Role& role_of(int inst) const;  // An empty role when the spec is unknown.
  int node_index(std::string_view name) const;
  int instance_index(std::string_view key) const;
  // Whether instance a's key ("<ordinal>.<role>.<app>.<tenant>") sorts before b's, as
  // strings: preemption's last tie-break. Compared in place from the ordinal's digits
  // and the role's part of the key, without building either key.
  bool key_less(int a, int b) const;
  // The first instance with the same key as `inst` (itself unless the key repeats).
  int first_with_key_of(int inst) const;
  // Each role's place in (tenant, app, role) order, by role id.
  const std::vector<int>& role_order() const;
  // Label id of (tenant, key, value), or -1 when no instance carries it.
  int label_id(int tenant, std::string_view key, std::string_view value) const;
  // All label ids of (tenant, key, *).
  const std::vector<int>* label_ids_for_key(int tenant, std::string_view key) const;
  // Roles named "<app>/<role>" in any tenant.
  const std::vector<int>* roles_by_app_role(std::string_view app_role) const;
  const std::vector<int>* nodes_with_image(std::string_view image) const;

  // The pool of claim class `cls`, or -1 when `cls` is not a claim class.
  int claim_pool(std::string_view cls) const;
  // Whether node `n` may attach volumes of claim pool `pool` (its selector matches).
  bool can_attach(const NodeIx& n, int pool) const;

  // Occupy `node` with instance `inst`, holding `ports` (host ports) and consuming
  // `new_volumes` from the node's volume groups or, for claim volumes, their pools.
  void place(int inst, int node, const std::map<std::string, int>& ports,
             const std::vector<VolumeBinding>& new_volumes);
  // Free everything the instance holds except its volumes, which outlive it.
  void evict(int inst);
  // Whether any node holds preemptible work ranked below `rank`: when none does, no
  // preemption can help, whatever the node.
  bool preemptible_below_anywhere(int64_t rank) const {
    return !m_preemptible_ranks.empty() && m_preemptible_ranks.begin()->first < rank;
  }

  std::vector<NodeIx> nodes;
  // Whether some nodes have GPUs and some do not: only then does keeping GPU nodes for
  // GPU work (ScarceResources) tell nodes apart.
  bool gpu_mixed = false;
  std::vector<InstIx> insts;
  std::vector<RoleIx> roles;
  std::vector<TenantIx> tenants;
  std::array<int, kTopoCount> domain_count{};
  // Nodes of each domain, per level (level kTopoNode is the identity and left empty).
  std::array<std::vector<std::vector<int>>, kTopoCount> domain_nodes;
  std::vector<std::vector<int>> postings;  // Label id -> occupying instances.
  std::vector<ClaimPool> claim_pools;

 private:
  int intern_label(int tenant, const std::string& key, const std::string& value);
  void occupy(int inst, int node);
  int tenant_id(const std::string& name);
  int role_id(const Instance& inst);
  // Indexes instance `i` of the snapshot, the next one.
  void add_instance(size_t i);

  const Snapshot* m_snapshot;
  Role m_empty_role;
  std::unordered_map<std::string, int> m_node_by_name, m_role_by_key, m_tenant_by_name;
  // Roles by key_tail. Names with dots can give two roles one tail (and their instances
  // equal keys), hence a list.
  StringMap<std::vector<int>> m_roles_by_tail;
  int find_key(int ordinal, const std::vector<int>& roles_with_tail) const;
  std::unordered_map<std::string, int> m_label_ids;
  std::map<int64_t, int> m_preemptible_ranks;  // Occupying preemptible instances per rank.
  mutable std::vector<int> m_role_order;        // Built on first use.
  std::deque<std::vector<int>> m_label_lists;   // What InstIx::labels points to.
  std::unordered_map<std::string, std::vector<int>> m_labels_by_key;
  StringMap<std::vector<int>> m_roles_by_app_role;
  StringMap<std::vector<int>> m_nodes_by_image;
  // Per role, the last instance whose labels were interned (add_instance).
  std::vector<int> m_labelled_by;
  std::string m_role_key;         // Scratch for role_id.
  size_t m_known_tenants = 0;     // Tenants of the snapshot (the first of `tenants`).
  bool m_built = false;           // The constructor is done: ports go in sorted.
  std::vector<int> m_placed;      // Placed since built or extended, for extend().
  bool m_evicted = false;         // An eviction happened: extend() refuses.
};


}  // namespace gaia::sched
