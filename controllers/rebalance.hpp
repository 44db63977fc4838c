#pragma once
// `gaia rebalance` (docs/cli.md#gaia-rebalance) and the rebalance controller: a bounded
// plan of moves that lets pending large instances fit and defragments (Hippo keeps
// allocation above 90% by continuous migration, Borg judges a policy by how few machines
// a workload needs). Moving running instances costs their users something and every
// move counts against the instance's migrate_times, so the controller is off unless
// `gaia controller options --rebalance-budget N` turns it on (docs/policies.md,
// "Defragmentation").
//
// Two goals, in this order, sharing one budget of at most `max_moves` moves:
//  1. Fit a pending instance that fits nowhere. For each such instance (highest
//     priority, then largest, first), look for a node where only resources stand in
//     the way (every other filter passes, judged by controllers/explain.hpp) and where
//     moving away at most the remaining budget of smaller instances, each of which the
//     scheduler places elsewhere without preempting anyone, frees enough room. The plan
//     is kept only if the scheduler then places the pending instance on that node.
//  2. Defragment: empty the nodes in use with the fewest instances (then the least
//     loaded) by moving all their instances onto the other nodes in use, packed (most
//     allocated first, no pull toward spreading a role), without preemption, raising the
//     allocation rate of the nodes in use. Many nodes are tried at once: in order, as
//     many as the move budget and `target_pct` allow whose requests fit the room left on
//     the other nodes in use, and one scheduling run places all their instances. Nodes
//     with an instance that does not place are left out and the rest tried again; after
//     a round that moved something, the next goes on with the nodes that received
//     nothing (nothing moves twice in a plan). A round that moves nothing ends it.
//
// Each move is a placement chosen by the scheduler on the cluster as the earlier moves
// leave it, so every filter and score applies.
//
// min_available: a plan moves at most (running - min_available) running instances of a
// role, as a drain batch does, counting Running instances on nodes that are not down.
// A moved instance is Placed until the backend reports it running again, so a later
// plan (the controller's next period) counts it as not running: moves never take a role
// below min_available at once, whatever the backend's start-up time.

#include <string>
#include <vector>

#include "controllers/reconcile.hpp"
#include "lib/state.hpp"

namespace gaia {

struct RebalanceOptions {
  int max_moves = 10;
  // Scheduling runs each goal may spend: nodes tried per pending instance (and pending
  // instances tried), and tries of the defragmentation (each places the instances of
  // many nodes at once; 1 to 9 empty hundreds of nodes at 1,000 nodes). Bounds the work
  // on large clusters: each is one scheduling run on the whole cluster.
  int max_tries = 20;
  // Defragment only until the allocation rate of the nodes in use reaches this percent
  // (0: as far as the budget goes).
  double target_pct = 0;
  // The controller's mode: a node with more instances than the budget left (or with
  // instances min_available holds back) is emptied in part, and the next plan goes on
  // with it. Off for `gaia rebalance`, where a half-emptied node gains nothing.
  bool partial = false;
  // Partial mode: instances moved before that started again less than this long ago
  // stay (the controller passes its period, so it never moves back at once what a user
  // just migrated).
  int64_t settle_ms = 0;
};

struct RebalanceMove {
  std::string instance, from, to;
  std::string purpose;  // "make room for 0.big.app.default on n3" | "defragment: empty n7"
};

struct RebalanceFit {
  std::string instance, node;  // A pending instance that fits once the moves are done.
};

struct RebalancePlan {
  std::vector<RebalanceMove> moves;
  std::vector<RebalanceFit> fits;
  std::vector<std::string> emptied;  // Nodes the defragmentation frees.
  // Allocation rate of the nodes in use: mean of cpu and memory requests over their
  // capacity, in percent; nodes in use are Ready nodes holding at least one instance.
  double allocation_before = 0, allocation_after = 0;
  int nodes_in_use_before = 0, nodes_in_use_after = 0;
  int schedules = 0;     // Scheduling runs the plan made.
  std::string stopped;   // Why the defragmentation stopped ("target reached", ...).
  std::vector<std::string> notes;  // Why a pending instance could not be helped, etc.
  Batch batch;         // The moves (instances and Migrated events) to commit.
  ClusterState after;  // `state` with `batch` applied.

  bool empty() const { return moves.empty(); }
};

RebalancePlan plan_rebalance(const ClusterState& state, const RebalanceOptions& options, int64_t now_ms);

// Allocation rate (percent) and number of nodes in use, as RebalancePlan reports them.
std::pair<double, int> allocation_rate(const ClusterState& state);

// The rebalance controller (last of default_controllers): when the options' rebalance
// budget is above 0 and a period has passed since its last run (settings/rebalance
// holds when), it plans with max_moves = the budget and partial emptying, commits the
// moves (Migrated events) with a Rebalanced event saying the allocation before and
// after, and records the run. It asks for no wake-up: a controller loop notices the
// next period within its own interval (`gaia controller run --interval`), and a cluster
// whose only pending work is the next period counts as settled (`--wait`).
inline constexpr const char* k_rebalance_setting = "rebalance";
ControllerResult rebalance_controller(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
