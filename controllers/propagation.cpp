#include "controllers/propagation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "controllers/rollout.hpp"
#include "lib/config_center.hpp"

namespace gaia {

bool read_touches(const ConfigRead& read, const ChangedKey& changed) {
  if (read.kind != changed.kind) return false;
  if (read.kind == "config") return config_keys_overlap(read.key, changed.key);
  return read.key == changed.key;
}

std::optional<ConfigValue> read_now(const ConfigRead& read, const ConfigSnapshot& snapshot) {
  if (read.kind == "config") return snapshot.get_config(read.key);
  if (read.kind != "label") return std::nullopt;
  // "kind/name/key": kinds and names have no '/', label keys may ("gaia.io/zone").
  auto a = read.key.find('/');
  auto b = a == std::string::npos ? a : read.key.find('/', a + 1);
  if (b == std::string::npos) return std::nullopt;
  return snapshot.get_label(read.key.substr(0, a), read.key.substr(a + 1, b - a - 1), read.key.substr(b + 1));
}

bool read_holds(const ConfigRead& read, const ConfigSnapshot& snapshot) {
  auto now = read_now(read, snapshot);
  if (read.defaulted) return !now.has_value();
  return now && now->value == read.value;
}

std::vector<DirectImpact> direct_impact(const ClusterState& state, const std::vector<ChangedKey>& changed,
                                        const std::function<ConfigSnapshot(const AppRecord&)>& after) {
  std::vector<DirectImpact> out;
  for (const auto& [id, app] : state.apps) {
    std::optional<ConfigSnapshot> snapshot;
    DirectImpact impact{app.tenant, app.name, {}};
    for (const auto& read : app.workload.reads) {
      bool touched = std::any_of(changed.begin(), changed.end(), [&](const ChangedKey& c) { return read_touches(read, c); });
      if (!touched) continue;
      if (!snapshot) snapshot = after(app);
      if (read_holds(read, *snapshot)) continue;
      impact.reads.push_back(ReadChange{read, read_now(read, *snapshot)});
    }
    if (!impact.reads.empty()) out.push_back(std::move(impact));
  }
  return out;
}

std::vector<ChangedKey> stale_keys(const ClusterState& state,
                                   const std::function<ConfigSnapshot(const AppRecord&)>& now) {
  std::set<std::pair<std::string, std::string>> keys;
  for (const auto& [id, app] : state.apps) {
    if (app.workload.reads.empty()) continue;
    ConfigSnapshot snapshot = now(app);
    for (const auto& read : app.workload.reads)
      if (!read_holds(read, snapshot)) keys.emplace(read.kind, read.key);
  }
  std::vector<ChangedKey> out;
  for (const auto& [kind, key] : keys) out.push_back(ChangedKey{kind, key});
  return out;
}

std::vector<std::string> propagation_order(const ClusterState& state, const std::vector<std::string>& seeds) {
  std::map<std::string, std::vector<std::string>> dependents;  // id -> ids depending on it
  for (const auto& [id, app] : state.apps)
    for (const auto& d : app.dependencies) dependents[dependency_id(app.tenant, d)].push_back(id);
  std::set<std::string> closure;
  std::vector<std::string> todo;
  for (const auto& s : seeds)
    if (state.apps.count(s) && closure.insert(s).second) todo.push_back(s);
  while (!todo.empty()) {
    std::string id = todo.back();
    todo.pop_back();
    for (const auto& d : dependents[id])
      if (closure.insert(d).second) todo.push_back(d);
  }
  // Kahn's algorithm over the closure, smallest id first among the ready ones.
  std::map<std::string, int> waiting;
  for (const auto& id : closure) {
    const AppRecord& app = state.apps.at(id);
    int n = 0;
    for (const auto& d : app.dependencies)
      if (closure.count(dependency_id(app.tenant, d))) ++n;
    waiting[id] = n;
  }
  std::set<std::string> ready;
  for (const auto& [id, n] : waiting)
    if (n == 0) ready.insert(id);
  std::vector<std::string> order;
  while (!ready.empty()) {
    std::string id = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(id);
    for (const auto& d : dependents[id])
      if (closure.count(d) && --waiting[d] == 0) ready.insert(d);
  }
  for (const auto& [id, n] : waiting)
    if (n > 0) order.push_back(id);
  return order;
}

std::vector<std::string> changed_imports(const std::vector<ImportEdge>& imports,
                                         const std::map<std::string, std::pair<nlohmann::json, nlohmann::json>>& changed) {
  std::vector<std::string> out;
  auto output = [](const nlohmann::json& outputs, const std::string& name) {
    return outputs.is_object() && outputs.contains(name) ? outputs.at(name) : nlohmann::json();
  };
  for (const auto& edge : imports) {
    auto it = changed.find(edge.dependency);
    if (it == changed.end()) continue;
    for (const auto& name : edge.outputs)
      if (output(it->second.first, name) != output(it->second.second, name)) out.push_back(edge.dependency + "." + name);
  }
  return out;
}

RerenderOutcome plan_rerender(const ClusterState& state, const std::vector<Rerender>& rerenders) {
  RerenderOutcome out;
  for (const auto& r : rerenders) {
    const AppRecord* cur = state.find_app(r.record.tenant, r.record.name);
    std::string id = r.record.tenant + "/" + r.record.name;
    if (!cur || cur->workload.hash != r.base_hash) {
      out.skipped.push_back(id);
      continue;
    }
    AppRecord rec = *cur;
    rec.workload = r.record.workload;
    rec.document = r.record.document;
    // A condition on a dependency may have flipped with the config (spec/condition.hpp).
    rec.dependencies = r.record.dependencies;
    rec.dependency_ranges = r.record.dependency_ranges;
    rec.op.clear();  // The commit stamps the operation making this change.
    bool same_roles = roles_unchanged(*cur, rec);
    size_t rolling = 0;
    for (const auto& i : state.snapshot.instances) {
      if (i.tenant != rec.tenant || i.app != rec.name || !instance_outdated(i, rec)) continue;
      if (same_roles) {
        Instance updated = i;
        updated.hash = rec.workload.hash;
        out.batch.put_instances.push_back(std::move(updated));
      } else {
        ++rolling;
      }
    }
    if (rolling > 0) rec.status = "Updating";
    out.rolling += rolling;
    std::string effect = same_roles ? "roles unchanged, instances kept"
                         : rolling > 0 ? fmt::format("{} instance(s) to roll out in batches keeping min_available", rolling)
                                       : "no instances to replace";
    auto& e = out.batch.event("Rerendered", fmt::format("{}: workload {} -> {}; {}", r.why, cur->workload.hash.substr(0, 12),
                                                        rec.workload.hash.substr(0, 12), effect));
    e.tenant = rec.tenant;
    e.app = rec.name;
    out.batch.put_apps.push_back(std::move(rec));
    out.applied.push_back(id);
  }
  return out;
}

}  // namespace gaia
