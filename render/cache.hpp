#pragma once
// The render cache. Like ccache's direct mode it is manifest-based: the key is a content
// hash of every input known before evaluation (all files of the app dir, deps, overrides,
// tenant, library versions), and an entry under a key holds one or more manifests, each
// listing what that render also depended on - the config/label values it read and the
// files it imported from outside the app dir (with hashes, and probed paths that did
// not exist). A lookup returns the render of the first manifest that still holds, so a
// hit runs no Jsonnet at all.
//
// RenderCache itself is a plain key -> bytes store so that other backends (the store,
// a shared directory) are easy to add; the manifest logic is in cache_lookup/cache_store.

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lib/config_source.hpp"
#include "render/evaluator.hpp"
#include "render/workload.hpp"

namespace gaia::render {

class RenderCache {
 public:
  virtual ~RenderCache() = default;
  virtual std::optional<std::string> load(const std::string& key) = 0;
  // Best effort: a cache that cannot store simply misses next time.
  virtual void store(const std::string& key, const std::string& value) = 0;
};

class MemoryRenderCache final : public RenderCache {
 public:
  std::optional<std::string> load(const std::string& key) override;
  void store(const std::string& key, const std::string& value) override;
  size_t size() const;

 private:
  mutable std::mutex m_mutex;
  std::map<std::string, std::string> m_entries;
};

// One file per key under `dir` (DIR/ab/abcdef...), written to a temporary file and
// renamed into place so that readers never see half an entry and concurrent writers of
// one key do not corrupt it.
class DirectoryRenderCache final : public RenderCache {
 public:
  explicit DirectoryRenderCache(std::filesystem::path dir) : m_dir(std::move(dir)) {}
  std::optional<std::string> load(const std::string& key) override;
  void store(const std::string& key, const std::string& value) override;
  std::filesystem::path path_of(const std::string& key) const;

 private:
  std::filesystem::path m_dir;
};

// What a render depended on beyond its key, and what it produced.
struct CacheManifest {
  RawRender raw;                       // raw.reads are the config/label reads to re-check.
  std::vector<ExternalFile> external;  // Files (and misses) outside the app dir.
};

// The manifest of the cached render under `key` whose reads still match `config` and
// whose external files are unchanged; nullopt on a miss or an unreadable (corrupt)
// entry. `check_external` false skips the file check, for keys that already cover those
// files (a spec bundle's hash, RenderRequest::sources_key).
std::optional<CacheManifest> cache_lookup(RenderCache& cache, const std::string& key, const ConfigSnapshot& config,
                                          bool check_external = true);

// Adds `manifest` to the entry under `key` (newest first; at most a few manifests are
// kept per key). A corrupt entry is replaced.
void cache_store(RenderCache& cache, const std::string& key, const CacheManifest& manifest);

// True if `read` would be read the same way from `config` now.
bool read_still_holds(const ConfigRead& read, const ConfigSnapshot& config);

}  // namespace gaia::render
