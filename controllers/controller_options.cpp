#include "controllers/controller_options.hpp"

namespace gaia {

ControllerOptions stored_controller_options(const ClusterState& state, ControllerOptions base) {
  auto it = state.settings.find(k_controller_options_setting);
  if (it == state.settings.end() || !it->second.is_object()) return base;
  const auto& j = it->second;
  // The setting is written by gaia itself; a field of the wrong type is ignored rather
  // than stopping every controller run.
  auto read = [&](const char* name, auto& field) {
    auto f = j.find(name);
    if (f == j.end() || !f->is_number()) return;
    field = f->get<std::remove_reference_t<decltype(field)>>();
  };
  read("reclaim_startup_ms", base.reclaim_startup_ms);
  read("reclaim_margin", base.reclaim_margin);
  read("max_backoff_ms", base.max_backoff_ms);
  read("heartbeat_timeout_ms", base.heartbeat_timeout_ms);
  read("rebalance_budget", base.rebalance_budget);
  read("rebalance_period_ms", base.rebalance_period_ms);
  read("rebalance_target_pct", base.rebalance_target_pct);
  return base;
}

nlohmann::json controller_options_json(const ControllerOptions& o) {
  return nlohmann::json{{"reclaim_startup_ms", o.reclaim_startup_ms},
                        {"reclaim_margin", o.reclaim_margin},
                        {"max_backoff_ms", o.max_backoff_ms},
                        {"heartbeat_timeout_ms", o.heartbeat_timeout_ms},
                        {"rebalance_budget", o.rebalance_budget},
                        {"rebalance_period_ms", o.rebalance_period_ms},
                        {"rebalance_target_pct", o.rebalance_target_pct}};
}

}  // namespace gaia
