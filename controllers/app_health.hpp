#pragma once
// How an app stands, from its instances: the status word users see everywhere (get,
// describe, submit, events) and whether its dependents may use it. One pass over the
// instances serves every app, so the scheduler and the controllers can ask for each app
// they touch without rescanning.
//
// The words (docs/cli.md#app-status), first match wins:
//   Failed       a role exhausted retry_times (the restart controller).
//   Updating     instances of an older render remain: a rollout is under way.
//   Ready        every role has all its instances serving.
//   Degraded     some instance is stuck: it waits for a node that cannot take it, sits
//                on a node that is down, or failed and waits to restart.
//   Progressing  otherwise: instances are on their way (placed and starting, or waiting
//                for dependencies that are on their way themselves).
//
// Availability is apart from the word: an app is *available* to its dependents when
// each role serves at least its `migration.min_available` instances and at least one
// (a role asking for none needs none). A datanode waiting for its node makes hdfs
// Degraded, but hdfs stays available and its dependents go on.

#include <set>
#include <string>
#include <utility>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/state.hpp"

namespace gaia {

struct RoleHealth {
  std::string role;
  int desired = 0;    // Replicas, counting a `gaia scale` override.
  int needed = 0;     // Serving instances that make the role available.
  int instances = 0;  // Instances that exist.
  int serving = 0;    // Running (or, for batch roles, succeeded).
  int bound = 0;      // Serving or placed on a node.
  int stuck = 0;      // See the header comment.
  int outdated = 0;   // On an older render.
};

class AppHealthIndex {
 public:
  explicit AppHealthIndex(const ClusterState& state);
  // Only the apps in `apps` ("tenant/name"), for a caller that asks about a few: the
  // others' instances are passed over a run of a role at a time, and asking about
  // another app answers as for an app without instances.
  AppHealthIndex(const ClusterState& state, const std::unordered_set<std::string>& apps);

  // Per role of the app, in the app's role order.
  std::vector<RoleHealth> roles(const AppRecord& app) const;
  // Every role serves its needed instances.
  bool available(const AppRecord& app) const;
  // Every role has its needed instances placed or serving: dependents may be placed.
  bool placed(const AppRecord& app) const;
  // Every instance serves and each role has all it asks for.
  bool ready(const AppRecord& app) const;
  // The status word (see above).
  std::string status(const AppRecord& app) const;
  // The counts behind a status that is not Ready, for events and messages:
  // "datanode 3/4 serving, 1 stuck".
  std::string summary(const AppRecord& app) const;
  // Instances and serving instances of the app in total.
  std::pair<size_t, size_t> totals(const AppRecord& app) const;

 private:
  struct Counts {
    int instances = 0, serving = 0, bound = 0, stuck = 0, outdated = 0;
  };
  void build(const ClusterState& state, const std::unordered_set<std::string>* only);
  // "tenant/app/role" -> counts.
  std::unordered_map<std::string, Counts> m_roles;
};

// Adds the event for an app that just took `status`: AppReady, or an AppDegraded warning
// with `summary` (what is not serving). Progressing and the others have events of their
// own (Scheduled, RollingOut, Failed), so they get none here.
void app_status_event(const std::string& status, const std::string& summary, const std::string& tenant,
                      const std::string& app, Batch& batch);

// `apps` (tenant, name) in the order they last changed in `batch` (the event of an app's
// last instance to change is when it became ready, or stuck), so status events follow
// readiness, not the alphabet. Apps without events come first, in their own order.
std::vector<std::pair<std::string, std::string>> in_event_order(
    const Batch& batch, const std::set<std::pair<std::string, std::string>>& apps);

// The status word of one app in `state` ("" when there is no such app).
std::string app_health_status(const ClusterState& state, const std::string& tenant, const std::string& name);

}  // namespace gaia
