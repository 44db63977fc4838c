#include "controllers/node_health.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "controllers/migration.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {

std::string health_seconds_text(int64_t ms) {
  return ms % 1000 == 0 ? fmt::format("{}s", ms / 1000) : fmt::format("{:.1f}s", static_cast<double>(ms) / 1000.0);
}

}  // namespace

ControllerResult reconcile_node_health(const ClusterState& state, const ControllerContext& ctx) {
  ControllerResult out;
  const int64_t timeout = std::max<int64_t>(ctx.options.heartbeat_timeout_ms, 1);
  for (const auto& [name, beat] : state.heartbeats) {
    const Node* n = state.find_node(name);
    if (!n) continue;
    const int64_t silent = ctx.now_ms - beat.at_ms;
    if (n->state != NodeState::Down) {
      if (silent <= timeout) {
        // Wake just after the timeout would pass, so a silent agent is noticed by a
        // runner that has nothing else to do.
        int64_t due = beat.at_ms + timeout + 1;
        if (out.wake_at_ms == 0 || due < out.wake_at_ms) out.wake_at_ms = due;
        continue;
      }
      std::string why = fmt::format("{}: no heartbeat from its agent ({}) for {}, timeout {}", k_heartbeat_down_prefix,
                                    beat.agent.empty() ? "unknown" : beat.agent, health_seconds_text(silent),
                                    health_seconds_text(timeout));
      auto change = decide_node_fail(state, name, false, why);
      if (change && change->changed) merge_batch(out.batch, std::move(change->batch));
    } else if (n->down_reason.starts_with(k_heartbeat_down_prefix) && silent <= timeout) {
      auto change = decide_node_recover(state, name);
      if (!change || !change->changed) continue;
      for (auto& e : change->batch.events)
        e.message = fmt::format("its agent ({}) reports again: {}", beat.agent.empty() ? "unknown" : beat.agent, e.message);
      merge_batch(out.batch, std::move(change->batch));
    }
  }
  return out;
}

}  // namespace gaia
