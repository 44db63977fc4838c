#pragma once
// The scheduler (docs/cluster-file.md#scheduler): a pure function from a cluster
// snapshot and a list of pending instances to a decision. No I/O; the caller applies
// the decision (binds placements, evicts victims and marks them pending again).
//
// How it stays fast at 10,000 nodes / 100,000 instances:
//  - The snapshot is indexed once (controllers/cluster_index.hpp) and updated
//    incrementally per placement; nothing is rebuilt per placement. A submission of
//    several apps schedules each on the index of the one before (KeptIndex), so the
//    cluster is indexed once per submission, not once per app.
//  - Pending instances are sorted (priority, then tenant/app/role/ordinal), so the
//    instances of a role form a run. Static filters (node state, pool, selector, node
//    affinity, network) are evaluated once per distinct requirement set and cached.
//  - Within a run, every feasible node sits in a max-heap keyed by (score, name). All
//    score plugins are absolute (a node's score depends only on that node and its
//    domains), so after a placement only the touched nodes (the node, its rack for
//    EvenSpread, and the domains of affinity terms the new instance matches) are
//    rescored. Every node is evaluated unless the profile asks for sampling
//    (percentage_of_nodes_to_score < 100: deterministic, see lib/cluster.hpp).
//  - Cost is O(nodes) per run plus O(touched nodes) per placement, so runs of one
//    instance (each instance with its own role or request) are the slow case. Short
//    runs of plain instances (no affinity, ports, volumes or locality; with any
//    profile) therefore search nodes kept in order of their use instead, and score
//    only those that could beat the best found (controllers/node_order.hpp).
//  - When an instance of a run is unschedulable, the rest of the run is too (the run's
//    instances are identical and the failure changed nothing), so the reason is reused.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/cluster.hpp"

namespace gaia {

struct Placement {
  std::string instance;  // Instance key.
  std::string node;
  double score = 0;  // Weighted total of the chosen node.
  std::map<std::string, int> ports;  // Port name -> host port.
  std::vector<VolumeBinding> volumes;  // New bindings only (existing ones are kept).
};

// Evict `victim` from `node` to make room for `preemptor`; the victim goes back to
// pending and is scheduled by a later call.
struct Preemption {
  std::string victim;
  std::string node;
  std::string preemptor;
};

struct Unschedulable {
  std::string instance;
  std::string reason;  // "0/50 nodes fit: 30 ResourceFit (memory), 20 NodeSelector".
};

struct Decision {
  std::vector<Placement> placements;    // In scheduling order.
  std::vector<Preemption> preemptions;  // In scheduling order.
  std::vector<Unschedulable> unschedulable;
};

// How the scheduler searches, not what it decides: every setting gives the same
// decision. Tests compare them, and the benchmarks measure the search against the
// scan of every node in the same run.
struct ScheduleTuning {
  // Short runs of plain instances find their node by a bounded search over nodes kept
  // in order of their use (controllers/node_order.hpp) instead of scoring every node.
  bool bounded_search = true;
  // When no node fits, every node's cheapest victims are kept across the arrivals of a
  // run, and only nodes that changed are searched again, instead of searching every
  // node for every arrival.
  bool keep_victim_plans = true;
  // plan_submit keeps the scheduler's index across the apps of a submission and its
  // rounds (KeptIndex) instead of indexing the whole cluster for each.
  bool keep_index = true;
};

namespace sched {
class ClusterIndex;
}

// The scheduler's index of a snapshot, kept between calls of schedule() on a snapshot
// that changes only by the decisions those calls returned and by new instances at the
// end of its list (plan_submit's work, app after app): the next call indexes only the
// new instances instead of the whole cluster again. The index checks what it can (no
// eviction since, the same nodes and tenants, its placements applied) and is built
// again when that fails; a caller that changes anything else (deletes or reorders
// instances, edits a node, a role's spec or an instance in another way) calls reset().
class KeptIndex {
 public:
  KeptIndex();
  ~KeptIndex();
  KeptIndex(KeptIndex&&) noexcept;
  KeptIndex& operator=(KeptIndex&&) noexcept;
  void reset();
  // Calls that reused the index instead of building it (for tests and benchmarks).
  int reused() const { return m_reused; }

  struct Caches;  // What the scheduler keeps beside the index (scheduler.cpp).

 private:
  friend Decision schedule(const Snapshot&, const std::vector<std::string>&, const ScheduleTuning&, KeptIndex&);
  // Declared after the index they refer to, so they are destroyed first.
  std::unique_ptr<sched::ClusterIndex> m_idx;
  std::unique_ptr<Caches> m_caches;
  int m_reused = 0;
};

// Schedules the given instances (keys "<ordinal>.<role>.<app>.<tenant>"). Keys that are
// unknown or whose instance already occupies a node are reported unschedulable.
Decision schedule(const Snapshot& snapshot, const std::vector<std::string>& pending,
                  const ScheduleTuning& tuning = {});
// The same, with the index `kept` from earlier calls (see KeptIndex): the same decision.
Decision schedule(const Snapshot& snapshot, const std::vector<std::string>& pending, const ScheduleTuning& tuning,
                  KeptIndex& kept);
// Schedules every instance of the snapshot in state Pending.
Decision schedule(const Snapshot& snapshot);

}  // namespace gaia
