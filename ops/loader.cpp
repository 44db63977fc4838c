#include "ops/loader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "render/overrides.hpp"

namespace gaia::ops {

namespace fs = std::filesystem;

std::string display_path(const fs::path& p) {
  std::error_code ec;
  fs::path cwd = fs::current_path(ec);
  fs::path abs = fs::absolute(p, ec).lexically_normal();
  if (!ec) {
    fs::path rel = abs.lexically_relative(cwd);
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return p.string();
}

std::string canonical_path(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return (ec ? p : c).string();
}

Result<std::vector<fs::path>> expand_spec_paths(const std::vector<std::string>& paths) {
  std::vector<fs::path> out;
  Diagnostics errors;
  for (const auto& raw : paths) {
    fs::path p(raw);
    std::error_code ec;
    if (!fs::exists(p, ec)) {
      errors.push_back({{raw}, "", "no such file or directory", "give an app directory (with app.yaml) or a folder of them"});
      continue;
    }
    if (!fs::is_directory(p, ec)) {
      errors.push_back({{raw}, "", "is a file, expected an app directory containing app.yaml",
                        fmt::format("pass its directory instead: {}", p.parent_path().empty() ? "." : p.parent_path().string())});
      continue;
    }
    if (fs::exists(p / "app.yaml", ec)) {
      out.push_back(p);
      continue;
    }
    std::vector<fs::path> children;
    for (const auto& entry : fs::directory_iterator(p, ec))
      if (entry.is_directory() && fs::exists(entry.path() / "app.yaml")) children.push_back(entry.path());
    if (ec) {
      errors.push_back({{raw}, "", fmt::format("cannot read directory: {}", ec.message()), ""});
      continue;
    }
    if (children.empty()) {
      errors.push_back({{raw}, "", "no app.yaml here or in any direct subdirectory",
                        "an app directory holds app.yaml, config.jsonnet and main.jsonnet; `gaia init NAME` creates one"});
      continue;
    }
    std::sort(children.begin(), children.end());
    out.insert(out.end(), children.begin(), children.end());
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

Result<spec::SpecRepository> open_repository(const std::vector<fs::path>& given_roots,
                                             const std::vector<fs::path>& spec_dirs) {
  std::vector<fs::path> roots = given_roots;
  if (roots.empty()) {
    std::set<fs::path> seen;
    for (const auto& d : spec_dirs) {
      std::error_code ec;
      fs::path parent = fs::weakly_canonical(fs::absolute(d, ec), ec).parent_path();
      if (seen.insert(parent).second) roots.push_back(parent);
    }
  }
  return spec::SpecRepository::load(roots);
}

namespace {

Result<nlohmann::json> load_yaml_or_json(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(Diagnostic{{file}, "", "cannot read file", "check the path and its permissions"});
  std::stringstream ss;
  ss << in.rdbuf();
  return render::yaml_to_json(ss.str(), file);
}

// The leaves of the file's nested `config:` mapping as entries: each beats the value at
// its path, so the center's sibling keys stay visible (an empty mapping is a leaf too).
void config_leaves(const nlohmann::json& value, const std::string& prefix, ConfigLayer& out, const std::string& source) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [k, v] : value.items()) config_leaves(v, prefix.empty() ? k : prefix + "." + k, out, source);
    return;
  }
  if (!prefix.empty()) out.push_back(ConfigEntry{"file", prefix, value, 0, source});
}

}  // namespace

Result<InMemoryRunningApps> load_running(const std::string& file) {
  InMemoryRunningApps running;
  if (file.empty()) return running;
  auto doc = load_yaml_or_json(file);
  if (!doc) return fail(doc.error());
  if (!doc->is_array())
    return fail(Diagnostic{{file}, "", "expected a list of running apps", "each item: {name: zookeeper, version: 3.8.1, outputs: {...}}"});
  Diagnostics errors;
  for (size_t i = 0; i < doc->size(); ++i) {
    const auto& item = (*doc)[i];
    std::string path = fmt::format("[{}]", i);
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string() || !item.contains("version") ||
        !item["version"].is_string()) {
      errors.push_back({{file}, path, "expected an object with string fields name and version", ""});
      continue;
    }
    RunningApp app;
    app.name = item["name"];
    app.version = item["version"];
    app.tenant = item.value("tenant", std::string("default"));
    if (item.contains("outputs")) app.outputs = item["outputs"];
    app.ready = item.value("ready", true);
    // A release named otherwise than its app says which app it runs, and which tenants
    // it is exported to.
    if (auto it = item.find("app"); it != item.end()) {
      if (!it->is_string()) {
        errors.push_back({{file}, path + ".app", "expected the app the release runs (a string)", "app: hdfs"});
        continue;
      }
      if (it->get<std::string>() != app.name) app.app = *it;
    }
    if (auto it = item.find("exports"); it != item.end()) {
      if (!it->is_array() || std::any_of(it->begin(), it->end(), [](const nlohmann::json& t) { return !t.is_string(); })) {
        errors.push_back({{file}, path + ".exports", "expected a list of tenant names", "exports: [analytics]"});
        continue;
      }
      app.exports = it->get<std::vector<std::string>>();
    }
    if (auto it = item.find("requires"); it != item.end()) {
      if (!it->is_object()) {
        errors.push_back({{file}, path + ".dependency_ranges", "expected an object of dependency name to range",
                          "requires: {hdfs: ~5.2.0}"});
        continue;
      }
      for (const auto& [name, range] : it->items()) {
        if (!range.is_string()) {
          errors.push_back({{file}, path + ".dependency_ranges." + name, "expected a range (a string)", "e.g. ~5.2.0"});
          continue;
        }
        app.dependency_ranges.push_back({name, range.get<std::string>()});
      }
    }
    running.add(std::move(app));
  }
  if (!errors.empty()) return fail(std::move(errors));
  return running;
}

Result<ConfigFileLayer> parse_config_file(const nlohmann::json& document, const std::string& file) {
  ConfigFileLayer layer;
  layer.file = file;
  layer.document = document;
  if (!document.is_object())
    return fail(Diagnostic{{file}, "", "expected a mapping with `config:` and/or `labels:`", ""});
  Diagnostics errors;
  std::string source = "file:" + file;
  for (const auto& [key, value] : document.items()) {
    if (key == "config") {
      if (!value.is_object()) errors.push_back({{file}, "config", "expected a mapping of keys to values", ""});
      else config_leaves(value, "", layer.config, source);
    } else if (key == "labels") {
      if (!value.is_object()) {
        errors.push_back({{file}, "labels", "expected kind -> name -> key -> value", ""});
        continue;
      }
      for (const auto& [kind, names] : value.items()) {
        if (kind != "node" && kind != "app" && kind != "tenant") {
          errors.push_back({{file}, "labels." + kind, "unknown label kind", "use node, app or tenant"});
          continue;
        }
        if (!names.is_object()) continue;
        for (const auto& [name, kv] : names.items()) {
          if (!kv.is_object()) continue;
          for (const auto& [k, v] : kv.items()) layer.labels[kind][name][k] = ConfigValue{v, 0, source};
        }
      }
    } else {
      errors.push_back({{file}, key, "unknown top-level key", "use `config:` and `labels:`"});
    }
  }
  if (!errors.empty()) return fail(std::move(errors));
  return layer;
}

Result<ConfigFileLayer> load_config_file_layer(const std::string& file) {
  if (file.empty()) return ConfigFileLayer{};
  auto doc = load_yaml_or_json(file);
  if (!doc) return fail(doc.error());
  return parse_config_file(*doc, file);
}

ConfigSnapshot layered_snapshot(const StoreConfigSource* center, const std::string& tenant, const ConfigFileLayer& file) {
  ConfigSnapshot snap;
  std::vector<ConfigLayer> layers = center ? center->config_layers(tenant) : std::vector<ConfigLayer>{};
  layers.push_back(file.config);
  snap.config = resolve_config(layers);
  if (center) snap.more_labels = center->label_lookup(tenant);
  for (const auto& [kind, names] : file.labels)
    for (const auto& [name, kv] : names)
      for (const auto& [k, v] : kv) snap.labels[kind][name][k] = v;
  return snap;
}

std::unique_ptr<render::RenderCache> open_render_cache(const fs::path& dir) {
  if (dir.empty()) return nullptr;
  return std::make_unique<render::DirectoryRenderCache>(dir);
}

}  // namespace gaia::ops
