#pragma once
// The inputs of a render besides the spec: parameter overrides, the Jsonnet library
// path, the repository roots, the evaluation limits and the --config-file layer.
//
// RenderSettings is what the user asked for (file names, --set strings). It is loaded
// once per command into RenderInputs: the --values and --config-file files are read and
// parsed there, and every later step (rendering the chain, recording what each app was
// rendered with, resolving a set again inside a retried transaction) uses that one
// value, so a file is never read twice and cannot differ between two reads. Each
// deployed app keeps its RenderInputs in AppRecord::render_inputs (to_json/from_json
// below), so a config change re-renders it exactly as it was submitted.

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/config_center.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"
#include "ops/loader.hpp"
#include "render/chain.hpp"
#include "render/renderer.hpp"
#include "spec/resolve.hpp"

namespace gaia::ops {

// Limits of one Jsonnet evaluation (render/sandbox.hpp enforces them).
struct RenderLimits {
  int timeout_ms = 10000;
  size_t max_output_bytes = size_t{16} << 20;
  size_t memory_limit_bytes = size_t{2048} << 20;
};

// What the user asked the renders to use, before any file is read.
struct RenderSettings {
  std::vector<std::string> sets;                 // --set key=value
  std::vector<std::string> values;               // --values FILE
  std::string config_file;                       // --config-file FILE ("" for none)
  std::vector<std::filesystem::path> jpaths;     // -J, then GAIA_PATH
  std::vector<std::filesystem::path> repo;       // --repo or GAIA_REPO; empty: the specs' parents
  RenderLimits limits;
  std::filesystem::path cache_dir;               // Empty: no render cache (--no-cache).
};

// A --config-file as it was read: its name (for messages) and its parsed document.
struct ConfigFileInput {
  std::string path;
  nlohmann::json document = nlohmann::json::object();
};

// The loaded inputs. As recorded in an app, `overrides` are empty for apps deployed as
// dependencies (--set and --values apply to the roots only) and `repo` holds the
// repository roots resolution used.
struct RenderInputs {
  nlohmann::json overrides = nlohmann::json::object();
  std::vector<std::string> jpaths;
  std::vector<std::string> repo;
  RenderLimits limits;
  std::optional<ConfigFileInput> config_file;
};

// The stored form is {overrides, jpaths, repo, limits: {timeout_ms, max_output_bytes,
// memory_limit_bytes}, config_file?: {path, document}}. Reading is lenient: records
// written before a field existed get its default.
void to_json(nlohmann::json& j, const RenderInputs& in);
void from_json(const nlohmann::json& j, RenderInputs& in);

// Reads the --values files and the --config-file once; every error of both is
// collected (overrides first), as one list.
Result<RenderInputs> load_render_inputs(const RenderSettings& settings);

// The --config-file layer of `inputs` (empty without one). A document that no longer
// parses (a record written by an older gaia) counts as no file.
ConfigFileLayer config_file_layer(const RenderInputs& inputs);

// Chain options for rendering in `tenant`: the limits, jpaths and overrides of
// `inputs`, the config and label centers of `center` (the store's, for plan and
// submit; none for render and validate, which need no cluster) with the file layer
// over them.
render::ChainOptions chain_options(const RenderInputs& inputs, const std::string& tenant,
                                   const StoreConfigSource* center = nullptr);

// Render options for re-rendering a deployed app as it was submitted: its recorded
// inputs, with the config snapshot given (the centers as they are now), and the counts
// `gaia scale` set (AppRecord::scale, `app.scale` in main.jsonnet).
render::RenderOptions record_render_options(const AppRecord& app, const ConfigSnapshot& snapshot);

// The release a deployed app binds its dependency `d` to: as recorded at its submit (by
// alias), else the one `d` names with release:, else the release named after the app.
std::string recorded_binding(const AppRecord& app, const spec::Dependency& d);

// Renders `req` as the release `app` is, with its dependencies bound as recorded (the
// workload's name, app.name in the templates, `near`).
void set_release_names(render::RenderRequest& req, const AppRecord& app);

// What the resolver asks for the `when:` of dependencies (spec/resolve.hpp): the
// evaluated config.jsonnet of an app with the centers and file layer of `options`, and
// the overrides only for a root (as the chain renders it).
spec::ConfigEvaluator config_evaluator(const render::ChainOptions& options);

}  // namespace gaia::ops
