#pragma once
// In-process Jsonnet evaluation of an app spec: config.jsonnet, overrides, then
// main.jsonnet called with (config, deps, app). This is what runs inside the sandbox's
// child process (render/sandbox.hpp); callers normally use render/renderer.hpp.
//
// Hermetic imports: a file may import only from the app directory (and below), a
// `vendor/` folder in or beside the app directory, the library paths given by the
// caller (-J, GAIA_PATH), and the built-in 'gaia.libsonnet'. Nothing reads the
// environment, the clock or randomness.

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/config_source.hpp"
#include "lib/error.hpp"
#include "render/workload.hpp"

namespace gaia::render {

// A file imported from outside the app directory (vendor/, -J, GAIA_PATH), or a path
// probed there that did not exist. The render cache re-checks these on lookup, since
// the app directory's hash does not cover them.
struct ExternalFile {
  std::string path;  // Canonical absolute path.
  std::string hash;  // content_hash of the file; empty when it did not exist.
  bool exists = false;
  bool operator==(const ExternalFile&) const = default;
};

struct EvalInput {
  std::filesystem::path app_dir;  // Absolute and canonical.
  std::string display_dir;        // How app_dir is shown in diagnostics ("" = bare names).
  std::string app_name;
  std::vector<std::filesystem::path> jpaths;  // -J then GAIA_PATH entries, first wins.
  nlohmann::json deps = nlohmann::json::object();  // alias -> imported outputs.
  nlohmann::json app = nlohmann::json::object();   // {name, version, tenant}.
  nlohmann::json overrides = nlohmann::json::object();
  const ConfigSnapshot* config = nullptr;
  unsigned max_stack = 500;
  size_t max_output_bytes = size_t{16} << 20;
  // Evaluate config.jsonnet (with the overrides) only; main.jsonnet is not imported and
  // the raw `main` is null. For the conditions of dependencies, decided before a render.
  bool config_only = false;
  // Try the files folded into one evaluation first (EvalOutput::folded). Off only where
  // the tests compare both ways.
  bool fold = true;
  // The render's time limit (0: none), which the evaluation keeps within when it would
  // evaluate a second time (see evaluate_jsonnet).
  int timeout_ms = 0;
};

struct EvalOutput {
  RawRender raw;
  std::vector<ExternalFile> external;  // Sorted by path.
  // Whether the render's files were folded into one evaluation (one parse of the
  // standard library) rather than evaluated one by one; the output is the same.
  bool folded = false;
  // Calls of std.format and std.escapeStringJson the faster natives answered
  // (render/jsonnet_std.hpp); the rest ran libjsonnet's own code.
  int std_natives_taken = 0;
};

// `progress` is told the display name of each file as its evaluation starts.
Result<EvalOutput> evaluate_jsonnet(const EvalInput& in,
                                    const std::function<void(std::string_view)>& progress = {});

// Turns a libjsonnet error message into a diagnostic located at the innermost stack
// frame in a user file (not the built-in library), with absolute paths under `app_dir`
// shown under `display_dir`. The whole message and trace are kept in the message.
// `fallback_file` is used when no frame names a user file.
Diagnostic jsonnet_error_to_diagnostic(std::string_view message, const std::string& app_dir,
                                       const std::string& display_dir, const std::string& fallback_file);

// Shows `path` as the user should see it: under display_dir when it is inside app_dir.
std::string display_path(const std::string& path, const std::string& app_dir, const std::string& display_dir);

// JSON forms used for the sandbox pipe and the render cache.
nlohmann::json to_json(const ConfigRead& r);
ConfigRead config_read_from_json(const nlohmann::json& j);  // Throws nlohmann::json::exception.
nlohmann::json to_json(const RawRender& r);
RawRender raw_render_from_json(const nlohmann::json& j);    // Throws nlohmann::json::exception.
nlohmann::json to_json(const ExternalFile& f);
ExternalFile external_file_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Diagnostics& ds);
Diagnostics diagnostics_from_json(const nlohmann::json& j);

}  // namespace gaia::render
