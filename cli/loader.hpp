#pragma once
// Turning command-line paths into specs, a repository, a plan and renders: the steps
// render, deps and validate share. Everything the libraries must not do themselves
// (reading the environment, files named on the command line) happens here.

#include <memory>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "lib/config_center.hpp"
#include "lib/config_source.hpp"
#include "lib/running_apps.hpp"
#include "render/cache.hpp"
#include "render/chain.hpp"
#include "spec/repository.hpp"
#include "spec/resolve.hpp"

namespace gaia::cli {

// Flags shared by every command that renders.
struct RenderFlags {
  std::vector<std::string> sets;         // --set key=value
  std::vector<std::string> values;       // --values FILE
  std::string config_file;               // --config-file FILE
  std::string running_file;              // --running FILE
  int timeout_ms = 10000;                // --render-timeout
  size_t max_output_mib = 16;            // --render-max-output
  size_t memory_mib = 2048;              // --render-memory
  bool no_cache = false;                 // --no-cache

  void add_to(CLI::App* cmd, bool with_overrides = true);
};

// Expands each PATH: an app directory (has app.yaml) stays; a folder without app.yaml is
// taken as a folder of app directories (its children that have app.yaml). Errors for
// paths that do not exist or hold no spec.
Result<std::vector<std::filesystem::path>> expand_spec_paths(const std::vector<std::string>& paths);

// --repo / GAIA_REPO; when neither is given, the parent folders of the given spec dirs,
// so `gaia deps examples/web` finds its siblings.
Result<spec::SpecRepository> open_repository(const Globals& g, const std::vector<std::filesystem::path>& spec_dirs);

// --running FILE (YAML or JSON list of {name, version, tenant?, outputs?}): the apps
// dependency resolution treats as already running. Empty without the flag.
Result<InMemoryRunningApps> load_running(const std::string& file);

// --config-file FILE: `config:` (keys, dotted or nested) and `labels:` (kind -> name ->
// key -> value) as the config and label centers' values.
Result<ConfigSnapshot> load_config_file(const std::string& file);

// A --config-file as a layer over the store's centers: its config leaves (each beats the
// center's value at that path, and the center's other keys stay), its labels (each beats
// the center's label), and the parsed document, which submit records in the app's
// render inputs so a later re-render layers the same values.
struct ConfigFileLayer {
  std::string file;
  nlohmann::json document = nlohmann::json::object();
  ConfigLayer config;
  std::map<std::string, std::map<std::string, std::map<std::string, ConfigValue>>> labels;
};
Result<ConfigFileLayer> load_config_file_layer(const std::string& file);
// The same from a document already read (render inputs); `file` names it in errors.
Result<ConfigFileLayer> parse_config_file(const nlohmann::json& document, const std::string& file);

// What a tenant's renders see: the store's centers (when `center` is given) with the
// file layer over them.
ConfigSnapshot layered_snapshot(const StoreConfigSource* center, const std::string& tenant, const ConfigFileLayer& file);

// The render cache under $XDG_CACHE_HOME/gaia/render (or ~/.cache/gaia/render).
std::unique_ptr<render::RenderCache> open_render_cache(bool disabled);

// Chain options from the globals and flags (jpaths, tenant, overrides, config). Renders
// read the config and label centers from `center` (the store's, for submit and plan)
// with --config-file layered over them (file beats center, for local testing); without
// a center (render, validate: no cluster needed) only the file is read.
Result<render::ChainOptions> chain_options(const Globals& g, const RenderFlags& f,
                                           const StoreConfigSource* center = nullptr);

// Shown paths: relative to the current directory when below it, else as given.
std::string display_path(const std::filesystem::path& p);

}  // namespace gaia::cli
