#pragma once
// Deleting an app (`gaia delete APP [--cascade]`): a pure decision over the cluster state.
// A delete refuses while other apps of the tenant depend on the app, unless cascading,
// which deletes the dependents first (reverse topological order). Freed capacity is
// offered to pending instances in the same transaction.

#include <string>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/state.hpp"

namespace gaia {

struct DeletedApp {
  std::string tenant, name, version;
  std::vector<std::string> instances;  // Keys removed.
  size_t kept_volumes = 0;             // Volumes earlier scale downs kept, deleted with it.
};

struct DeleteOutcome {
  Batch batch;
  std::vector<DeletedApp> deleted;  // In deletion order: dependents first.
  SubmitOutcome rescheduled;        // Pending instances retried on the freed capacity.
};

// Apps of `tenant` depending on `name`, directly or through others; nearest first.
std::vector<std::string> app_dependents(const ClusterState& state, const std::string& tenant, const std::string& name);

// Errors (collected, with hints): the app does not exist (suggesting close names);
// dependents exist and `cascade` is false (naming them).
Result<DeleteOutcome> plan_delete(const ClusterState& state, const std::string& tenant, const std::string& name,
                                  bool cascade);

}  // namespace gaia
