#pragma once
// Nodes from a backend that owns the list of nodes (Kubernetes): gaia's store follows
// what the backend reports (docs/kubernetes.md). A pure function of the state and the
// backend's inventory, run by the runner before the instances are observed:
// - a node the backend has and the store does not is added (NodeAdded, "from the
//   backend"), and pending instances are retried on it;
// - a node whose capacity, labels, address or topology changed is updated in place
//   (NodeUpdated); instances already on it stay;
// - cordoning on the backend's side (spec.unschedulable) cordons it here, and
//   uncordoning there uncordons it here; only cordons the sync set itself
//   (Node::cordon_reason) are lifted, never a user's `gaia node cordon` or a drain;
// - a node not ready for longer than the heartbeat timeout is marked Down with a reason
//   starting with "kubernetes:" (its instances move as after `gaia node fail`); when
//   it is ready again a node this check took down recovers; one a user failed by hand
//   stays down;
// - a node the backend no longer lists is cordoned, never taken down or removed: its
//   instances stay (a deleted Node's pods are the cluster's to end; a node that lost
//   the label a --node-selector needs still runs them), and listed again it opens;
// - an empty list decides nothing (a selector matching nothing, a rebuilt API server).

#include <vector>

#include "controllers/reconcile.hpp"
#include "lib/backend.hpp"

namespace gaia {

// Down reasons this sync writes start with this word, so it only recovers its own.
inline constexpr const char* k_inventory_down_prefix = "kubernetes";

ControllerResult sync_inventory(const ClusterState& state, const std::vector<InventoryNode>& inventory,
                                const ControllerContext& ctx);

}  // namespace gaia
