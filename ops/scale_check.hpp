#pragma once
// The template's say on a scale (docs/cli.md#gaia-scale). A template may check or derive
// values from a role's count: hdfs asserts that the replication factor does not exceed
// the datanodes. A count set by `gaia scale` reaches main.jsonnet as `app.scale`
// (render::RenderOptions::scale; templates read it with gaia.replicas(app, role,
// default)), and before a scale is written the app is rendered again with the new count,
// the way a config change re-renders it (ops/propagate.hpp): from its spec bundle, with
// the inputs it was submitted with, the config and label centers as they are now and
// its dependencies' outputs as they run. A render error is the template refusing the
// scale, and the scale is refused with it.
//
// The render only judges: the app keeps its stored workload (a scale never replaces its
// running instances); a later re-render, on a config change, renders with the count.

#include <string>

#include "lib/error.hpp"
#include "lib/state.hpp"
#include "ops/workspace.hpp"

namespace gaia::ops {

// Renders `app` of `state` as if `role` had `replicas` replicas. Errors: the template's
// own (each message saying which scale it refuses), or why the app cannot be rendered
// again (its spec bundle is missing, say). Never writes.
Result<void> check_scale_render(const Workspace& ws, const ClusterState& state, const AppRecord& app,
                                const std::string& role, int replicas);

}  // namespace gaia::ops
