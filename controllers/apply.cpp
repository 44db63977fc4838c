#include "controllers/apply.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "controllers/app_delete.hpp"

namespace gaia {

namespace {

using json = nlohmann::json;

// The identity of a list item, so lists of named things (ports, volumes, reads) are
// compared item by item even when one is inserted in the middle.
std::string item_id(const json& v) {
  if (!v.is_object()) return "";
  for (const char* k : {"name", "key"})
    if (auto it = v.find(k); it != v.end() && it->is_string()) return it->get<std::string>();
  return "";
}

bool identified(const json& list) {
  std::set<std::string> seen;
  for (const auto& v : list) {
    std::string id = item_id(v);
    if (id.empty() || !seen.insert(id).second) return false;
  }
  return true;
}

struct Differ {
  SecretValues secrets;
  bool show_secrets = false;
  std::vector<FieldChange> out;

  void add(const std::string& path, const char* op, const json& before, const json& after) {
    FieldChange c{path, op, before, after, false};
    if (secrets.reveals(before) || secrets.reveals(after)) {
      c.secret = true;
      if (!show_secrets && !before.is_null()) c.before = k_secret_mask;
      if (!show_secrets && !after.is_null()) c.after = k_secret_mask;
    }
    out.push_back(std::move(c));
  }

  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

  void walk(const std::string& path, const json& a, const json& b) {
    if (a == b) return;
    if (a.is_object() && b.is_object()) {
      std::set<std::string> keys;
      for (const auto& [k, _] : a.items()) keys.insert(k);
      for (const auto& [k, _] : b.items()) keys.insert(k);
      for (const auto& k : keys) {
        std::string p = join(path, k);
        if (p == "metadata.hash") continue;
        auto ia = a.find(k);
        auto ib = b.find(k);
        if (ia == a.end()) add(p, "added", json(), *ib);
        else if (ib == b.end()) add(p, "removed", *ia, json());
        else walk(p, *ia, *ib);
      }
      return;
    }
    if (a.is_array() && b.is_array()) {
      if (identified(a) && identified(b) && !(a.empty() && b.empty())) {
        std::map<std::string, const json*> ma, mb;
        for (const auto& v : a) ma[item_id(v)] = &v;
        for (const auto& v : b) mb[item_id(v)] = &v;
        std::set<std::string> ids;
        for (const auto& [k, _] : ma) ids.insert(k);
        for (const auto& [k, _] : mb) ids.insert(k);
        for (const auto& id : ids) {
          std::string p = path + "[" + id + "]";
          auto ia = ma.find(id);
          auto ib = mb.find(id);
          if (ia == ma.end()) add(p, "added", json(), *ib->second);
          else if (ib == mb.end()) add(p, "removed", *ia->second, json());
          else walk(p, *ia->second, *ib->second);
        }
        return;
      }
      if (a.size() == b.size()) {
        for (size_t k = 0; k < a.size(); ++k) walk(fmt::format("{}[{}]", path, k), a[k], b[k]);
        return;
      }
    }
    add(path, "changed", a, b);
  }
};

std::vector<std::string> instance_keys(const ClusterState& s, const std::string& tenant, const std::string& app) {
  std::vector<std::string> out;
  for (const auto& i : s.snapshot.instances)
    if (i.tenant == tenant && i.app == app) out.push_back(i.key());
  std::sort(out.begin(), out.end());
  return out;
}

// Apps of the tenant (other than in `gone`) that list `name` as a dependency, and apps of
// other tenants bound to it (as TENANT/NAME; a prune never takes those along).
std::vector<std::string> users_of(const ClusterState& s, const std::string& tenant, const std::string& name,
                                  const std::set<std::string>& gone) {
  std::vector<std::string> out;
  std::string ref = tenant + "/" + name;
  for (const auto& [id, a] : s.apps) {
    if (a.tenant == tenant && !gone.count(a.name) &&
        std::find(a.dependencies.begin(), a.dependencies.end(), name) != a.dependencies.end())
      out.push_back(a.name);
    if (a.tenant != tenant && std::find(a.dependencies.begin(), a.dependencies.end(), ref) != a.dependencies.end())
      out.push_back(id);
  }
  return out;
}

// Prunes the candidates no remaining app depends on, dependents first, through
// plan_delete on the state the deploys left. Candidates something else still uses are
// reported as kept, and so are their own dependencies among the candidates.
void plan_prunes(ApplyPlan& plan, const ApplyRequest& req, std::set<std::string> candidates) {
  const std::string& tenant = req.tenant;
  std::map<std::string, std::string> kept;  // name -> why
  for (bool changed = true; changed;) {
    changed = false;
    std::set<std::string> gone;
    for (const auto& c : candidates)
      if (!kept.count(c)) gone.insert(c);
    for (const auto& c : gone) {
      auto users = users_of(plan.after, tenant, c, gone);
      if (users.empty()) continue;
      kept[c] = fmt::format("{} still depend{} on it", fmt::join(users, ", "), users.size() == 1 ? "s" : "");
      changed = true;
    }
  }
  std::set<std::string> todo;
  for (const auto& c : candidates)
    if (!kept.count(c)) todo.insert(c);
  std::vector<AppChange> pruned;
  while (!todo.empty()) {
    // The first (by name) that nothing depends on any more: dependents go first.
    std::string next;
    for (const auto& c : todo)
      if (users_of(plan.after, tenant, c, {}).empty()) {
        next = c;
        break;
      }
    if (next.empty()) break;  // Only a dependency cycle among stored apps gets here.
    todo.erase(next);
    const AppRecord* rec = plan.after.find_app(tenant, next);
    std::string owner = rec ? rec->source : "";
    auto d = plan_delete(plan.after, tenant, next, false);
    if (!d) continue;
    for (auto& e : d->batch.events)
      if (e.reason == "Deleted" && e.instance.empty() && e.app == next) {
        e.reason = "Pruned";
        e.message += fmt::format("; no longer in source {}", req.source);
      }
    for (const auto& del : d->deleted) {
      AppChange c;
      c.tenant = tenant;
      c.name = del.name;
      c.version = del.version;
      c.previous_version = del.version;
      c.action = "prune";
      c.owner = owner;
      c.removed = del.instances;
      std::sort(c.removed.begin(), c.removed.end());
      pruned.push_back(std::move(c));
    }
    for (auto& r : d->rescheduled.others) plan.affected.push_back(r);
    int64_t events = static_cast<int64_t>(d->batch.events.size());
    plan.after = apply_batch(std::move(plan.after), d->batch);
    plan.after.seq += events;
    merge_batch(plan.batch, std::move(d->batch));
  }
  for (const auto& c : todo) kept[c] = "it is part of a dependency cycle among stored apps";
  for (auto& c : pruned) plan.apps.push_back(std::move(c));
  for (const auto& [name, why] : kept) {
    const AppRecord* rec = plan.after.find_app(tenant, name);
    AppChange c;
    c.tenant = tenant;
    c.name = name;
    c.version = rec ? rec->version : "";
    c.previous_version = c.version;
    c.action = "keep";
    c.owner = rec ? rec->source : "";
    c.note = why;
    plan.apps.push_back(std::move(c));
  }
}

}  // namespace

size_t ApplyPlan::count(const std::string& action) const {
  return static_cast<size_t>(std::count_if(apps.begin(), apps.end(), [&](const AppChange& c) { return c.action == action; }));
}

std::vector<FieldChange> diff_documents(const json& before, const json& after, const std::vector<std::string>& secrets,
                                        bool show_secrets) {
  Differ d{SecretValues(secrets), show_secrets, {}};
  d.walk("", before, after);
  return std::move(d.out);
}

ApplyPlan plan_apply(const ClusterState& state, const ApplyRequest& req) {
  ApplyPlan plan;
  plan.revision = state.revision;

  // Ownership: an app keeps the source that created it; new apps get this apply's.
  std::vector<AppToDeploy> apps = req.apps;
  for (auto& a : apps) {
    a.record.tenant = req.tenant;
    const AppRecord* existing = state.find_app(req.tenant, a.record.name);
    a.record.source = existing ? existing->source : req.source;
  }
  SubmitOutcome out = plan_submit(state, apps);
  plan.batch = std::move(out.batch);
  plan.after = std::move(out.after);
  for (auto& r : out.others) plan.affected.push_back(std::move(r));

  // Secret values of every app of the set, old and new: a dependent that imports a
  // secret (a password inside a connection string) carries it in its own document, so
  // its diff hides what its dependency declared secret too.
  std::vector<std::string> set_secrets;
  for (const auto& [name, keys] : req.secrets) {
    std::vector<const json*> documents;
    // Secret keys are named after the app (`web.session_secret`), whatever its release.
    std::string app_name = name;
    for (const auto& a : apps)
      if (a.record.name == name) {
        documents.push_back(&a.record.document);
        app_name = a.record.app_name();
      }
    if (const AppRecord* existing = state.find_app(req.tenant, name)) {
      documents.push_back(&existing->document);
      app_name = existing->app_name();
    }
    auto values = secret_values(app_name, keys, documents);
    set_secrets.insert(set_secrets.end(), values.begin(), values.end());
  }
  std::sort(set_secrets.begin(), set_secrets.end());
  set_secrets.erase(std::unique(set_secrets.begin(), set_secrets.end()), set_secrets.end());

  std::set<std::string> in_set, outputs_changed;
  for (size_t k = 0; k < apps.size(); ++k) {
    const AppRecord& rec = apps[k].record;
    const AppReport& report = out.apps[k];
    const AppRecord* existing = state.find_app(req.tenant, rec.name);
    in_set.insert(rec.name);
    AppChange c;
    c.tenant = req.tenant;
    c.name = rec.name;
    c.version = rec.version;
    c.previous_version = existing ? existing->version : "";
    c.action = report.action;
    c.owner = rec.source;
    if (existing && existing->source != req.source)
      c.note = existing->source.empty()
                   ? "created by `gaia submit`: this source updates it but does not own it, so never prunes it"
                   : fmt::format("owned by source '{}': this source updates it but never prunes it", existing->source);
    if (c.action != "unchanged") {
      auto before = existing ? instance_keys(state, req.tenant, rec.name) : std::vector<std::string>{};
      auto now = instance_keys(plan.after, req.tenant, rec.name);
      std::set_difference(now.begin(), now.end(), before.begin(), before.end(), std::back_inserter(c.added));
      std::set_difference(before.begin(), before.end(), now.begin(), now.end(), std::back_inserter(c.removed));
      c.rolling = report.rolling;
      std::sort(c.rolling.begin(), c.rolling.end());
    }
    if (existing && c.action == "update") {
      c.changes = diff_documents(existing->document, rec.document, set_secrets, req.show_secrets);
      if (existing->workload.outputs != rec.workload.outputs) outputs_changed.insert(rec.name);
    }
    for (const auto& dep : rec.dependencies)
      if (outputs_changed.count(dep) && c.action == "update") c.rerendered_by.push_back(dep);
    plan.apps.push_back(std::move(c));
  }
  for (const auto& name : req.reused) {
    in_set.insert(name);
    const AppRecord* rec = state.find_app(req.tenant, name);
    AppChange c;
    c.tenant = req.tenant;
    c.name = name;
    c.version = rec ? rec->version : "";
    c.previous_version = c.version;
    c.action = "reuse";
    c.owner = rec ? rec->source : "";
    plan.apps.push_back(std::move(c));
  }
  // Apps outside the set that import from an app whose outputs change.
  for (const auto& [id, a] : state.apps) {
    if (a.tenant != req.tenant || in_set.count(a.name)) continue;
    for (const auto& dep : a.dependencies)
      if (outputs_changed.count(dep)) plan.dependents.push_back({a.name, dep});
  }

  if (req.prune && !req.source.empty()) {
    std::set<std::string> candidates;
    for (const auto& [id, a] : plan.after.apps)
      if (a.tenant == req.tenant && a.source == req.source && !in_set.count(a.name)) candidates.insert(a.name);
    if (!candidates.empty()) plan_prunes(plan, req, std::move(candidates));
  }
  // Where the new instances are once everything (prunes' freed capacity included) is
  // decided; apps of the set are reported there, not among the affected ones.
  for (auto& c : plan.apps) {
    if (c.action != "deploy" && c.action != "update") continue;
    for (const auto& key : c.added)
      if (const Instance* i = plan.after.find_instance(key))
        c.landings.push_back({key, i->node, i->address, i->node.empty() ? i->pending_reason : ""});
  }
  std::erase_if(plan.affected, [&](const AppReport& r) { return r.tenant == req.tenant && in_set.count(r.name); });
  return plan;
}

}  // namespace gaia
