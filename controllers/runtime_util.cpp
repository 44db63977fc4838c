#include "controllers/runtime_util.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "controllers/app_health.hpp"
#include "controllers/filters.hpp"
#include "controllers/submit.hpp"

namespace gaia {

void requeue_instance(Instance& i, std::string reason) {
  i.state = InstanceState::Pending;
  i.node.clear();
  i.address.clear();
  i.ports.clear();
  i.pending_reason = std::move(reason);
  i.started_ms = 0;
  i.restart_at_ms = 0;
  i.usage.reset();
  i.reservation.reset();
  i.throttled = false;
  i.internal_failure = false;
  i.snapped_back_ms = 0;
}

std::string cpu_memory_text(const Resources& r) {
  return fmt::format("{} cpu, {} memory", sched::format_millis(r.cpu_millis), sched::format_size(r.memory_bytes));
}

void sync_app_statuses(const ClusterState& after, const std::set<std::pair<std::string, std::string>>& apps,
                       Batch& batch) {
  if (apps.empty()) return;
  auto order = in_event_order(batch, apps);
  // The scheduler's own rule (controllers/app_health.hpp), so the two never flip an
  // app's status back and forth during a rollout.
  std::unordered_set<std::string> ids;
  for (const auto& [tenant, app] : order)
    if (const AppRecord* a = after.find_app(tenant, app)) ids.insert(a->tenant + "/" + a->name);
  AppHealthIndex health(after, ids);  // Only the apps whose status is synced.
  for (const auto& [tenant, app] : order) {
    const AppRecord* a = after.find_app(tenant, app);
    if (!a) continue;
    std::string status = health.status(*a);
    if (a->status == status) continue;
    auto it = std::find_if(batch.put_apps.begin(), batch.put_apps.end(),
                           [&](const AppRecord& x) { return x.tenant == tenant && x.name == app; });
    if (it == batch.put_apps.end()) {
      batch.put_apps.push_back(*a);
      batch.put_apps.back().op.clear();  // The commit stamps the operation making this change.
      it = batch.put_apps.end() - 1;
    }
    it->status = status;
    // A Failed status comes with its own Failed event from the restart controller, and
    // Updating with the rollout's RollingOut event.
    app_status_event(status, health.summary(*a), tenant, app, batch);
  }
}

}  // namespace gaia
