#pragma once
// Merge patches (RFC 7386) and field ownership for server-side apply, in a simplified but
// honest model of Kubernetes' structured-merge-diff: an object's fields are the set of
// its leaf paths, maps recursed and anything else (lists included) an atomic leaf;
// metadata.managedFields records, per manager and operation, the leaves it owns as
// fieldsV1 ({"f:spec":{"f:replicas":{}}}).
// - Apply by manager M: a leaf of M's configuration owned by another manager with a
//   different value is a conflict (unless forced, which moves the ownership to M);
//   leaves M applied before and omits now are removed from the object unless another
//   manager owns them too; then the configuration is merged in and M owns its leaves
//   (shared with managers whose value is the same).
// - Update (create, PUT, merge or JSON patch) by manager U: U takes the leaves whose
//   value it changed from whoever owned them; removed leaves are owned by nobody.
// Server-owned metadata (name, namespace, uid, resourceVersion, generation,
// creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds, managedFields),
// apiVersion and kind are never owned.

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gaia::standin::detail {

using FieldPath = std::vector<std::string>;
using FieldSet = std::set<FieldPath>;

// Which fields a write may touch: everything, everything but status (the main resource
// of a kind with a status subresource), or status only (the subresource).
enum class FieldScope { All, NoStatus, StatusOnly };

nlohmann::json merge_patch(nlohmann::json target, const nlohmann::json& patch);

std::string path_string(const FieldPath& path);  // ".spec.replicas"
const nlohmann::json* value_at(const nlohmann::json& object, const FieldPath& path);
// Leaf paths of `object` in `scope`, null values excluded.
FieldSet leaf_paths(const nlohmann::json& object, FieldScope scope);

struct ManagedEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update".
  std::string api_version;
  std::string time;
  std::string subresource;
  FieldSet fields;
};
std::vector<ManagedEntry> managed_entries(const nlohmann::json& object);
void set_managed_entries(nlohmann::json& object, const std::vector<ManagedEntry>& entries);

// Records an Update by `manager` that turned `before` into `after` in after's
// metadata.managedFields (before's entries are the starting point).
void record_update(const nlohmann::json& before, nlohmann::json& after, const std::string& manager,
                   const std::string& api_version, const std::string& time, FieldScope scope,
                   const std::string& subresource);

struct ApplyConflict {
  std::string manager;
  FieldPath path;
};
struct ApplyOutcome {
  nlohmann::json object;  // The merged object, its managedFields updated.
  std::vector<ApplyConflict> conflicts;  // Non-empty: refused (not forced), object unset.
};
// Server-side apply of `config` by `manager` to `live` (null when the object does not
// exist yet). `config` must already be stripped of server-owned metadata and limited to
// `scope`.
ApplyOutcome server_side_apply(const nlohmann::json& live, const nlohmann::json& config, const std::string& manager,
                               bool force, FieldScope scope, const std::string& api_version,
                               const std::string& time, const std::string& subresource);
// "Apply failed with 2 conflicts: conflicts with "a":\n- .spec.x\n- .spec.y".
std::string conflict_message(const std::vector<ApplyConflict>& conflicts);

}  // namespace gaia::standin::detail
