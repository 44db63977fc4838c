#include "ops/render_inputs.hpp"

#include "render/overrides.hpp"

namespace gaia::ops {

namespace fs = std::filesystem;
using json = nlohmann::json;

void to_json(json& j, const RenderInputs& in) {
  j = json{{"overrides", in.overrides},
           {"jpaths", in.jpaths},
           {"repo", in.repo},
           {"limits",
            {{"timeout_ms", in.limits.timeout_ms},
             {"max_output_bytes", in.limits.max_output_bytes},
             {"memory_limit_bytes", in.limits.memory_limit_bytes}}}};
  if (in.config_file) j["config_file"] = {{"path", in.config_file->path}, {"document", in.config_file->document}};
}

namespace {

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (j.contains(key) && j[key].is_array())
    for (const auto& p : j[key])
      if (p.is_string()) out.push_back(p.get<std::string>());
  return out;
}

}  // namespace

void from_json(const json& j, RenderInputs& in) {
  in = RenderInputs{};
  if (!j.is_object()) return;
  if (j.contains("overrides") && j["overrides"].is_object()) in.overrides = j["overrides"];
  in.jpaths = strings(j, "jpaths");
  in.repo = strings(j, "repo");
  if (j.contains("limits") && j["limits"].is_object()) {
    const json& l = j["limits"];
    in.limits.timeout_ms = l.value("timeout_ms", in.limits.timeout_ms);
    in.limits.max_output_bytes = l.value("max_output_bytes", in.limits.max_output_bytes);
    in.limits.memory_limit_bytes = l.value("memory_limit_bytes", in.limits.memory_limit_bytes);
  }
  if (j.contains("config_file") && j["config_file"].is_object()) {
    const json& cf = j["config_file"];
    in.config_file = ConfigFileInput{cf.value("path", std::string("config file")), cf.value("document", json::object())};
  }
}

Result<RenderInputs> load_render_inputs(const RenderSettings& settings) {
  RenderInputs in;
  for (const auto& p : settings.jpaths) in.jpaths.push_back(p.string());
  for (const auto& p : settings.repo) in.repo.push_back(p.string());
  in.limits = settings.limits;
  Diagnostics errors;
  std::vector<fs::path> values(settings.values.begin(), settings.values.end());
  auto overrides = render::build_overrides(values, settings.sets);
  if (!overrides) errors.insert(errors.end(), overrides.error().begin(), overrides.error().end());
  else in.overrides = std::move(*overrides);
  // The one read of the --config-file: its errors are reported here, and the parsed
  // document is what every render of this command and every record it writes use.
  if (!settings.config_file.empty()) {
    auto layer = load_config_file_layer(settings.config_file);
    if (!layer) errors.insert(errors.end(), layer.error().begin(), layer.error().end());
    else in.config_file = ConfigFileInput{settings.config_file, std::move(layer->document)};
  }
  if (!errors.empty()) return fail(std::move(errors));
  return in;
}

ConfigFileLayer config_file_layer(const RenderInputs& inputs) {
  if (!inputs.config_file) return ConfigFileLayer{};
  auto layer = parse_config_file(inputs.config_file->document, inputs.config_file->path);
  return layer ? std::move(*layer) : ConfigFileLayer{};
}

render::ChainOptions chain_options(const RenderInputs& inputs, const std::string& tenant,
                                   const StoreConfigSource* center) {
  render::ChainOptions opts;
  opts.base.jpaths.assign(inputs.jpaths.begin(), inputs.jpaths.end());
  opts.base.tenant = tenant;
  opts.base.timeout_ms = inputs.limits.timeout_ms;
  opts.base.max_output_bytes = inputs.limits.max_output_bytes;
  opts.base.memory_limit_bytes = inputs.limits.memory_limit_bytes;
  opts.root_overrides = inputs.overrides;
  opts.base.config = std::make_shared<const ConfigSnapshot>(layered_snapshot(center, tenant, config_file_layer(inputs)));
  return opts;
}

render::RenderOptions record_render_options(const AppRecord& app, const ConfigSnapshot& snapshot) {
  RenderInputs in = app.render_inputs.get<RenderInputs>();
  render::RenderOptions o;
  o.jpaths.assign(in.jpaths.begin(), in.jpaths.end());
  o.overrides = in.overrides;
  o.timeout_ms = in.limits.timeout_ms;
  o.max_output_bytes = in.limits.max_output_bytes;
  o.memory_limit_bytes = in.limits.memory_limit_bytes;
  o.config = std::make_shared<const ConfigSnapshot>(snapshot);
  o.tenant = app.tenant;
  // A scaled app renders with its counts, so a config change re-renders it as it runs.
  o.scale = app.scale;
  o.display_dir = display_path(app.spec_dir);
  return o;
}

std::string recorded_binding(const AppRecord& app, const spec::Dependency& d) {
  for (const RunningRequirement& r : app.dependency_ranges)
    if (r.alias == d.alias) return r.target();
  // Recorded before releases: by name, and always the release named after the app.
  for (const RunningRequirement& r : app.dependency_ranges)
    if (r.alias.empty() && r.name == d.name) return r.target();
  return d.release.empty() ? d.name : d.release;
}

void set_release_names(render::RenderRequest& req, const AppRecord& app) {
  req.release = app.name == app.app_name() ? std::string() : app.name;
  req.dep_releases.clear();
  if (!req.spec) return;
  // As the chain renders them: only bindings to another release than the app's own name.
  for (const auto& d : req.spec->dependencies) {
    std::string target = recorded_binding(app, d);
    if (target != d.name) req.dep_releases[d.alias] = target;
  }
}

spec::ConfigEvaluator config_evaluator(const render::ChainOptions& options) {
  return [options](const spec::AppSpec& spec, bool root) -> Result<nlohmann::json> {
    render::RenderRequest req;
    req.spec = &spec;
    req.options = options.base;
    req.options.overrides = root ? options.root_overrides : nlohmann::json::object();
    auto raw = render::evaluate_config(req);
    if (!raw) return fail(raw.error());
    return std::move(raw->config);
  };
}

}  // namespace gaia::ops
