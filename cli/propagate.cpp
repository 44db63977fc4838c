#include "cli/propagate.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "cli/loader.hpp"
#include "cli/submission.hpp"
#include "cli/table.hpp"
#include "controllers/rollout.hpp"
#include "lib/timeline.hpp"
#include "render/renderer.hpp"
#include "spec/app_spec.hpp"

namespace gaia::cli {

namespace {

using json = nlohmann::json;

render::RenderOptions render_options(const AppRecord& app, const ConfigSnapshot& snapshot) {
  render::RenderOptions o;
  const json& in = app.render_inputs;
  if (in.contains("jpaths") && in["jpaths"].is_array())
    for (const auto& p : in["jpaths"])
      if (p.is_string()) o.jpaths.emplace_back(p.get<std::string>());
  if (in.contains("overrides") && in["overrides"].is_object()) o.overrides = in["overrides"];
  if (in.contains("limits") && in["limits"].is_object()) {
    const json& l = in["limits"];
    o.timeout_ms = l.value("timeout_ms", o.timeout_ms);
    o.max_output_bytes = l.value("max_output_bytes", o.max_output_bytes);
    o.memory_limit_bytes = l.value("memory_limit_bytes", o.memory_limit_bytes);
  }
  o.config = snapshot;
  o.tenant = app.tenant;
  o.display_dir = display_path(app.spec_dir);
  return o;
}

std::string id_of(const std::string& tenant, const std::string& name) { return tenant + "/" + name; }

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

}  // namespace

ConfigSnapshot app_snapshot(const StoreConfigSource& centers, const AppRecord& app) {
  ConfigFileLayer file;
  if (app.render_inputs.contains("config_file")) {
    const auto& cf = app.render_inputs["config_file"];
    if (auto layer = parse_config_file(cf.value("document", json::object()), cf.value("path", std::string("config file"))))
      file = std::move(*layer);
  }
  return layered_snapshot(&centers, app.tenant, file);
}

bool secret_key(std::string_view key) { return key == "secrets" || key.starts_with("secrets."); }

std::string display_value(const std::string& key, const json& value) {
  if (secret_key(key)) return "<secret>";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string controller_summary(const Batch& b) {
  std::vector<std::pair<std::string, size_t>> counts;
  for (const auto& e : b.events) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == e.reason; });
    if (it == counts.end()) counts.emplace_back(e.reason, 1);
    else ++it->second;
  }
  std::vector<std::string> parts;
  for (const auto& [reason, n] : counts) parts.push_back(fmt::format("{} {}", n, reason));
  return fmt::format("{}", fmt::join(parts, ", "));
}

Result<Propagation> propagate(const ClusterState& state, const StoreConfigSource& after,
                              const std::vector<ChangedKey>& keys) {
  Propagation out;
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
  auto cache = open_render_cache(false);
  Diagnostics errors;
  std::set<std::string> failed;
  for (const auto& id : propagation_order(state, seeds)) {
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
      std::string dep_id = id_of(app.tenant, dep);
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
    auto app_spec = app.spec_dir.empty() ? Result<spec::AppSpec>(fail(Diagnostic{{}, "", "no spec directory recorded", ""}))
                                     : spec::load_app_spec(app.spec_dir);
    if (!app_spec) {
      for (auto e : app_spec.error()) {
        e.message = fmt::format("cannot re-render {} ({}) from {}: {}", app.name, app.tenant, where, e.message);
        if (e.hint.empty()) e.hint = fmt::format("resubmit it (gaia submit DIR --tenant {}) or delete it", app.tenant);
        errors.push_back(std::move(e));
      }
      failed.insert(id);
      continue;
    }
    if (app_spec->name != app.name || app_spec->version.to_string() != app.version) {
      errors.push_back(Diagnostic{{app_spec->yaml_file}, "version",
                                  fmt::format("{} runs {} {}, but its spec directory now holds {} {}", id, app.name,
                                              app.version, app_spec->name, app_spec->version.to_string()),
                                  fmt::format("resubmit it (gaia submit {} --tenant {}) to deploy the edited spec, "
                                              "then change the config again",
                                              where, app.tenant)});
      failed.insert(id);
      continue;
    }
    if (!report.direct) {
      std::vector<ImportEdge> imports;
      for (const auto& dep : app_spec->dependencies) imports.push_back(ImportEdge{dep.name, dep.imports});
      std::map<std::string, std::pair<json, json>> same_tenant;
      for (const auto& [dep_id, change] : changed_outputs)
        if (dep_id.starts_with(app.tenant + "/")) same_tenant[dep_id.substr(app.tenant.size() + 1)] = change;
      report.imports = changed_imports(imports, same_tenant);
      if (report.imports.empty()) {
        out.apps.push_back(std::move(report));
        continue;
      }
    }
    // deps.<alias>: the outputs of each dependency as they are now (re-rendered ones new).
    json deps = json::object();
    for (const auto& dep : app_spec->dependencies) {
      std::string dep_id = id_of(app.tenant, dep.name);
      if (auto r = new_outputs.find(dep_id); r != new_outputs.end()) deps[dep.alias] = r->second;
      else if (const AppRecord* rec = state.find_app(app.tenant, dep.name)) deps[dep.alias] = rec->workload.outputs;
    }
    render::RenderRequest req;
    req.spec = &*app_spec;
    req.deps = std::move(deps);
    req.options = render_options(app, app_snapshot(after, app));
    auto rendered = render::render_app(req, cache.get());
    if (!rendered) {
      for (auto e : rendered.error()) {
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
    std::vector<std::string> why;
    for (const auto& c : report.reads)
      why.push_back(fmt::format("reads {} {} ({} -> {})", c.read.kind, c.read.key, display_value(c.read.key, c.read.value),
                                c.now ? display_value(c.read.key, c.now->value) : "default"));
    if (!report.imports.empty()) why.push_back(fmt::format("imports {}", fmt::join(report.imports, ", ")));
    rr.why = fmt::format("{}", fmt::join(why, "; "));
    report.rerendered = true;
    report.new_hash = rr.record.workload.hash;
    report.outputs_changed = app.workload.outputs != rr.record.workload.outputs;
    report.roles_changed = !roles_unchanged(app, rr.record);
    if (report.roles_changed)
      for (const auto& i : state.snapshot.instances)
        if (i.tenant == app.tenant && i.app == app.name && instance_outdated(i, rr.record)) ++report.to_roll;
    if (report.outputs_changed) changed_outputs[id] = {app.workload.outputs, rr.record.workload.outputs};
    new_outputs[id] = rr.record.workload.outputs;
    out.rerenders.push_back(std::move(rr));
    out.apps.push_back(std::move(report));
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

Result<ChangeOutcome> apply_center_change(Session& s, const CenterChange& change, bool dry_run) {
  ChangeOutcome out;
  out.dry_run = dry_run;
  auto state = s.state->load();
  if (!state) return fail(state.error());
  auto centers = StoreConfigSource::load(*s.store);
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
  auto prop = propagate(*state, after, change.keys);
  if (!prop) return fail(prop.error());
  if (dry_run) {
    out.propagation = std::move(*prop);
    if (preview) out.placement = placement_violations(*preview);
    return out;
  }
  if (auto w = change.write(s, *centers); !w) return fail(w.error());

  // Render against what was written, and commit whatever it yields on the current state.
  auto written = StoreConfigSource::load(*s.store);
  if (!written) return fail(written.error());
  auto committed = s.state->update(s.op, [&](const ClusterState& fresh, Batch& b) -> Result<void> {
    auto again = propagate(fresh, *written, change.keys);
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
    change.events(events, *written);
    // The change's own events come first on the timeline, then what it caused.
    events.events.insert(events.events.end(), b.events.begin(), b.events.end());
    b.events = std::move(events.events);
    return {};
  });
  if (!committed) return fail(committed.error());
  auto run = run_controllers(s);
  if (!run) return fail(run.error());
  for (const auto& e : run->outcome.batch.events)
    if (e.reason == "Displaced" && !e.instance.empty()) out.moved.push_back(e.instance);
  if (change.preview) out.placement = placement_violations(run->state);
  out.controllers = std::move(*run);
  return out;
}

bool change_settled(const ChangeOutcome& o, const ClusterState& state) {
  auto runs = [](const Instance& i) { return i.state == InstanceState::Running || i.state == InstanceState::Succeeded; };
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

int wait_for_change(const Globals& g, Session& s, const ChangeOutcome& o, const std::string& timeout, bool print) {
  if (o.dry_run) return k_ok;
  auto d = parse_duration(timeout);
  if (!d) return report(g, d.error());
  FollowOptions options;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  options.print = print;
  auto f = follow_controllers(g, s, [&](const ClusterState& st) { return change_settled(o, st); }, options);
  if (!f) return report(g, f.error());
  if (f->done) return k_ok;
  std::vector<Blocker> blockers;
  for (const auto& id : o.committed.applied) {
    auto slash = id.find('/');
    auto more = blocking_instances(f->state, id.substr(0, slash), {id.substr(slash + 1)});
    blockers.insert(blockers.end(), more.begin(), more.end());
  }
  for (const auto& key : o.moved)
    if (const Instance* i = f->state.find_instance(key); i && i->state != InstanceState::Running)
      blockers.push_back({key, std::string(instance_state_name(i->state)), i->pending_reason});
  std::fprintf(stderr, "%s %zu instance(s) not rolled out after %s:\n", red(g, stderr, "error:").c_str(), blockers.size(),
               timeout.c_str());
  std::fputs(format_blockers(blockers).c_str(), stderr);
  std::fprintf(stderr, "  hint: `gaia explain INSTANCE` shows why one is pending; the rollout goes on with the next gaia "
                       "command or under `gaia controller run`\n");
  return k_error;
}

std::string format_propagation(const Globals& g, const ChangeOutcome& o) {
  std::string text;
  auto heading = [&](const std::string& h) { text += bold(g, stdout, h) + "\n"; };
  auto indent = [](const std::string& t) {
    std::string r;
    size_t start = 0;
    while (start < t.size()) {
      size_t end = t.find('\n', start);
      if (end == std::string::npos) end = t.size();
      r += "  " + t.substr(start, end - start) + "\n";
      start = end + 1;
    }
    return r;
  };
  const auto& apps = o.propagation.apps;
  Table direct({"APP", "TENANT", "READ", "WAS", "NOW", "EFFECT"});
  Table dependents({"APP", "TENANT", "VIA", "EFFECT"});
  auto effect = [&](const PropagatedApp& a) -> std::string {
    if (!a.rerendered) return "kept (imported outputs unchanged)";
    std::string e = !a.roles_changed   ? "re-render, roles unchanged: instances kept"
                    : a.to_roll > 0     ? fmt::format("re-render, roll out {} instance(s)", a.to_roll)
                                        : "re-render";
    if (a.outputs_changed) e += "; outputs change";
    return e;
  };
  for (const auto& a : apps) {
    if (a.direct) {
      for (size_t k = 0; k < a.reads.size(); ++k) {
        const auto& c = a.reads[k];
        direct.add_row({k == 0 ? a.name : "", k == 0 ? a.tenant : "", c.read.kind + " " + c.read.key,
                        display_value(c.read.key, c.read.value) + (c.read.defaulted ? " (default)" : ""),
                        c.now ? display_value(c.read.key, c.now->value) : "(default)", k == 0 ? effect(a) : ""});
      }
    } else {
      dependents.add_row({a.name, a.tenant,
                          a.imports.empty() ? "-" : fmt::format("{}", fmt::join(a.imports, ", ")), effect(a)});
    }
  }
  if (direct.empty()) {
    text += "no deployed app reads a value this changes\n";
  } else {
    heading(o.dry_run ? "would re-render (apps reading it):" : "re-rendered (apps reading it):");
    text += indent(direct.render(indented_table_options(stdout, 2)));
  }
  if (!dependents.empty()) {
    heading(o.dry_run ? "dependents (re-rendered only if an output they import changes):" : "dependents:");
    text += indent(dependents.render(indented_table_options(stdout, 2)));
  }
  if (!o.placement.empty() || !o.moved.empty()) {
    Table moves({"INSTANCE", "NODE", "WHY"});
    for (const auto& v : o.placement)
      if (o.dry_run || v.pinned) moves.add_row({v.instance, v.node, v.pinned ? v.reason + " (stays: its volume is there)" : v.reason});
    if (!moves.empty()) {
      heading(o.dry_run ? "required placement no longer met (would move):" : "required placement no longer met, kept:");
      text += indent(moves.render(indented_table_options(stdout, 2)));
    }
    if (!o.moved.empty())
      text += fmt::format("moved {} instance(s) off nodes that no longer fit: {}\n", o.moved.size(), fmt::join(o.moved, ", "));
  }
  for (const auto& id : o.committed.skipped)
    text += fmt::format("{} {} changed while this ran (resubmitted?); it was left as it is\n",
                        yellow(g, stdout, "note:"), id);
  if (o.controllers)
    if (std::string summary = controller_summary(o.controllers->outcome.batch); !summary.empty())
      text += fmt::format("{} {}\n", bold(g, stdout, "controllers:"), summary);
  return text;
}

nlohmann::json propagation_json(const ChangeOutcome& o) {
  json apps = json::array();
  for (const auto& a : o.propagation.apps) {
    json reads = json::array();
    for (const auto& c : a.reads) {
      bool secret = secret_key(c.read.key);
      reads.push_back({{"kind", c.read.kind},
                       {"key", c.read.key},
                       {"was", secret ? json("<secret>") : c.read.value},
                       {"was_default", c.read.defaulted},
                       {"now", !c.now ? json() : secret ? json("<secret>") : c.now->value},
                       {"now_default", !c.now.has_value()}});
    }
    apps.push_back({{"tenant", a.tenant},
                    {"app", a.name},
                    {"direct", a.direct},
                    {"reads", reads},
                    {"imports_changed", a.imports},
                    {"rerendered", a.rerendered},
                    {"outputs_changed", a.outputs_changed},
                    {"roles_changed", a.roles_changed},
                    {"to_roll", a.to_roll},
                    {"old_hash", a.old_hash},
                    {"new_hash", a.new_hash}});
  }
  json placement = json::array();
  for (const auto& v : o.placement)
    placement.push_back({{"instance", v.instance}, {"node", v.node}, {"reason", v.reason}, {"pinned", v.pinned}});
  json out = {{"dry_run", o.dry_run}, {"apps", apps}, {"placement", placement}, {"moved", o.moved},
              {"skipped", o.committed.skipped}};
  if (o.controllers) out["controllers"] = controller_summary(o.controllers->outcome.batch);
  return out;
}

}  // namespace gaia::cli
