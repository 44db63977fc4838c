#pragma once
// Decisions behind `gaia cluster create` and `gaia node add|remove|label|cordon|uncordon`:
// pure functions from the cluster state to the batch to commit (nodes, displaced
// instances, timeline events), followed where it helps by a retry of pending instances
// (the same reschedule_pending a submit uses), so a node that appears or opens up is
// used at once.

#include <optional>
#include <string>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/cluster_layout.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"

namespace gaia {

struct NodeOpOutcome {
  Batch batch;                      // Everything to commit, rescheduling included.
  std::vector<std::string> nodes;   // Nodes the operation touched, in order.
  std::vector<std::string> displaced;  // Instances taken off removed nodes.
  std::vector<PlacedReport> placed;    // Pending instances placed by the retry.
  std::vector<PendingReport> still_pending;
  std::vector<PreemptedReport> preempted;
  bool changed = true;              // False when there was nothing to do (e.g. already cordoned).
};

// Creates the cluster. Refuses when nodes exist unless `replace`; with `replace` the old
// nodes are deleted, every instance is unplaced and then scheduled afresh on the new ones.
Result<NodeOpOutcome> decide_cluster_create(const ClusterState& state, const ClusterSpec& spec, bool replace);

// Adds nodes (names must be new, addresses and instance subnets unused), then retries
// pending instances.
Result<NodeOpOutcome> decide_node_add(const ClusterState& state, const std::vector<Node>& nodes);

// Removes nodes. Refuses while instances occupy them unless `force`: then those
// instances go back to pending (their volumes on the node are lost) and are retried on
// the remaining nodes.
Result<NodeOpOutcome> decide_node_remove(const ClusterState& state, const std::vector<std::string>& names, bool force);

// One `KEY=VALUE` (set) or `KEY-` (remove) argument of `gaia node label`.
struct LabelEdit {
  std::string key;
  std::optional<std::string> value;  // nullopt: remove.
};
// Parses label arguments kubectl-style; all problems are reported at once.
Result<std::vector<LabelEdit>> parse_label_edits(const std::vector<std::string>& args);

// Applies label edits to nodes. Changing an existing label's value needs `overwrite`
// (as with kubectl). The rack, switch and zone labels also set the node's topology.
// Pending instances are retried afterwards.
Result<NodeOpOutcome> decide_node_label(const ClusterState& state, const std::vector<std::string>& names,
                                        const std::vector<LabelEdit>& edits, bool overwrite);

// Cordons (state Cordoned: nothing new is placed, instances stay) or uncordons (Ready,
// then pending instances are retried). Nodes already in that state are left alone.
Result<NodeOpOutcome> decide_node_cordon(const ClusterState& state, const std::vector<std::string>& names, bool cordon);


}  // namespace gaia
