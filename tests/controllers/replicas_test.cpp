// The replicas controller: scale up creates the missing ordinals (placed by the
// scheduler controller in the same reconcile, quota and dependencies included), scale
// down removes the highest ordinals first (with a stateful instance's volumes), and a
// second reconcile does nothing.
#include <catch2/catch.hpp>

#include "controllers/replicas.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

ClusterState with_scale(ClusterState s, const std::string& app, const std::string& role, int n) {
  s.apps.at("default/" + app).scale[role] = n;
  return s;
}

std::vector<int> ordinals(const ClusterState& s, const std::string& app, const std::string& role) {
  std::vector<int> out;
  for (const auto& i : s.snapshot.instances)
    if (i.app == app && i.role == role) out.push_back(i.ordinal);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("replicas: desired count is the scale override, else the workload's", "[replicas]") {
  AppRecord a;
  Role r = fixture_role("web", 3, res(100, 1));
  CHECK(desired_replicas(a, r) == 3);
  a.scale["web"] = 5;
  CHECK(desired_replicas(a, r) == 5);
  a.scale["web"] = 0;
  CHECK(desired_replicas(a, r) == 0);
}

TEST_CASE("replicas: a settled app needs nothing", "[replicas]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("web", {fixture_role("web", 2, res(500, 1))})});
  CHECK(reconcile_replicas(s, test_ctx()).batch.empty());
  check_idempotent(s);
}

TEST_CASE("replicas: scale up creates the missing ordinals and the scheduler places them", "[replicas]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("web", {fixture_role("web", 2, res(500, 1))})});
  s = with_scale(s, "web", "web", 5);
  auto first = reconcile_replicas(s, test_ctx());
  CHECK(events_with(first.batch, "ScaledUp") == 3);
  REQUIRE(first.batch.put_instances.size() == 3);
  for (const auto& i : first.batch.put_instances) {
    CHECK(i.state == InstanceState::Pending);
    CHECK(i.hash == s.apps.at("default/web").workload.hash);
    CHECK(i.labels.at("gaia.io/role") == "web");
  }
  ClusterState after = settle(s);
  CHECK(ordinals(after, "web", "web") == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(count_if_state(after, [](const Instance& i) { return i.state == InstanceState::Running && !i.address.empty(); }) == 5);
  check_idempotent(after);
}

TEST_CASE("replicas: scale down removes the highest ordinals first", "[replicas]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("web", {fixture_role("web", 4, res(500, 1))})});
  s = with_scale(s, "web", "web", 1);
  auto r = reconcile_replicas(s, test_ctx());
  CHECK(r.batch.delete_instances == std::vector<std::string>{"3.web.web.default", "2.web.web.default", "1.web.web.default"});
  CHECK(events_with(r.batch, "ScaledDown") == 3);
  ClusterState after = settle(s);
  CHECK(ordinals(after, "web", "web") == std::vector<int>{0});
  check_idempotent(after);
}

TEST_CASE("replicas: scale to zero and back", "[replicas]") {
  ClusterState s = deploy(fixture_cluster(2), {fixture_app("web", {fixture_role("web", 2, res(500, 1))})});
  ClusterState zero = settle(with_scale(s, "web", "web", 0));
  CHECK(ordinals(zero, "web", "web").empty());
  CHECK(zero.apps.at("default/web").status == "Ready");  // Asks for nothing: nothing is missing.
  check_idempotent(zero);
  ClusterState back = settle(with_scale(zero, "web", "web", 2));
  CHECK(ordinals(back, "web", "web") == std::vector<int>{0, 1});
  CHECK(back.apps.at("default/web").status == "Ready");
}

TEST_CASE("replicas: removing a pending instance makes the app ready", "[replicas]") {
  // One node of 1 core: the second replica of 1 core stays pending.
  ClusterState s = deploy(fixture_cluster(1, 1000), {fixture_app("web", {fixture_role("web", 2, res(1000, 1))})});
  REQUIRE(s.apps.at("default/web").status == "Pending");
  ClusterState after = settle(with_scale(s, "web", "web", 1));
  CHECK(after.apps.at("default/web").status == "Ready");
  check_idempotent(after);
}

TEST_CASE("replicas: a scaled-down stateful instance takes its volumes with it", "[replicas]") {
  Role db = fixture_role("db", 2, res(500, 1));
  db.volumes.push_back(Volume{"data", 10 * kGi, "hdd", 0, "/data"});
  ClusterState s = deploy(fixture_cluster(2), {fixture_app("db", {db})});
  const Instance* one = s.find_instance("1.db.db.default");
  REQUIRE(one);
  REQUIRE(one->volumes.size() == 1);
  auto r = reconcile_replicas(with_scale(s, "db", "db", 1), test_ctx());
  bool mentions = false;
  for (const auto& e : r.batch.events)
    if (e.reason == "ScaledDown" && e.message.find("volumes are deleted") != std::string::npos) mentions = true;
  CHECK(mentions);
  ClusterState down = settle(with_scale(s, "db", "db", 1));
  ClusterState up = settle(with_scale(down, "db", "db", 2));
  const Instance* again = up.find_instance("1.db.db.default");
  REQUIRE(again);
  CHECK(again->state == InstanceState::Running);
  REQUIRE(again->volumes.size() == 1);  // A fresh binding, made by the scheduler.
}

TEST_CASE("replicas: new instances wait for dependencies like a submit", "[replicas]") {
  // base cannot run (no node is big enough), so app waits for it.
  ClusterState s = deploy(fixture_cluster(2), {fixture_app("base", {fixture_role("db", 1, res(64000, 1))}),
                                               fixture_app("app", {fixture_role("web", 1, res(100, 1))}, {"base"})});
  ClusterState after = settle(with_scale(s, "app", "web", 2));
  const Instance* i = after.find_instance("1.web.app.default");
  REQUIRE(i);
  CHECK(i->state == InstanceState::Pending);
  CHECK(i->pending_reason.starts_with("waiting for dependency base"));
  check_idempotent(after);
}

TEST_CASE("replicas: quota applies to scaled-up instances", "[replicas]") {
  ClusterState s = fixture_cluster(3);
  Tenant t;
  t.name = "default";
  t.quota.instances = 3;
  s.snapshot.tenants.push_back(t);
  s = deploy(s, {fixture_app("web", {fixture_role("web", 2, res(100, 1))})});
  ClusterState after = settle(with_scale(s, "web", "web", 4));
  CHECK(count_if_state(after, [](const Instance& i) { return i.state == InstanceState::Running; }) == 3);
  const Instance* last = after.find_instance("3.web.web.default");
  REQUIRE(last);
  CHECK(last->state == InstanceState::Pending);
  CHECK(last->pending_reason.find("quota") != std::string::npos);
  check_idempotent(after);
}

TEST_CASE("replicas: scale up preempts lower priority as a submit would", "[replicas]") {
  Role low = fixture_role("batch", 1, res(4000, 1));
  low.priority = Priority{Band::Nonprod, 100, true};
  ClusterState s = deploy(fixture_cluster(1), {fixture_app("low", {low}), fixture_app("web", {fixture_role("web", 0, res(4000, 1))})});
  ClusterState after = settle(with_scale(s, "web", "web", 1));
  CHECK(after.find_instance("0.web.web.default")->state == InstanceState::Running);
  CHECK(after.find_instance("0.batch.low.default")->state == InstanceState::Pending);
  check_idempotent(after);
}

}  // namespace
}  // namespace gaia
