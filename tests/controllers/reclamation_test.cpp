#include <catch2/catch.hpp>

#include "tests/controllers/runtime_fixture.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

constexpr int64_t kStartup = 60'000;

// One 10-cpu / 10Gi node with a prod instance asking for 5 cpu / 8Gi, started at kT0,
// observed using 30% of its request.
ClusterState prod_on_node(double fraction = 0.3) {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.role("default", "db", "server", res(5000, 8), prio("prod"));
  auto& i = b.instance("default", "db", "server", 0, "n1");
  i.started_ms = kT0;
  i.usage = Resources{static_cast<int64_t>(5000 * fraction), static_cast<int64_t>(8 * kGi * fraction), 0, 0};
  return runtime_state(b);
}

const std::string kDb = "0.server.db.default";

}  // namespace

TEST_CASE("reclamation keeps the full request during the start-up period", "[runtime][reclamation]") {
  auto s = prod_on_node();
  auto r = run_idempotent(&reclaim_reservations, s, at(kT0 + 30'000));
  CHECK(r.batch.empty());
  CHECK(r.wake_at_ms == kT0 + kStartup);
}

TEST_CASE("reclamation decays a prod reservation to usage plus margin after start-up", "[runtime][reclamation]") {
  auto s = prod_on_node();
  ClusterState after;
  auto r = run_idempotent(&reclaim_reservations, s, at(kT0 + kStartup), &after);
  const auto& i = inst(after, kDb);
  REQUIRE(i.reservation);
  // 30% usage * 1.2 = 36% of the request.
  CHECK(i.reservation->cpu_millis == 1800);
  // Memory is rounded up to whole MiB.
  auto want = static_cast<int64_t>(std::ceil(static_cast<double>(i.usage->memory_bytes) * 1.2));
  CHECK(i.reservation->memory_bytes % (1024 * 1024) == 0);
  CHECK(i.reservation->memory_bytes >= want);
  CHECK(i.reservation->memory_bytes < want + 1024 * 1024);
  CHECK(i.reservation->memory_bytes >= i.usage->memory_bytes);
  const auto* e = find_event(r.batch, "Reclaimed", kDb);
  REQUIRE(e);
  CHECK(e->type == "Normal");
  CHECK(e->node == "n1");
  CHECK_THAT(e->message, Catch::Contains("lent to nonprod work"));
  CHECK_THAT(e->message, Catch::Contains("3200m cpu"));
}

TEST_CASE("reclamation margin and start-up come from the options", "[runtime][reclamation]") {
  auto s = prod_on_node();
  ControllerOptions o;
  o.reclaim_startup_ms = 0;
  o.reclaim_margin = 0.5;
  ClusterState after;
  run_idempotent(&reclaim_reservations, s, at(kT0, o), &after);
  CHECK(inst(after, kDb).reservation->cpu_millis == 2250);
}

TEST_CASE("reclamation never goes above the request or below usage", "[runtime][reclamation]") {
  auto s = prod_on_node(0.9);  // 0.9 * 1.2 > 1: stays at the request.
  auto r = run_idempotent(&reclaim_reservations, s, at(kT0 + kStartup));
  CHECK(r.batch.empty());
  ControllerOptions o;
  o.reclaim_margin = 0;
  auto s2 = prod_on_node(0.5);
  ClusterState after;
  run_idempotent(&reclaim_reservations, s2, at(kT0 + kStartup, o), &after);
  CHECK(inst(after, kDb).reservation->memory_bytes == inst(after, kDb).usage->memory_bytes);
}

TEST_CASE("reclamation snaps back to the request on a spike and holds it", "[runtime][reclamation]") {
  auto s = prod_on_node();
  s = apply_batch(s, reclaim_reservations(s, at(kT0 + kStartup)).batch);
  REQUIRE(inst(s, kDb).reservation);
  // Memory usage jumps to 90% of the request, above the 36% reservation.
  s.find_instance(kDb)->usage->memory_bytes = static_cast<int64_t>(8 * kGi * 0.9);
  int64_t spike_at = kT0 + 100'000;
  ClusterState after;
  auto r = run_idempotent(&reclaim_reservations, s, at(spike_at), &after);
  CHECK_FALSE(inst(after, kDb).reservation);  // The full request again.
  CHECK(inst(after, kDb).snapped_back_ms == spike_at);
  const auto* e = find_event(r.batch, "SnappedBack", kDb);
  REQUIRE(e);
  CHECK_THAT(e->message, Catch::Contains("exceeded the reservation"));
  CHECK(r.wake_at_ms == spike_at + kStartup);

  // The spike passes; the reservation is held for a start-up period, then decays again.
  after.find_instance(kDb)->usage->memory_bytes = static_cast<int64_t>(8 * kGi * 0.3);
  CHECK(reclaim_reservations(after, at(spike_at + 30'000)).batch.empty());
  auto decay = run_idempotent(&reclaim_reservations, after, at(spike_at + kStartup));
  CHECK(count_events(decay.batch, "Reclaimed") == 1);
}

TEST_CASE("reclamation ignores small changes in usage", "[runtime][reclamation]") {
  auto s = prod_on_node();
  s = apply_batch(s, reclaim_reservations(s, at(kT0 + kStartup)).batch);
  // 30% -> 32%: the target moves by 2.4% of the request, under the 5% threshold.
  s.find_instance(kDb)->usage->cpu_millis = 1600;
  s.find_instance(kDb)->usage->memory_bytes = static_cast<int64_t>(8 * kGi * 0.32);
  CHECK(reclaim_reservations(s, at(kT0 + kStartup + 1000)).batch.empty());
  // 30% -> 20%: the target moves by 12%: the reservation follows.
  s.find_instance(kDb)->usage->cpu_millis = 1000;
  s.find_instance(kDb)->usage->memory_bytes = static_cast<int64_t>(8 * kGi * 0.2);
  ClusterState after;
  run_idempotent(&reclaim_reservations, s, at(kT0 + kStartup + 2000), &after);
  CHECK(inst(after, kDb).reservation->cpu_millis == 1200);
}

TEST_CASE("reclamation leaves nonprod and sys at their request", "[runtime][reclamation]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.role("default", "batch", "job", res(2000, 2), prio("nonprod"));
  b.role("default", "infra", "agent", res(1000, 1), prio("sys"));
  // One instance at a time: a second instance() may move the first in the builder's list.
  for (auto [app, role] : {std::pair{"batch", "job"}, std::pair{"infra", "agent"}}) {
    Instance& i = b.instance("default", app, role, 0, "n1");
    i.started_ms = kT0;
    i.usage = Resources{i.request.cpu_millis / 10, i.request.memory_bytes / 10, 0, 0};
  }
  auto s = runtime_state(b);
  CHECK(reclaim_reservations(s, at(kT0 + 10 * kStartup)).batch.empty());
}

TEST_CASE("an instance using more than its request reserves what it uses", "[runtime][reclamation]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.role("default", "batch", "job", res(2000, 2), prio("nonprod"));
  auto& i = b.instance("default", "batch", "job", 0, "n1");
  i.started_ms = kT0;
  i.usage = Resources{1000, 3 * kGi, 0, 0};
  auto s = runtime_state(b);
  ClusterState after;
  auto r = run_idempotent(&reclaim_reservations, s, at(kT0), &after);
  const auto& x = inst(after, "0.job.batch.default");
  CHECK(x.reservation->memory_bytes == 3 * kGi);
  CHECK(x.reservation->cpu_millis == 2000);
  const auto* e = find_event(r.batch, "OverRequest");
  REQUIRE(e);
  CHECK(e->type == "Warning");
  // Back within its request, it goes back to reserving the request.
  after.find_instance("0.job.batch.default")->usage = Resources{1000, kGi, 0, 0};
  ClusterState back;
  run_idempotent(&reclaim_reservations, after, at(kT0 + 1), &back);
  CHECK_FALSE(inst(back, "0.job.batch.default").reservation);
}

TEST_CASE("a stopped instance drops its reservation silently", "[runtime][reclamation]") {
  auto s = prod_on_node();
  s = apply_batch(s, reclaim_reservations(s, at(kT0 + kStartup)).batch);
  s.find_instance(kDb)->state = InstanceState::Failed;
  auto r = run_idempotent(&reclaim_reservations, s, at(kT0 + kStartup + 1));
  REQUIRE(r.batch.put_instances.size() == 1);
  CHECK_FALSE(r.batch.put_instances[0].reservation);
  CHECK(r.batch.events.empty());
}

TEST_CASE("a cleared usage model returns reservations to the request", "[runtime][reclamation]") {
  auto s = prod_on_node();
  s = apply_batch(s, reclaim_reservations(s, at(kT0 + kStartup)).batch);
  s.find_instance(kDb)->usage.reset();
  ClusterState after;
  auto r = run_idempotent(&reclaim_reservations, s, at(kT0 + kStartup + 1), &after);
  CHECK_FALSE(inst(after, kDb).reservation);
  CHECK_THAT(find_event(r.batch, "SnappedBack")->message, Catch::Contains("no longer observed"));
}

TEST_CASE("nonprod is placed on reclaimed capacity, prod is not", "[runtime][reclamation]") {
  ClusterBuilder b;
  b.node("n1", 10'000, 10);
  b.role("default", "db", "server", res(5000, 8), prio("prod"));
  b.role("default", "batch", "job", res(2000, 4), prio("nonprod"));
  b.role("default", "api", "web", res(2000, 4), prio("prod"));
  auto& db = b.instance("default", "db", "server", 0, "n1");
  db.started_ms = kT0;
  db.usage = Resources{1500, static_cast<int64_t>(8 * kGi * 0.3), 0, 0};
  b.instance("default", "batch", "job", 0);
  b.instance("default", "api", "web", 0);
  auto s = runtime_state(b);

  // Before reclamation neither fits: 8Gi of 10Gi is reserved.
  auto before = schedule(s.snapshot);
  CHECK(find_unschedulable(before, "0.job.batch.default"));
  CHECK(find_unschedulable(before, "0.web.api.default"));

  s = apply_batch(s, reclaim_reservations(s, at(kT0 + kStartup)).batch);
  auto d = schedule(s.snapshot);
  const auto* p = find_placement(d, "0.job.batch.default");
  REQUIRE(p);
  CHECK(p->node == "n1");
  const auto* u = find_unschedulable(d, "0.web.api.default");
  REQUIRE(u);
  CHECK_THAT(u->reason, Catch::Contains("memory"));
}
