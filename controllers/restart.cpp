#include "controllers/restart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "controllers/runtime_util.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {

std::string backoff_text(int64_t ms) {
  if (ms >= 1000 && ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}


}  // namespace

int64_t restart_backoff_ms(const Role& role, int restarts, bool internal, const ControllerOptions& options) {
  int64_t base = std::max(role.backoff_ms, 0);
  if (internal) return std::min(base, options.max_backoff_ms);
  int64_t b = base;
  // Doubling stops at the cap, so a long history of restarts cannot overflow.
  for (int k = 0; k < restarts && b < options.max_backoff_ms && b > 0; ++k) b *= 2;
  return std::min(b, options.max_backoff_ms);
}

ControllerResult restart_failed(const ClusterState& state, const ControllerContext& ctx) {
  ControllerResult out;
  std::map<std::string, AppRecord> apps;  // Apps whose record this run changes.
  std::set<std::pair<std::string, std::string>> touched;
  static const Role k_default_role;
  for (const auto& i : state.snapshot.instances) {
    if (i.state != InstanceState::Failed) continue;
    const AppRecord* found = state.find_app(i.tenant, i.app);
    if (!found) continue;
    std::string app_key = i.tenant + "/" + i.app;
    const AppRecord& app = apps.count(app_key) ? apps.at(app_key) : *found;
    if (app.failed_roles.count(i.role)) continue;  // Given up on: stays down until resubmitted.
    auto role_it = state.snapshot.roles.find(app_key + "/" + i.role);
    const Role& role = role_it == state.snapshot.roles.end() ? k_default_role : role_it->second;
    touched.insert({i.tenant, i.app});

    if (!i.internal_failure && i.restarts >= role.retry_times) {
      AppRecord a = app;
      std::string reason = fmt::format("{} failed after {} restart(s) (retry_times {}): {}", i.key(), i.restarts,
                                       role.retry_times, i.failure.empty() ? "exited" : i.failure);
      a.failed_roles[i.role] = reason;
      a.status = "Failed";
      a.op.clear();
      apps[app_key] = std::move(a);
      out.batch.instance_event(i, "Failed", fmt::format("role {} failed: {}", i.role, reason), "Warning");
      if (i.restart_at_ms) {
        Instance x = i;
        x.restart_at_ms = 0;
        out.batch.put_instances.push_back(std::move(x));
      }
      continue;
    }

    Instance x = i;
    int64_t backoff = restart_backoff_ms(role, i.restarts, i.internal_failure, ctx.options);
    bool changed = false;
    if (x.restart_at_ms == 0) {
      x.restart_at_ms = ctx.now_ms + backoff;
      changed = true;
      if (backoff > 0)
        out.batch.instance_event(i, "BackOff",
                       i.internal_failure
                           ? fmt::format("restarting in {} after an internal failure (not counted against retry_times)",
                                         backoff_text(backoff))
                           : fmt::format("restarting in {} (restart {} of {})", backoff_text(backoff), i.restarts + 1,
                                         role.retry_times));
    }
    if (x.restart_at_ms <= ctx.now_ms) {
      bool internal = x.internal_failure;
      std::string failure = x.failure;
      std::string node = x.node;
      if (!internal) ++x.restarts;
      requeue_instance(x, fmt::format("restarting after failure: {}", failure.empty() ? "exited" : failure));
      x.failure = failure;  // Kept as the last failure, for `gaia describe`.
      std::string after_backoff = backoff > 0 ? fmt::format(" after {} back-off", backoff_text(backoff)) : "";
      out.batch.instance_event(i, "Restarted",
                     internal ? fmt::format("restarted{} after an internal failure on {} (not counted; {} of {} "
                                            "restarts used); back in the queue",
                                            after_backoff, node, x.restarts, role.retry_times)
                              : fmt::format("restarted{} (restart {} of {}); back in the queue", after_backoff,
                                            x.restarts, role.retry_times));
      changed = true;
    } else if (out.wake_at_ms == 0 || x.restart_at_ms < out.wake_at_ms) {
      out.wake_at_ms = x.restart_at_ms;
    }
    if (changed) out.batch.put_instances.push_back(std::move(x));
  }
  for (auto& [id, a] : apps) out.batch.put_apps.push_back(std::move(a));
  if (!touched.empty() && !out.batch.empty()) {
    ClusterState after = apply_batch(state, out.batch);
    sync_app_statuses(after, touched, out.batch);
  }
  return out;
}

}  // namespace gaia
