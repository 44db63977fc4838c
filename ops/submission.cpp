#include "ops/submission.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "controllers/lifecycle.hpp"
#include "controllers/rollout.hpp"
#include "ops/bundle.hpp"
#include "ops/storage_check.hpp"
#include "render/chain.hpp"
#include "spec/app_spec.hpp"
#include "spec/suggest.hpp"

namespace gaia::ops {

std::vector<std::string> Submission::app_names() const {
  std::vector<std::string> out;
  for (const auto& r : reused) out.push_back(r.name);
  for (const auto& a : apps) out.push_back(a.record.name);
  return out;
}

namespace {

// Loads the specs of `dirs`, opens the repository and resolves the chain: everything
// before rendering.
Result<std::unique_ptr<Submission>> resolve_submission(const std::string& tenant, const std::vector<std::string>& dirs,
                                                       const std::vector<std::string>& repo_roots,
                                                       const RunningApps& running,
                                                       const spec::ConfigEvaluator& config,
                                                       const std::string& release) {
  auto s = std::make_unique<Submission>();
  s->tenant = tenant;
  auto expanded = expand_spec_paths(dirs);
  if (!expanded) return fail(expanded.error());
  Diagnostics errors;
  for (const auto& d : *expanded) {
    auto spec = spec::load_app_spec(d);
    if (!spec) errors.insert(errors.end(), spec.error().begin(), spec.error().end());
    else s->roots.push_back(std::move(*spec));
  }
  if (!errors.empty()) return fail(std::move(errors));
  if (!release.empty()) {
    if (std::string problem = spec::dns_label_problem(release); !problem.empty())
      return fail(Diagnostic{{}, "", fmt::format("--name '{}' is not a valid release name: {}", release, problem),
                             "release names are DNS labels (a-z, 0-9 and '-'), as they name instances and DNS names"});
    if (s->roots.size() != 1) {
      std::vector<std::string> ids;
      for (const auto& r : s->roots) ids.push_back(r.id());
      return fail(Diagnostic{{}, "",
                             fmt::format("--name {} names one release, but {} specs are given: {}", release,
                                         s->roots.size(), spec::join_limited(ids)),
                             "submit the spec to run under that name on its own"});
    }
  }
  auto repo = open_repository(std::vector<std::filesystem::path>(repo_roots.begin(), repo_roots.end()), *expanded);
  if (!repo) return fail(repo.error());
  s->repo = std::move(*repo);
  std::vector<spec::RootSpec> roots;
  for (const auto& r : s->roots) roots.push_back({&r, release});
  // Every tenant's apps: releases other tenants export here, and other tenants' apps
  // bound to this tenant's releases (whose ranges hold too).
  auto plan = spec::resolve_releases(roots, s->repo, running.list_all(), tenant, config);
  if (!plan) return fail(plan.error());
  s->plan = std::move(*plan);
  return s;
}

// How a dependent records a release it binds to: NAME in its tenant, TENANT/NAME in
// another (lib/state.hpp dependency_id).
std::string ref_of(const spec::PlanNode& node) { return node.tenant.empty() ? node.name : node.tenant + "/" + node.name; }

// What an app records of the inputs: the command's, with the repository roots
// resolution used, and the overrides only for the roots the user named.
RenderInputs recorded_inputs(const RenderInputs& loaded, const spec::SpecRepository& repo, bool root) {
  RenderInputs in = loaded;
  in.repo.clear();
  for (const auto& p : repo.roots()) in.repo.push_back(p.string());
  if (!root) in.overrides = nlohmann::json::object();
  return in;
}

// Renders the resolved chain with `options` (chain_options of the submission's inputs,
// as its resolution evaluated configs with) and builds the records to deploy.
Result<void> render_submission(Submission& s, const std::filesystem::path& cache_dir,
                               const render::ChainOptions& options) {
  auto cache = open_render_cache(cache_dir);
  auto chain = render::render_chain(s.plan, options, cache.get());
  if (!chain) return fail(chain.error());
  Diagnostics errors;
  for (size_t i : s.plan.order) {
    const auto& node = s.plan.nodes[i];
    if (node.action == spec::Action::Reuse) {
      s.reused.push_back({ref_of(node), node.version.to_string(), node.ready});
      continue;
    }
    auto it = chain->rendered.find(i);
    if (it == chain->rendered.end()) continue;  // render_chain reports failures itself.
    AppToDeploy a;
    a.record.tenant = s.tenant;
    a.record.name = node.name;
    if (node.app != node.name) a.record.app = node.app;
    a.record.version = node.version.to_string();
    a.record.workload = it->second.workload;
    a.record.document = it->second.document;
    for (const auto& e : node.dependencies) a.record.dependencies.push_back(ref_of(s.plan.nodes[e.node]));
    // Only the dependencies that apply constrain others: a range on an app that a
    // condition left out must not hold back a submit of that app.
    if (node.spec)
      for (const auto& d : node.spec->dependencies)
        for (const auto& e : node.dependencies)
            if (e.alias == d.alias)
              // The release only when it is not the one named after the app, as stored.
              a.record.dependency_ranges.push_back(
                  {d.name, d.range.text(), ref_of(s.plan.nodes[e.node]) == d.name ? "" : ref_of(s.plan.nodes[e.node]),
                   d.alias});
    a.record.spec_dir = node.spec ? node.spec->dir.string() : "";
    bool root = std::find(s.plan.roots.begin(), s.plan.roots.end(), i) != s.plan.roots.end();
    a.record.render_inputs = recorded_inputs(s.inputs, s.repo, root);
    // The files it was rendered from, so a config change re-renders exactly these, on
    // any machine, whatever happens to the folder afterwards.
    if (node.spec) {
      auto bundle = make_bundle(*node.spec, it->second.external, options.base.jpaths);
      if (!bundle) {
        errors.insert(errors.end(), bundle.error().begin(), bundle.error().end());
        continue;
      }
      a.record.bundle = bundle->hash;
      s.bundles.emplace(bundle->hash, std::move(bundle->json));
    }
    s.apps.push_back(std::move(a));
  }
  if (!errors.empty()) return fail(std::move(errors));
  return {};
}

}  // namespace

Result<std::unique_ptr<Submission>> prepare_submission(const SubmitRequest& request, const RunningApps& running,
                                                       const StoreConfigSource* center) {
  std::vector<std::string> roots;
  for (const auto& p : request.render.repo) roots.push_back(p.string());
  // The inputs are read first, as the conditions of dependencies are decided on the
  // config they give; spec errors are still reported before theirs.
  auto inputs = load_render_inputs(request.render);
  spec::ConfigEvaluator config;
  // One snapshot of the config center for the resolution and the renders alike.
  render::ChainOptions options;
  if (inputs) {
    options = chain_options(*inputs, request.tenant, center);
    config = config_evaluator(options);
  }
  auto s = resolve_submission(request.tenant, request.dirs, roots, running, config, request.release);
  if (!s) return fail(s.error());
  if (!inputs) return fail(inputs.error());
  (*s)->inputs = std::move(*inputs);
  if (auto r = render_submission(**s, request.render.cache_dir, options); !r) return fail(r.error());
  return std::move(*s);
}

Result<std::unique_ptr<Submission>> prepare_submission(const std::string& tenant, const std::vector<std::string>& dirs,
                                                       const RenderInputs& inputs,
                                                       const std::filesystem::path& cache_dir,
                                                       const RunningApps& running, const StoreConfigSource* center,
                                                       const std::string& release) {
  auto options = chain_options(inputs, tenant, center);
  auto s = resolve_submission(tenant, dirs, inputs.repo, running, config_evaluator(options), release);
  if (!s) return fail(s.error());
  (*s)->inputs = inputs;
  if (auto r = render_submission(**s, cache_dir, options); !r) return fail(r.error());
  return std::move(*s);
}

namespace {

// The releases of other tenants the submission binds to, checked again on the state the
// decision is made on: resolution ran before the transaction, and one revoked, deleted or
// moved out of range since must not be bound.
Result<void> check_foreign_bindings(const ClusterState& st, const std::string& tenant,
                                    const std::vector<AppToDeploy>& apps) {
  Diagnostics errors;
  for (const auto& a : apps)
    for (const auto& r : a.record.dependency_ranges) {
      const std::string& ref = r.target();
      if (ref.find('/') == std::string::npos) continue;
      const AppRecord* f = st.find_app(tenant, ref);
      bool exported = f && running_app_of(*f).exported_to(tenant);
      auto in_range = [&] {
        auto version = semver::parse_version(f->version);
        auto range = semver::Range::parse(r.range);
        return version && range && range->satisfies(*version);
      };
      std::string what = !f          ? std::string("no longer runs")
                         : !exported ? fmt::format("is no longer exported to tenant {}", tenant)
                         : !in_range() ? fmt::format("now runs {}, outside {}", f->version, r.range)
                                       : std::string();
      if (what.empty()) continue;
      errors.push_back({{}, "",
                        fmt::format("{} depends on release {}, which {} (changed while this submit was resolved)",
                                    a.record.name, ref, what),
                        "nothing was written; run the command again"});
    }
  if (!errors.empty()) return fail(std::move(errors));
  return {};
}

}  // namespace

Result<Planned> plan(const Workspace& ws, const SubmitRequest& request) {
  // The state is read while the specs load and render. A plan observes no backend.
  ReadAhead read_ahead(ws, ReadAhead::What::State);
  auto center = StoreConfigSource::load(ws.store);
  if (!center) return fail(center.error());
  auto sub = prepare_submission(request, ws.state, &*center);
  if (!sub) return fail(sub.error());
  auto loaded = ws.state.load();
  if (!loaded) return fail(loaded.error());
  if (auto ok = check_storage_classes(*loaded, (*sub)->apps); !ok) return fail(ok.error());
  Planned out;
  out.outcome = plan_submit(*loaded, (*sub)->apps);
  // Where the submission ends once the backend starts what it binds: a plan reports an
  // app Ready when it would be (not "Pending (0/3 running)" because nothing has started
  // in a plan), the same as a submit on the sim, which starts copies at once.
  ControllerContext ctx{to_millis(ws.clock.now()), {}};
  ReconcileOutcome settled = reconcile_with_healthy_backend(out.outcome.after, ctx);
  refresh_reports(out.outcome, apply_batch(out.outcome.after, settled.batch));
  out.submission = std::move(*sub);
  out.state = std::move(*loaded);
  return out;
}

Result<Submitted> submit(const Workspace& ws, const SubmitRequest& request) {
  // The state and the backend's copies are read while the specs load and render.
  ReadAhead read_ahead(ws);
  auto center = StoreConfigSource::load(ws.store);
  if (!center) return fail(center.error());
  auto sub = prepare_submission(request, ws.state, &*center);
  if (!sub) return fail(sub.error());
  Submitted out;
  out.submission = std::move(*sub);
  // The decision is recomputed inside decide(): if another process commits first, the
  // submission is planned again on what it wrote, never on a stale state.
  auto done = commit_and_reconcile(ws, [&](const ClusterState& st, Batch& b) -> Result<void> {
    if (auto ok = check_storage_classes(st, out.submission->apps); !ok) return fail(ok.error());
    if (auto ok = check_foreign_bindings(st, request.tenant, out.submission->apps); !ok) return fail(ok.error());
    out.outcome = plan_submit(st, out.submission->apps);
    attach_bundles(st, out.submission->apps, out.submission->bundles, out.outcome.batch);
    b = out.outcome.batch;
    return {};
  });
  if (!done) return fail(done.error());
  out.controllers = std::move(done->controllers);
  // What the command prints is what runs when it returns: the runner started what the
  // submission placed (a dependent after its dependencies).
  refresh_reports(out.outcome, *out.controllers.state);
  return out;
}

std::vector<Blocker> blocking_instances(const ClusterState& state, const std::string& tenant,
                                        const std::vector<std::string>& apps) {
  std::vector<Blocker> out;
  for (const auto& name : apps) {
    if (!state.find_app(tenant, name)) {
      out.push_back({name, "Missing", "the app is no longer in the store (deleted while waiting?)"});
      continue;
    }
    const AppRecord* app = state.find_app(tenant, name);
    for (const auto& i : state.snapshot.instances) {
      if (i.tenant != tenant || i.app != name) continue;
      if (instance_outdated(i, *app)) {
        out.push_back({i.key(), std::string(instance_state_name(i.state)),
                       fmt::format("runs workload {}, the app is at {}: waiting for the rollout to replace it",
                                   i.hash.empty() ? "?" : i.hash.substr(0, 12), app->workload.hash.substr(0, 12))});
        continue;
      }
      if (serving(i)) continue;
      std::string reason = i.pending_reason;
      if (reason.empty())
        reason = i.node.empty() ? "not scheduled yet" : fmt::format("placed on {}, not running yet", i.node);
      out.push_back({i.key(), std::string(instance_state_name(i.state)), reason});
    }
  }
  return out;
}

Result<AppsWait> wait_for_apps(const Workspace& ws, const std::string& tenant, const std::vector<std::string>& apps,
                               const FollowOptions& options) {
  auto f = follow_controllers(ws, [&](const ClusterState& st) { return blocking_instances(st, tenant, apps).empty(); },
                              options);
  if (!f) return fail(f.error());
  AppsWait w;
  w.done = f->done;
  w.blockers = blocking_instances(f->state, tenant, apps);
  w.state = std::move(f->state);
  return w;
}

}  // namespace gaia::ops
