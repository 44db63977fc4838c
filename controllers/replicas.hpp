#pragma once
// The replicas controller (docs/cli.md#gaia-scale): keeps the number of instances of
// each role equal to what the app asks for. Desired replicas are AppRecord.scale[role]
// when `gaia scale` set it, else the role's replicas in the rendered workload.
//
// Scale up creates the missing ordinals (lowest first) as pending instances stamped with
// the app's workload hash; the scheduler controller places them later in the same pass,
// so quota, dependency readiness and preemption apply exactly as they do for a submit.
// Scale down deletes the highest ordinals first, whatever their state. A stateful
// instance removed by a scale down takes its volumes with it: the bindings live on the
// instance, so its data is gone and a later scale up starts that ordinal with empty
// volumes (the same as `kubectl scale` followed by deleting the PVCs).

#include "controllers/reconcile.hpp"

namespace gaia {

// Replicas `role` of `app` should have: the `gaia scale` override when set, else the
// workload's count.
int desired_replicas(const AppRecord& app, const Role& role);

// One reconcile of every app's replica counts. Emits ScaledUp / ScaledDown per instance
// created or deleted, and AppReady / AppPending when a scale down changes whether the
// app is ready (a scale up leaves that to the scheduler, which sees the new instances).
ControllerResult reconcile_replicas(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
