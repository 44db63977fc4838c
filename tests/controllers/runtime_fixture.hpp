#pragma once
// Scenarios for the run-time controllers (sim usage, reclamation, runtime preemption,
// restart): a ClusterState built in code at fixed times, with app records that match
// the instances, and a reconcile over just those controllers and the scheduler so the
// tests do not depend on what the other controllers decide.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "controllers/reclamation.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/restart.hpp"
#include "controllers/runtime_preemption.hpp"
#include "controllers/lifecycle.hpp"
#include "lib/sim_usage.hpp"
#include "controllers/submit.hpp"
#include "tests/controllers/cluster_builder.hpp"
#include "tests/controllers/sim_fixture.hpp"

namespace gaia::test {

// 2024-01-01T00:00:00Z, like ManualClock's start.
inline constexpr int64_t kT0 = 1'704'067'200'000;

inline Priority prio(std::string_view text) { return *parse_priority(text); }

// A state from the builder's snapshot: one Ready app record per (tenant, app), whose
// roles ask for as many replicas as the builder made, and a default tenant.
inline ClusterState runtime_state(const ClusterBuilder& b) {
  ClusterState s;
  s.snapshot = b.s;
  for (auto& n : s.snapshot.nodes)
    if (n.instance_subnet.empty())
      n.instance_subnet = fmt::format("10.1.{}.0/24", &n - s.snapshot.nodes.data());
  for (const auto& [id, role] : b.s.roles) {
    auto first = id.find('/'), second = id.find('/', first + 1);
    std::string tenant = id.substr(0, first), app = id.substr(first + 1, second - first - 1);
    AppRecord& a = s.apps[tenant + "/" + app];
    a.tenant = tenant;
    a.name = app;
    a.version = "1.0.0";
    a.status = "Ready";
    Role r = role;
    r.replicas = static_cast<int>(std::count_if(b.s.instances.begin(), b.s.instances.end(), [&](const Instance& i) {
      return i.tenant == tenant && i.app == app && i.role == role.name;
    }));
    a.workload.roles.push_back(r);
    s.snapshot.roles[id] = r;
  }
  if (s.snapshot.tenants.empty()) s.snapshot.tenants.push_back(Tenant{"default", {}, {}});
  return s;
}

inline ControllerContext at(int64_t now_ms, ControllerOptions o = {}) { return ControllerContext{now_ms, o}; }

inline size_t count_events(const Batch& b, const std::string& reason) {
  return static_cast<size_t>(
      std::count_if(b.events.begin(), b.events.end(), [&](const TimelineEvent& e) { return e.reason == reason; }));
}

inline const TimelineEvent* find_event(const Batch& b, const std::string& reason, const std::string& instance = "") {
  for (const auto& e : b.events)
    if (e.reason == reason && (instance.empty() || e.instance == instance)) return &e;
  return nullptr;
}

inline const Instance& inst(const ClusterState& s, const std::string& key) {
  const Instance* i = s.find_instance(key);
  if (!i) throw std::runtime_error("no instance " + key);
  return *i;
}

// Runs `fn` and checks that running it again on its own result changes nothing.
inline ControllerResult run_idempotent(ControllerFn fn, const ClusterState& s, const ControllerContext& ctx,
                                       ClusterState* after = nullptr) {
  auto r = fn(s, ctx);
  ClusterState next = apply_batch(s, r.batch);
  auto again = fn(next, ctx);
  INFO("second run of the controller must be a no-op");
  CHECK(again.batch.empty());
  if (after) *after = std::move(next);
  return r;
}

inline ControllerResult schedule_controller(const ClusterState& s, const ControllerContext&) {
  return ControllerResult{reschedule_pending(s).batch, 0};
}

// The run-time controllers in their default order, then the scheduler.
inline const std::vector<NamedController>& runtime_controllers() {
  static const std::vector<NamedController> list = {
      {"restart", &restart_failed},
      {"runtime_preemption", &preempt_at_runtime},
      {"reclamation", &reclaim_reservations},
      {"scheduler", &schedule_controller},
  };
  return list;
}

inline UsageRule usage_rule(std::optional<double> cpu, std::optional<double> memory) {
  UsageRule r;
  r.base.cpu = cpu;
  r.base.memory = memory;
  return r;
}

}  // namespace gaia::test
