#pragma once
// `gaia rebalance` (docs/cli.md#gaia-rebalance): a bounded plan of moves, defragmenting
// to fit large requests (Hippo keeps allocation above 90% by continuous migration, Borg
// judges a policy by how few machines a workload needs). User-invoked, so it is not one
// of the default controllers: moving running instances costs the user something, and
// every move counts against the instance's migrate_times.
//
// Two goals, in this order, sharing one budget of at most `max_moves` moves:
//  1. Fit a pending instance that fits nowhere. For each such instance (highest
//     priority, then largest, first), look for a node where only resources stand in
//     the way (every other filter passes, judged by controllers/explain.hpp) and where
//     moving away at most the remaining budget of smaller instances, each of which the
//     scheduler places elsewhere without preempting anyone, frees enough room. The plan
//     is kept only if the scheduler then places the pending instance on that node.
//  2. Defragment: empty the least-loaded nodes in use by moving all their instances
//     onto other nodes already in use (packed, most-allocated first), without
//     preemption, raising the allocation rate of the nodes in use.
//
// Each move is a placement chosen by the scheduler on the cluster as the earlier moves
// leave it, so every filter and score applies. The sim backend starts a moved instance
// at once, so a move never lowers a role below min_available.

#include <string>
#include <vector>

#include "lib/state.hpp"

namespace gaia {

struct RebalanceOptions {
  int max_moves = 10;
  // Nodes tried per pending instance and nodes tried for emptying; bounds the work on
  // large clusters (each try is one scheduling run).
  int max_tries = 20;
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
  std::vector<std::string> notes;  // Why a pending instance could not be helped, etc.
  Batch batch;         // The moves (instances and Migrated events) to commit.
  ClusterState after;  // `state` with `batch` applied.

  bool empty() const { return moves.empty(); }
};

RebalancePlan plan_rebalance(const ClusterState& state, const RebalanceOptions& options, int64_t now_ms);

// Allocation rate (percent) and number of nodes in use, as RebalancePlan reports them.
std::pair<double, int> allocation_rate(const ClusterState& state);

}  // namespace gaia
