#pragma once
// Turning the paths a user names into specs, a repository, running apps and config
// layers: the steps render, deps, validate, plan and submit share. The CLI reads the
// environment (GAIA_REPO, GAIA_PATH, the cache folder) and passes what it found; these
// functions read only the files they are given.

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/config_center.hpp"
#include "lib/config_source.hpp"
#include "lib/running_apps.hpp"
#include "render/cache.hpp"
#include "spec/repository.hpp"

namespace gaia::ops {

// Expands each PATH: an app directory (has app.yaml) stays; a folder without app.yaml is
// taken as a folder of app directories (its children that have app.yaml). Errors for
// paths that do not exist or hold no spec.
Result<std::vector<std::filesystem::path>> expand_spec_paths(const std::vector<std::string>& paths);

// The repository at `roots` (--repo or GAIA_REPO); when there are none, the parent
// folders of the given spec dirs, so `gaia deps examples/web` finds its siblings.
Result<spec::SpecRepository> open_repository(const std::vector<std::filesystem::path>& roots,
                                             const std::vector<std::filesystem::path>& spec_dirs);

// A YAML or JSON list of {name, version, tenant?, outputs?, ready?}: the apps dependency
// resolution treats as already running (--running FILE). Empty for an empty name.
Result<InMemoryRunningApps> load_running(const std::string& file);

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

// Reads and parses FILE (YAML or JSON). An empty name is an empty layer.
Result<ConfigFileLayer> load_config_file_layer(const std::string& file);
// The same from a document already read (render inputs); `file` names it in errors.
Result<ConfigFileLayer> parse_config_file(const nlohmann::json& document, const std::string& file);

// What a tenant's renders see: the store's centers (when `center` is given) with the
// file layer over them.
ConfigSnapshot layered_snapshot(const StoreConfigSource* center, const std::string& tenant, const ConfigFileLayer& file);

// A render cache in `dir`; null when `dir` is empty (--no-cache, or no cache folder).
std::unique_ptr<render::RenderCache> open_render_cache(const std::filesystem::path& dir);

// Shown paths: relative to the current directory when below it, else as given.
std::string display_path(const std::filesystem::path& p);

// The canonical absolute form of `p` (as given when that fails): what saved plans and
// apply sources compare, so two spellings of one folder are one.
std::string canonical_path(const std::filesystem::path& p);

}  // namespace gaia::ops
