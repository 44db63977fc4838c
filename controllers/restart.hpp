#pragma once
// Restarts (docs/decisions.md): a failed instance is restarted with exponential
// back-off up to its role's retry_times; then the role is marked failed.
//
// A Failed instance first gets a restart time, now + backoff_ms * 2^restarts (capped at
// options.max_backoff_ms; event BackOff), and the controller asks to be woken then. When
// it is due the instance goes back to the queue (event Restarted, restarts + 1) and the
// scheduler places it again (a stateful one returns to its volume). A failure found with
// restarts == retry_times is one too many: the role goes into AppRecord::failed_roles
// with the reason, the app's status becomes Failed (event Failed, a warning), and its
// failed instances stay down until a changed spec is submitted.
//
// Internal failures (Instance::internal_failure: gaia's own fault, such as the node
// agent crashing) are retried after backoff_ms without spending retry_times and without
// growing the back-off, as Gaia does for its own faults.

#include <string>

#include "controllers/reconcile.hpp"

namespace gaia {

// The back-off before restart number `restarts + 1` of an instance of `role`.
int64_t restart_backoff_ms(const Role& role, int restarts, bool internal, const ControllerOptions& options);

ControllerResult restart_failed(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
