#pragma once
// Submitting a resolved, rendered chain: a pure decision over the cluster state that
// returns the batch to commit (apps, instances, events) and a report for the user.
// `gaia plan` runs the same function and prints the report without committing.

#include <string>
#include <vector>

#include "lib/state.hpp"

namespace gaia {

struct AppToDeploy {
  AppRecord record;  // tenant, name, version, workload, document, dependencies, spec_dir.
};

struct PlacedReport {
  std::string instance, node, address;
  double score = 0;
};
struct PendingReport {
  std::string instance, reason;
};
struct PreemptedReport {
  std::string victim, node, preemptor;
};

struct AppReport {
  std::string tenant, name, version;
  std::string action;  // deploy | update | unchanged
  std::vector<PlacedReport> placed;
  std::vector<PendingReport> pending;
  std::vector<PreemptedReport> preempted;
  std::vector<std::string> removed;  // Instances of a previous version/replica count removed.
  bool ready = false;
};

struct SubmitOutcome {
  Batch batch;
  std::vector<AppReport> apps;  // In deploy order.
  size_t placed = 0, pending = 0, preempted = 0;
};

// Deploys `apps` (dependencies first) on `state`: instances are created for every role
// replica, scheduled app by app so a dependent is placed only once its dependencies are
// ready (all instances running), and started (the sim backend starts a placed instance
// at once). Preemption victims go back to pending. Apps already running with the same
// workload hash are left as they are. Every step becomes a timeline event.
SubmitOutcome plan_submit(const ClusterState& state, const std::vector<AppToDeploy>& apps);

// Retries scheduling of every pending instance (after a node was added or capacity
// freed): the same rules, for instances already in the store.
SubmitOutcome reschedule_pending(const ClusterState& state);

// Allocates the lowest free address of the node's instance subnet (IPv4 or IPv6), or
// "" when the node has no subnet or it is full.
std::string allocate_address(const Node& node, const std::vector<Instance>& instances);

}  // namespace gaia
