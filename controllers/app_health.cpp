#include "controllers/app_health.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <unordered_set>

#include "controllers/replicas.hpp"
#include "controllers/rollout.hpp"

namespace gaia {

namespace {

std::string role_key(const std::string& tenant, const std::string& app, const std::string& role) {
  return tenant + "/" + app + "/" + role;
}

// A pending instance is on its way while it waits for its turn: for its dependencies, for
// the rollout or scale that just created it, or for the scheduler's first try. Any other
// reason is the scheduler's (or a volume's) word that it cannot go anywhere now.
bool pending_on_its_way(const Instance& i) {
  const std::string& r = i.pending_reason;
  return r.empty() || r.starts_with("waiting for dependency") || r.starts_with("replacing an instance") ||
         r.starts_with("created by scale");
}

}  // namespace

AppHealthIndex::AppHealthIndex(const ClusterState& state) { build(state, nullptr); }

AppHealthIndex::AppHealthIndex(const ClusterState& state, const std::unordered_set<std::string>& apps) {
  build(state, &apps);
}

void AppHealthIndex::build(const ClusterState& state, const std::unordered_set<std::string>* only) {
  std::unordered_set<std::string> down;
  for (const auto& n : state.snapshot.nodes)
    if (n.state == NodeState::Down) down.insert(n.name);
  // Instances come grouped by role (the store's key order), so the role's counts and
  // its app are looked up once per run of its instances, not once per instance.
  const Instance* run = nullptr;
  Counts* counts = nullptr;
  const AppRecord* app = nullptr;
  for (const auto& i : state.snapshot.instances) {
    if (!run || run->role != i.role || run->app != i.app || run->tenant != i.tenant) {
      run = &i;
      std::string id = i.tenant + "/" + i.app;
      if (only && !only->count(id)) {
        counts = nullptr;
        continue;
      }
      counts = &m_roles[role_key(i.tenant, i.app, i.role)];
      auto a = state.apps.find(id);
      app = a == state.apps.end() ? nullptr : &a->second;
    }
    if (!counts) continue;  // An app not asked about.
    Counts& c = *counts;
    ++c.instances;
    if (serving(i)) ++c.serving;
    if (serving(i) || i.state == InstanceState::Placed) ++c.bound;
    // A finished batch instance on a down node has nothing left to do; anything else
    // there is cut off from the app.
    // No node down (the usual case): no lookup of every instance's node.
    bool on_down_node = !down.empty() && !i.node.empty() && down.count(i.node) && i.state != InstanceState::Succeeded;
    if ((i.state == InstanceState::Pending && !pending_on_its_way(i)) || i.state == InstanceState::Failed || on_down_node)
      ++c.stuck;
    if (app && instance_outdated(i, *app)) ++c.outdated;
  }
}

std::vector<RoleHealth> AppHealthIndex::roles(const AppRecord& app) const {
  std::vector<RoleHealth> out;
  for (const auto& r : app.workload.roles) {
    RoleHealth h;
    h.role = r.name;
    h.desired = desired_replicas(app, r);
    h.needed = h.desired == 0 ? 0 : std::min(h.desired, std::max(r.min_available, 1));
    if (auto it = m_roles.find(role_key(app.tenant, app.name, r.name)); it != m_roles.end()) {
      h.instances = it->second.instances;
      h.serving = it->second.serving;
      h.bound = it->second.bound;
      h.stuck = it->second.stuck;
      h.outdated = it->second.outdated;
    }
    out.push_back(std::move(h));
  }
  return out;
}

bool AppHealthIndex::available(const AppRecord& app) const {
  for (const auto& r : roles(app))
    if (r.serving < r.needed) return false;
  return true;
}

bool AppHealthIndex::placed(const AppRecord& app) const {
  for (const auto& r : roles(app))
    if (r.bound < r.needed) return false;
  return true;
}

bool AppHealthIndex::ready(const AppRecord& app) const {
  for (const auto& r : roles(app))
    if (r.serving != r.instances || r.instances < r.desired) return false;
  return true;
}

std::string AppHealthIndex::status(const AppRecord& app) const {
  if (!app.failed_roles.empty()) return "Failed";
  auto rs = roles(app);
  bool ready = true, stuck = false;
  for (const auto& r : rs) {
    if (r.outdated > 0) return "Updating";
    ready = ready && r.serving == r.instances && r.instances >= r.desired;
    stuck = stuck || r.stuck > 0;
  }
  if (ready) return "Ready";
  return stuck ? "Degraded" : "Progressing";
}

std::string AppHealthIndex::summary(const AppRecord& app) const {
  std::vector<std::string> parts;
  for (const auto& r : roles(app)) {
    if (r.serving == r.desired && r.instances == r.desired) continue;
    std::string part = fmt::format("{} {}/{} serving", r.role, r.serving, r.desired);
    if (r.stuck > 0) part += fmt::format(", {} stuck", r.stuck);
    if (r.serving < r.needed) part += fmt::format(" (needs {} to be available)", r.needed);
    parts.push_back(std::move(part));
  }
  if (parts.empty()) return "every instance is serving";
  return fmt::format("{}", fmt::join(parts, "; "));
}

std::pair<size_t, size_t> AppHealthIndex::totals(const AppRecord& app) const {
  size_t instances = 0, serving_count = 0;
  for (const auto& r : app.workload.roles)
    if (auto it = m_roles.find(role_key(app.tenant, app.name, r.name)); it != m_roles.end()) {
      instances += static_cast<size_t>(it->second.instances);
      serving_count += static_cast<size_t>(it->second.serving);
    }
  return {instances, serving_count};
}

void app_status_event(const std::string& status, const std::string& summary, const std::string& tenant,
                      const std::string& app, Batch& batch) {
  if (status != "Ready" && status != "Degraded") return;
  bool ready = status == "Ready";
  auto& e = batch.event(ready ? "AppReady" : "AppDegraded", ready ? "every instance is serving" : summary,
                        ready ? "Normal" : "Warning");
  e.tenant = tenant;
  e.app = app;
}

std::vector<std::pair<std::string, std::string>> in_event_order(
    const Batch& batch, const std::set<std::pair<std::string, std::string>>& apps) {
  std::map<std::pair<std::string, std::string>, size_t> last_event;
  for (size_t k = 0; k < batch.events.size(); ++k) {
    const auto& e = batch.events[k];
    if (apps.count({e.tenant, e.app})) last_event[{e.tenant, e.app}] = k;
  }
  std::vector<std::pair<std::string, std::string>> order(apps.begin(), apps.end());
  auto at = [&](const std::pair<std::string, std::string>& a) {
    auto it = last_event.find(a);
    return it == last_event.end() ? size_t{0} : it->second;
  };
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) { return at(x) < at(y); });
  return order;
}

std::string app_health_status(const ClusterState& state, const std::string& tenant, const std::string& name) {
  const AppRecord* a = state.find_app(tenant, name);
  if (!a) return "";
  return AppHealthIndex(state).status(*a);
}

}  // namespace gaia
