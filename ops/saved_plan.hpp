#pragma once
// Saved plans: `gaia plan -f PATH... --out plan.json` writes the reviewed decision's
// inputs (the rendered records, the set's flags) with a hash of every input file and the
// store revision; `gaia apply plan.json` applies exactly those records and refuses when
// anything drifted since (what gets applied is what was reviewed).

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "controllers/apply.hpp"
#include "ops/apply_set.hpp"

namespace gaia::ops {

inline constexpr const char* k_plan_format = "gaia-plan/v1";

// Where the inputs of a set live: directories hashed file by file (the specs of every
// app the set renders, their vendor/ folders, -J and GAIA_PATH folders), repository
// roots of which every app.yaml is hashed (they decide resolution), and single files
// (--values, --config-file).
struct InputScope {
  std::vector<std::string> dirs;
  std::vector<std::string> repo_roots;
  std::vector<std::string> files;
};

struct SavedPlan {
  std::string gaia_version;
  std::string store;      // Store file the plan was made against (canonical).
  int64_t revision = 0;   // Store revision it was made at.
  std::string created;    // RFC 3339.
  std::string tenant, source;
  bool prune = false;
  std::vector<std::string> paths;     // The -f arguments, canonical.
  std::vector<std::string> set_dirs;  // What they expanded to.
  nlohmann::json overrides = nlohmann::json::object();  // --set, --values, --config-file as given.
  InputScope scope;
  std::map<std::string, std::string> inputs;  // Canonical path -> content hash.
  ApplyRequest request;                       // The rendered records, reused apps, secrets.
  // The records' spec bundles (hash -> JSON text, ops/bundle.hpp), committed with them:
  // the files as they were when the plan was made, which the drift check guarantees are
  // the files still there.
  std::map<std::string, std::string> bundles;
  nlohmann::json decision = nlohmann::json::array();  // [{name, action, version}] reviewed.
};

// The scope of a set rendered with `settings` (see InputScope).
InputScope input_scope(const RenderSettings& settings, const Submission& s);

// Hashes every file of `scope` but `plan_file` (content hash; a directory's files
// recursively, skipping .git). Unreadable files are errors.
Result<std::map<std::string, std::string>> hash_inputs(const InputScope& scope,
                                                       const std::filesystem::path& plan_file);

// The reviewed actions, as stored in the plan and compared at apply time.
nlohmann::json decision_summary(const ApplyPlan& plan);

Result<void> write_saved_plan(const std::filesystem::path& file, const SavedPlan& plan);
// Errors: unreadable file, not JSON, another format, missing fields.
Result<SavedPlan> read_saved_plan(const std::filesystem::path& file);

// Everything that differs from when the plan was saved, one line each ("examples/web/
// config.jsonnet changed", "store revision is 15, the plan was made at 12", "the set
// now holds examples/new"); empty when nothing drifted.
// The plan file itself is never an input, even when saved inside a spec directory.
std::vector<std::string> plan_drift(const SavedPlan& plan, const std::filesystem::path& plan_file,
                                    const std::string& store, int64_t revision, const std::string& gaia_version);

// "gaia 0.1.0 (gaia.libsonnet 0123456789ab)": the version `gaia --version` prints
// (lib/version.hpp) and the hash of the embedded Jsonnet library.
std::string gaia_version();

// `gaia plan -f PATH... --out FILE`: the apply decision for the set on the state read
// from `ws` (store file `store`), saved to `file` with everything apply checks for drift.
struct PlanSaved {
  ApplyPlan plan;
  SavedPlan saved;
};
Result<PlanSaved> save_plan(const Workspace& ws, const SetRequest& request, const std::string& store,
                            const std::filesystem::path& file);

// `gaia apply PLAN.json`: refuses with one error per drifted input (nothing applied), or
// commits exactly the reviewed records when the store is still at the plan's revision
// and the decision made now is the reviewed one; then the controllers inline.
Result<Applied> apply_saved_plan(const Workspace& ws, const std::filesystem::path& file, const std::string& store,
                                 const ApplyOptions& options);

}  // namespace gaia::ops
