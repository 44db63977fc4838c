#include "render/renderer.hpp"

extern "C" {
#include <libjsonnet.h>
}

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "lib/hash.hpp"
#include "render/embedded.hpp"
#include "render/evaluator.hpp"
#include "render/json_fields.hpp"
#include "render/render_heap.hpp"
#include "render/sandbox.hpp"

namespace gaia::render {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Bumped whenever the meaning of a cached render changes (evaluation semantics, the
// shape of RawRender), so old entries stop matching.
constexpr const char* k_cache_format = "gaia-render/1";


std::string display_dir_of(const RenderRequest& req) {
  if (!req.options.display_dir.empty()) return req.options.display_dir;
  return fs::path(req.spec->yaml_file).parent_path().string();
}

EvalInput make_input(const RenderRequest& req, const json& built_deps) {
  EvalInput in;
  in.app_dir = req.spec->dir;
  in.display_dir = display_dir_of(req);
  in.app_name = req.spec->name;
  in.jpaths = req.options.jpaths;
  in.deps = built_deps;
  // app.name is the release: instance names, paths and DNS names made from it differ
  // between two releases of one app; app.app is the name in app.yaml.
  in.app = json{{"name", req.release.empty() ? req.spec->name : req.release},
                {"app", req.spec->name},
                {"version", req.spec->version.to_string()},
                {"tenant", req.options.tenant},
                {"scale", json(req.options.scale)}};
  in.overrides = req.options.overrides.is_null() ? json::object() : req.options.overrides;
  in.config = req.options.config.get();
  in.max_stack = req.options.max_stack;
  in.max_output_bytes = req.options.max_output_bytes;
  in.config_only = req.config_only;
  in.timeout_ms = req.options.timeout_ms;
  return in;
}

// Runs the evaluation in a child process; the child sends back the EvalOutput (or the
// diagnostics) as JSON.
Result<EvalOutput> evaluate_sandboxed(const RenderRequest& req, const json& built_deps) {
  const EvalInput in = make_input(req, built_deps);
  if (req.stats) ++req.stats->evaluations;
  SandboxLimits limits;
  limits.timeout_ms = req.options.timeout_ms;
  limits.memory_limit_bytes = req.options.memory_limit_bytes;
  // The payload carries config and main (each already bounded by max_output_bytes in
  // the child) plus the reads; the bound here stops a child that misbehaves anyway.
  limits.max_output_bytes = 2 * req.options.max_output_bytes + (size_t{1} << 20);

  load_render_heap();  // Once per process, before the fork: the child finds it open.
  auto outcome = run_sandboxed(limits, [&](SandboxChannel& channel) -> std::string {
    std::string why_glibc;
    const bool heap = enter_render_heap(&why_glibc);
    auto payload = [&](json j) {
      j["heap"] = heap;
      if (!heap) j["heap_why"] = why_glibc;
      return detail::json_compact(j);
    };
    try {
      auto r = evaluate_jsonnet(in, [&](std::string_view file) { channel.progress(file); });
      if (!r) return payload(json{{"ok", false}, {"diagnostics", to_json(r.error())}});
      json ext = json::array();
      for (const auto& f : r->external) ext.push_back(to_json(f));
      return payload(json{{"ok", true}, {"raw", to_json(r->raw)}, {"external", std::move(ext)}});
    } catch (const std::exception& e) {
      Diagnostics ds{Diagnostic{{}, "", fmt::format("internal error while rendering: {}", e.what()), ""}};
      return payload(json{{"ok", false}, {"diagnostics", to_json(ds)}});
    }
  });

  const std::string& app = req.spec->name;
  const std::string where = outcome.progress.empty() ? std::string("config.jsonnet") : outcome.progress;
  using S = SandboxOutcome::Status;
  switch (outcome.status) {
    case S::Ok:
      break;
    case S::Timeout:
      return fail(Diagnostic{{where}, "",
                             fmt::format("render of {} timed out after {} ({}): the template may loop forever", app,
                                         format_ms(req.options.timeout_ms), where),
                             "raise --render-timeout if it is really this slow"});
    case S::OutputTooLarge:
      return fail(Diagnostic{{where}, "",
                             fmt::format("render of {}: output exceeds {} ({})", app,
                                         format_byte_size(req.options.max_output_bytes), where),
                             "the template probably builds far more than intended; raise --render-max-output if not"});
    case S::Crashed: {
      std::string how = outcome.signal ? fmt::format("was killed by signal {} ({})", outcome.signal, ::strsignal(outcome.signal))
                                       : fmt::format("exited with status {}", outcome.exit_code);
      return fail(Diagnostic{{where}, "",
                             fmt::format("render of {} {} while evaluating {}; most likely it needed more than the "
                                         "memory limit of {}",
                                         app, how, where, format_byte_size(req.options.memory_limit_bytes)),
                             "raise --render-memory if the template really needs that much memory"});
    }
    case S::SystemError:
      return fail(Diagnostic{{}, "", fmt::format("cannot run the render sandbox for {}: {}", app, outcome.error),
                             "the system may be out of processes or memory"});
  }
  try {
    json j = json::parse(outcome.payload);
    if (req.stats && j.value("heap", false)) ++req.stats->heap_evaluations;
    if (req.stats && j.contains("heap_why")) req.stats->glibc_reason = j.value("heap_why", "");
    if (!j.at("ok").get<bool>()) return fail(diagnostics_from_json(j.at("diagnostics")));
    EvalOutput out;
    out.raw = raw_render_from_json(j.at("raw"));
    for (const auto& f : j.at("external")) out.external.push_back(external_file_from_json(f));
    return out;
  } catch (const json::exception& e) {
    return fail(Diagnostic{{}, "", fmt::format("render of {}: unreadable result from the sandbox: {}", app, e.what()), ""});
  }
}

void hash_app_dir(Hasher& h, const fs::path& dir) {
  auto files = app_dir_files(dir);
  h.add(fmt::format("files:{}", files.size()));
  for (const auto& [rel, p] : files) {
    h.add(rel);
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    if (in) ss << in.rdbuf();
    h.add(in ? content_hash(ss.str()) : std::string("<unreadable>"));
  }
}

}  // namespace

std::vector<std::pair<std::string, fs::path>> app_dir_files(const fs::path& dir) {
  std::vector<std::pair<std::string, fs::path>> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code fec;
    if (it->is_regular_file(fec)) files.emplace_back(it->path().lexically_relative(dir).generic_string(), it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

Result<json> build_deps(const spec::AppSpec& spec, const json& deps) {
  json out = json::object();
  Diagnostics errors;
  for (const auto& d : spec.dependencies) {
    Location loc = d.location.file.empty() ? Location{spec.yaml_file} : d.location;
    json imported = json::object();
    auto it = deps.is_object() ? deps.find(d.alias) : deps.end();
    // A conditional dependency that does not apply is not resolved: main.jsonnet sees
    // no deps.<alias> (std.objectHas(deps, 'alias') tells).
    if (d.when && it == deps.end()) continue;
    if (!d.imports.empty() && (it == deps.end() || !it->is_object())) {
      errors.push_back(Diagnostic{loc, fmt::format("dependencies.{}", d.alias),
                                  fmt::format("no outputs of dependency '{}' ({}) were given to the render", d.alias, d.name),
                                  "resolve the dependency first (gaia deps), or deploy it so its outputs are known"});
      out[d.alias] = std::move(imported);
      continue;
    }
    for (const auto& name : d.imports) {
      auto o = it->find(name);
      if (o == it->end()) {
        std::vector<std::string> known;
        for (const auto& [k, _] : it->items()) known.push_back(k);
        errors.push_back(Diagnostic{loc, fmt::format("dependencies.{}.import", d.alias),
                                    fmt::format("dependency '{}' ({}) has no output '{}'", d.alias, d.name, name),
                                    known.empty() ? std::string("it declares no outputs")
                                                  : fmt::format("its outputs are: {}", fmt::join(known, ", "))});
        continue;
      }
      imported[name] = *o;
    }
    out[d.alias] = std::move(imported);
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

std::string render_input_key(const RenderRequest& req, const json& built_deps) {
  Hasher h;
  h.add(k_cache_format);
  h.add(jsonnet_version());
  h.add(content_hash(k_gaia_libsonnet));
  // A bundle's hash stands for the folder, its files and the library paths (it holds
  // them all); otherwise the folder's path counts too, as error paths and the vendor/
  // beside it depend on it.
  h.add(req.sources_key.empty() ? req.spec->dir.string() : "bundle:" + req.sources_key);
  h.add(req.options.tenant);
  h.add(req.spec->name);
  // Only for another release, so the renders of releases named after their app keep
  // the keys they had.
  if (!req.release.empty() && req.release != req.spec->name) h.add("release:" + req.release);
  for (const auto& [alias, release] : req.dep_releases) h.add("dep-release:" + alias + "=" + release);
  h.add(req.spec->version.to_string());
  h.add(detail::json_compact(built_deps));
  h.add(detail::json_compact(req.options.overrides.is_null() ? json::object() : req.options.overrides));
  // Only when set, so the renders of apps nobody scaled keep the keys they had.
  if (!req.options.scale.empty()) h.add("scale:" + detail::json_compact(json(req.options.scale)));
  h.add(fmt::format("max_stack:{}", req.options.max_stack));
  if (!req.sources_key.empty()) return h.hex();
  h.add(fmt::format("jpaths:{}", req.options.jpaths.size()));
  for (const auto& j : req.options.jpaths) {
    std::error_code ec;
    auto c = fs::weakly_canonical(fs::absolute(j, ec), ec);
    h.add((ec ? j : c).string());
  }
  hash_app_dir(h, req.spec->dir);
  return h.hex();
}

Result<RawRender> evaluate(const RenderRequest& req) {
  if (!req.spec) throw std::invalid_argument("render::evaluate: no spec");
  auto deps = build_deps(*req.spec, req.deps);
  if (!deps) return std::unexpected(deps.error());
  auto out = evaluate_sandboxed(req, *deps);
  if (!out) return std::unexpected(out.error());
  return std::move(out->raw);
}

const ConfigSnapshot& RenderOptions::config_snapshot() const {
  static const ConfigSnapshot empty;
  return config ? *config : empty;
}

Result<RawRender> evaluate_config(const RenderRequest& req) {
  if (!req.spec) throw std::invalid_argument("render::evaluate_config: no spec");
  RenderRequest only = req;
  only.config_only = true;
  only.deps = json::object();
  auto out = evaluate_sandboxed(only, json::object());
  if (!out) return std::unexpected(out.error());
  return std::move(out->raw);
}

Result<Rendered> render_app(const RenderRequest& req, RenderCache* cache) {
  if (!req.spec) throw std::invalid_argument("render::render_app: no spec");
  auto deps = build_deps(*req.spec, req.deps);
  if (!deps) return std::unexpected(deps.error());

  Rendered result;
  std::optional<RawRender> raw;
  std::string key;
  if (cache) {
    key = render_input_key(req, *deps);
    auto hit = cache_lookup(*cache, key, req.options.config_snapshot(), req.sources_key.empty());
    if (req.stats) ++(hit ? req.stats->cache_hits : req.stats->cache_misses);
    result.from_cache = hit.has_value();
    if (hit) {
      raw = std::move(hit->raw);
      result.external = std::move(hit->external);
    }
  }
  if (!raw) {
    auto out = evaluate_sandboxed(req, *deps);
    if (!out) return std::unexpected(out.error());
    if (cache) cache_store(*cache, key, CacheManifest{out->raw, out->external});
    raw = std::move(out->raw);
    result.external = std::move(out->external);
  }
  auto w = validate_workload(*req.spec, req.options.tenant, *raw, req.release, req.dep_releases);
  if (!w) return std::unexpected(w.error());
  result.workload = std::move(*w);
  result.document = to_document(result.workload);
  return result;
}

}  // namespace gaia::render
