#pragma once
// Node health from agents' heartbeats (docs/backends.md): a backend whose nodes are
// served by agents (the process backend) has each agent write a heartbeat per node it
// serves. A node whose agent wrote at least once and then stayed silent for longer
// than ControllerOptions::heartbeat_timeout_ms is marked Down, exactly as `gaia node
// fail` does, so the migration controller moves its instances; when its agent reports
// again, a node this check took down comes back (one a user failed by hand stays down).

#include <string>

#include "controllers/reconcile.hpp"

namespace gaia {

// Down reasons this check writes start with this word, so it only recovers its own.
inline constexpr const char* k_heartbeat_down_prefix = "heartbeat";

ControllerResult reconcile_node_health(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
