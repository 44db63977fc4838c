#include <catch2/catch.hpp>

#include "tests/controllers/runtime_fixture.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

Instance& running(ClusterBuilder& b, const std::string& app, const std::string& role, int ord, const std::string& node,
                  double cpu_fraction, double mem_fraction, int64_t started = kT0) {
  auto& i = b.instance("default", app, role, ord, node);
  i.started_ms = started;
  i.usage = Resources{static_cast<int64_t>(static_cast<double>(i.request.cpu_millis) * cpu_fraction),
                      static_cast<int64_t>(static_cast<double>(i.request.memory_bytes) * mem_fraction), 0, 0};
  return i;
}

// n1: 10 cpu / 10Gi with a prod db spiking to 9Gi and three nonprod instances of 1Gi.
ClusterBuilder overloaded() {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.node("n2", 10'000, 10);
  b.role("default", "db", "server", res(2000, 6), prio("prod"));
  b.role("default", "low", "job", res(500, 1), prio("nonprod:10"));
  b.role("default", "mid", "job", res(500, 1), prio("nonprod:50"));
  b.role("default", "keep", "job", res(500, 1), prio("nonprod:5:non-preemptible"));
  running(b, "db", "server", 0, "n1", 0.5, 1.5);  // 9Gi
  running(b, "low", "job", 0, "n1", 0.5, 1.0);
  running(b, "mid", "job", 0, "n1", 0.5, 1.0);
  running(b, "keep", "job", 0, "n1", 0.5, 1.0);  // 12Gi used of 10Gi.
  return b;
}

}  // namespace

TEST_CASE("memory shortage kills the lowest-priority nonprod instances until the node fits", "[runtime][preemption]") {
  auto s = runtime_state(overloaded());
  ClusterState after;
  auto r = run_idempotent(&preempt_at_runtime, s, at(kT0), &after);
  // 12Gi -> kill low (11Gi) -> kill mid (10Gi): fits. The non-preemptible one and the
  // prod db stay.
  CHECK(count_events(r.batch, "Preempted") == 2);
  for (const char* key : {"0.job.low.default", "0.job.mid.default"}) {
    const auto& i = inst(after, key);
    CHECK(i.state == InstanceState::Pending);
    CHECK(i.node.empty());
    CHECK(i.pending_reason == "killed: node n1 out of memory");
    CHECK_FALSE(i.usage);
    CHECK(i.started_ms == 0);
    const auto* e = find_event(r.batch, "Preempted", key);
    REQUIRE(e);
    CHECK(e->type == "Warning");
    CHECK(e->node == "n1");
  }
  CHECK(inst(after, "0.server.db.default").state == InstanceState::Running);
  CHECK(inst(after, "0.job.keep.default").state == InstanceState::Running);
}

TEST_CASE("memory shortage stops killing once the node fits", "[runtime][preemption]") {
  auto s = runtime_state(overloaded());
  s.find_instance("0.server.db.default")->usage->memory_bytes = static_cast<int64_t>(7.5 * kGi);  // 10.5Gi used.
  ClusterState after;
  auto r = run_idempotent(&preempt_at_runtime, s, at(kT0), &after);
  CHECK(count_events(r.batch, "Preempted") == 1);
  CHECK(inst(after, "0.job.low.default").state == InstanceState::Pending);
  CHECK(inst(after, "0.job.mid.default").state == InstanceState::Running);
}

TEST_CASE("memory shortage never kills prod or sys", "[runtime][preemption]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.role("default", "db", "server", res(1000, 6), prio("prod"));
  b.role("default", "infra", "agent", res(1000, 4), prio("sys"));
  running(b, "db", "server", 0, "n1", 0.5, 1.5);
  running(b, "infra", "agent", 0, "n1", 0.5, 1.0);
  auto s = runtime_state(b);
  auto r = run_idempotent(&preempt_at_runtime, s, at(kT0));
  CHECK(r.batch.empty());
}

TEST_CASE("among equal priorities the most recently started is killed first", "[runtime][preemption]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 4);
  b.role("default", "db", "server", res(1000, 2), prio("prod"));
  b.role("default", "batch", "job", res(500, 1), prio("nonprod"));
  running(b, "db", "server", 0, "n1", 0.5, 1.5);  // 3Gi
  running(b, "batch", "job", 0, "n1", 0.5, 1.0, kT0);
  running(b, "batch", "job", 1, "n1", 0.5, 1.0, kT0 + 5000);  // 5Gi of 4Gi.
  ClusterState after;
  run_idempotent(&preempt_at_runtime, runtime_state(b), at(kT0 + 6000), &after);
  CHECK(inst(after, "1.job.batch.default").state == InstanceState::Pending);
  CHECK(inst(after, "0.job.batch.default").state == InstanceState::Running);
}

TEST_CASE("a killed instance that uses more than it requested fails out of memory", "[runtime][preemption]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 4);
  b.role("default", "batch", "job", res(500, 2), prio("nonprod"));
  b.role("default", "db", "server", res(500, 1), prio("prod"));
  running(b, "batch", "job", 0, "n1", 0.5, 2.0);  // 4Gi of 2Gi requested.
  running(b, "db", "server", 0, "n1", 0.5, 1.0);
  ClusterState after;
  auto r = run_idempotent(&preempt_at_runtime, runtime_state(b), at(kT0), &after);
  const auto& i = inst(after, "0.job.batch.default");
  CHECK(i.state == InstanceState::Failed);
  CHECK(i.node == "n1");
  CHECK_THAT(i.failure, Catch::Contains("out of memory: used 4Gi of 2Gi requested"));
  CHECK_FALSE(i.internal_failure);
  REQUIRE(find_event(r.batch, "OOMKilled"));
  CHECK(count_events(r.batch, "Preempted") == 0);
}

TEST_CASE("a Burstable copy above its memory limit is killed, whatever its priority and the node's room",
          "[runtime][preemption][limits]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 64);
  Role& r = b.role("default", "db", "server", res(500, 2), prio("prod"));
  r.limits = res(1000, 3);
  auto& i = running(b, "db", "server", 0, "n1", 0.5, 1.75);  // 3.5Gi, above the 3Gi limit.
  i.limit = r.limits;
  b.role("default", "db", "cache", res(500, 2), prio("prod")).limits = res(500, 4);
  running(b, "db", "cache", 0, "n1", 0.5, 1.5).limit = res(500, 4);  // 3Gi: above request, within limit.
  ClusterState after;
  auto r2 = run_idempotent(&preempt_at_runtime, runtime_state(b), at(kT0), &after);
  const auto& x = inst(after, "0.server.db.default");
  CHECK(x.state == InstanceState::Failed);
  CHECK(x.failure == "out of memory: used 3.5Gi, above its limit of 3Gi");
  CHECK(count_events(r2.batch, "OOMKilled") == 1);
  CHECK(inst(after, "0.cache.db.default").state == InstanceState::Running);
}

TEST_CASE("memory shortage: after preemptible nonprod, Burstable copies above their request go and a copy within its "
          "request stays",
          "[runtime][preemption][limits]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.role("default", "db", "server", res(2000, 6), prio("prod:100"));
  b.role("default", "api", "web", res(500, 2), prio("prod:200")).limits = res(500, 6);
  b.role("default", "low", "job", res(500, 1), prio("nonprod:10"));
  running(b, "db", "server", 0, "n1", 0.5, 1.0);          // 6Gi, its request: Guaranteed.
  running(b, "api", "web", 0, "n1", 0.5, 2.5).limit = res(500, 6);  // 5Gi of 2Gi requested.
  running(b, "low", "job", 0, "n1", 0.5, 1.0);            // 1Gi: 12Gi of 10Gi in all.
  ClusterState after;
  auto r = run_idempotent(&preempt_at_runtime, runtime_state(b), at(kT0), &after);
  CHECK(inst(after, "0.job.low.default").state == InstanceState::Pending);  // Preempted, back in the queue.
  const auto& web = inst(after, "0.web.api.default");
  CHECK(web.state == InstanceState::Failed);
  CHECK_THAT(web.failure, Catch::Contains("out of memory: used 5Gi of 2Gi requested"));
  CHECK(inst(after, "0.server.db.default").state == InstanceState::Running);
  CHECK(count_events(r.batch, "Preempted") == 1);
  CHECK(count_events(r.batch, "OOMKilled") == 1);
}

TEST_CASE("cpu shortage throttles, lowest priority first, and never kills", "[runtime][preemption]") {
  ClusterBuilder b;
  b.node("n1", 4000, 16);
  b.role("default", "db", "server", res(2000, 2), prio("prod"));
  b.role("default", "batch", "job", res(1000, 1), prio("nonprod"));
  running(b, "db", "server", 0, "n1", 1.5, 0.5);  // 3000m
  running(b, "batch", "job", 0, "n1", 1.0, 0.5);  // 1000m
  running(b, "batch", "job", 1, "n1", 1.0, 0.5);  // 5000m of 4000m.
  ClusterState after;
  auto r = run_idempotent(&preempt_at_runtime, runtime_state(b), at(kT0), &after);
  CHECK(count_events(r.batch, "Preempted") == 0);
  CHECK(count_events(r.batch, "Throttled") == 1);
  CHECK(find_event(r.batch, "Throttled")->type == "Warning");
  // Ties go to the most recently started, then by key: 1.job sorts after 0.job.
  int throttled = 0;
  for (const auto& i : after.snapshot.instances) throttled += i.throttled;
  CHECK(throttled == 1);
  CHECK_FALSE(inst(after, "0.server.db.default").throttled);
  for (const auto& i : after.snapshot.instances) CHECK(i.state == InstanceState::Running);

  // Usage drops: the throttling is cleared once, with an event.
  for (auto& i : after.snapshot.instances) i.usage->cpu_millis = 500;
  ClusterState recovered;
  auto r2 = run_idempotent(&preempt_at_runtime, after, at(kT0 + 1000), &recovered);
  CHECK(count_events(r2.batch, "Unthrottled") == 1);
  for (const auto& i : recovered.snapshot.instances) CHECK_FALSE(i.throttled);
}

TEST_CASE("cpu shortage throttles prod only when nonprod is not enough", "[runtime][preemption]") {
  ClusterBuilder b;
  b.node("n1", 2000, 16);
  b.role("default", "db", "server", res(2000, 2), prio("prod"));
  b.role("default", "api", "web", res(1000, 1), prio("prod:50"));
  running(b, "db", "server", 0, "n1", 1.0, 0.5);
  running(b, "api", "web", 0, "n1", 1.0, 0.5);
  ClusterState after;
  auto r = run_idempotent(&preempt_at_runtime, runtime_state(b), at(kT0), &after);
  CHECK(inst(after, "0.web.api.default").throttled);
  CHECK_FALSE(inst(after, "0.server.db.default").throttled);
  CHECK(after.snapshot.instances.size() == 2);
}

TEST_CASE("runtime preemption end to end: the spike kills nonprod, which lands elsewhere", "[runtime][preemption]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.node("n2", 10'000, 10);
  b.role("default", "db", "server", res(2000, 8), prio("prod"));
  b.role("default", "batch", "job", res(1000, 4), prio("nonprod"));
  b.role("default", "fill", "job", res(1000, 8), prio("prod"));
  running(b, "db", "server", 0, "n1", 0.3, 0.3);
  running(b, "fill", "job", 0, "n2", 0.5, 0.5);  // n2 has 2Gi free for prod, 6Gi net of use later.
  auto s = runtime_state(b);
  SimUsageModel model;
  model.rules["default/db"] = usage_rule(0.3, 0.3);
  model.rules["default/fill"] = usage_rule(0.5, 0.5);
  model.rules["default/batch"] = usage_rule(0.5, 1.0);
  ControllerOptions o;
  o.reclaim_startup_ms = 0;
  // Reclamation lends n1's and n2's unused memory; the batch job is submitted now.
  auto first = settle_sim(s, at(kT0, o), runtime_controllers(), model);
  REQUIRE(first.converged);
  s = first.after;
  CHECK(inst(s, "0.server.db.default").reservation);
  Instance job = new_instance("default", "batch", "1.0.0", s.snapshot.roles.at("default/batch/job"), 0);
  s.snapshot.instances.push_back(job);
  auto placed = settle_sim(s, at(kT0 + 1000, o), runtime_controllers(), model);
  REQUIRE(placed.converged);
  s = placed.after;
  const auto& j = inst(s, "0.job.batch.default");
  REQUIRE(j.state == InstanceState::Running);
  std::string first_node = j.node;

  // The prod instance next to it spikes: the job is killed and re-placed on the other
  // node, where it fits by reservations and by usage.
  std::string victim_app = first_node == "n1" ? "default/db" : "default/fill";
  model.rules[victim_app].spike.memory = 1.0;
  auto out = settle_sim(s, at(kT0 + 2000, o), runtime_controllers(), model);
  REQUIRE(out.converged);
  CHECK(count_events(out.batch, "Preempted") == 1);
  CHECK(count_events(out.batch, "SnappedBack") == 1);
  const auto& moved = inst(out.after, "0.job.batch.default");
  CHECK(moved.state == InstanceState::Running);
  CHECK(moved.node != first_node);
  // Nothing left to do.
  auto again = settle_sim(out.after, at(kT0 + 2000, o), runtime_controllers(), model);
  CHECK(again.batch.empty());
}
