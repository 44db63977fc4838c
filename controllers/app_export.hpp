#pragma once
// Exporting a release to other tenants (`gaia export RELEASE --to TENANT`): a pure
// decision over the cluster state. An app of a tenant the release is exported to may
// bind to it with `tenant:` in its app.yaml (docs/spec.md#releases). Revoking refuses
// while an app of that tenant is bound to the release: it would be cut off from what it
// runs on.

#include <string>
#include <vector>

#include "lib/error.hpp"
#include "lib/state.hpp"

namespace gaia {

struct ExportRequest {
  std::string tenant;               // The release's tenant.
  std::string name;                 // The release.
  std::vector<std::string> to;      // Tenants to grant ("*": every tenant).
  std::vector<std::string> revoke;  // Tenants to take it back from ("*" as granted).
};

struct ExportOutcome {
  Batch batch;  // Empty when nothing changes.
  std::vector<std::string> exports;  // The release's exports afterwards, sorted.
  std::vector<std::string> added, removed;
};

// Errors (collected, with hints): no such release (listing the tenant's), the release's
// own tenant, a revoke of one tenant from a "*" export, a revoke while apps of that
// tenant (or of any tenant, for "*") are bound to it, naming them.
Result<ExportOutcome> plan_export(const ClusterState& state, const ExportRequest& request);

}  // namespace gaia
