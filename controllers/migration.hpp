#pragma once
// The migration controller and the node changes behind `gaia drain` and `gaia node
// fail|recover` (docs/cli.md#gaia-drain, docs/cli.md#gaia-node-fail--gaia-node-recover).
//
// Node down. Every instance on a Down node goes back to pending (event Evicted) and the
// scheduler controller re-places it elsewhere. A stateful instance whose volume is on
// the down node keeps its binding and waits, pending with the reason "waiting for node
// X (holds volume V)", until the node recovers; `gaia node fail --move-stateful` or
// `gaia migrate INSTANCE --force` drop the binding instead, and the instance starts
// elsewhere with EMPTY volumes: its data stays on the dead node and is lost to it.
//
// Drain. A draining node (Node.draining, cordoned) is emptied in batches: per pass at
// most (running - min_available) instances of a role leave it, and only instances the
// scheduler can place elsewhere (on the cluster as it is, preemption included) are
// taken off, so a drain never leaves a role below min_available nor strands an
// instance in pending for lack of room. Moved instances count again once the backend
// reports them running (controllers/lifecycle.hpp); the next pass then moves the next
// batch. A stateful
// instance's volumes travel with it on a drain (the node is alive, so the data is
// copied: the scheduler binds fresh volumes on the new node). When nothing occupies
// the node any more it stays cordoned, its draining flag is cleared and a Drained event
// says so; uncordoning a node while it drains cancels the drain (DrainCancelled).
//
// migrate_times. Moves a user asked for (drain, `gaia migrate`, `gaia rebalance`)
// count in Instance.migrations and are refused once it reaches the role's
// migrate_times (the instance stays where it is; drain_blockers says why). Moves caused
// by a node failure are gaia's or the infrastructure's fault and never count
// (docs/spec.md section 5.8), just as internal failures never spend retry_times.

#include <optional>
#include <string>
#include <vector>

#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"
#include "lib/error.hpp"

namespace gaia {

ControllerResult reconcile_migration(const ClusterState& state, const ControllerContext& ctx);

// Why a user-visible move of `i` is refused because of migrate_times ("moved 3 times,
// its role allows 3 (migrate_times)"), or "" when it may move.
std::string migrate_times_refusal(const ClusterState& state, const Instance& i);

// Instances still on a draining node and why each is not moving yet.
struct DrainBlocker {
  std::string instance, reason;
};
std::vector<DrainBlocker> drain_blockers(const ClusterState& state, const std::string& node);

// The change a node command commits before the controllers run: the node itself plus
// its events (and, for fail --move-stateful, the dropped volume bindings).
struct NodeChange {
  Batch batch;
  bool changed = true;  // False when the node is already in that state.
  std::string note;     // Why nothing changed ("already down").
  std::vector<std::string> dropped;  // Instances whose volume binding was dropped.
};

// `gaia drain NODE`: cordons the node and sets it draining. Refuses a down node.
Result<NodeChange> decide_drain(const ClusterState& state, const std::string& node);
// `gaia node fail NODE`: marks it Down (event NodeDown) with `why` as its down_reason.
// With `move_stateful`, the bindings of volumes on it are dropped so its stateful
// instances move too (data loss).
Result<NodeChange> decide_node_fail(const ClusterState& state, const std::string& node, bool move_stateful,
                                    const std::string& why = "gaia node fail");
// `gaia node recover NODE`: Ready again (Cordoned when it was draining), event
// NodeRecovered; instances waiting for it are placed back by the scheduler controller.
Result<NodeChange> decide_node_recover(const ClusterState& state, const std::string& node);

// Where the instances of the changed nodes end up, and what else moved.
struct MoveReport {
  std::string instance, from;
  std::string to;        // "" while pending.
  std::string state;     // Running, Pending, ...
  std::string reason;    // Pending: why; still on the node: why it has not moved.
  std::string locality;  // Roles with `near`: how close it landed to that data.
};
struct WhatIf {
  std::vector<MoveReport> moves;      // Every instance that was on a changed node.
  std::vector<MoveReport> preempted;  // Instances elsewhere evicted to make room.
  ReconcileOutcome outcome;           // The controllers' run on the changed state.
};

// What the controllers do once `change` is committed on `before`: reconcile() on the
// changed state, compared with `before`. `gaia drain --dry-run` and `gaia node fail
// --dry-run` print it without committing; the real commands commit `change`, run the
// same controllers and print the same report.
WhatIf what_if(const ClusterState& before, const Batch& change, const ControllerContext& ctx);
// The same report for a run that already happened (`after` is the state it left).
WhatIf report_moves(const ClusterState& before, const std::vector<std::string>& nodes, const ClusterState& after,
                    const Batch& run_batch);

}  // namespace gaia
