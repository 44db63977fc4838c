#include <catch2/catch.hpp>

#include "controllers/controller_options.hpp"
#include "lib/sim_backend.hpp"
#include "tests/controllers/runtime_fixture.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

ClusterBuilder two_roles() {
  ClusterBuilder b;
  b.node("n1", 8000, 16);
  b.role("default", "web", "frontend", res(2000, 4));
  b.role("default", "web", "worker", res(1000, 2));
  b.instance("default", "web", "frontend", 0, "n1");
  b.instance("default", "web", "frontend", 1, "n1");
  b.instance("default", "web", "worker", 0, "n1");
  b.instance("default", "web", "worker", 1);  // Pending.
  return b;
}

}  // namespace

TEST_CASE("usage model: no rule means usage is not observed", "[runtime][sim_usage]") {
  auto b = two_roles();
  SimUsageModel m;
  CHECK_FALSE(m.usage_of(b.s.instances[0], kT0));
  m.rules["default/other"] = usage_rule(0.5, 0.5);
  CHECK_FALSE(m.usage_of(b.s.instances[0], kT0));
}

TEST_CASE("usage model: the most specific rule wins field by field", "[runtime][sim_usage]") {
  auto b = two_roles();
  SimUsageModel m;
  m.rules["*"] = usage_rule(0.4, 0.6);
  m.rules["default/web/frontend"] = usage_rule(std::nullopt, 0.25);
  m.rules["1.frontend.web.default"] = usage_rule(0.9, std::nullopt);
  auto u0 = m.usage_of(b.s.instances[0], kT0);  // 0.frontend: cpu from *, memory from role.
  REQUIRE(u0);
  CHECK(u0->cpu_millis == 800);
  CHECK(u0->memory_bytes == kGi);
  auto u1 = m.usage_of(b.s.instances[1], kT0);  // 1.frontend: cpu from the instance rule.
  CHECK(u1->cpu_millis == 1800);
  CHECK(u1->memory_bytes == kGi);
  auto w = m.usage_of(b.s.instances[2], kT0);  // worker: the default only.
  CHECK(w->cpu_millis == 400);
  CHECK(w->memory_bytes == static_cast<int64_t>(0.6 * 2 * kGi + 0.5));
}

TEST_CASE("usage model: an unset fraction falls back to the request", "[runtime][sim_usage]") {
  auto b = two_roles();
  SimUsageModel m;
  m.rules["default/web"] = usage_rule(0.5, std::nullopt);
  auto u = m.usage_of(b.s.instances[0], kT0);
  CHECK(u->cpu_millis == 1000);
  CHECK(u->memory_bytes == 4 * kGi);
}

TEST_CASE("usage model: a spike overrides base values until it ends", "[runtime][sim_usage]") {
  auto b = two_roles();
  SimUsageModel m;
  m.rules["1.frontend.web.default"] = usage_rule(0.3, 0.3);
  UsageRule role = usage_rule(0.5, 0.5);
  role.spike.memory = 1.5;
  role.spike_until_ms = kT0 + 30'000;
  m.rules["default/web/frontend"] = role;
  // The spike on the role hits the instance with its own base rule too.
  CHECK(m.usage_of(b.s.instances[1], kT0)->memory_bytes == 6 * kGi);
  CHECK(m.usage_of(b.s.instances[1], kT0)->cpu_millis == 600);
  CHECK(m.next_change_ms(kT0) == kT0 + 30'000);
  CHECK(m.usage_of(b.s.instances[1], kT0 + 30'000)->memory_bytes == static_cast<int64_t>(0.3 * 4 * kGi + 0.5));
  CHECK(m.next_change_ms(kT0 + 30'000) == 0);
  // A spike without an end lasts until cleared.
  m.rules["default/web/frontend"].spike_until_ms = 0;
  CHECK(m.usage_of(b.s.instances[0], kT0 + 1'000'000)->memory_bytes == 6 * kGi);
  CHECK(m.next_change_ms(kT0) == 0);
}

TEST_CASE("usage model: a declared cpu limit caps cpu usage while memory may exceed it", "[runtime][sim_usage][limits]") {
  auto b = two_roles();
  SimUsageModel m;
  m.rules["*"] = usage_rule(3.0, 2.0);
  Instance i = b.s.instances[2];  // A worker: 1 cpu, 2Gi requested.
  // Without declared limits the fractions apply as given.
  CHECK(m.usage_of(i, kT0)->cpu_millis == 3000);
  i.limit = res(1500, 3);
  auto u = m.usage_of(i, kT0);
  CHECK(u->cpu_millis == 1500);               // Throttled at the limit.
  CHECK(u->memory_bytes == 4 * kGi);          // Above the 3Gi limit: the run-time controller kills it.
}

TEST_CASE("usage model: JSON round trip", "[runtime][sim_usage]") {
  SimUsageModel m;
  m.rules["*"] = usage_rule(0.4, 0.6);
  UsageRule r = usage_rule(std::nullopt, 0.5);
  r.spike.memory = 1.5;
  r.spike_until_ms = kT0 + 5;
  m.rules["default/web"] = r;
  nlohmann::json j = m;
  CHECK(j["default/web"]["spike"]["until_ms"] == kT0 + 5);
  CHECK_FALSE(j["default/web"].contains("cpu"));
  CHECK(j.get<SimUsageModel>() == m);
}

TEST_CASE("sim backend: usage and start times of running copies follow the usage model", "[runtime][sim_usage]") {
  auto s = runtime_state(two_roles());
  SimBackend sim;  // In memory.
  SimUsageModel model;
  model.rules["*"] = usage_rule(0.5, 0.25);
  UsageRule spike = usage_rule(std::nullopt, std::nullopt);
  spike.spike.memory = 2.0;
  spike.spike_until_ms = kT0 + 10'000;
  model.rules["0.worker.web.default"] = spike;
  REQUIRE(sim.set_usage_model(model));
  std::vector<StartSpec> specs;
  for (const auto& i : s.snapshot.instances)
    if (i.state == InstanceState::Running) specs.push_back(StartSpec{i, {}, "1.0.0", {}});
  REQUIRE(sim.start(specs, kT0));
  REQUIRE(sim.start(specs, kT0 + 5));  // Idempotent: no second copy.
  auto obs = sim.observe(kT0);
  REQUIRE(obs);
  CHECK(obs->copies.size() == 3);
  CHECK(obs->wake_at_ms == kT0 + 10'000);
  Batch b = observe_instances(s, *obs, kT0);
  CHECK(b.put_instances.size() == 3);
  // Usage is an observation, not an action: no instance gets an event for it.
  for (const auto& e : b.events) CHECK(e.instance.empty());
  ClusterState after = apply_batch(s, b);
  const auto& f0 = inst(after, "0.frontend.web.default");
  CHECK(f0.started_ms == kT0);
  CHECK(f0.usage->cpu_millis == 1000);
  CHECK(f0.usage->memory_bytes == kGi);
  CHECK(inst(after, "0.worker.web.default").usage->memory_bytes == 4 * kGi);
  CHECK_FALSE(inst(after, "1.worker.web.default").usage);
  CHECK(observe_instances(after, *obs, kT0).empty());

  // The spike ends: only the spiking instance changes, and its start time stays.
  auto later = sim.observe(kT0 + 10'000);
  REQUIRE(later);
  Batch l = observe_instances(after, *later, kT0 + 10'000);
  REQUIRE(l.put_instances.size() == 1);
  CHECK(l.put_instances[0].usage->memory_bytes == kGi / 2);
  CHECK(l.put_instances[0].started_ms == kT0);

  // Clearing the model stops observing usage.
  REQUIRE(sim.set_usage_model(SimUsageModel{}));
  auto cleared = sim.observe(kT0 + 20'000);
  REQUIRE(cleared);
  Batch c = observe_instances(after, *cleared, kT0 + 20'000);
  CHECK(c.put_instances.size() == 3);
  for (const auto& i : c.put_instances) CHECK_FALSE(i.usage);
}

TEST_CASE("sim backend: an ended copy is observed as exited, a lost one not at all", "[runtime][sim_usage]") {
  auto s = runtime_state(two_roles());
  SimBackend sim;
  std::vector<StartSpec> specs;
  for (const auto& i : s.snapshot.instances)
    if (i.state == InstanceState::Running) specs.push_back(StartSpec{i, {}, "1.0.0", {}});
  REQUIRE(sim.start(specs, kT0));
  REQUIRE(sim.end_copy("0.frontend.web.default", 3, "boom", false));
  REQUIRE(sim.lose_copy("1.frontend.web.default"));
  CHECK(sim.end_copy("9.frontend.web.default", 1, "", false).error().code == BackendErrc::NotFound);
  auto obs = sim.observe(kT0);
  REQUIRE(obs);
  ClusterState after = apply_batch(s, observe_instances(s, *obs, kT0));
  CHECK(inst(after, "0.frontend.web.default").state == InstanceState::Failed);
  CHECK(inst(after, "0.frontend.web.default").exit_code == 3);
  CHECK(inst(after, "1.frontend.web.default").state == InstanceState::Failed);
  CHECK(inst(after, "1.frontend.web.default").internal_failure);
  // Stopping what is gone is fine; stopping twice too.
  StopSpec stop{"0.frontend.web.default", "n1", 0, std::chrono::milliseconds(0), "test"};
  REQUIRE(sim.stop({stop}, kT0));
  REQUIRE(sim.stop({stop}, kT0));
  auto obs2 = sim.observe(kT0);
  REQUIRE(obs2);
  CHECK(obs2->copies.size() == 1);
}

TEST_CASE("controller options stored in the store override the defaults field by field", "[runtime][options]") {
  ClusterState s;
  ControllerOptions base;
  base.max_backoff_ms = 9;
  CHECK(stored_controller_options(s, base).max_backoff_ms == 9);
  s.settings[k_controller_options_setting] = nlohmann::json{{"reclaim_startup_ms", 0}, {"reclaim_margin", "bad"}};
  auto o = stored_controller_options(s, base);
  CHECK(o.reclaim_startup_ms == 0);
  CHECK(o.reclaim_margin == base.reclaim_margin);
  CHECK(o.max_backoff_ms == 9);
  ControllerOptions x;
  x.reclaim_margin = 0.5;
  s.settings[k_controller_options_setting] = controller_options_json(x);
  CHECK(stored_controller_options(s).reclaim_margin == 0.5);
}
