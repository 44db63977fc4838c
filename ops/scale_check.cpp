#include "ops/scale_check.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ops/loader.hpp"
#include "ops/propagate.hpp"
#include "ops/render_inputs.hpp"
#include "ops/spec_source.hpp"
#include "render/renderer.hpp"

namespace gaia::ops {

Result<void> check_scale_render(const Workspace& ws, const ClusterState& state, const AppRecord& app,
                                const std::string& role, int replicas) {
  AppRecord scaled = app;
  scaled.scale[role] = replicas;
  std::string where = app.spec_dir.empty() ? std::string("<unknown>") : display_path(app.spec_dir);
  auto cannot = [&](Diagnostics errors) {
    for (auto& e : errors) {
      e.message = fmt::format("cannot render {} ({}) again to check the scale: {}", app.name, app.tenant, e.message);
      if (e.hint.empty())
        e.hint = fmt::format("nothing was written; resubmit it (gaia submit {} --tenant {}), then scale", where,
                             app.tenant);
    }
    return fail(std::move(errors));
  };
  auto source = open_spec(scaled, bundle_reader(ws));
  if (!source) return cannot(source.error());
  const spec::AppSpec& spec = source->spec;
  if (spec.name != app.app_name() || spec.version.to_string() != app.version)
    return cannot({Diagnostic{{source->unmap(spec.yaml_file)}, "version",
                              fmt::format("it runs {} {}, but its spec directory now holds {} {}", app.app_name(), app.version,
                                          spec.name, spec.version.to_string()),
                              ""}});
  auto centers = StoreConfigSource::load(ws.store);
  if (!centers) return fail(centers.error());

  // deps.<alias>: the outputs of each dependency as it runs now, as a config change
  // re-renders a dependent whose dependencies did not change.
  nlohmann::json deps = nlohmann::json::object();
  // Only the dependencies the app is bound to: one a `when:` left out gets no deps.<alias>.
  for (const auto& dep : spec.dependencies) {
    std::string target = recorded_binding(app, dep);
    if (std::find(app.dependencies.begin(), app.dependencies.end(), target) != app.dependencies.end())
      if (const AppRecord* rec = state.find_app(app.tenant, target)) deps[dep.alias] = rec->workload.outputs;
  }
  render::RenderRequest req;
  req.spec = &spec;
  req.deps = std::move(deps);
  set_release_names(req, app);
  req.options = record_render_options(scaled, app_snapshot(*centers, scaled));
  if (source->unpacked) {
    req.options.jpaths = source->unpacked->jpaths;
    req.sources_key = app.bundle;
  }
  auto cache = open_render_cache(ws.render_cache_dir);
  auto rendered = render::render_app(req, cache.get());
  if (!rendered) {
    Diagnostics errors;
    for (auto e : rendered.error()) {
      e = source->unmap(std::move(e));
      e.message = fmt::format("the template of {} refuses {} replica(s) of {}: {}", app.name, replicas, role, e.message);
      if (e.hint.empty())
        e.hint = "nothing was written; scale to a count the template accepts, or first change what it checks the "
                 "count against (its config)";
      errors.push_back(std::move(e));
    }
    return fail(std::move(errors));
  }
  return {};
}

}  // namespace gaia::ops
