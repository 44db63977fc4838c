#pragma once
// Explicit moves: `gaia migrate INSTANCE [--to NODE] [--force]` (plan_migrate), and the
// pieces `gaia rebalance` shares with it (moving an instance to a placement the
// scheduler chose, evicting a preemption victim).
//
// A move is decided by the scheduler itself, on a copy of the cluster where the
// instance is taken off its node and the nodes it may not use (its current node; with
// --to, every other node) are cordoned, so every filter, score and preemption rule of a
// normal placement applies. A refusal says why: the --to node's failing filters (from
// controllers/explain.hpp), migrate_times spent, or a volume on a down node.
//
// Volumes: moving a stateful instance off a live node copies its volumes (new bindings
// on the new node). An instance waiting for a down node that holds its volume moves
// only with --force, which drops the binding: it starts with EMPTY volumes and the data
// on the down node is lost to it. --force also moves an instance whose migrate_times is
// spent. A move counts in Instance.migrations.

#include <optional>
#include <string>
#include <vector>

#include "controllers/scheduler.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"

namespace gaia {

struct MigrateRequest {
  std::string instance;           // Instance key.
  std::optional<std::string> to;  // Only this node.
  bool force = false;
};

struct MigrateOutcome {
  Batch batch;
  std::string instance, from, to, address;
  std::string locality;  // Roles with `near`: how close the new node is to that data.
  std::vector<Preemption> preempted;
  std::vector<std::string> copied_volumes;   // Moved with it from a live node.
  std::vector<std::string> dropped_volumes;  // --force off a down node: data lost.
  int migrations = 0, migrate_times = 0;     // After the move.
  ClusterState after;                        // `state` with `batch` applied.
};

// Decides the move of one instance; every refusal is an error with a hint.
Result<MigrateOutcome> plan_migrate(const ClusterState& state, const MigrateRequest& request, int64_t now_ms);

// Moves `key` in `state` to the placement `p` (a new node, its ports and fresh volume
// bindings), counting a migration when `count`, and records it in `batch` with a
// Migrated event saying `why`. Volumes bound on the old node are replaced by the new
// bindings (copied). Returns the moved instance.
const Instance& move_instance(ClusterState& state, Batch& batch, const std::string& key, const Placement& p,
                              const std::string& why, bool count, int64_t now_ms);
// The same for a planner that moves thousands of instances (a rebalance): the instance
// is already found and the new address taken from the planner's AddressBook, which the
// move keeps up to date (the old address is given back).
class AddressBook;
const Instance& move_instance(ClusterState& state, Batch& batch, Instance& instance, const Placement& p,
                              AddressBook& addresses, const std::string& why, bool count, int64_t now_ms);

// Evicts a preemption victim in `state`: pending again (reason "preempted by ..."),
// recorded in `batch` with a Preempted event. The scheduler controller re-places it.
void evict_victim(ClusterState& state, Batch& batch, const Preemption& p);

}  // namespace gaia
