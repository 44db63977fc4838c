#include "ops/apply_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "lib/hash.hpp"
#include "ops/bundle.hpp"
#include "ops/propagate.hpp"
#include "ops/secrets.hpp"
#include "ops/storage_check.hpp"

namespace gaia::ops {

namespace fs = std::filesystem;

Result<std::string> apply_source(const SetRequest& request) {
  if (!request.source.empty()) {
    if (request.source.find_first_of("\n\r") != std::string::npos)
      return fail(Diagnostic{{}, "--source", "a source name is one line", "e.g. --source github.com/acme/deploy:prod"});
    return request.source;
  }
  std::vector<std::string> parts;
  for (const auto& p : request.paths) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
    std::string s = (ec ? fs::path(p) : c).string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    parts.push_back(s);
  }
  std::sort(parts.begin(), parts.end());
  parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
  return fmt::format("dir:{}", fmt::join(parts, ","));
}

InMemoryRunningApps running_apps(const ClusterState& state, const std::string& tenant) {
  // Every tenant's: resolution binds releases other tenants export, and keeps the ranges
  // other tenants' apps place on this tenant's releases; list(tenant) is this tenant's.
  InMemoryRunningApps out;
  for (const auto& [id, a] : state.apps) out.add(running_app_of(a));
  return out;
}

std::string resolution_fingerprint(const ClusterState& state, const std::string& tenant) {
  Hasher h;
  for (const auto& a : running_apps(state, tenant).list(tenant)) {
    h.add(a.name);
    if (!a.app.empty()) h.add("app:" + a.app);
    h.add(a.version);
    h.add(a.outputs.dump());
    h.add(a.ready ? "ready" : "not ready");
    for (const auto& r : a.dependency_ranges) {
      h.add(r.name);
      h.add(r.range);
      if (!r.release.empty()) h.add("release:" + r.release);
    }
  }
  // Across tenants: the releases of others this tenant's apps bind to (a version moved, an
  // export revoked) and the ranges other tenants' apps place on this tenant's releases.
  const std::string own = tenant + "/";
  for (const auto& [id, a] : state.apps) {
    if (a.tenant == tenant) {
      for (const auto& d : a.dependencies)
        if (d.find('/') != std::string::npos)
          if (const AppRecord* f = state.find_app(tenant, d)) {
            h.add("foreign:" + d + "@" + f->version + (running_app_of(*f).ready ? ":ready" : ":not ready"));
            for (const auto& t : f->exports) h.add("export:" + t);
          }
      continue;
    }
    for (const auto& r : a.dependency_ranges)
      if (r.target().starts_with(own)) h.add("bound:" + id + ":" + r.target() + ":" + r.range);
  }
  return h.hex();
}

namespace {

// The secret keys of the tenant's running apps outside the set too: an app of the set
// may import a dependency's secret (a password inside a connection string), and its diff
// must hide it as the dependency's own would. A reused dependency has no spec in the
// plan, so its keys come from its recorded bundle.
void add_running_secret_keys(ApplySet& set, const ClusterState& state, const BundleReader& bundles) {
  for (const auto& [id, a] : state.apps) {
    if (a.tenant != set.request.tenant || set.request.secrets.count(a.name)) continue;
    if (auto keys = app_secret_keys(a, bundles); keys && !keys->empty()) set.request.secrets[a.name] = *keys;
  }
  // And those of other tenants' releases the set binds to, under TENANT/NAME (which
  // find_app reads), so an imported password of a shared database stays hidden too.
  if (!set.submission) return;
  for (const auto& node : set.submission->plan.nodes) {
    if (node.tenant.empty()) continue;
    std::string ref = node.tenant + "/" + node.name;
    const AppRecord* a = state.find_app(set.request.tenant, ref);
    if (!a || set.request.secrets.count(ref)) continue;
    if (auto keys = app_secret_keys(*a, bundles); keys && !keys->empty()) set.request.secrets[ref] = *keys;
  }
}

}  // namespace

std::set<std::string> prune_released(const ClusterState& state, const std::string& tenant,
                                     const std::string& source) {
  std::set<std::string> released;
  std::vector<std::string> used;  // Apps another source's apps depend on, transitively.
  const std::string own = tenant + "/";
  for (const auto& [id, a] : state.apps) {
    if (a.tenant != tenant) {
      // Apps of other tenants bound to a release of this one keep it, and what it runs on.
      for (const auto& d : a.dependencies)
        if (d.starts_with(own)) used.push_back(d.substr(own.size()));
      continue;
    }
    if (a.source == source) released.insert(a.name);
    else used.insert(used.end(), a.dependencies.begin(), a.dependencies.end());
  }
  while (!used.empty()) {
    std::string name = std::move(used.back());
    used.pop_back();
    if (!released.erase(name)) continue;
    if (const AppRecord* a = state.find_app(tenant, name))
      used.insert(used.end(), a->dependencies.begin(), a->dependencies.end());
  }
  return released;
}

InMemoryRunningApps running_apps_releasing(const ClusterState& state, const std::string& tenant,
                                           const std::set<std::string>& released) {
  InMemoryRunningApps out;
  for (const auto& [id, a] : state.apps) {
    RunningApp r = running_app_of(a);
    if (a.tenant == tenant && released.count(a.name)) {
      // Kept non-empty on purpose: an app without ranges has them read from the
      // repository (records older than ranges), which would bring them back.
      r.dependency_ranges.clear();
      for (const auto& dep : a.dependencies) r.dependency_ranges.push_back({dep, "*"});
    }
    out.add(std::move(r));
  }
  return out;
}

bool released_ranges_hold(const spec::Plan& plan, const ClusterState& state, const std::string& tenant,
                          const std::set<std::string>& released) {
  for (const spec::PlanNode& n : plan.nodes) {
    const AppRecord* a = n.action == spec::Action::Reuse && released.count(n.name) ? state.find_app(tenant, n.name)
                                                                                    : nullptr;
    if (!a) continue;
    for (const RunningRequirement& req : a->dependency_ranges) {
      auto range = semver::Range::parse(req.range);
      auto dep = plan.find(req.target());
      if (range && dep && !range->satisfies(plan.nodes[*dep].version)) return false;
    }
  }
  return true;
}

Result<ApplySet> load_apply_set(const SetRequest& request, const std::string& source, const ClusterState& state,
                                const StoreConfigSource* center, const RenderInputs* inputs) {
  const std::string& tenant = request.tenant;
  auto prepare = [&](const InMemoryRunningApps& running) {
    return inputs ? prepare_submission(tenant, request.paths, *inputs, request.render.cache_dir, running, center)
                  : prepare_submission(SubmitRequest{tenant, request.paths, request.render}, running, center);
  };
  auto sub = prepare(running_apps(state, tenant));
  if (!sub && request.prune) {
    // The ranges of apps this --prune is about to delete must not hold back the set ("drop
    // the old consumer, move its dependency up" in one apply). Only when the set does not
    // resolve as it is: otherwise nothing changes.
    const std::set<std::string> released = prune_released(state, tenant, source);
    if (!released.empty()) {
      auto retry = prepare(running_apps_releasing(state, tenant, released));
      if (retry && released_ranges_hold((*retry)->plan, state, tenant, released)) sub = std::move(retry);
    }
  }
  if (!sub) return fail(sub.error());
  ApplySet set;
  set.fingerprint = resolution_fingerprint(state, tenant);
  set.request.tenant = tenant;
  set.request.source = source;
  set.request.prune = request.prune;
  set.request.show_secrets = request.show_secrets;
  set.request.apps = (*sub)->apps;
  for (const auto& r : (*sub)->reused) set.request.reused.push_back(r.name);
  for (const auto& node : (*sub)->plan.nodes)
    if (node.spec && !node.spec->secrets.empty()) set.request.secrets[node.name] = node.spec->secrets;
  set.submission = std::move(*sub);
  return set;
}

Result<SetDecision> decide_set(const Workspace& ws, const SetRequest& request) {
  auto source = apply_source(request);
  if (!source) return fail(source.error());
  auto loaded = ws.state.load();
  if (!loaded) return fail(loaded.error());
  auto center = StoreConfigSource::load(ws.store);
  if (!center) return fail(center.error());
  auto set = load_apply_set(request, *source, *loaded, &*center);
  if (!set) return fail(set.error());
  add_running_secret_keys(*set, *loaded, bundle_reader(ws));
  if (auto ok = check_storage_classes(*loaded, set->request.apps); !ok) return fail(ok.error());
  SetDecision out;
  out.source = std::move(*source);
  out.plan = plan_apply(*loaded, set->request);
  attach_bundles(*loaded, set->request.apps, set->submission->bundles, out.plan.batch);
  out.set = std::move(*set);
  out.state = std::move(*loaded);
  return out;
}

std::vector<std::string> Applied::waited_apps() const {
  std::vector<std::string> names;
  for (const auto& c : plan.apps)
    if (c.action != "prune" && c.action != "keep") names.push_back(c.name);
  return names;
}

Diagnostic revision_moved(int64_t now, int64_t wanted) {
  return Diagnostic{{}, "--check-revision",
                    fmt::format("the store is at revision {}, not {}: it changed since it was read, so nothing was applied",
                                now, wanted),
                    fmt::format("review the changes again (`gaia diff -f PATH...`), then apply with --check-revision {}",
                                now)};
}

Result<void> finish_apply(const Workspace& ws, ClusterState committed, Applied& applied) {
  applied.state = std::move(committed);
  if (!applied.plan.changed()) return {};
  auto run = run_controllers(ws);
  if (!run) return fail(run.error());
  applied.controllers = std::move(*run);
  return {};
}

Result<Applied> apply_set(const Workspace& ws, const SetRequest& request, const ApplyOptions& options) {
  auto source = apply_source(request);
  if (!source) return fail(source.error());
  auto loaded = ws.state.load();
  if (!loaded) return fail(loaded.error());
  if (options.check_revision && loaded->revision != *options.check_revision)
    return fail(revision_moved(loaded->revision, *options.check_revision));
  auto center = StoreConfigSource::load(ws.store);
  if (!center) return fail(center.error());
  auto set = load_apply_set(request, *source, *loaded, &*center);
  if (!set) return fail(set.error());
  const BundleReader bundles = bundle_reader(ws);
  add_running_secret_keys(*set, *loaded, bundles);

  Applied applied{{}, set->request.tenant, *source, *loaded, std::nullopt};
  if (auto ok = check_storage_classes(*loaded, set->request.apps); !ok) return fail(ok.error());
  if (options.dry_run) {
    applied.plan = plan_apply(*loaded, set->request);
    attach_bundles(*loaded, set->request.apps, set->submission->bundles, applied.plan.batch);
    return applied;
  }
  // Decided inside the transaction: a concurrent writer makes it decide again on what
  // that writer committed (resolving the set again, with the inputs read the first
  // time, if the apps it reuses changed), so two applies never interleave; with
  // check_revision the retry fails instead.
  auto committed = ws.state.update(ws.op, [&](const ClusterState& st, Batch& b) -> Result<void> {
    if (options.check_revision && st.revision != *options.check_revision)
      return fail(revision_moved(st.revision, *options.check_revision));
    if (resolution_fingerprint(st, set->request.tenant) != set->fingerprint) {
      RenderInputs inputs = set->submission->inputs;
      auto again = load_apply_set(request, *source, st, &*center, &inputs);
      if (!again) return fail(again.error());
      *set = std::move(*again);
      add_running_secret_keys(*set, st, bundles);
    }
    if (auto ok = check_storage_classes(st, set->request.apps); !ok) return fail(ok.error());
    applied.plan = plan_apply(st, set->request);
    attach_bundles(st, set->request.apps, set->submission->bundles, applied.plan.batch);
    b = applied.plan.batch;
    return {};
  });
  if (!committed) return fail(committed.error());
  if (auto done = finish_apply(ws, std::move(*committed), applied); !done) return fail(done.error());
  return applied;
}

}  // namespace gaia::ops
