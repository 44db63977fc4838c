#pragma once
// The usage observer of the sim backend, run as the first of the run-time controllers:
// it writes each running instance's observed usage (Instance::usage, absolute amounts)
// from the usage model in the store (lib/sim_usage.hpp) at the current time, and records
// when it first saw an instance running (Instance::started_ms), which starts the
// reclamation start-up period. Instances that stopped running lose both.
//
// It is a controller rather than a step of the CLI so that every run-time decision is a
// pure function of (stored state, usage model, now): reclamation and runtime preemption
// read the usage it wrote, in the same reconcile pass. It writes only what changed, so a
// second run is a no-op, and asks to run again when a spike ends.

#include "controllers/reconcile.hpp"

namespace gaia {

ControllerResult observe_sim_usage(const ClusterState& state, const ControllerContext& ctx);

}  // namespace gaia
