#include "controllers/runtime_util.hpp"

#include <fmt/format.h>

#include <algorithm>

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

void sync_app_status(const ClusterState& after, const std::string& tenant, const std::string& app, Batch& batch) {
  const AppRecord* a = after.find_app(tenant, app);
  if (!a) return;
  // The scheduler's own rule (Failed, Updating, Ready, Pending), so the two never flip
  // an app's status back and forth during a rollout.
  std::string status = app_status(after, tenant, app);
  if (a->status == status) return;
  std::string previous = a->status;
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
  if (status == "Failed" || status == "Updating") return;
  bool ready = status == "Ready";
  if (!ready && previous == "Deploying") return;  // Still starting: not worth a warning.
  auto& e = batch.event(ready ? "AppReady" : "AppPending",
                        ready ? "every instance is running" : "some instances are not running yet",
                        ready ? "Normal" : "Warning");
  e.tenant = tenant;
  e.app = app;
}

}  // namespace gaia
