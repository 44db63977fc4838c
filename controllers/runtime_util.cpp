#include "controllers/runtime_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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
  // When each app last changed in this batch: the event of its last instance to change
  // is the moment it became ready (or stuck).
  std::map<std::pair<std::string, std::string>, size_t> last_event;
  for (size_t k = 0; k < batch.events.size(); ++k) {
    const auto& e = batch.events[k];
    if (apps.count({e.tenant, e.app})) last_event[{e.tenant, e.app}] = k;
  }
  std::vector<std::pair<std::string, std::string>> order(apps.begin(), apps.end());
  std::stable_sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    auto ix = last_event.find(x), iy = last_event.find(y);
    size_t kx = ix == last_event.end() ? 0 : ix->second, ky = iy == last_event.end() ? 0 : iy->second;
    return kx < ky;
  });
  // The scheduler's own rule (controllers/app_health.hpp), so the two never flip an
  // app's status back and forth during a rollout.
  AppHealthIndex health(after);
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
