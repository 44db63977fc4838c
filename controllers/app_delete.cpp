#include "controllers/app_delete.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <set>

#include "lib/codec.hpp"

namespace gaia {

namespace {

// Apps of the tenant that list `name` as a direct dependency, by name.
std::vector<std::string> direct_dependents(const ClusterState& state, const std::string& tenant,
                                           const std::string& name) {
  std::vector<std::string> out;
  for (const auto& [id, a] : state.apps) {
    if (a.tenant != tenant) continue;
    if (std::find(a.dependencies.begin(), a.dependencies.end(), name) != a.dependencies.end()) out.push_back(a.name);
  }
  return out;
}

// Apps of other tenants bound to the release (one it exports), as TENANT/NAME: a delete
// never takes them along, whatever --cascade says, as nobody named them.
std::vector<std::string> foreign_dependents(const ClusterState& state, const std::string& tenant,
                                            const std::string& name) {
  std::vector<std::string> out;
  std::string ref = tenant + "/" + name;
  for (const auto& [id, a] : state.apps)
    if (a.tenant != tenant && std::find(a.dependencies.begin(), a.dependencies.end(), ref) != a.dependencies.end())
      out.push_back(id);
  return out;
}

// Edit distance, for "did you mean" hints.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> app_dependents(const ClusterState& state, const std::string& tenant,
                                        const std::string& name) {
  std::vector<std::string> out;
  std::set<std::string> seen{name};
  std::deque<std::string> queue{name};
  while (!queue.empty()) {
    std::string cur = queue.front();
    queue.pop_front();
    for (const auto& d : direct_dependents(state, tenant, cur))
      if (seen.insert(d).second) {
        out.push_back(d);
        queue.push_back(d);
      }
  }
  return out;
}

Result<DeleteOutcome> plan_delete(const ClusterState& state, const std::string& tenant, const std::string& name,
                                  bool cascade) {
  // A name with a '/' would be another tenant's release to find_app: never deleted from
  // here (release names are DNS labels).
  if (name.find('/') != std::string::npos || !state.find_app(tenant, name)) {
    std::vector<std::string> names, close;
    for (const auto& [id, a] : state.apps)
      if (a.tenant == tenant) {
        names.push_back(a.name);
        if (distance(a.name, name) <= 2) close.push_back(a.name);
      }
    std::string hint = !close.empty() ? fmt::format("did you mean {}?", fmt::join(close, ", "))
                       : names.empty() ? fmt::format("tenant '{}' has no apps; list them with `gaia get apps`", tenant)
                                       : fmt::format("apps in tenant '{}': {}", tenant, fmt::join(names, ", "));
    return fail(Diagnostic{{}, "", fmt::format("no app named '{}' in tenant '{}'", name, tenant), hint});
  }
  auto dependents = app_dependents(state, tenant, name);
  // Apps of other tenants bound to it or to one of its dependents here (releases this
  // tenant exports): never deleted from here, so the delete is refused.
  std::vector<std::string> foreign;
  for (const auto& app : dependents) {
    auto more = foreign_dependents(state, tenant, app);
    foreign.insert(foreign.end(), more.begin(), more.end());
  }
  if (auto more = foreign_dependents(state, tenant, name); !more.empty()) foreign.insert(foreign.begin(), more.begin(), more.end());
  if (!foreign.empty())
    return fail(Diagnostic{{}, "",
                           fmt::format("cannot delete {}: apps of other tenants depend on {}: {}", name,
                                       dependents.empty() ? "it" : "it or its dependents", fmt::join(foreign, ", ")),
                           "they are bound to a release this tenant exports; delete them in their tenant first "
                           "(gaia delete APP --tenant T); --cascade never reaches into another tenant"});
  if (!dependents.empty() && !cascade)
    return fail(Diagnostic{{}, "",
                           fmt::format("cannot delete {}: {} depend{} on it", name, fmt::join(dependents, ", "),
                                       dependents.size() == 1 ? "s" : ""),
                           fmt::format("delete them first, or run `gaia delete {} --cascade` to delete {} and its "
                                       "dependents (dependents first)",
                                       name, name)});

  // Deletion order: an app goes once no remaining app of the set depends on it.
  std::set<std::string> remaining(dependents.begin(), dependents.end());
  remaining.insert(name);
  std::vector<std::string> order;
  while (!remaining.empty()) {
    std::string next;
    for (const auto& candidate : remaining) {  // Sorted: ties go by name.
      bool blocked = false;
      for (const auto& d : direct_dependents(state, tenant, candidate))
        if (remaining.count(d)) blocked = true;
      if (!blocked) {
        next = candidate;
        break;
      }
    }
    // A dependency cycle among stored apps cannot come from a submit; break it by name
    // rather than loop forever.
    if (next.empty()) next = *remaining.begin();
    remaining.erase(next);
    order.push_back(next);
  }

  DeleteOutcome out;
  for (const auto& app : order) {
    const AppRecord* a = state.find_app(tenant, app);
    DeletedApp d{tenant, app, a->version, {}};
    for (const auto& i : state.snapshot.instances) {
      if (i.tenant != tenant || i.app != app) continue;
      d.instances.push_back(i.key());
      out.batch.delete_instances.push_back(i.key());
      auto& e = out.batch.event("Deleted",
                                i.node.empty() ? std::string("removed (was pending)")
                                               : fmt::format("removed from {}, {} freed", i.node,
                                                             i.address.empty() ? "resources" : i.address + " and resources"));
      e.tenant = i.tenant;
      e.app = i.app;
      e.role = i.role;
      e.instance = i.key();
      e.node = i.node;
    }
    out.batch.delete_apps.emplace_back(tenant, app);
    // The volumes earlier scale downs kept for the app's instances go with the app, as
    // the volumes of the instances it still has do: an app deleted is its data deleted.
    size_t kept = 0;
    for (const auto& n : state.snapshot.nodes) {
      auto of_app = [&](const KeptVolume& k) { return k.tenant == tenant && k.app == app; };
      size_t here = static_cast<size_t>(std::count_if(n.kept_volumes.begin(), n.kept_volumes.end(), of_app));
      if (here == 0) continue;
      // A node may already be in the batch from an app deleted before this one.
      auto put = std::find_if(out.batch.put_nodes.begin(), out.batch.put_nodes.end(),
                              [&](const Node& x) { return x.name == n.name; });
      if (put == out.batch.put_nodes.end()) {
        out.batch.put_nodes.push_back(n);
        put = out.batch.put_nodes.end() - 1;
      }
      std::erase_if(put->kept_volumes, of_app);
      kept += here;
    }
    // Its kept claim volumes too, from the list as earlier deletes of this batch left it.
    {
      auto of_app = [&](const KeptVolume& k) { return k.tenant == tenant && k.app == app; };
      auto put = out.batch.put_settings.find(keys::k_kept_claims_setting);
      std::vector<KeptVolume> claims = put != out.batch.put_settings.end()
                                           ? put->second.get<std::vector<KeptVolume>>()
                                           : state.snapshot.kept_claims;
      if (size_t here = std::erase_if(claims, of_app); here > 0) {
        kept += here;
        out.batch.put_settings[keys::k_kept_claims_setting] = nlohmann::json(claims);
      }
    }
    d.kept_volumes = kept;
    std::string volumes = kept == 0 ? "" : fmt::format(", {} kept volume(s) deleted", kept);
    auto& e = out.batch.event("Deleted", fmt::format("version {}, {} instance(s) removed{}{}", a->version,
                                                     d.instances.size(), volumes,
                                                     app == name ? "" : " (cascade from " + name + ")"));
    e.tenant = tenant;
    e.app = app;
    out.deleted.push_back(std::move(d));
  }
  // Capacity was freed: retry what is pending, in the same transaction.
  out.rescheduled = reschedule_pending(apply_batch(state, out.batch));
  merge_batch(out.batch, out.rescheduled.batch);
  return out;
}

}  // namespace gaia
