#include "ops/bundle.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "lib/hash.hpp"
#include "lib/utf8.hpp"
#include "render/renderer.hpp"
#include "render/sandbox.hpp"

namespace gaia::ops {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

constexpr std::string_view k_b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out.push_back(k_b64[(v >> k) & 0x3f]);
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out.push_back(k_b64[(v >> 18) & 0x3f]);
    out.push_back(k_b64[(v >> 12) & 0x3f]);
    out.push_back(i + 1 < in.size() ? k_b64[(v >> 6) & 0x3f] : '=');
    out.push_back('=');
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=' && k >= 2 && i + 4 == in.size()) {
        ++pad;
        v <<= 6;
        continue;
      }
      if (pad) return std::nullopt;  // Data after padding.
      auto pos = k_b64.find(c);
      if (pos == std::string_view::npos) return std::nullopt;
      v = (v << 6) | static_cast<uint32_t>(pos);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xff));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xff));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xff));
  }
  return out;
}

std::string canonical_string(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  fs::path c = fs::weakly_canonical(abs, ec);
  return (ec ? abs.lexically_normal() : c).string();
}

// A path a bundle may name: absolute, normalized, without "." or "..", so <root>/<path>
// stays inside <root>.
bool safe_path(const std::string& p) {
  fs::path path(p);
  if (!path.is_absolute() || p.find('\0') != std::string::npos) return false;
  for (const auto& part : path.relative_path())
    if (part == ".." || part == "." || part.empty()) return false;
  return true;
}

Diagnostic corrupt(const std::string& what, const std::string& why) {
  return Diagnostic{{}, "", fmt::format("{} is unusable: {}", what, why),
                    "the store was modified by something other than gaia; submit the app again to store its files anew"};
}

}  // namespace

size_t Bundle::content_bytes() const {
  size_t n = 0;
  for (const auto& [_, content] : files) n += content.size();
  return n;
}

std::string bundle_json(const Bundle& bundle) {
  json files = json::object();
  for (const auto& [path, content] : bundle.files) {
    // Text that is well-formed UTF-8 can be a JSON string as it is; anything else is base64.
    const bool text = invalid_utf8_offset(content) == std::string_view::npos;
    files[path] = text ? json{{"text", content}} : json{{"base64", base64_encode(content)}};
  }
  json j{{"format", k_bundle_format}, {"app_dir", bundle.app_dir}, {"jpaths", bundle.jpaths}, {"files", std::move(files)}};
  return j.dump();
}

PackedBundle pack_bundle(const Bundle& bundle) {
  PackedBundle p;
  p.json = bundle_json(bundle);
  p.hash = content_hash(p.json);
  p.files = bundle.files.size();
  p.content_bytes = bundle.content_bytes();
  return p;
}

Result<PackedBundle> make_bundle(const spec::AppSpec& spec, const std::vector<render::ExternalFile>& external,
                                 const std::vector<fs::path>& jpaths, size_t max_bytes) {
  Bundle b;
  b.app_dir = canonical_string(spec.dir);
  for (const auto& j : jpaths) b.jpaths.push_back(canonical_string(j));
  Diagnostics errors;
  // The app dir's files under the app dir's canonical path, read through any symlink, so
  // the unpacked folder holds what the render saw at the paths it saw them.
  for (const auto& [rel, path] : render::app_dir_files(spec.dir)) {
    auto content = read_file(path);
    if (!content) {
      errors.push_back(Diagnostic{{path.string()}, "", fmt::format("cannot read {} to store the spec of {}", rel, spec.name),
                                  "check its permissions, or move it out of the app directory (all of it is stored)"});
      continue;
    }
    b.files[(fs::path(b.app_dir) / rel).string()] = std::move(*content);
  }
  for (const auto& f : external) {
    if (!f.exists) continue;
    auto content = read_file(f.path);
    if (!content || content_hash(*content) != f.hash) {
      errors.push_back(Diagnostic{{f.path}, "",
                                  fmt::format("{} changed or went away while {} was rendered", f.path, spec.name),
                                  "run the command again once nothing edits the spec's files"});
      continue;
    }
    b.files[f.path] = std::move(*content);
  }
  if (!errors.empty()) return fail(std::move(errors));
  PackedBundle packed = pack_bundle(b);
  if (packed.json.size() > max_bytes) {
    std::vector<std::pair<size_t, std::string>> sizes;
    for (const auto& [path, content] : b.files) sizes.emplace_back(content.size(), path);
    std::sort(sizes.begin(), sizes.end(), std::greater<>());
    std::vector<std::string> largest;
    for (size_t k = 0; k < sizes.size() && k < 3; ++k)
      largest.push_back(fmt::format("{} ({})", sizes[k].second, render::format_byte_size(sizes[k].first)));
    return fail(Diagnostic{{spec.yaml_file}, "",
                           fmt::format("the files of {} come to {} as a spec bundle, over the {} one bundle may hold "
                                       "(it is stored as one value, so that any machine can render the app again)",
                                       spec.name, render::format_byte_size(packed.json.size()),
                                       render::format_byte_size(max_bytes)),
                           fmt::format("every file below the app directory is stored, and every file it imports from "
                                       "vendor/, -J or GAIA_PATH; the largest: {}. Move data files that the "
                                       "templates do not import out of the app directory",
                                       fmt::join(largest, ", "))});
  }
  return packed;
}

Result<Bundle> parse_bundle(std::string_view text, const std::string& hash, const std::string& what) {
  if (!hash.empty() && content_hash(text) != hash) return fail(corrupt(what, "its content does not match its hash"));
  Bundle b;
  try {
    json j = json::parse(text);
    if (j.value("format", "") != k_bundle_format)
      return fail(corrupt(what, fmt::format("format '{}', expected {} (written by another gaia?)", j.value("format", ""),
                                            k_bundle_format)));
    b.app_dir = j.at("app_dir").get<std::string>();
    b.jpaths = j.at("jpaths").get<std::vector<std::string>>();
    for (const auto& [path, entry] : j.at("files").items()) {
      if (entry.contains("text")) {
        b.files[path] = entry.at("text").get<std::string>();
      } else {
        auto bytes = base64_decode(entry.at("base64").get<std::string>());
        if (!bytes) return fail(corrupt(what, fmt::format("{} is not valid base64", path)));
        b.files[path] = std::move(*bytes);
      }
    }
  } catch (const json::exception& e) {
    return fail(corrupt(what, e.what()));
  }
  if (!safe_path(b.app_dir)) return fail(corrupt(what, fmt::format("app dir '{}' is not a plain absolute path", b.app_dir)));
  for (const auto& j : b.jpaths)
    if (!safe_path(j)) return fail(corrupt(what, fmt::format("library path '{}' is not a plain absolute path", j)));
  for (const auto& [path, _] : b.files)
    if (!safe_path(path)) return fail(corrupt(what, fmt::format("file '{}' is not a plain absolute path", path)));
  return b;
}

Result<TempFolder> TempFolder::make(const std::string& prefix) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return fail(Diagnostic{{}, "", fmt::format("cannot make a temporary folder in {}: {}", base.string(), std::strerror(errno)),
                           "check that TMPDIR names a writable folder with free space"});
  // Canonical, so the paths a render reports start with exactly this folder and
  // Materialized::unmap finds them even when TMPDIR goes through a symlink.
  fs::path made = fs::canonical(pattern, ec);
  return TempFolder(ec ? fs::path(pattern) : made);
}

TempFolder::TempFolder(TempFolder&& other) noexcept : m_path(std::move(other.m_path)) { other.m_path.clear(); }

TempFolder& TempFolder::operator=(TempFolder&& other) noexcept {
  if (this != &other) {
    remove();
    m_path = std::move(other.m_path);
    other.m_path.clear();
  }
  return *this;
}

TempFolder::~TempFolder() { remove(); }

void TempFolder::remove() noexcept {
  if (m_path.empty()) return;
  std::error_code ec;
  fs::remove_all(m_path, ec);
  m_path.clear();
}

std::string Materialized::unmap(std::string text) const {
  const std::string r = root.string();
  if (r.empty()) return text;
  for (size_t at = text.find(r); at != std::string::npos; at = text.find(r, at)) text.erase(at, r.size());
  return text;
}

Result<Materialized> materialize_bundle(const Bundle& bundle, const fs::path& root) {
  Materialized m;
  m.root = root;
  auto under = [&](const std::string& p) { return root / fs::path(p).relative_path(); };
  m.app_dir = under(bundle.app_dir);
  for (const auto& j : bundle.jpaths) m.jpaths.push_back(under(j));
  std::error_code ec;
  // The app dir exists even when it holds nothing but what the loader will then miss.
  fs::create_directories(m.app_dir, ec);
  for (const auto& [path, content] : bundle.files) {
    fs::path target = under(path);
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (ec || !out)
      return fail(Diagnostic{{}, "", fmt::format("cannot unpack a spec bundle into {}: writing {} failed", root.string(), path),
                             "check that the temporary folder (TMPDIR) is writable and has free space"});
  }
  return m;
}

void attach_bundles(const ClusterState& base, const std::vector<AppToDeploy>& apps,
                    const std::map<std::string, std::string>& bundles, Batch& batch) {
  std::set<std::string> put;
  for (const auto& a : batch.put_apps) put.insert(a.tenant + "/" + a.name);
  for (const auto& a : apps) {
    const AppRecord& rec = a.record;
    if (rec.bundle.empty() || put.count(rec.tenant + "/" + rec.name)) continue;
    const AppRecord* existing = base.find_app(rec.tenant, rec.name);
    if (!existing || existing->bundle == rec.bundle) continue;
    // Unchanged as deployed (same workload), but submitted from other files: the record
    // follows the files, so a re-render after a config change sees what was submitted.
    AppRecord updated = *existing;
    updated.bundle = rec.bundle;
    updated.spec_dir = rec.spec_dir;
    updated.render_inputs = rec.render_inputs;
    updated.op.clear();  // The commit stamps the operation making this change.
    batch.put_apps.push_back(std::move(updated));
  }
  std::set<std::string> stored;
  for (const auto& [id, a] : base.apps)
    if (!a.bundle.empty()) stored.insert(a.bundle);
  for (const auto& a : batch.put_apps) {
    if (a.bundle.empty() || stored.count(a.bundle)) continue;
    if (auto it = bundles.find(a.bundle); it != bundles.end()) batch.put_bundles[a.bundle] = it->second;
  }
}

}  // namespace gaia::ops
