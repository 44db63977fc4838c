#pragma once
// Small pieces the run-time controllers (lifecycle, restart, runtime_preemption,
// reclamation) share: sending an instance back to the queue with its run-time facts
// reset, the text of a cpu/memory amount in events, and keeping an app's status in step
// with what they did to its instances.

#include <set>
#include <string>
#include <utility>

#include "lib/state.hpp"

namespace gaia {

// Whether the instance runs on a node (what usage, reservations and kills are about).
inline bool running_on_node(const Instance& i) { return i.state == InstanceState::Running && !i.node.empty(); }

// Sends `i` back to pending with `reason`: its node, address and ports are released and
// everything learnt while it ran (start time, usage, reservation, throttling, failure
// flags) is reset, so its next placement starts afresh. Volume bindings stay, so a
// stateful instance returns to its data.
void requeue_instance(Instance& i, std::string reason);

// "1200m cpu, 2.4Gi memory".
std::string cpu_memory_text(const Resources& r);

// Sets the status of each app in `apps` from `after` (controllers/app_health.hpp: Failed,
// Updating, Ready, Degraded, Progressing) and records each change in `batch` with an
// AppReady or AppDegraded event, as the scheduler does for the apps it touches. `after`
// is the state with `batch` applied. The events follow readiness, not the alphabet: an
// app whose instances changed earlier in the batch gets its event first.
void sync_app_statuses(const ClusterState& after, const std::set<std::pair<std::string, std::string>>& apps,
                       Batch& batch);
inline void sync_app_status(const ClusterState& after, const std::string& tenant, const std::string& app,
                            Batch& batch) {
  sync_app_statuses(after, {{tenant, app}}, batch);
}

}  // namespace gaia
