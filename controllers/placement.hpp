#pragma once
// The placement controller: re-checks required placement after node labels change.
//
// The scheduler checks a role's node_selector, its required node affinity and the
// tenant's node pool when it places an instance; a later label change (`gaia label set
// node`, `gaia node label`) can leave instances on nodes that no longer satisfy them.
// Those are required constraints, so such instances are moved: put back to pending with
// the reason, and the scheduler (later in the same pass) places them on a node that
// satisfies them, or they stay pending and say why. They move all at once, not in
// min_available batches: the user asked for the old node to be excluded.
//
// A stateful instance whose volume lives on its node cannot move without leaving its
// data behind; it stays where it is and is reported as pinned (the label command prints
// it), until its volume binding is dropped (`gaia migrate --force`).

#include <string>
#include <vector>

#include "controllers/reconcile.hpp"
#include "lib/state.hpp"

namespace gaia {

struct PlacementViolation {
  std::string instance, node;
  std::string reason;   // "node n2 no longer matches node_selector disk=ssd".
  bool pinned = false;  // Stateful with its volume on the node: not moved.
};

// Placed or running instances whose node fails their role's node_selector, required
// node affinity or tenant pool, in instance order.
std::vector<PlacementViolation> placement_violations(const ClusterState& state);

// Moves the violations that are not pinned (event Displaced, a warning, for each).
ControllerResult placement_controller(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
