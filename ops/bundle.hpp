#pragma once
// Spec bundles: the files an app was rendered from, kept in the store under
// bundles/<hash> (AppRecord::bundle), so that any machine sharing the store can render
// it again exactly as it was submitted, even after the spec folder changed or is gone
// (docs/store.md#spec-bundles).
//
// A bundle holds every regular file of the app directory (the set the render-cache key
// hashes, render::app_dir_files) and every file the render imported from outside it
// (vendor/ beside it, -J, GAIA_PATH: Rendered::external), each under its canonical
// absolute path, plus the app directory and the library paths. Its canonical JSON form
// is what the store keeps, and the content hash of that text names it, so the same files
// always give the same key and two apps submitted from one folder share one value.
//
// To render from a bundle it is unpacked into a temporary folder, each file at
// <root>/<its absolute path>, so relative imports, the vendor/ beside the app dir and
// the library paths (<root>/<jpath>) resolve to the same files as on the machine that
// submitted it.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"
#include "render/evaluator.hpp"
#include "spec/app_spec.hpp"

namespace gaia::ops {

inline constexpr const char* k_bundle_format = "gaia-bundle/1";

// The largest bundle (its JSON text) gaia stores. A bundle is one store value, written
// in the same commit as the app record; etcd takes at most 1.5 MiB per request and gaia
// refuses single values over about 0.7 MiB even through its journal (docs/store.md), so
// half a MiB leaves room for the record and the events beside it.
inline constexpr size_t k_max_bundle_bytes = size_t{512} << 10;

struct Bundle {
  std::string app_dir;                       // Canonical absolute.
  std::vector<std::string> jpaths;           // Canonical absolute, in search order.
  std::map<std::string, std::string> files;  // Canonical absolute path -> content.

  size_t content_bytes() const;
};

// A bundle as the store keeps it: its canonical JSON text and that text's hash.
struct PackedBundle {
  std::string hash;  // content_hash of `json` (32 hex digits).
  std::string json;
  size_t files = 0;
  size_t content_bytes = 0;
};

// The canonical JSON text: {format, app_dir, jpaths, files: {path: {text} | {base64}}},
// keys sorted, no spaces. Files that are not valid UTF-8 travel as base64.
std::string bundle_json(const Bundle& bundle);
PackedBundle pack_bundle(const Bundle& bundle);

// The bundle of a render of `spec` with library paths `jpaths` (as given to the render;
// made absolute against the current directory) that imported `external`. Fails when a
// file cannot be read, when an imported file changed since the render read it, or when
// the bundle is over `max_bytes`, naming its largest files.
Result<PackedBundle> make_bundle(const spec::AppSpec& spec, const std::vector<render::ExternalFile>& external,
                                 const std::vector<std::filesystem::path>& jpaths,
                                 size_t max_bytes = k_max_bundle_bytes);

// Parses a stored bundle and checks it: the hash of the text must be `hash` (when not
// empty), and every path must be absolute and free of "..", so unpacking cannot write
// outside its folder. `what` names it in errors ("bundle 3fa2... of app web").
Result<Bundle> parse_bundle(std::string_view json, const std::string& hash, const std::string& what);

// A folder made with mkdtemp under the system temp dir, removed with everything in it
// on destruction. Move-only.
class TempFolder {
 public:
  static Result<TempFolder> make(const std::string& prefix = "gaia-bundle");
  TempFolder(TempFolder&& other) noexcept;
  TempFolder& operator=(TempFolder&& other) noexcept;
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  ~TempFolder();

  const std::filesystem::path& path() const { return m_path; }

 private:
  explicit TempFolder(std::filesystem::path path) : m_path(std::move(path)) {}
  void remove() noexcept;
  std::filesystem::path m_path;
};

// Where an unpacked bundle's app dir and library paths are.
struct Materialized {
  std::filesystem::path root;
  std::filesystem::path app_dir;               // <root>/<app_dir>
  std::vector<std::filesystem::path> jpaths;   // <root>/<jpath>, in order.

  // `text` with every occurrence of the root removed, so a message about an unpacked
  // file names the path it had where the bundle was made.
  std::string unmap(std::string text) const;
};

// Writes each file of `bundle` at <root>/<its path>.
Result<Materialized> materialize_bundle(const Bundle& bundle, const std::filesystem::path& root);

// Reads a stored bundle by hash (State::bundle); nothing when it is absent.
using BundleReader = std::function<Result<std::optional<std::string>>(const std::string& hash)>;

// After plan_submit or plan_apply decided on `base` for `apps` (whose records carry
// their bundle hashes), adds what the bundles need to `batch`: the text of each bundle an
// app it puts refers to and no app of `base` does (so it is not in the store yet), from
// `bundles` (hash -> JSON text); and for each app it left unchanged (same workload) whose
// record names another bundle, the record with the new bundle, folder and render inputs,
// so a later re-render uses the files of the last submit, not of an earlier one.
void attach_bundles(const ClusterState& base, const std::vector<AppToDeploy>& apps,
                    const std::map<std::string, std::string>& bundles, Batch& batch);

}  // namespace gaia::ops
