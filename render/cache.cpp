#include "render/cache.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "lib/hash.hpp"

namespace gaia::render {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int k_format = 1;
constexpr size_t k_max_manifests = 8;

json manifest_to_json(const CacheManifest& m) {
  json ext = json::array();
  for (const auto& f : m.external) ext.push_back(to_json(f));
  return json{{"raw", to_json(m.raw)}, {"external", std::move(ext)}};
}

CacheManifest manifest_from_json(const json& j) {
  CacheManifest m;
  m.raw = raw_render_from_json(j.at("raw"));
  for (const auto& f : j.at("external")) m.external.push_back(external_file_from_json(f));
  return m;
}

// The manifests of an entry, or nullopt if it is missing or unreadable.
std::optional<std::vector<json>> load_manifests(RenderCache& cache, const std::string& key) {
  auto text = cache.load(key);
  if (!text) return std::nullopt;
  try {
    json j = json::parse(*text);
    if (j.at("format").get<int>() != k_format) return std::nullopt;
    return j.at("manifests").get<std::vector<json>>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

bool external_still_holds(const ExternalFile& f) {
  std::error_code ec;
  if (!f.exists) return !fs::exists(f.path, ec);
  std::ifstream in(f.path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  return content_hash(ss.str()) == f.hash;
}

}  // namespace

std::optional<std::string> MemoryRenderCache::load(const std::string& key) {
  std::lock_guard lock(m_mutex);
  auto it = m_entries.find(key);
  if (it == m_entries.end()) return std::nullopt;
  return it->second;
}

void MemoryRenderCache::store(const std::string& key, const std::string& value) {
  std::lock_guard lock(m_mutex);
  m_entries[key] = value;
}

size_t MemoryRenderCache::size() const {
  std::lock_guard lock(m_mutex);
  return m_entries.size();
}

fs::path DirectoryRenderCache::path_of(const std::string& key) const {
  return m_dir / key.substr(0, 2) / key;
}

std::optional<std::string> DirectoryRenderCache::load(const std::string& key) {
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void DirectoryRenderCache::store(const std::string& key, const std::string& value) {
  static std::atomic<unsigned> counter{0};
  const fs::path target = path_of(key);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) return;
  const fs::path tmp = target.parent_path() / fmt::format(".{}.tmp.{}.{}", key, ::getpid(), counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return;
    out << value;
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, target, ec);
  if (ec) fs::remove(tmp, ec);
}

bool read_still_holds(const ConfigRead& read, const ConfigSnapshot& config) {
  std::optional<ConfigValue> now;
  if (read.kind == "config") {
    now = config.get_config(read.key);
  } else if (read.kind == "label") {
    // "kind/name/key": kinds and names have no '/', label keys may ("gaia.io/zone").
    auto a = read.key.find('/');
    auto b = a == std::string::npos ? a : read.key.find('/', a + 1);
    if (b == std::string::npos) return false;
    now = config.get_label(read.key.substr(0, a), read.key.substr(a + 1, b - a - 1), read.key.substr(b + 1));
  } else {
    return false;
  }
  if (read.defaulted) return !now.has_value();
  return now && now->value == read.value && now->revision == read.revision;
}

std::optional<CacheManifest> cache_lookup(RenderCache& cache, const std::string& key, const ConfigSnapshot& config,
                                          bool check_external) {
  auto manifests = load_manifests(cache, key);
  if (!manifests) return std::nullopt;
  for (const auto& mj : *manifests) {
    CacheManifest m;
    try {
      m = manifest_from_json(mj);
    } catch (const json::exception&) {
      return std::nullopt;
    }
    bool ok = std::all_of(m.raw.reads.begin(), m.raw.reads.end(),
                          [&](const ConfigRead& r) { return read_still_holds(r, config); }) &&
              (!check_external || std::all_of(m.external.begin(), m.external.end(), external_still_holds));
    if (ok) return m;
  }
  return std::nullopt;
}

void cache_store(RenderCache& cache, const std::string& key, const CacheManifest& manifest) {
  std::vector<json> manifests = load_manifests(cache, key).value_or(std::vector<json>{});
  json fresh = manifest_to_json(manifest);
  // A manifest with the same dependencies replaces the old one rather than piling up.
  std::erase_if(manifests, [&](const json& m) {
    if (!m.is_object() || !m.contains("raw") || !m["raw"].is_object()) return true;
    return m["raw"].value("reads", json::array()) == fresh["raw"]["reads"] &&
           m.value("external", json::array()) == fresh["external"];
  });
  manifests.insert(manifests.begin(), std::move(fresh));
  if (manifests.size() > k_max_manifests) manifests.resize(k_max_manifests);
  json entry{{"format", k_format}, {"manifests", std::move(manifests)}};
  cache.store(key, entry.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace gaia::render
