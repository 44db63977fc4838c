#include "ops/propagate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "controllers/rollout.hpp"
#include "ops/loader.hpp"
#include "ops/render_inputs.hpp"
#include "ops/spec_source.hpp"
#include "ops/secrets.hpp"
#include "ops/storage_check.hpp"
#include "render/renderer.hpp"
#include "spec/app_spec.hpp"

namespace gaia::ops {

namespace {

using json = nlohmann::json;

std::string id_of(const std::string& tenant, const std::string& name) { return tenant + "/" + name; }

// The dependencies of a re-rendered app that apply after the change.
struct ActiveDeps {
  std::vector<bool> flags;  // Per entry of the spec's dependencies.
  std::vector<std::string> targets;  // Per entry: the release it binds to.
  std::vector<std::string> names;    // The releases of the ones that apply.
  std::vector<RunningRequirement> ranges;
  std::vector<std::string> added, removed;  // Against the record, with their conditions.
};

// Whether `from` (a dependency of an app of `tenant`, as recorded) reaches the app `to`
// of `tenant` through the stored dependencies, across tenants too.
bool reaches(const ClusterState& state, const std::string& tenant, const std::string& from, const std::string& to) {
  std::set<std::string> seen;
  std::vector<std::string> stack{dependency_id(tenant, from)};
  const std::string goal = tenant + "/" + to;
  while (!stack.empty()) {
    std::string id = stack.back();
    stack.pop_back();
    if (id == goal) return true;
    if (!seen.insert(id).second) continue;
    if (auto a = state.apps.find(id); a != state.apps.end())
      for (const auto& d : a->second.dependencies) stack.push_back(dependency_id(a->second.tenant, d));
  }
  return false;
}

// The release a dependency a flag turns on binds to: the one its release: names, else a
// running release of its app in range (the one named after the app first, then by
// name), else the release named after the app (which then is reported as not running).
std::string running_binding(const ClusterState& state, const std::string& tenant, const spec::Dependency& d) {
  if (!d.tenant.empty() && d.tenant != tenant) return d.tenant + "/" + (d.release.empty() ? d.name : d.release);
  if (!d.release.empty()) return d.release;
  auto in_range = [&](const AppRecord& a) {
    auto v = semver::parse_version(a.version);
    return a.tenant == tenant && a.app_name() == d.name && v && d.range.satisfies(*v);
  };
  if (const AppRecord* own = state.find_app(tenant, d.name); own && in_range(*own)) return d.name;
  for (const auto& [id, a] : state.apps)  // Ordered by tenant/name.
    if (in_range(a)) return a.name;
  return d.name;
}

// Which dependencies of `spec` apply after the change: its config.jsonnet evaluated as
// the app renders (the I/O), then decided by spec::active_dependencies.
Result<std::vector<bool>> applying(const AppRecord& app, const spec::AppSpec& spec, const SpecSource& source,
                                   const StoreConfigSource& after) {
  bool conditional = std::any_of(spec.dependencies.begin(), spec.dependencies.end(),
                                 [](const spec::Dependency& d) { return d.when.has_value(); });
  if (!conditional) return std::vector<bool>(spec.dependencies.size(), true);
  render::RenderRequest req;
  req.spec = &spec;
  req.options = record_render_options(app, app_snapshot(after, app));
  if (source.unpacked) req.options.jpaths = source.unpacked->jpaths;
  auto raw = render::evaluate_config(req);
  if (!raw) return fail(raw.error());
  return spec::active_dependencies(spec, raw->config);
}

// The decision, a pure function of the state: what the app is bound to with `flags`,
// against what it was bound to, refusing bindings to apps that do not run, are out of
// range, close a loop, or are re-rendered later in this change.
Result<ActiveDeps> bind_dependencies(const ClusterState& state, const AppRecord& app, const spec::AppSpec& spec,
                                     std::vector<bool> flags, const std::set<std::string>& still_to_render) {
  ActiveDeps out;
  out.flags = std::move(flags);
  Diagnostics errors;
  std::set<std::string> before(app.dependencies.begin(), app.dependencies.end());
  for (size_t k = 0; k < spec.dependencies.size(); ++k) {
    const spec::Dependency& d = spec.dependencies[k];
    std::string cond = d.when ? fmt::format(" (when {})", d.when->text) : "";
    bool bound = before.count(recorded_binding(app, d)) > 0;
    // Bound at the submit: to the release recorded. Newly applying: to what runs in the
    // tenant, as resolution would reuse it; deploying it from the repository is a
    // submit's work, not a config change's.
    std::string target = bound ? recorded_binding(app, d) : running_binding(state, app.tenant, d);
    out.targets.push_back(target);
    std::string shown = target == d.name ? d.name : fmt::format("{} (release {})", d.name, target);
    if (!out.flags[k]) {
      if (bound) out.removed.push_back(shown + cond);
      continue;
    }
    out.names.push_back(target);
    out.ranges.push_back({d.name, d.range.text(), target, d.alias});
    if (bound) continue;
    const AppRecord* rec = state.find_app(app.tenant, target);
    if (rec && rec->app_name() != d.name) rec = nullptr;
    // Another tenant's release binds only while that tenant exports it here.
    if (rec && rec->tenant != app.tenant && !running_app_of(*rec).exported_to(app.tenant)) rec = nullptr;
    std::optional<semver::Version> version;
    if (rec)
      if (auto v = semver::parse_version(rec->version)) version = *v;
    if (!rec || !version || !d.range.satisfies(*version)) {
      std::string runs = rec ? fmt::format("{} {} runs there, outside the range {}", shown, rec->version, d.range.text())
                             : target.find('/') != std::string::npos
                                 ? fmt::format("{} does not run there or is not exported to tenant {}", target, app.tenant)
                                 : fmt::format("{} does not run there", shown);
      errors.push_back(Diagnostic{d.when_location, fmt::format("dependencies[{}].when", k),
                                  fmt::format("with this change app {} ({}) depends on {}{}, and {}", app.name,
                                              app.tenant, d.name, cond, runs),
                                  fmt::format("deploy {} in tenant {} first (gaia submit DIR --tenant {}), then change "
                                              "the config again; or resubmit {} with the flag set, which deploys it",
                                              d.name, app.tenant, app.tenant, app.name)});
      continue;
    }
    // Bound now, it must not close a loop (submit refuses those too), and its outputs
    // must be final: one this change re-renders later in the chain is not yet.
    if (reaches(state, app.tenant, target, app.name)) {
      errors.push_back(Diagnostic{d.when_location, fmt::format("dependencies[{}].when", k),
                                  fmt::format("with this change app {} ({}) depends on {}{}, which depends on {}: "
                                              "apps cannot depend on each other in a loop",
                                              app.name, app.tenant, shown, cond, app.name),
                                  "leave the flag as it is, or change the dependencies of one of them"});
      continue;
    }
    if (still_to_render.count(dependency_id(app.tenant, target))) {
      errors.push_back(Diagnostic{d.when_location, fmt::format("dependencies[{}].when", k),
                                  fmt::format("with this change app {} ({}) depends on {}{}, which this change "
                                              "re-renders too, after {}",
                                              app.name, app.tenant, shown, cond, app.name),
                                  fmt::format("change the keys {} reads first, then the flag of {}", target, app.name)});
      continue;
    }
    out.added.push_back(shown + cond);
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

}  // namespace

namespace {

std::optional<ActiveDeps> active_after(const ClusterState& state, const AppRecord& app, const spec::AppSpec& spec,
                                       const SpecSource& source, const StoreConfigSource& after,
                                       const std::set<std::string>& still_to_render, Diagnostics& errors) {
  auto flags = applying(app, spec, source, after);
  auto r = flags ? bind_dependencies(state, app, spec, std::move(*flags), still_to_render)
                 : Result<ActiveDeps>(std::unexpected(flags.error()));
  if (r) return std::move(*r);
  for (auto e : r.error()) {
    e = source.unmap(std::move(e));
    if (!e.message.starts_with("with this change"))
      e.message = fmt::format("deciding the dependencies of {} ({}) for this change: {}", app.name, app.tenant, e.message);
    errors.push_back(std::move(e));
  }
  return std::nullopt;
}

}  // namespace

BundleReader bundle_reader(const Workspace& ws) {
  return [&ws](const std::string& hash) { return ws.state.bundle(hash); };
}

ConfigSnapshot app_snapshot(const StoreConfigSource& centers, const AppRecord& app) {
  return layered_snapshot(&centers, app.tenant, config_file_layer(app.render_inputs.get<RenderInputs>()));
}

Result<Propagation> propagate(const ClusterState& state, const StoreConfigSource& after,
                              const std::vector<ChangedKey>& keys, const std::filesystem::path& cache_dir,
                              const BundleReader& bundles) {
  Propagation out;
  out.secrets = deployed_secrets(state, bundles).keys;
  auto direct = direct_impact(state, keys, [&](const AppRecord& a) { return app_snapshot(after, a); });
  std::map<std::string, const DirectImpact*> direct_by_id;
  std::vector<std::string> seeds;
  for (const auto& d : direct) {
    seeds.push_back(id_of(d.tenant, d.app));
    direct_by_id[seeds.back()] = &d;
  }
  // Outputs before and after of the apps re-rendered so far, and their new records.
  std::map<std::string, std::pair<json, json>> changed_outputs;
  std::map<std::string, json> new_outputs;  // Of every app re-rendered so far.
  auto cache = open_render_cache(cache_dir);
  Diagnostics errors;
  std::set<std::string> failed;
  auto order = propagation_order(state, seeds);
  // Apps of the chain not handled yet: a dependency a flag binds must not be one of them.
  std::set<std::string> still_to_render(order.begin(), order.end());
  for (const auto& id : order) {
    still_to_render.erase(id);
    const AppRecord& app = state.apps.at(id);
    PropagatedApp report;
    report.tenant = app.tenant;
    report.name = app.name;
    report.old_hash = app.workload.hash;
    auto d = direct_by_id.find(id);
    report.direct = d != direct_by_id.end();
    if (report.direct) report.reads = d->second->reads;
    bool blocked = false, deps_changed = false;
    for (const auto& dep : app.dependencies) {
      std::string dep_id = dependency_id(app.tenant, dep);
      blocked = blocked || failed.count(dep_id) > 0;
      deps_changed = deps_changed || changed_outputs.count(dep_id) > 0;
    }
    if (blocked) {
      failed.insert(id);  // Its dependency's errors are reported; more would be noise.
      continue;
    }
    if (!report.direct && !deps_changed) {
      out.apps.push_back(std::move(report));  // Downstream, but nothing it imports moved.
      continue;
    }
    std::string where = app.spec_dir.empty() ? std::string("<unknown>") : display_path(app.spec_dir);
    auto source = open_spec(app, bundles);
    if (!source) {
      for (auto e : source.error()) {
        e.message = fmt::format("cannot re-render {} ({}) from {}: {}", app.name, app.tenant, where, e.message);
        if (e.hint.empty()) e.hint = fmt::format("resubmit it (gaia submit DIR --tenant {}) or delete it", app.tenant);
        errors.push_back(std::move(e));
      }
      failed.insert(id);
      continue;
    }
    const spec::AppSpec* app_spec = &source->spec;
    if (app_spec->name != app.app_name() || app_spec->version.to_string() != app.version) {
      errors.push_back(Diagnostic{{source->unmap(app_spec->yaml_file)}, "version",
                                  fmt::format("{} runs {} {}, but its spec directory now holds {} {}", id, app.app_name(),
                                              app.version, app_spec->name, app_spec->version.to_string()),
                                  fmt::format("resubmit it (gaia submit {} --tenant {}) to deploy the edited spec, "
                                              "then change the config again",
                                              where, app.tenant)});
      failed.insert(id);
      continue;
    }
    if (!report.direct) {
      std::vector<ImportEdge> imports;
      // The dependencies it is bound to; one a `when:` left out imports nothing.
      for (const auto& dep : app_spec->dependencies) {
        std::string target = recorded_binding(app, dep);
        if (std::find(app.dependencies.begin(), app.dependencies.end(), target) != app.dependencies.end())
          imports.push_back(ImportEdge{target, dep.imports});
      }
      // The changes by the name the app records each dependency under (NAME, or
      // TENANT/NAME for a release another tenant exports).
      std::map<std::string, std::pair<json, json>> by_dependency;
      for (const auto& dep : app.dependencies)
        if (auto c = changed_outputs.find(dependency_id(app.tenant, dep)); c != changed_outputs.end())
          by_dependency[dep] = c->second;
      report.imports = changed_imports(imports, by_dependency);
      if (report.imports.empty()) {
        out.apps.push_back(std::move(report));
        continue;
      }
    }
    // Conditional dependencies are decided again on the config after the change: a flag
    // may add one (bound to the app of that name running in the tenant) or remove one
    // (it keeps running; nothing named it).
    auto active = active_after(state, app, *app_spec, *source, after, still_to_render, errors);
    if (!active) {
      failed.insert(id);
      continue;
    }
    // deps.<alias>: the outputs of each dependency as they are now (re-rendered ones new).
    json deps = json::object();
    for (size_t k = 0; k < app_spec->dependencies.size(); ++k) {
      if (!active->flags[k]) continue;
      const auto& dep = app_spec->dependencies[k];
      const std::string& target = active->targets[k];
      std::string dep_id = dependency_id(app.tenant, target);
      if (auto r = new_outputs.find(dep_id); r != new_outputs.end()) deps[dep.alias] = r->second;
      else if (const AppRecord* rec = state.find_app(app.tenant, target)) deps[dep.alias] = rec->workload.outputs;
    }
    render::RenderRequest req;
    req.spec = app_spec;
    req.deps = std::move(deps);
    req.options = record_render_options(app, app_snapshot(after, app));
    // The release and its bindings as they are after this change (a flag may bind one).
    AppRecord bound = app;
    bound.dependency_ranges = active->ranges;
    set_release_names(req, bound);
    if (source->unpacked) {
      // The library paths as unpacked; the bundle's hash stands for every file, so the
      // renders of one bundle share cache entries whichever folder it is unpacked in.
      req.options.jpaths = source->unpacked->jpaths;
      req.sources_key = app.bundle;
    }
    auto rendered = render::render_app(req, cache.get());
    if (!rendered) {
      for (auto e : rendered.error()) {
        e = source->unmap(std::move(e));
        e.message = fmt::format("re-rendering {} ({}) for this change: {}", app.name, app.tenant, e.message);
        errors.push_back(std::move(e));
      }
      failed.insert(id);
      continue;
    }
    Rerender rr;
    rr.base_hash = app.workload.hash;
    rr.record = app;
    rr.record.workload = rendered->workload;
    rr.record.document = rendered->document;
    rr.record.dependencies = active->names;
    rr.record.dependency_ranges = active->ranges;
    report.deps_added = active->added;
    report.deps_removed = active->removed;
    std::vector<std::string> why;
    for (const auto& c : report.reads)
      why.push_back(fmt::format("reads {} {} ({} -> {})", c.read.kind, c.read.key,
                                out.secrets.read_text(c.read.kind, c.read.key, c.read.value),
                                c.now ? out.secrets.read_text(c.read.kind, c.read.key, c.now->value) : "default"));
    if (!report.imports.empty()) why.push_back(fmt::format("imports {}", fmt::join(report.imports, ", ")));
    if (!report.deps_added.empty()) why.push_back(fmt::format("now depends on {}", fmt::join(report.deps_added, ", ")));
    if (!report.deps_removed.empty())
      why.push_back(fmt::format("no longer depends on {}", fmt::join(report.deps_removed, ", ")));
    rr.why = fmt::format("{}", fmt::join(why, "; "));
    report.rerendered = true;
    report.new_hash = rr.record.workload.hash;
    report.outputs_changed = app.workload.outputs != rr.record.workload.outputs;
    report.roles_changed = !roles_unchanged(app, rr.record);
    if (report.roles_changed)
      for (const auto& i : state.snapshot.instances)
        if (i.tenant == app.tenant && i.app == app.name && instance_outdated(i, rr.record)) ++report.to_roll;
    // A count this change sets for a role that `gaia scale` overrides: the override wins
    // (controllers/replicas.hpp desired_replicas), and the user is told so.
    for (const auto& role : rr.record.workload.roles) {
      auto scaled = app.scale.find(role.name);
      if (scaled == app.scale.end() || scaled->second == role.replicas) continue;
      int before = -1;
      for (const auto& r : app.workload.roles)
        if (r.name == role.name) before = r.replicas;
      if (before == role.replicas) continue;
      report.scale_wins.push_back(fmt::format(
          "{}/{}: the spec now says {} replica(s), but the scale override of {} wins (`gaia scale {}/{} --reset` "
          "follows the spec)",
          app.name, role.name, role.replicas, scaled->second, app.name, role.name));
    }
    // A value that names a storage class the cluster lacks is refused like a submit's.
    if (auto ok = check_storage_classes(state, {AppToDeploy{rr.record}}); !ok)
      errors.insert(errors.end(), ok.error().begin(), ok.error().end());
    if (report.outputs_changed) changed_outputs[id] = {app.workload.outputs, rr.record.workload.outputs};
    new_outputs[id] = rr.record.workload.outputs;
    out.rerenders.push_back(std::move(rr));
    out.apps.push_back(std::move(report));
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

Result<ChangeOutcome> apply_center_change(const Workspace& ws, const CenterChange& change, bool dry_run) {
  ChangeOutcome out;
  out.dry_run = dry_run;
  auto state = ws.state.load();
  if (!state) return fail(state.error());
  auto centers = StoreConfigSource::load(ws.store);
  if (!centers) return fail(centers.error());
  // A change the write would refuse (an unknown node, say) is refused before rendering.
  std::optional<ClusterState> preview;
  if (change.preview) {
    auto p = change.preview(*state);
    if (!p) return fail(p.error());
    preview = std::move(*p);
  }
  // Rendered as if written at the next revision: when nothing else is written meanwhile,
  // the renders after the write are render-cache hits.
  StoreConfigSource after = *centers;
  change.apply(after, centers->revision() + 1);
  auto prop = propagate(*state, after, change.keys, ws.render_cache_dir, bundle_reader(ws));
  if (!prop) return fail(prop.error());
  if (dry_run) {
    out.propagation = std::move(*prop);
    if (preview) out.placement = placement_violations(*preview);
    return out;
  }
  if (auto w = change.write(ws, *centers); !w) return fail(w.error());
  ws.crash_if("center-change-written");

  // Render against what was written, and commit whatever it yields on the current state.
  auto written = StoreConfigSource::load(ws.store);
  if (!written) return fail(written.error());
  auto committed = ws.state.update(ws.op, [&](const ClusterState& fresh, Batch& b) -> Result<void> {
    auto again = propagate(fresh, *written, change.keys, ws.render_cache_dir, bundle_reader(ws));
    if (!again) {
      Diagnostics errors = again.error();
      for (auto& e : errors)
        e.hint = fmt::format("{} is written, but the apps reading it were not re-rendered; {}", change.description,
                             e.hint.empty() ? "fix the cause and set the value again" : e.hint);
      return fail(std::move(errors));
    }
    out.propagation = std::move(*again);
    out.committed = plan_rerender(fresh, out.propagation.rerenders);
    b = out.committed.batch;
    Batch events;
    change.events(events, *written, out.propagation.secrets);
    // The change's own events come first on the timeline, then what it caused.
    events.events.insert(events.events.end(), b.events.begin(), b.events.end());
    b.events = std::move(events.events);
    return {};
  });
  if (!committed) return fail(committed.error());
  auto run = run_controllers(ws);
  if (!run) return fail(run.error());
  for (const auto& e : run->outcome.batch.events)
    if (e.reason == "Displaced" && !e.instance.empty()) out.moved.push_back(e.instance);
  if (change.preview) out.placement = placement_violations(*run->state);
  out.controllers = std::move(*run);
  return out;
}

Result<RerenderOutcome> heal_stale_renders(const Workspace& ws) {
  auto centers = StoreConfigSource::load(ws.store);
  if (!centers) return fail(centers.error());
  RerenderOutcome out;
  auto committed = ws.state.update(ws.op, [&](const ClusterState& state, Batch& b) -> Result<void> {
    out = {};
    auto keys = stale_keys(state, [&](const AppRecord& a) { return app_snapshot(*centers, a); });
    if (keys.empty()) return {};
    auto prop = propagate(state, *centers, keys, ws.render_cache_dir, bundle_reader(ws));
    if (!prop) {
      Diagnostics errors = prop.error();
      for (auto& e : errors)
        if (e.hint.empty()) e.hint = "the app keeps running its last render; fix the cause or set the value again";
      return fail(std::move(errors));
    }
    for (auto& r : prop->rerenders) r.why = "repairing a stale render: " + r.why;
    out = plan_rerender(state, prop->rerenders);
    b = out.batch;
    return {};
  });
  if (!committed) return fail(committed.error());
  return out;
}

bool change_settled(const ChangeOutcome& o, const ClusterState& state) {
  auto runs = [](const Instance& i) { return serving(i); };
  for (const auto& id : o.committed.applied) {
    auto app = state.apps.find(id);
    if (app == state.apps.end()) continue;  // Deleted meanwhile: nothing to wait for.
    for (const auto& i : state.snapshot.instances)
      if (i.tenant == app->second.tenant && i.app == app->second.name &&
          (instance_outdated(i, app->second) || !runs(i)))
        return false;
  }
  for (const auto& key : o.moved)
    if (const Instance* i = state.find_instance(key); i && !runs(*i)) return false;
  return true;
}

Result<ChangeWait> wait_for_change(const Workspace& ws, const ChangeOutcome& o, const FollowOptions& options) {
  ChangeWait w;
  if (o.dry_run) {
    w.done = true;
    return w;
  }
  auto f = follow_controllers(ws, [&](const ClusterState& st) { return change_settled(o, st); }, options);
  if (!f) return fail(f.error());
  w.done = f->done;
  w.state = std::move(f->state);
  if (w.done) return w;
  for (const auto& id : o.committed.applied) {
    auto slash = id.find('/');
    auto more = blocking_instances(w.state, id.substr(0, slash), {id.substr(slash + 1)});
    w.blockers.insert(w.blockers.end(), more.begin(), more.end());
  }
  for (const auto& key : o.moved)
    if (const Instance* i = w.state.find_instance(key); i && i->state != InstanceState::Running)
      w.blockers.push_back({key, std::string(instance_state_name(i->state)), i->pending_reason});
  return w;
}

}  // namespace gaia::ops
