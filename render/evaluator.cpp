#include "render/evaluator.hpp"

extern "C" {
#include <libjsonnet.h>
}

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "lib/hash.hpp"
#include "render/embedded.hpp"
#include "render/import_scan.hpp"
#include "render/jsonnet_std.hpp"
#include "render/json_fields.hpp"
#include "render/overrides.hpp"
#include "render/sandbox.hpp"

namespace gaia::render {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Name under which the built-in library appears in Jsonnet stack traces.
constexpr const char* k_builtin_lib = "<builtin>/gaia.libsonnet";
// File name of the small wrapper snippets that import config.jsonnet and call main.
constexpr const char* k_wrapper = "<gaia>";
constexpr const char* k_allowed = "app dir, vendor/, -J, GAIA_PATH";

bool is_within(const fs::path& root, const fs::path& p) {
  auto r = root.begin(), re = root.end();
  auto q = p.begin(), qe = p.end();
  for (; r != re; ++r, ++q) {
    if (r->empty()) continue;  // A trailing separator in root.
    if (q == qe || *r != *q) return false;
  }
  return true;
}

std::optional<std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path canonical_or_self(const fs::path& p) {
  std::error_code ec;
  auto c = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : c;
}

// Decides where an import comes from and whether it is allowed; see evaluator.hpp.
class ImportResolver {
 public:
  ImportResolver(const fs::path& app_dir, const std::vector<fs::path>& jpaths) : m_app(canonical_or_self(app_dir)) {
    // vendor/ inside the app dir is under the app dir already; beside it is its own root.
    m_search.push_back(m_app / "vendor");
    m_search.push_back(canonical_or_self(m_app.parent_path() / "vendor"));
    for (const auto& j : jpaths) m_search.push_back(canonical_or_self(fs::absolute(j)));
    m_roots.push_back(m_app);
    for (size_t i = 1; i < m_search.size(); ++i) m_roots.push_back(m_search[i]);
  }

  struct Found {
    std::string path;
    std::string content;
  };

  std::expected<Found, std::string> resolve(std::string_view base, std::string_view rel_view) {
    const std::string rel{rel_view};
    if (rel == "gaia.libsonnet") return Found{k_builtin_lib, std::string(k_gaia_libsonnet)};
    std::vector<fs::path> candidates;
    const fs::path relp{rel};
    if (relp.is_absolute()) {
      candidates.push_back(relp);
    } else {
      if (!base.empty() && fs::path(base).is_absolute()) candidates.push_back(fs::path(base) / relp);
      for (const auto& dir : m_search) candidates.push_back(dir / relp);
    }
    bool outside = false;
    for (const auto& c : candidates) {
      fs::path canon = canonical_or_self(c);
      bool allowed = std::any_of(m_roots.begin(), m_roots.end(), [&](const fs::path& r) { return is_within(r, canon); });
      if (!allowed) {
        outside = true;
        continue;
      }
      std::error_code ec;
      bool in_app = is_within(m_app, canon);
      if (fs::is_regular_file(canon, ec)) {
        auto content = read_file(canon);
        if (!content) return std::unexpected(fmt::format("import '{}': cannot read {}", rel, canon.string()));
        if (!in_app) m_external[canon.string()] = ExternalFile{canon.string(), content_hash(*content), true};
        return Found{canon.string(), std::move(*content)};
      }
      if (!in_app && !m_external.contains(canon.string())) {
        m_external[canon.string()] = ExternalFile{canon.string(), "", false};
      }
    }
    if (outside) return std::unexpected(fmt::format("import '{}' is outside the allowed paths ({})", rel, k_allowed));
    return std::unexpected(fmt::format("import '{}' not found in the importing file's directory, vendor/, -J or GAIA_PATH", rel));
  }

  std::vector<ExternalFile> external() const {
    std::vector<ExternalFile> out;
    for (const auto& [_, f] : m_external) out.push_back(f);
    return out;
  }

 private:
  fs::path m_app;
  std::vector<fs::path> m_search;
  std::vector<fs::path> m_roots;
  std::map<std::string, ExternalFile> m_external;
};

struct VmContext {
  JsonnetVm* vm = nullptr;
  ImportResolver* resolver = nullptr;
  const ConfigSnapshot* config = nullptr;
  std::vector<ConfigRead> reads;
  // Which file is being evaluated, for errors without a location and for the parent.
  std::string phase;
  std::string main_file;  // Canonical; importing it switches the phase.
  std::string main_shown;
  const std::function<void(std::string_view)>* progress = nullptr;
  // The imports of a folded evaluation (see fold_render), as (base, path), and which of
  // them were evaluated: each is resolved by `resolver` when first evaluated, as the
  // import callback would have been called, so it records the same outside files.
  std::vector<std::pair<std::string, std::string>> fold_sites;
  std::vector<bool> fold_resolved;
  int std_natives_taken = 0;
};

char* dup_for_vm(JsonnetVm* vm, std::string_view s) {
  char* out = jsonnet_realloc(vm, nullptr, s.size() + 1);
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  return out;
}

char* import_callback(void* ctx, const char* base, const char* rel, char** found_here, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  auto r = c->resolver->resolve(base ? base : "", rel ? rel : "");
  if (!r) {
    *success = 0;
    return dup_for_vm(c->vm, r.error());
  }
  if (r->path == c->main_file && c->phase != c->main_shown) {
    c->phase = c->main_shown;
    if (c->progress && *c->progress) (*c->progress)(c->main_shown);
  }
  *found_here = dup_for_vm(c->vm, r->path);
  *success = 1;
  return dup_for_vm(c->vm, r->content);
}

JsonnetJsonValue* native_error(VmContext* c, int* success, const std::string& msg) {
  *success = 0;
  return jsonnet_json_make_string(c->vm, msg.c_str());
}

// Records a read and returns the value as JSON text (gaia.libsonnet parses it back, as
// the C API cannot build or take apart arbitrary Jsonnet values cheaply).
JsonnetJsonValue* finish_read(VmContext* c, int* success, std::string kind, std::string key,
                              const std::optional<ConfigValue>& found, const char* default_json) {
  ConfigRead read;
  read.kind = std::move(kind);
  read.key = std::move(key);
  if (found) {
    read.value = found->value;
    read.revision = found->revision;
  } else {
    try {
      read.value = json::parse(default_json);
    } catch (const json::exception& e) {
      return native_error(c, success, fmt::format("gaia.{}: default is not plain data: {}", read.kind, e.what()));
    }
    read.defaulted = true;
  }
  std::string text = read.value.dump(-1, ' ', false, json::error_handler_t::replace);
  c->reads.push_back(std::move(read));
  *success = 1;
  return jsonnet_json_make_string(c->vm, text.c_str());
}

JsonnetJsonValue* native_config(void* ctx, const JsonnetJsonValue* const* argv, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  const char* key = jsonnet_json_extract_string(c->vm, argv[0]);
  const char* def = jsonnet_json_extract_string(c->vm, argv[1]);
  if (!key || !def) return native_error(c, success, "gaia.config: key must be a string");
  return finish_read(c, success, "config", key, c->config->get_config(key), def);
}

JsonnetJsonValue* native_label(void* ctx, const JsonnetJsonValue* const* argv, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  const char* kind = jsonnet_json_extract_string(c->vm, argv[0]);
  const char* name = jsonnet_json_extract_string(c->vm, argv[1]);
  const char* key = jsonnet_json_extract_string(c->vm, argv[2]);
  const char* def = jsonnet_json_extract_string(c->vm, argv[3]);
  if (!kind || !name || !key || !def) return native_error(c, success, "gaia.label: kind, name and key must be strings");
  return finish_read(c, success, "label", fmt::format("{}/{}/{}", kind, name, key),
                     c->config->get_label(kind, name, key), def);
}

// Owns a VM and frees what it returns.
class Vm {
 public:
  Vm() : m_vm(jsonnet_make()) {}
  ~Vm() { jsonnet_destroy(m_vm); }
  Vm(const Vm&) = delete;
  Vm& operator=(const Vm&) = delete;
  JsonnetVm* get() const { return m_vm; }
  // Evaluates a snippet; returns {ok, text}.
  std::pair<bool, std::string> eval(const std::string& filename, const std::string& snippet) {
    int error = 0;
    char* out = jsonnet_evaluate_snippet(m_vm, filename.c_str(), snippet.c_str(), &error);
    std::string text = out ? out : "";
    jsonnet_realloc(m_vm, out, 0);
    return {error == 0, std::move(text)};
  }

 private:
  JsonnetVm* m_vm;
};

std::string jsonnet_string_literal(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}


}  // namespace

std::string display_path(const std::string& path, const std::string& app_dir, const std::string& display_dir) {
  if (path == k_builtin_lib) return "gaia.libsonnet";
  fs::path p{path};
  fs::path app{app_dir};
  if (!app_dir.empty() && p.is_absolute() && is_within(app, p)) {
    fs::path rel = p.lexically_relative(app);
    return display_dir.empty() ? rel.generic_string() : (fs::path(display_dir) / rel).generic_string();
  }
  return path;
}

namespace {
bool is_user_file(const std::string& file) {
  return file != k_builtin_lib && file != k_wrapper && file != "std.jsonnet" && !file.starts_with("<");
}
}  // namespace

Diagnostic jsonnet_error_to_diagnostic(std::string_view message, const std::string& app_dir,
                                       const std::string& display_dir, const std::string& fallback_file) {
  static const std::regex static_re{R"(^STATIC ERROR: (.+?):(?:(\d+):(\d+)(?:-\d+)?|\((\d+):(\d+)\)-\(\d+:\d+\)): (.*)$)"};
  static const std::regex frame_re{R"(^\t(.+?):(?:(\d+):(\d+)(?:-\d+)?|\((\d+):(\d+)\)-\(\d+:\d+\))(\t.*)?$)"};
  Diagnostic d;
  d.location.file = fallback_file;
  bool located = false;
  auto take = [&](const std::smatch& m) {
    const std::string file = m[1].str();
    if (located || !is_user_file(file)) return;
    d.location.file = display_path(file, app_dir, display_dir);
    d.location.line = std::stoi(m[2].matched ? m[2].str() : m[4].str());
    d.location.column = std::stoi(m[3].matched ? m[3].str() : m[5].str());
    located = true;
  };
  std::vector<std::string> lines;
  std::string text{message};
  while (!text.empty() && text.back() == '\n') text.pop_back();
  std::istringstream in(text);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    std::smatch m;
    if (first && std::regex_match(line, m, static_re)) {
      take(m);
      line = m[6].str();
    } else if (first && line.starts_with("RUNTIME ERROR: ")) {
      line = line.substr(std::strlen("RUNTIME ERROR: "));
      // Our import callback's message already names the import.
      static const std::regex import_re{R"(^couldn't open import "[^"]*": (import '.*)$)"};
      if (std::regex_match(line, m, import_re)) line = m[1].str();
    } else if (std::regex_match(line, m, frame_re)) {
      take(m);
      // Frames in the standard library and the wrapper only hide the user's frames.
      if (m[1].str() == k_wrapper || m[1].str() == "std.jsonnet") {
        first = false;
        continue;
      }
      // Rewrites the frame's file so the trace shows the same paths as the location.
      line = "    " + display_path(m[1].str(), app_dir, display_dir) + line.substr(1 + m[1].length());
      std::replace(line.begin(), line.end(), '\t', ' ');
    } else if (line.starts_with("\t")) {
      // Other trace lines ("During manifestation") are indented the same way.
      auto end = line.find_last_not_of('\t');
      line = "    " + line.substr(1, end == std::string::npos ? 0 : end);
    }
    first = false;
    lines.push_back(line);
  }
  for (size_t i = 0; i < lines.size(); ++i) d.message += (i ? "\n" : "") + lines[i];
  if (d.message.find("max stack frames exceeded") != std::string::npos) {
    d.hint = "a function probably calls itself without end; check the recursion's base case";
  } else if (d.message.find("is outside the allowed paths") != std::string::npos) {
    d.hint = "copy the file into the app dir or vendor/, or add its directory with -J or GAIA_PATH";
  }
  return d;
}

namespace {

// The binding a folded file gets (see fold_render): no user writes such a name, and a
// file that does is not folded.
constexpr std::string_view k_fold_prefix = "__gaia_i";

std::string fold_binding(size_t id) { return fmt::format("{}{}", k_fold_prefix, id); }
std::string site_binding(size_t site) { return fmt::format("{}s{}", k_fold_prefix, site); }

// Tells the render which file it evaluates, as the import callback does when main.jsonnet
// is imported; the folded evaluation calls it just before main.jsonnet's value is needed.
JsonnetJsonValue* native_phase(void* ctx, const JsonnetJsonValue* const*, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  if (c->phase != c->main_shown) {
    c->phase = c->main_shown;
    if (c->progress && *c->progress) (*c->progress)(c->main_shown);
  }
  *success = 1;
  return jsonnet_json_make_bool(c->vm, 1);
}

// Reads a string argument given with its Jsonnet length; nothing unless it is ASCII
// without NUL (the C API cuts a string at a NUL, and the length counts code points).
std::optional<std::string> ascii_arg(const JsonnetJsonValue* const* argv, JsonnetVm* vm, int at) {
  const char* s = jsonnet_json_extract_string(vm, argv[at]);
  double len = -1;
  if (!s || !jsonnet_json_extract_number(vm, argv[at + 1], &len)) return std::nullopt;
  std::string_view text{s};
  if (static_cast<double>(text.size()) != len || !is_plain_ascii(text)) return std::nullopt;
  return std::string(text);
}

// std.format of the folded render's `std` (render/jsonnet_std.hpp): (str, len, n, then
// n pairs of value and length, -1 for what is not a string). Null means "not taken".
JsonnetJsonValue* native_format(void* ctx, const JsonnetJsonValue* const* argv, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  *success = 1;
  auto fmt_text = ascii_arg(argv, c->vm, 0);
  double n = 0;
  if (!fmt_text || !jsonnet_json_extract_number(c->vm, argv[2], &n) || n < 0 || n > k_format_native_values)
    return jsonnet_json_make_null(c->vm);
  std::vector<FormatValue> vals;
  for (int i = 0; i < static_cast<int>(n); ++i) {
    const int at = 3 + 2 * i;
    double len = -1;
    jsonnet_json_extract_number(c->vm, argv[at + 1], &len);
    double d = 0;
    if (len >= 0) {
      auto s = ascii_arg(argv, c->vm, at);
      if (!s) return jsonnet_json_make_null(c->vm);
      vals.emplace_back(std::move(*s));
    } else if (jsonnet_json_extract_number(c->vm, argv[at], &d)) {
      vals.emplace_back(d);
    } else if (int b = jsonnet_json_extract_bool(c->vm, argv[at]); b != 2) {
      vals.emplace_back(b == 1);
    } else if (jsonnet_json_extract_null(c->vm, argv[at])) {
      vals.emplace_back(std::monostate{});
    } else {
      return jsonnet_json_make_null(c->vm);
    }
  }
  auto out = jsonnet_format(*fmt_text, vals);
  if (!out) return jsonnet_json_make_null(c->vm);
  ++c->std_natives_taken;
  return jsonnet_json_make_string(c->vm, out->c_str());
}

// std.escapeStringJson of the folded render's `std`: (str, len); null means "not taken".
JsonnetJsonValue* native_escape_json(void* ctx, const JsonnetJsonValue* const* argv, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  *success = 1;
  auto s = ascii_arg(argv, c->vm, 0);
  auto out = s ? jsonnet_escape_string_json(*s) : std::nullopt;
  if (!out) return jsonnet_json_make_null(c->vm);
  ++c->std_natives_taken;
  return jsonnet_json_make_string(c->vm, out->c_str());
}

// std.sort of the folded render's `std`: (the keys printed as JSON) -> the order, or null.
JsonnetJsonValue* native_sort_order(void* ctx, const JsonnetJsonValue* const* argv, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  *success = 1;
  const char* keys = jsonnet_json_extract_string(c->vm, argv[0]);
  auto order = keys ? jsonnet_sort_order(keys) : std::nullopt;
  if (!order) return jsonnet_json_make_null(c->vm);
  ++c->std_natives_taken;
  JsonnetJsonValue* out = jsonnet_json_make_array(c->vm);
  for (size_t i : *order) jsonnet_json_array_append(c->vm, out, jsonnet_json_make_number(c->vm, static_cast<double>(i)));
  return out;
}

// Where a folded file had `import 'path'`: the file that path resolves to is needed now.
JsonnetJsonValue* native_import(void* ctx, const JsonnetJsonValue* const* argv, int* success) {
  auto* c = static_cast<VmContext*>(ctx);
  double site = 0;
  if (!jsonnet_json_extract_number(c->vm, argv[0], &site) || site < 0 ||
      static_cast<size_t>(site) >= c->fold_sites.size())
    return native_error(c, success, "internal error: unknown folded import");
  const size_t k = static_cast<size_t>(site);
  if (!c->fold_resolved[k]) {
    c->fold_resolved[k] = true;
    (void)c->resolver->resolve(c->fold_sites[k].first, c->fold_sites[k].second);
  }
  *success = 1;
  return jsonnet_json_make_bool(c->vm, 1);
}

// config.jsonnet, main.jsonnet and every file they import, folded into one text: each
// file becomes a binding of one `local` (so they may refer to each other, as imports
// may), and each `import "path"` the binding of the file it resolves to, found by the
// render's own resolver. libjsonnet then parses its standard library once per render
// instead of once per file. Nothing when a file holds what the folding does not handle
// (render/import_scan.hpp), names std.thisFile (its value would change), already uses
// the binding names, or imports a file that does not resolve (evaluated lazily, it
// might never be needed): the render then evaluates the files one by one.
//
// The files are found with a resolver of their own (`resolver`, not the evaluation's),
// since an import that is
// never evaluated must not count as a file the render read: each import becomes
// a binding `if std.native('gaia_import')(K) then FILE else null` of its own, which
// resolves import K with the render's resolver when it is first evaluated
// (native_import).
struct Folded {
  std::string bindings;  // "local a = (...), b = (...);\n"
  std::string config_ref, main_ref;
  std::vector<std::pair<std::string, std::string>> sites;  // (base, path) by K.
};

std::optional<Folded> fold_render(ImportResolver& resolver, const std::string& config_file, const std::string& main_file,
                                  bool config_only) {
  Folded out;
  std::map<std::string, size_t> ids;  // Resolved path -> binding.
  std::vector<std::pair<std::string, std::string>> files;  // (path, content), by id.
  std::vector<std::string> bodies;
  std::vector<size_t> site_files;  // The file each import site resolves to.
  auto add = [&](ImportResolver::Found found) {
    auto [it, inserted] = ids.try_emplace(found.path, files.size());
    if (inserted) files.emplace_back(std::move(found.path), std::move(found.content));
    return it->second;
  };
  auto root = [&](const std::string& path) -> std::optional<size_t> {
    auto found = resolver.resolve("", path);
    if (!found) return std::nullopt;
    return add(std::move(*found));
  };
  auto config_id = root(config_file);
  auto main_id = config_only ? std::optional<size_t>(0) : root(main_file);
  if (!config_id || !main_id) return std::nullopt;
  for (size_t k = 0; k < files.size(); ++k) {
    // Copies: add() may grow `files`.
    const std::string path = files[k].first;
    const std::string text = files[k].second;
    if (text.find(k_fold_prefix) != std::string::npos || text.find("thisFile") != std::string::npos) return std::nullopt;
    auto sites = render::scan_imports(text, /*allow_native=*/path == k_builtin_lib);
    if (!sites) return std::nullopt;
    // libjsonnet resolves an import from the directory of the file that imports it.
    const size_t slash = path.rfind('/');
    const std::string base = slash == std::string::npos ? "" : path.substr(0, slash + 1);
    std::string body;
    size_t at = 0;
    for (const auto& site : *sites) {
      auto found = resolver.resolve(base, site.path);
      if (!found) return std::nullopt;
      body.append(text, at, site.begin - at);
      // A binding of its own per import site, so the native runs once, however often
      // the import is evaluated.
      site_files.push_back(add(std::move(*found)));
      body += site_binding(out.sites.size());
      out.sites.emplace_back(base, site.path);
      at = site.end;
    }
    body.append(text, at, std::string::npos);
    bodies.push_back(std::move(body));
  }
  // The faster std.format and std.escapeStringJson come first, so every file sees them.
  out.bindings = std::string(k_std_shim) + "local ";
  for (size_t k = 0; k < bodies.size(); ++k)
    out.bindings += fmt::format("{}{} = (\n{}\n)", k ? ",\n" : "", fold_binding(k), bodies[k]);
  for (size_t k = 0; k < site_files.size(); ++k)
    out.bindings += fmt::format(",\n{} = if std.native('gaia_import')({}) then {} else null", site_binding(k), k,
                                fold_binding(site_files[k]));
  out.bindings += ";\n";
  out.config_ref = fold_binding(*config_id);
  out.main_ref = fmt::format("(if std.native('gaia_phase')() then {} else null)", fold_binding(*main_id));
  return out;
}

// One evaluation's VM, import resolver and context.
struct Evaluation {
  ImportResolver resolver;
  Vm vm;
  VmContext ctx;

  // `folded`: the natives of a folded evaluation are there too (nowhere else, so a
  // template sees the same natives as before).
  Evaluation(const fs::path& dir, const EvalInput& in, const ConfigSnapshot& config, bool folded)
      : resolver(dir, in.jpaths) {
    ctx.vm = vm.get();
    ctx.resolver = &resolver;
    ctx.config = &config;
    jsonnet_max_stack(vm.get(), in.max_stack);
    jsonnet_import_callback(vm.get(), import_callback, &ctx);
    static const char* const config_params[] = {"key", "default_json", nullptr};
    static const char* const label_params[] = {"kind", "name", "key", "default_json", nullptr};
    static const char* const no_params[] = {nullptr};
    static const char* const site_params[] = {"site", nullptr};
    jsonnet_native_callback(vm.get(), "gaia_config", native_config, &ctx, config_params);
    jsonnet_native_callback(vm.get(), "gaia_label", native_label, &ctx, label_params);
    if (folded) {
      jsonnet_native_callback(vm.get(), "gaia_phase", native_phase, &ctx, no_params);
      jsonnet_native_callback(vm.get(), "gaia_import", native_import, &ctx, site_params);
      static const char* const format_params[] = {"str", "len", "n", "v0", "l0", "v1", "l1", "v2", "l2",
                                                  "v3", "l3", "v4", "l4", "v5", "l5", nullptr};
      // The shim (render/jsonnet_std.cpp) passes exactly this many values, or none.
      static_assert(std::size(format_params) == 3 + 2 * k_format_native_values + 1);
      static const char* const escape_params[] = {"str", "len", nullptr};
      jsonnet_native_callback(vm.get(), "gaia_format", native_format, &ctx, format_params);
      jsonnet_native_callback(vm.get(), "gaia_escape_json", native_escape_json, &ctx, escape_params);
      static const char* const sort_params[] = {"keys_json", nullptr};
      jsonnet_native_callback(vm.get(), "gaia_sort_order", native_sort_order, &ctx, sort_params);
    }
  }
};

}  // namespace

Result<EvalOutput> evaluate_jsonnet(const EvalInput& in, const std::function<void(std::string_view)>& progress) {
  // Jsonnet reports the canonical paths the import callback gave it; display_path maps
  // them back, so the app dir must be canonical too.
  const fs::path dir = canonical_or_self(fs::absolute(in.app_dir));
  const std::string app_dir = dir.string();
  const std::string config_file = (dir / "config.jsonnet").string();
  const std::string main_file = (dir / "main.jsonnet").string();
  const std::string config_shown = display_path(config_file, app_dir, in.display_dir);
  const std::string main_shown = display_path(main_file, app_dir, in.display_dir);
  static const ConfigSnapshot empty_snapshot;
  const ConfigSnapshot& config = in.config ? *in.config : empty_snapshot;

  // One evaluation for the whole render: libjsonnet 0.18 re-reads its standard library
  // for every evaluation and every file, which costs far more than the templates. The wrapper
  // checks that config.jsonnet is an object and that the overrides name its parameters,
  // then returns { config, main }: Jsonnet manifests fields in order, so config.jsonnet
  // is evaluated completely before main.jsonnet is even imported (the import callback
  // notes that switch for timeouts and errors without a location). The config is turned
  // into plain data before the overrides are merged, as the documentation promises.
  // Both files are imported so the same path rules apply to them as to any file, and
  // the wrapper's own frames are skipped when locating errors.
  //
  // The arguments are JSON literals in the wrapper's text rather than top-level
  // arguments: libjsonnet 0.18 parses its standard library again for every top-level
  // argument, as for every file.
  auto wrapper = [&](const std::string& prelude, const std::string& config_ref, const std::string& main_ref) {
    return fmt::format(
        "{}"
        "local overrides = {};\n"
        "local deps = {};\n"
        "local app = {};\n"
        "local config0 = {};\n"
        "local merge(a, b) =\n"
        "  if std.isObject(a) && std.isObject(b) then\n"
        "    a + {{ [k]: if std.objectHas(a, k) then merge(a[k], b[k]) else b[k] for k in std.objectFields(b) }}\n"
        "  else b;\n"
        "if !std.isObject(config0) then {{ config_type: std.type(config0) }}\n"
        "else if std.length([k for k in std.objectFields(overrides) if !std.objectHas(config0, k)]) > 0 then\n"
        "  {{ config_keys: std.objectFields(config0) }}\n"
        "else\n"
        "  local config = merge(std.parseJson(std.manifestJsonMinified(config0)), overrides);\n"
        "  {{\n"
        "    config: config,\n"
        "    main: {}"
        "    }}\n",
        prelude, detail::json_compact(in.overrides.is_object() ? in.overrides : json::object()),
        detail::json_compact(in.deps), detail::json_compact(in.app), config_ref,
        in.config_only ? std::string("null,\n")
                       : fmt::format("local main = {};\n"
                                     "      if !std.isFunction(main) then\n"
                                     "        error 'main.jsonnet must evaluate to a function(config, deps, app), not ' + "
                                     "std.type(main)\n"
                                     "      else main(config, deps, app),\n",
                                     main_ref));
  };
  auto start = [&](Evaluation& e) {
    e.ctx.phase = config_shown;
    e.ctx.main_file = canonical_or_self(main_file).string();
    e.ctx.main_shown = main_shown;
    e.ctx.progress = &progress;
    if (progress) progress(config_shown);
  };

  // First with every file folded into the wrapper (one parse of the standard library,
  // not one per file); when that cannot be done or fails in any way, the files are
  // evaluated one by one, as they always were, so every error reads as it always did.
  //
  // A folded evaluation that failed late is not run again when that would likely not
  // end within the render's time limit: its error is reported as it is, located in the
  // file being evaluated but without a line.
  const auto began = std::chrono::steady_clock::now();
  std::unique_ptr<Evaluation> used;
  bool ok = false;
  std::string text;
  std::optional<Folded> folding;
  if (in.fold) {
    ImportResolver scratch(dir, in.jpaths);
    folding = fold_render(scratch, config_file, main_file, in.config_only);
  }
  if (folding) {
    used = std::make_unique<Evaluation>(dir, in, config, /*folded=*/true);
    used->ctx.fold_sites = std::move(folding->sites);
    used->ctx.fold_resolved.assign(used->ctx.fold_sites.size(), false);
    start(*used);
    std::tie(ok, text) = used->vm.eval(k_wrapper, wrapper(folding->bindings, folding->config_ref, folding->main_ref));
    // File by file costs at least as much again, plus a parse of the standard library
    // per file, and more where one file is imported under several spellings (each is
    // evaluated apart): only a failure within the first quarter of the limit is
    // evaluated again.
    const auto took = std::chrono::steady_clock::now() - began;
    const bool late = in.timeout_ms > 0 && 4 * took + std::chrono::seconds(1) > std::chrono::milliseconds(in.timeout_ms);
    if (!ok && !late) used.reset();
  }
  const bool folded = ok;
  if (!used) {
    used = std::make_unique<Evaluation>(dir, in, config, /*folded=*/false);
    start(*used);
    std::tie(ok, text) = used->vm.eval(
        k_wrapper, wrapper("", "import " + jsonnet_string_literal(config_file), "import " + jsonnet_string_literal(main_file)));
  }
  VmContext& ctx = used->ctx;
  ImportResolver& resolver = used->resolver;
  if (!ok) return fail(jsonnet_error_to_diagnostic(text, app_dir, in.display_dir, ctx.phase));
  if (text.size() > in.max_output_bytes) {
    return fail(Diagnostic{{ctx.phase}, "", fmt::format("output exceeds {} ({})", format_byte_size(in.max_output_bytes), ctx.phase),
                           "the template probably builds far more than intended; raise --render-max-output if not"});
  }
  json result = json::parse(text);
  if (result.contains("config_type")) {
    return fail(Diagnostic{{config_shown}, "",
                           fmt::format("config.jsonnet must evaluate to an object of parameters, not {}",
                                       result["config_type"].get<std::string>()),
                           "write e.g. { replication: 3 }"});
  }
  if (result.contains("config_keys")) {
    json keys = json::object();
    for (const auto& k : result["config_keys"]) keys[k.get<std::string>()] = nullptr;
    auto applied = apply_overrides(keys, in.overrides, config_shown);
    if (!applied) return std::unexpected(applied.error());
    throw std::logic_error("render wrapper and apply_overrides disagree on the override keys");
  }

  EvalOutput out;
  out.raw.config = std::move(result["config"]);
  out.raw.main = std::move(result["main"]);
  std::sort(ctx.reads.begin(), ctx.reads.end(), [](const ConfigRead& a, const ConfigRead& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.key != b.key) return a.key < b.key;
    return detail::json_compact(a.value) < detail::json_compact(b.value);
  });
  ctx.reads.erase(std::unique(ctx.reads.begin(), ctx.reads.end()), ctx.reads.end());
  out.raw.reads = std::move(ctx.reads);
  out.external = resolver.external();
  out.folded = folded;
  out.std_natives_taken = ctx.std_natives_taken;
  return out;
}

json to_json(const ConfigRead& r) {
  return json{{"kind", r.kind}, {"key", r.key}, {"value", r.value}, {"revision", r.revision}, {"defaulted", r.defaulted}};
}

ConfigRead config_read_from_json(const json& j) {
  ConfigRead r;
  r.kind = j.at("kind").get<std::string>();
  r.key = j.at("key").get<std::string>();
  r.value = j.at("value");
  r.revision = j.at("revision").get<int64_t>();
  r.defaulted = j.at("defaulted").get<bool>();
  return r;
}

json to_json(const RawRender& r) {
  json reads = json::array();
  for (const auto& x : r.reads) reads.push_back(to_json(x));
  return json{{"config", r.config}, {"main", r.main}, {"reads", std::move(reads)}};
}

RawRender raw_render_from_json(const json& j) {
  RawRender r;
  r.config = j.at("config");
  r.main = j.at("main");
  for (const auto& x : j.at("reads")) r.reads.push_back(config_read_from_json(x));
  return r;
}

json to_json(const ExternalFile& f) { return json{{"path", f.path}, {"hash", f.hash}, {"exists", f.exists}}; }

ExternalFile external_file_from_json(const json& j) {
  return ExternalFile{j.at("path").get<std::string>(), j.at("hash").get<std::string>(), j.at("exists").get<bool>()};
}

json to_json(const Diagnostics& ds) {
  json out = json::array();
  for (const auto& d : ds) {
    out.push_back(json{{"file", d.location.file}, {"line", d.location.line}, {"column", d.location.column},
                       {"path", d.path}, {"message", d.message}, {"hint", d.hint}});
  }
  return out;
}

Diagnostics diagnostics_from_json(const json& j) {
  Diagnostics out;
  for (const auto& d : j) {
    out.push_back(Diagnostic{{d.at("file").get<std::string>(), d.at("line").get<int>(), d.at("column").get<int>()},
                             d.at("path").get<std::string>(), d.at("message").get<std::string>(),
                             d.at("hint").get<std::string>()});
  }
  return out;
}

}  // namespace gaia::render
