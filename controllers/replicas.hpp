#pragma once
// The replicas controller and the decision of `gaia scale` (docs/cli.md#gaia-scale):
// keep the number of instances of each role equal to what the app asks for. Desired
// replicas are AppRecord.scale[role] when `gaia scale` set it, else the role's replicas
// in the rendered workload.
//
// Scale up creates the missing ordinals (lowest first) as pending instances stamped with
// the app's workload hash; the scheduler controller places them later in the same pass,
// so quota, dependency readiness and preemption apply exactly as they do for a submit.
// Scale down removes the highest ordinals first, whatever their state.
//
// Volumes: a stateful instance removed by a scale down leaves its volumes behind, as a
// StatefulSet leaves its PersistentVolumeClaims: each becomes a KeptVolume on the node
// that holds the data (lib/cluster.hpp), still taking its space there. When a scale up
// creates that role and ordinal again, the new instance gets those volumes back, so the
// scheduler places it on their node, with its data. Data is deleted only when asked for:
// `gaia scale --delete-volumes` (plan_scale with delete_volumes), or deleting the app.

#include <string>
#include <vector>

#include "controllers/reconcile.hpp"

namespace gaia {

// One reconcile of every app's replica counts. Emits ScaledUp / ScaledDown per instance
// created or removed (removed instances' volumes are kept), and AppReady / AppDegraded
// when a scale down changes whether the app is ready (a scale up leaves that to the
// scheduler, which sees the new instances).
ControllerResult reconcile_replicas(const ClusterState& state, const ControllerContext& ctx);

// One volume a scale keeps, deletes or gives back, for what `gaia scale` prints.
struct ScaleVolume {
  std::string instance;  // Key of the instance it belongs (or belonged) to.
  std::string volume, node, group;
  int64_t size_bytes = 0;
  // Kept by an earlier scale down, not taken from an instance this scale removes.
  bool earlier = false;

  bool operator==(const ScaleVolume&) const = default;
};

struct ScalePlan {
  int from = 0, to = 0;
  // The app record with the new count, the Scaled event, the instances removed (highest
  // ordinals first) with their volumes kept or deleted, and the kept volumes deleted.
  Batch batch;
  std::vector<std::string> removed;  // Instance keys.
  std::vector<ScaleVolume> kept;        // Kept on their node once the scale is done.
  std::vector<ScaleVolume> deleted;     // Deleted by this scale (delete_volumes only).
  std::vector<ScaleVolume> reattached;  // Given back to the ordinals a scale up creates.

  bool changed() const { return !batch.empty(); }
};

// The decision of `gaia scale APP/ROLE` to `to` replicas (>= 0) of `role`, a role of
// `app` in `state`. The count is written even when it equals the current one only if it
// differs from what the app record holds; removals happen here, not in the replicas
// controller, so that `delete_volumes` decides what becomes of their volumes. With
// `delete_volumes`, every volume of the role that no instance keeps or gets back is
// deleted: those of the instances removed now and those kept by earlier scale downs for
// ordinals at or above `to`. Without it, nothing is deleted and `kept` lists every kept
// volume of the role. `reattached` predicts what the replicas controller will give back.
ScalePlan plan_scale(const ClusterState& state, const AppRecord& app, const Role& role, int to, bool delete_volumes);

// Kept volumes of the role whose instance `ordinal` gets them back when it is created:
// those the role still has (by name), one per name.
std::vector<KeptVolume> volumes_to_reattach(const ClusterState& state, const AppRecord& app, const Role& role,
                                            int ordinal);

}  // namespace gaia
