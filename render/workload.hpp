#pragma once
// Validation of what main.jsonnet returned into the typed Workload of lib/workload.hpp,
// and the canonical gaia/v1 document built from it. Errors name app, role and field.

#include <nlohmann/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "lib/error.hpp"
#include "lib/workload.hpp"
#include "spec/app_spec.hpp"

namespace gaia::render {

// What the Jsonnet evaluation produced, before validation.
struct RawRender {
  nlohmann::json config = nlohmann::json::object();  // config.jsonnet after overrides.
  nlohmann::json main = nlohmann::json::object();    // main.jsonnet's result: {roles, outputs}.
  std::vector<ConfigRead> reads;                     // Sorted by (kind, key).
};

// Validates `raw` against the role schema (docs/spec.md) and fills defaults. Every
// problem is collected; each diagnostic's location is main.jsonnet of the spec (the
// rendered JSON has no positions) and its path is "roles.<role>.<field>".
// `release` names the workload (empty: the spec's name); `dep_releases` maps a dependency
// alias to the release it is bound to, which `near` refers to (unlisted: the release
// named after the app).
Result<Workload> validate_workload(const spec::AppSpec& spec, const std::string& tenant,
                                   const RawRender& raw, const std::string& release = {},
                                   const std::map<std::string, std::string>& dep_releases = {});

// Checks the roles' `after:` lists across the app: each names a role of the app, and
// they form no cycle (printed as "master -> zk -> master"). Problems go to `diags`
// located at main.jsonnet with the path "roles.<role>.after".
void check_start_order(const spec::AppSpec& spec, const std::string& file, const std::vector<Role>& roles,
                       Diagnostics& diags);

// The canonical `apiVersion: gaia/v1` document of a validated workload, with sorted
// keys and the content hash in metadata.hash (which it also stores into `w.hash`).
nlohmann::json to_document(Workload& w);
// Parses a gaia/v1 document back (the store keeps documents); the inverse of to_document.
Result<Workload> from_document(const nlohmann::json& doc);

}  // namespace gaia::render
