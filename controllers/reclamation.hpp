#pragma once
// Reclamation (after Borg; docs/decisions.md): capacity a prod instance reserved but
// does not use is lent to nonprod work.
//
// A running prod instance's reservation (Instance::reservation) is its request for
// `reclaim_startup_ms` after it started; then it decays to its observed usage times
// (1 + reclaim_margin), never above the request and never below the usage. When usage
// rises above the reservation (a spike) the reservation snaps back to the request at
// once and is held there for another start-up period before it may decay again.
// Nonprod scheduling fits against capacity net of reservations, so it may land on what
// was reclaimed; prod and sys scheduling fit against requests and never do.
//
// One rule holds for every band: a reservation is never below observed usage. An
// instance using more than it asked for reserves what it uses (above its request), so
// nonprod work is never placed onto memory that is already in use; that is also what
// keeps runtime preemption from killing an instance and the scheduler putting it
// straight back (controllers/runtime_preemption.hpp).
//
// To avoid churn a new reservation is written only when it moves by more than 5% of the
// request in cpu or memory (a spike, or returning to the full request, always writes).
// Events: Reclaimed (how much is lent out), SnappedBack (why it returned), OverRequest
// (usage above the request).

#include "controllers/reconcile.hpp"

namespace gaia {

// Share of the request a reservation must move by before it is rewritten.
inline constexpr double k_reclaim_threshold = 0.05;

// The reservation `i` should have at `now_ms` (nullopt: the request), ignoring the churn
// threshold; `snap` is set when usage exceeds the current reservation.
struct ReservationTarget {
  std::optional<Resources> reservation;
  bool spike = false;       // Usage above the current reservation.
  bool holding = false;     // In the start-up (or post-spike) period: no decay yet.
  int64_t hold_until_ms = 0;  // When decay may start (prod, while holding).
};
ReservationTarget reservation_target(const Instance& i, int64_t now_ms, const ControllerOptions& options);

ControllerResult reclaim_reservations(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
