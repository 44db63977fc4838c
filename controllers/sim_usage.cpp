#include "controllers/sim_usage.hpp"

#include "controllers/runtime_util.hpp"

namespace gaia {

ControllerResult observe_sim_usage(const ClusterState& state, const ControllerContext& ctx) {
  ControllerResult out;
  for (const auto& i : state.snapshot.instances) {
    bool running = running_on_node(i);
    std::optional<Resources> usage = running ? state.sim_usage.usage_of(i, ctx.now_ms) : std::nullopt;
    int64_t started = !running ? 0 : i.started_ms != 0 ? i.started_ms : ctx.now_ms;
    if (usage == i.usage && started == i.started_ms) continue;
    // An observation, not an action: the controllers that act on it (reclamation,
    // runtime preemption) record events for what they do.
    Instance x = i;
    x.usage = usage;
    x.started_ms = started;
    out.batch.put_instances.push_back(std::move(x));
  }
  out.wake_at_ms = state.sim_usage.next_change_ms(ctx.now_ms);
  return out;
}

}  // namespace gaia
