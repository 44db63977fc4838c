#pragma once
// `gaia apply` / `gaia diff` (CI pipelines): converging the store to a set of rendered
// apps, as one pure decision over the cluster state. Apply commits the decision's
// batch, `apply --dry-run`, `gaia diff` and `gaia plan --out` print the very same
// decision, so what is shown is what gets applied.
//
// Deploying and updating go through plan_submit (the same placement as `gaia submit`);
// apps a previous apply of the same source created and that left the set are pruned
// through plan_delete, never one another remaining app depends on. Ownership is the
// AppRecord's `source`, written when an apply creates the app and never changed after.

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/secrets.hpp"
#include "lib/state.hpp"

namespace gaia {

struct ApplyRequest {
  std::string tenant;
  std::string source;                   // Ownership recorded on the apps this apply creates.
  std::vector<AppToDeploy> apps;        // The rendered set, dependencies first.
  std::vector<std::string> reused;      // Running apps of the tenant the set reuses.
  // App name -> config keys its app.yaml lists under `secrets:`, for the apps of the set
  // and the running apps of the tenant; their values are masked (lib/secrets.hpp) in
  // every app's diff, since a dependent may carry a dependency's secret.
  std::map<std::string, std::vector<std::string>> secrets;
  // Keep secret values in the changes (still marked `secret`): `gaia diff --show-secrets`.
  bool show_secrets = false;
  bool prune = false;
};

// One changed field of a rendered document, at a dotted path ("roles.web.replicas";
// list items with a name or key are addressed by it: "reads[web.replicas].value").
struct FieldChange {
  std::string path;
  std::string op;  // added | removed | changed
  nlohmann::json before, after;  // Null when absent; k_secret_mask ("<secret>") when masked.
  bool secret = false;
};

struct InstanceLanding {
  std::string instance;
  std::string node, address;  // Where it runs after the apply ("" while pending).
  std::string pending_reason;
};

struct AppChange {
  std::string tenant, name;
  std::string version;           // After the apply (for prune/keep: the current one).
  std::string previous_version;  // "" when the app is new.
  // deploy | update | unchanged | reuse | prune | keep (a prune refused because
  // another app still depends on it).
  std::string action;
  std::string owner;   // Source owning the app after the apply ("" = created by submit).
  std::string note;    // Why a prune was kept; that an updated app is owned elsewhere.
  std::vector<FieldChange> changes;  // For updates.
  // Instance keys: created now, deleted now (pruned apps, dropped roles and ordinals),
  // and kept but running the previous render, which the rollout controller replaces in
  // batches keeping min_available.
  std::vector<std::string> added, removed, rolling;
  std::vector<InstanceLanding> landings;  // Where the added instances land.
  // Dependencies in the set whose outputs change, which is why this app re-renders.
  std::vector<std::string> rerendered_by;
};

// An app outside the set that depends on an app whose outputs the apply changes: it
// keeps its current render until its own spec is applied or submitted again.
struct OutsideDependent {
  std::string name, depends_on;
};

struct ApplyPlan {
  Batch batch;
  std::vector<AppChange> apps;      // The set in deploy order, then reuses, prunes, keeps.
  std::vector<AppReport> affected;  // Other apps whose instances were preempted or placed.
  std::vector<OutsideDependent> dependents;
  ClusterState after;               // The state once `batch` is committed.
  int64_t revision = 0;             // Store revision of the state the plan was made on.

  bool changed() const { return !batch.empty(); }
  size_t count(const std::string& action) const;
};

// The decision. Deterministic: the same state and request give the same batch, which
// is what lets a saved plan be re-decided and compared at apply time.
ApplyPlan plan_apply(const ClusterState& state, const ApplyRequest& request);

// Field-level differences between two rendered documents (the top-level `hash` is left
// out: it changes whenever anything does). Changes whose value reveals one of
// `secret_values` are marked secret and, unless `show_secrets`, masked.
std::vector<FieldChange> diff_documents(const nlohmann::json& before, const nlohmann::json& after,
                                        const std::vector<std::string>& secret_values, bool show_secrets = false);

}  // namespace gaia
