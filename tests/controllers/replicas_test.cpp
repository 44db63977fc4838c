// The replicas controller and plan_scale: scale up creates the missing ordinals (placed
// by the scheduler controller in the same reconcile, quota and dependencies included),
// scale down removes the highest ordinals first and keeps a stateful instance's volumes
// on its node (taking their space) until the ordinal returns to them or
// --delete-volumes deletes them, and a second reconcile does nothing.
#include <catch2/catch.hpp>

#include "controllers/app_delete.hpp"
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
  REQUIRE(s.apps.at("default/web").status == "Degraded");
  ClusterState after = settle(with_scale(s, "web", "web", 1));
  CHECK(after.apps.at("default/web").status == "Ready");
  check_idempotent(after);
}

Role stateful_db(int replicas, int64_t size = 10 * kGi) {
  Role db = fixture_role("db", replicas, res(500, 1));
  db.volumes.push_back(Volume{"data", size, "hdd", 0, "/data"});
  return db;
}

// Every kept volume of the cluster, as "<ordinal>.<role>.<app> <volume> on <node>".
std::vector<std::string> kept_volumes(const ClusterState& s) {
  std::vector<std::string> out;
  for (const auto& n : s.snapshot.nodes)
    for (const auto& k : n.kept_volumes) out.push_back(fmt::format("{}.{}.{} {} on {}", k.ordinal, k.role, k.app, k.volume, n.name));
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("replicas: a scale down keeps the volumes of stateful instances on their nodes", "[replicas][volumes]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("db", {stateful_db(3)})});
  VolumeBinding two = s.find_instance("2.db.db.default")->volumes.at(0);
  VolumeBinding one = s.find_instance("1.db.db.default")->volumes.at(0);
  ScalePlan p = scale_db(s, 1, false);
  CHECK(p.from == 3);
  CHECK(p.to == 1);
  CHECK(p.removed == std::vector<std::string>{"2.db.db.default", "1.db.db.default"});
  CHECK(p.deleted.empty());
  CHECK(p.reattached.empty());
  CHECK(p.kept == std::vector<ScaleVolume>{{"2.db.db.default", "data", two.node, "vg0", 10 * kGi, false},
                                           {"1.db.db.default", "data", one.node, "vg0", 10 * kGi, false}});
  CHECK(events_with(p.batch, "Scaled") == 1);
  CHECK(events_with(p.batch, "ScaledDown") == 2);
  for (const auto& e : p.batch.events)
    if (e.reason == "ScaledDown") CHECK(e.message.find("volumes are kept") != std::string::npos);
  ClusterState down = settle(apply_batch(s, p.batch));
  CHECK(ordinals(down, "db", "db") == std::vector<int>{0});
  CHECK(kept_volumes(down) == std::vector<std::string>{fmt::format("1.db.db data on {}", one.node),
                                                       fmt::format("2.db.db data on {}", two.node)});
  const Node* holder = down.find_node(two.node);
  REQUIRE(holder);
  bool found = false;
  for (const auto& k : holder->kept_volumes)
    if (k.ordinal == 2) {
      found = true;
      CHECK(k.tenant == "default");
      CHECK(k.group == "vg0");
      CHECK(k.size_bytes == 10 * kGi);
    }
  CHECK(found);
  check_idempotent(down);
}

TEST_CASE("replicas: a scale up gives each ordinal its kept volume back, on the node holding it", "[replicas][volumes]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("db", {stateful_db(3)})});
  VolumeBinding two = s.find_instance("2.db.db.default")->volumes.at(0);
  VolumeBinding one = s.find_instance("1.db.db.default")->volumes.at(0);
  ClusterState down = settle(apply_batch(s, scale_db(s, 1, false).batch));
  // A new, empty and bigger node: spreading would put new instances there, so only the
  // kept volumes bring ordinals 1 and 2 back to their old nodes.
  down.snapshot.nodes.push_back(fixture_node("n4", 3, 64000, 256));
  ScalePlan up = scale_db(down, 4, false);
  std::sort(up.reattached.begin(), up.reattached.end(),
            [](const ScaleVolume& a, const ScaleVolume& b) { return a.instance < b.instance; });
  CHECK(up.reattached == std::vector<ScaleVolume>{{"1.db.db.default", "data", one.node, "vg0", 10 * kGi, true},
                                                  {"2.db.db.default", "data", two.node, "vg0", 10 * kGi, true}});
  CHECK(up.kept.empty());
  CHECK(up.deleted.empty());
  ClusterState after = settle(apply_batch(down, up.batch));
  CHECK(ordinals(after, "db", "db") == std::vector<int>{0, 1, 2, 3});
  for (const auto& [key, was] : std::vector<std::pair<std::string, VolumeBinding>>{{"1.db.db.default", one}, {"2.db.db.default", two}}) {
    const Instance* i = after.find_instance(key);
    REQUIRE(i);
    CHECK(i->state == InstanceState::Running);
    CHECK(i->node == was.node);
    REQUIRE(i->volumes.size() == 1);
    CHECK(i->volumes[0].node == was.node);
    CHECK(i->volumes[0].group == was.group);
    CHECK(i->volumes[0].size_bytes == was.size_bytes);
  }
  // Ordinal 3 never had a volume: it gets a fresh one wherever the scheduler puts it.
  CHECK(after.find_instance("3.db.db.default")->node == "n4");
  CHECK(kept_volumes(after).empty());
  check_idempotent(after);
}

TEST_CASE("replicas: the controller keeps volumes however the count dropped, and gives them back", "[replicas][volumes]") {
  ClusterState s = deploy(fixture_cluster(2), {fixture_app("db", {stateful_db(2)})});
  VolumeBinding one = s.find_instance("1.db.db.default")->volumes.at(0);
  auto r = reconcile_replicas(with_scale(s, "db", "db", 1), test_ctx());
  CHECK(r.batch.delete_instances == std::vector<std::string>{"1.db.db.default"});
  bool mentions = false;
  for (const auto& e : r.batch.events)
    if (e.reason == "ScaledDown" && e.message.find("volumes are kept for a scale up: data on " + one.node) != std::string::npos)
      mentions = true;
  CHECK(mentions);
  ClusterState down = settle(with_scale(s, "db", "db", 1));
  CHECK(kept_volumes(down) == std::vector<std::string>{fmt::format("1.db.db data on {}", one.node)});
  auto created = reconcile_replicas(with_scale(down, "db", "db", 2), test_ctx());
  REQUIRE(created.batch.put_instances.size() == 1);
  const Instance& i = created.batch.put_instances.front();
  REQUIRE(i.volumes.size() == 1);
  CHECK(i.volumes[0].node == one.node);
  REQUIRE(created.batch.put_nodes.size() == 1);
  CHECK(created.batch.put_nodes.front().kept_volumes.empty());
  ClusterState up = settle(with_scale(down, "db", "db", 2));
  const Instance* again = up.find_instance("1.db.db.default");
  REQUIRE(again);
  CHECK(again->state == InstanceState::Running);
  CHECK(again->node == one.node);
  CHECK(kept_volumes(up).empty());
  check_idempotent(up);
}

TEST_CASE("replicas: --delete-volumes deletes the removed instances' volumes and those kept beyond the count", "[replicas][volumes]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("db", {stateful_db(3)})});
  SECTION("removed now") {
    ScalePlan p = scale_db(s, 1, true);
    CHECK(p.kept.empty());
    REQUIRE(p.deleted.size() == 2);
    CHECK(p.deleted[0].instance == "2.db.db.default");
    CHECK(p.deleted[1].instance == "1.db.db.default");
    for (const auto& e : p.batch.events)
      if (e.reason == "ScaledDown") CHECK(e.message.find("volumes are deleted (--delete-volumes)") != std::string::npos);
    ClusterState down = settle(apply_batch(s, p.batch));
    CHECK(kept_volumes(down).empty());
    check_idempotent(down);
  }
  SECTION("kept earlier: beyond the count deleted, below it given back") {
    VolumeBinding one = s.find_instance("1.db.db.default")->volumes.at(0);
    ClusterState down = settle(apply_batch(s, scale_db(s, 1, false).batch));
    REQUIRE(kept_volumes(down).size() == 2);
    ScalePlan p = scale_db(down, 2, true);
    REQUIRE(p.deleted.size() == 1);
    CHECK(p.deleted[0].instance == "2.db.db.default");
    CHECK(p.deleted[0].earlier);
    REQUIRE(p.reattached.size() == 1);
    CHECK(p.reattached[0].instance == "1.db.db.default");
    CHECK(events_with(p.batch, "VolumeDeleted") == 1);
    ClusterState after = settle(apply_batch(down, p.batch));
    CHECK(kept_volumes(after).empty());
    CHECK(after.find_instance("1.db.db.default")->node == one.node);
    check_idempotent(after);
  }
  SECTION("the same count: only the kept volumes are deleted") {
    ClusterState down = settle(apply_batch(s, scale_db(s, 1, false).batch));
    ScalePlan same = scale_db(down, 1, false);
    CHECK_FALSE(same.changed());
    CHECK(same.kept.size() == 2);  // Listed, for the dry run and the output.
    ScalePlan p = scale_db(down, 1, true);
    CHECK(p.changed());
    CHECK(p.deleted.size() == 2);
    CHECK(p.batch.put_apps.empty());
    CHECK(kept_volumes(apply_batch(down, p.batch)).empty());
  }
}

TEST_CASE("replicas: a kept volume keeps its space in the volume group", "[replicas][volumes]") {
  ClusterState s = fixture_cluster(1);
  s.snapshot.nodes[0].volume_groups[0].size_bytes = 15 * kGi;
  s = deploy(s, {fixture_app("db", {stateful_db(1)})});
  ClusterState down = settle(apply_batch(s, scale_db(s, 0, false).batch));
  REQUIRE(kept_volumes(down).size() == 1);
  // Another stateful app asking for 10Gi: only 5Gi are free while the data is kept.
  Role other = stateful_db(1);
  other.name = "store";
  ClusterState with_other = deploy(down, {fixture_app("other", {other})});
  CHECK(with_other.find_instance("0.store.other.default")->state == InstanceState::Pending);
  // Deleting the kept volume frees the space.
  ClusterState freed = settle(apply_batch(with_other, scale_db(with_other, 0, true).batch));
  CHECK(freed.find_instance("0.store.other.default")->state == InstanceState::Running);
}

TEST_CASE("replicas: deleting the app deletes its kept volumes", "[replicas][volumes]") {
  ClusterState s = deploy(fixture_cluster(2), {fixture_app("db", {stateful_db(2)}), fixture_app("web", {fixture_role("web", 1, res(100, 1))})});
  ClusterState down = settle(apply_batch(s, scale_db(s, 0, false).batch));
  REQUIRE(kept_volumes(down).size() == 2);
  auto d = plan_delete(down, "default", "db", false);
  REQUIRE(d);
  ClusterState after = apply_batch(down, d->batch);
  CHECK(kept_volumes(after).empty());
  bool said = false;
  for (const auto& e : d->batch.events)
    if (e.reason == "Deleted" && e.message.find("2 kept volume(s) deleted") != std::string::npos) said = true;
  CHECK(said);
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
