#pragma once
// Rendering an app spec: config.jsonnet, --set/--values overrides, then main.jsonnet
// called with (config, deps, app), evaluated in a sandboxed child process
// (render/sandbox.hpp) and validated into a gaia::Workload (render/workload.hpp).
// Results are cached by content hash of every input (render/cache.hpp).
//
// Cost: libjsonnet 0.18 parses its standard library once per file evaluated (the
// wrapper, config.jsonnet, main.jsonnet, gaia.libsonnet and every other import), which
// dominates a render; forking the sandbox costs about a millisecond. Hence the cache.
//
// The library reads no environment: the caller turns -J and GAIA_PATH into `jpaths`
// and takes the config snapshot for the tenant.

#include <memory>
#include <cstddef>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "lib/config_source.hpp"
#include "lib/error.hpp"
#include "lib/workload.hpp"
#include "render/cache.hpp"
#include "render/workload.hpp"
#include "spec/app_spec.hpp"

namespace gaia::render {

struct RenderOptions {
  // Library search path after the importing file's directory, <app>/vendor and
  // <app>/../vendor: -J entries then GAIA_PATH entries; the first match wins.
  std::vector<std::filesystem::path> jpaths;
  // Deep-merged over config.jsonnet's object (render/overrides.hpp builds it).
  nlohmann::json overrides = nlohmann::json::object();
  // Shared, not copied: every render of a chain, and every config evaluation of a
  // resolution, reads the same snapshot, and at 5,000 nodes a copy of its labels cost
  // more than a render (docs/benchmarks.md, "Round eleven"). Null: nothing in it.
  std::shared_ptr<const ConfigSnapshot> config;
  const ConfigSnapshot& config_snapshot() const;
  std::string tenant = "default";
  // The replica counts `gaia scale` set, by role (AppRecord::scale). main.jsonnet sees
  // them as `app.scale`, read through gaia.replicas(app, role, default), so a template
  // whose checks or other values depend on a role's count renders (and refuses) a scaled
  // count as it would the same count submitted through its config.
  std::map<std::string, int> scale;
  // How the app directory is shown in diagnostics (e.g. "examples/hdfs" as typed by the
  // user). Empty: the parent of spec->yaml_file, or bare file names if that is empty too.
  std::string display_dir;
  unsigned max_stack = 500;
  size_t max_output_bytes = size_t{16} << 20;
  int timeout_ms = 10000;
  size_t memory_limit_bytes = size_t{2} << 30;
};

// Counters for tests and `--verbose` output.
struct RenderStats {
  int evaluations = 0;  // Jsonnet evaluations started (sandboxed children forked).
  int heap_evaluations = 0;  // Of those, the ones whose child allocated from mimalloc
                             // (render/render_heap.hpp).
  std::string glibc_reason;  // Why the last child that did not, did not.
  int cache_hits = 0;
  int cache_misses = 0;
};

struct RenderRequest {
  const spec::AppSpec* spec = nullptr;
  // alias -> object of the outputs of the resolved dependency. Only the outputs the
  // spec imports are passed on to main.jsonnet as deps.<alias>.
  nlohmann::json deps = nlohmann::json::object();
  RenderOptions options;
  RenderStats* stats = nullptr;  // Optional.
  // A hash of every file the render can read, when the caller knows one (a spec
  // bundle's, ops/bundle.hpp). The cache key then uses it in place of the app dir's path
  // and files and the jpaths, and a hit does not re-check the files outside the app dir
  // (the bundle holds them), so renders of one bundle unpacked in different temporary
  // folders share their cache entries. Empty: the files are hashed as they are found.
  std::string sources_key;
  // Set by evaluate_config: config.jsonnet only.
  bool config_only = false;
  // The release it renders (app.name in the templates, the workload's name); empty: the
  // spec's own name. And the release each dependency alias is bound to, for `near`;
  // an alias not listed is bound to the release named after its app.
  std::string release;
  std::map<std::string, std::string> dep_releases;
};

struct Rendered {
  Workload workload;      // workload.hash is set.
  nlohmann::json document;  // The canonical gaia/v1 document (render::to_document).
  bool from_cache = false;
  // The files imported from outside the app dir (vendor/, -J, GAIA_PATH) and the paths
  // probed there that did not exist, sorted by path; on a cache hit, as the cached render
  // recorded them. With the app dir's files these are everything the render read, which
  // is what a spec bundle keeps.
  std::vector<ExternalFile> external;
};

// Every regular file below `dir` (symlinks to files included, symlinked folders not
// followed), as (path relative to `dir` with '/' separators, full path), sorted by the
// relative path: the files the render-cache key hashes, and a spec bundle holds.
std::vector<std::pair<std::string, std::filesystem::path>> app_dir_files(const std::filesystem::path& dir);

// deps.<alias> objects for main.jsonnet: for each dependency of the spec, exactly the
// outputs listed in its `import:`. Errors name a missing dependency or output; a
// conditional dependency (`when:`) absent from `deps` is left out of deps.*.
Result<nlohmann::json> build_deps(const spec::AppSpec& spec, const nlohmann::json& deps);

// Evaluates the Jsonnet (always; no cache) in a sandboxed child process.
Result<RawRender> evaluate(const RenderRequest& req);

// The cache key: a hash of every input known before evaluation (see render/cache.hpp).
std::string render_input_key(const RenderRequest& req, const nlohmann::json& built_deps);

// Evaluates config.jsonnet only (with the request's overrides and config snapshot; no
// deps, no cache): the evaluated config and what it read from the centers, for the
// conditions of the app's dependencies (spec/condition.hpp).
Result<RawRender> evaluate_config(const RenderRequest& req);
// Evaluates (or takes from `cache`), validates and builds the document.
Result<Rendered> render_app(const RenderRequest& req, RenderCache* cache = nullptr);

}  // namespace gaia::render
