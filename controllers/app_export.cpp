#include "controllers/app_export.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace gaia {

namespace {

// Apps of other tenants bound to the release, as TENANT/NAME, each with its tenant.
std::vector<std::pair<std::string, std::string>> bound_apps(const ClusterState& state, const AppRecord& release) {
  std::vector<std::pair<std::string, std::string>> out;
  std::string ref = release.tenant + "/" + release.name;
  for (const auto& [id, a] : state.apps)
    if (a.tenant != release.tenant && std::find(a.dependencies.begin(), a.dependencies.end(), ref) != a.dependencies.end())
      out.emplace_back(a.tenant, id);
  return out;
}

}  // namespace

Result<ExportOutcome> plan_export(const ClusterState& state, const ExportRequest& req) {
  const AppRecord* app = state.find_app(req.tenant, req.name);
  if (!app || req.name.find('/') != std::string::npos) {
    std::vector<std::string> names;
    for (const auto& [id, a] : state.apps)
      if (a.tenant == req.tenant) names.push_back(a.name);
    return fail(Diagnostic{{}, "", fmt::format("no release named '{}' in tenant '{}'", req.name, req.tenant),
                           names.empty() ? fmt::format("tenant '{}' has no apps; list them with `gaia get apps`", req.tenant)
                                         : fmt::format("releases in tenant '{}': {}", req.tenant, fmt::join(names, ", "))});
  }
  Diagnostics errors;
  if (req.to.empty() && req.revoke.empty())
    errors.push_back({{}, "", "nothing to change: give --to TENANT or --revoke TENANT",
                      fmt::format("gaia export {} --to TENANT shares it; its exports now: {}", req.name,
                                  app->exports.empty() ? "none" : fmt::format("{}", fmt::join(app->exports, ", ")))});
  // Tenant names are checked for their form where they are read (cli/cmd_export.cpp).
  for (const auto* list : {&req.to, &req.revoke})
    for (const auto& t : *list) {
      if (t == req.tenant)
        errors.push_back({{}, "", fmt::format("release {} belongs to tenant {}: its own apps bind to it already", req.name, t),
                          "export it to other tenants"});
    }
  std::set<std::string> after(app->exports.begin(), app->exports.end());
  ExportOutcome out;
  for (const auto& t : req.to)
    if (after.insert(t).second) out.added.push_back(t);
  auto bound = bound_apps(state, *app);
  for (const auto& t : req.revoke) {
    if (!after.erase(t)) {
      // Granted to every tenant: taking one back would silently do nothing.
      if (t != "*" && after.count("*"))
        errors.push_back({{}, "", fmt::format("release {} is exported to every tenant ('*'), so {} keeps it", req.name, t),
                          fmt::format("revoke '*' and grant the tenants that keep it one by one: gaia export {} "
                                      "--tenant {} --revoke '*' --to TENANT",
                                      req.name, req.tenant)});
      continue;
    }
    out.removed.push_back(t);
  }
  // What stays bound must stay exported: an app whose tenant loses the grant would be
  // cut off from what it runs on.
  std::vector<std::string> cut_off;
  for (const auto& [tenant, id] : bound)
    if (!after.count("*") && !after.count(tenant)) cut_off.push_back(id);
  if (!cut_off.empty())
    errors.push_back({{}, "",
                      fmt::format("cannot revoke: {} {} bound to release {} of tenant {}", fmt::join(cut_off, ", "),
                                  cut_off.size() == 1 ? "is" : "are", req.name, req.tenant),
                      "delete them in their tenant first (gaia delete APP --tenant T), or resubmit them bound to "
                      "another release"});
  if (!errors.empty()) return fail(std::move(errors));
  out.exports.assign(after.begin(), after.end());
  if (out.added.empty() && out.removed.empty()) return out;
  AppRecord rec = *app;
  rec.exports = out.exports;
  out.batch.put_apps.push_back(rec);
  std::vector<std::string> parts;
  if (!out.added.empty()) parts.push_back(fmt::format("exported to {}", fmt::join(out.added, ", ")));
  if (!out.removed.empty()) parts.push_back(fmt::format("no longer exported to {}", fmt::join(out.removed, ", ")));
  auto& e = out.batch.event("Exported", fmt::format("{}", fmt::join(parts, "; ")));
  e.tenant = rec.tenant;
  e.app = rec.name;
  return out;
}

}  // namespace gaia
