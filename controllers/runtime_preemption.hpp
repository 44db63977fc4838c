#pragma once
// Runtime preemption (docs/decisions.md): acting on real usage rather than requests.
//
// Memory is incompressible: when the observed memory usage of a node's running
// instances (an instance not observed counts at its request) exceeds the node's
// capacity, nonprod preemptible instances are killed, lowest priority first (then the
// most recently started, then by key), until the node fits. A killed instance goes
// back to the queue (Pending, reason "killed: node N out of memory", event Preempted)
// and the scheduler re-places it; reclamation keeps every reservation at or above
// usage before the scheduler runs, so it does not land where the memory is in use.
// The exception is a killed instance that itself uses more memory than it requested:
// sent back to the queue it would fit by its request wherever it went and run the
// node out of memory again, so it fails instead (event OOMKilled, failure "out of
// memory") and the restart controller restarts it with back-off, spending its
// retry_times, like an out-of-memory kill anywhere. Prod and sys instances are never
// killed for this.
//
// CPU is compressible: when a node's cpu usage exceeds its capacity, instances are
// marked throttled, lowest priority first, until the unthrottled ones fit (event
// Throttled, a warning, once per change; Unthrottled when it recovers). Nothing is
// killed for cpu.

#include "controllers/reconcile.hpp"

namespace gaia {

ControllerResult preempt_at_runtime(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
