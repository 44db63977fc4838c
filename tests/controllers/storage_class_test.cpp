// Storage classes and kinds (issue 15 item 4, docs/spec.md#storage-classes): a local
// class is carved from node volume groups and holds its instance to the node; a claim
// class comes from a pool the cluster shares, attaches on the nodes its selector
// matches, and its volume follows the instance, also off a node that went down; a
// scale down keeps claim volumes in the pool and the returning ordinal gets them back;
// deleting the app deletes them.
#include <catch2/catch.hpp>

#include "controllers/app_delete.hpp"
#include "controllers/explain.hpp"
#include "controllers/migrate.hpp"
#include "controllers/migration.hpp"
#include "controllers/node_ops.hpp"
#include "controllers/placement.hpp"
#include "controllers/replicas.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

StorageClass claim_class(const std::string& name, int64_t capacity, std::map<std::string, std::string> selector = {}) {
  return StorageClass{name, StorageKind::Claim, "", capacity, std::move(selector)};
}

Role claim_db(int replicas, int64_t size = 10 * kGi, const std::string& cls = "gold") {
  Role db = fixture_role("db", replicas, res(500, 1));
  db.volumes.push_back(Volume{"data", size, cls, 0, "/data"});
  return db;
}

ClusterState gold_cluster(int nodes, int64_t capacity) {
  ClusterState s = fixture_cluster(nodes);
  s.snapshot.storage_classes = default_storage_classes();
  s.snapshot.storage_classes.push_back(claim_class("gold", capacity));
  return s;
}

int64_t pool_used(const ClusterState& s, const std::string& cls) {
  int64_t used = 0;
  for (const auto& i : s.snapshot.instances)
    for (const auto& v : i.volumes)
      if (claim_binding(v) && v.group == cls) used += v.size_bytes;
  for (const auto& k : s.snapshot.kept_claims)
    if (k.group == cls) used += k.size_bytes;
  return used;
}

// Fails the node of 0.db.db.default and lets the controllers settle: the node it was on,
// and the state afterwards.
std::pair<std::string, ClusterState> fail_its_node(const ClusterState& s) {
  const Instance* i = s.find_instance("0.db.db.default");
  REQUIRE(i);
  std::string node = i->node;
  auto down = decide_node_fail(s, node, false);
  REQUIRE(down);
  return {node, settle(apply_batch(s, down->batch))};
}

}  // namespace

TEST_CASE("storage classes: a cluster without declared classes has hdd, ssd and what its nodes offer", "[storage]") {
  Snapshot s;
  CHECK(find_storage_class(s, "hdd"));
  CHECK(find_storage_class(s, "ssd"));
  CHECK_FALSE(find_storage_class(s, "silver"));
  Node n;
  n.name = "n1";
  n.volume_groups = {VolumeGroup{"vg", "local-nvme", kGi, 0}};
  s.nodes.push_back(n);
  const StorageClass* offered = find_storage_class(s, "local-nvme");
  REQUIRE(offered);
  CHECK(offered->kind == StorageKind::Local);
  auto all = effective_storage_classes(s);
  REQUIRE(all.size() == 3);
  CHECK(all[2].name == "local-nvme");
  // Declared classes replace the defaults entirely.
  s.storage_classes = {claim_class("gold", -1)};
  CHECK_FALSE(find_storage_class(s, "hdd"));
  CHECK_FALSE(find_storage_class(s, "local-nvme"));
  REQUIRE(find_storage_class(s, "gold"));
  CHECK(find_storage_class(s, "gold")->kind == StorageKind::Claim);
}

TEST_CASE("storage classes: class names follow Kubernetes StorageClass names", "[storage]") {
  CHECK(storage_class_name_problem("gold").empty());
  CHECK(storage_class_name_problem("local-nvme").empty());
  CHECK(storage_class_name_problem("fast.ssd-2").empty());
  CHECK_FALSE(storage_class_name_problem("").empty());
  CHECK_FALSE(storage_class_name_problem("Gold").empty());
  CHECK_FALSE(storage_class_name_problem("-gold").empty());
  CHECK_FALSE(storage_class_name_problem("gold_1").empty());
  CHECK_FALSE(storage_class_name_problem(std::string(254, 'a')).empty());
}

TEST_CASE("storage classes: a local class of any name is carved from node volume groups", "[storage][scheduler]") {
  ClusterBuilder b;
  b.node("plain", 16000, 64).volume_groups = {VolumeGroup{"vg0", "silver", 1000 * kGi, 0}};
  b.node("fast", 16000, 64).volume_groups = {VolumeGroup{"nvme0", "local-nvme", 500 * kGi, 0}};
  b.s.storage_classes = {StorageClass{"silver", StorageKind::Local, "", -1, {}},
                         StorageClass{"local-nvme", StorageKind::Local, "", -1, {}}};
  b.role("t1", "pg", "db", res(1000, 4)).volumes = {Volume{"wal", 100 * kGi, "local-nvme", 0, "/wal"}};
  b.instance("t1", "pg", "db", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "fast");
  REQUIRE(d.placements[0].volumes.size() == 1);
  CHECK(d.placements[0].volumes[0].node == "fast");
  CHECK(d.placements[0].volumes[0].group == "nvme0");
}

TEST_CASE("storage classes: claim volumes come from the class pool, on nodes its selector matches", "[storage][scheduler]") {
  ClusterBuilder b;
  b.node("a1", 16000, 64, {{"zone", "a"}});
  b.node("b1", 16000, 64, {{"zone", "b"}});
  b.node("b2", 16000, 64, {{"zone", "b"}});
  b.s.storage_classes = {claim_class("gold", 250 * kGi, {{"zone", "b"}})};
  b.role("t1", "pg", "db", res(1000, 4)).volumes = {Volume{"data", 100 * kGi, "gold", 0, "/data"}};
  for (int k = 0; k < 3; ++k) b.instance("t1", "pg", "db", k);
  Decision d = schedule(b.s, b.pending());
  // 250Gi holds two 100Gi volumes; no node of zone a can attach gold.
  REQUIRE(d.placements.size() == 2);
  for (const auto& p : d.placements) {
    CHECK(p.node != "a1");
    REQUIRE(p.volumes.size() == 1);
    CHECK(p.volumes[0].node.empty());
    CHECK(p.volumes[0].group == "gold");
    CHECK(p.volumes[0].size_bytes == 100 * kGi);
  }
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason.starts_with("0/3 nodes fit: 3 Storage"));

  // explain says why, node by node, with ordinals 0 and 1 holding 200Gi of the pool.
  for (auto& i : b.s.instances)
    if (i.ordinal < 2) {
      i.node = i.ordinal == 0 ? "b1" : "b2";
      i.state = InstanceState::Running;
      i.volumes = {VolumeBinding{"data", "", "gold", 100 * kGi, 0}};
    }
  auto e = explain(b.s, "2.db.pg.t1");
  REQUIRE(e);
  std::map<std::string, std::string> why;
  for (const auto& n : e->nodes)
    for (const auto& f : n.failures) why[n.node] += f.filter + ": " + f.message;
  CHECK(why["a1"] == "Storage: volume data: class gold cannot be attached here");
  CHECK(why["b1"] == "Storage: volume data needs 100Gi of class gold, its pool has 50Gi free");
}

TEST_CASE("storage classes: an unbounded claim pool and a volume bound in it earlier both count right", "[storage][scheduler]") {
  ClusterBuilder b;
  b.node("n1", 64000, 256);
  b.s.storage_classes = {claim_class("gold", 300 * kGi), claim_class("nfs", -1)};
  b.role("t1", "pg", "db", res(1000, 4)).volumes = {Volume{"data", 100 * kGi, "gold", 0, "/data"},
                                                    Volume{"scratch", 900 * kGi, "nfs", 0, "/scratch"}};
  // Ordinal 0 already holds 100Gi of gold (and its nfs volume): 200Gi are left.
  Instance& zero = b.instance("t1", "pg", "db", 0, "n1");
  zero.volumes = {VolumeBinding{"data", "", "gold", 100 * kGi, 0}, VolumeBinding{"scratch", "", "nfs", 900 * kGi, 0}};
  for (int k = 1; k < 4; ++k) b.instance("t1", "pg", "db", k);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.placements.size() == 2);
  CHECK(d.unschedulable.size() == 1);
}

TEST_CASE("storage classes: an instance with a claim volume moves off a down node with it", "[storage][migration]") {
  ClusterState s = gold_cluster(3, 1000 * kGi);
  s = deploy(s, {fixture_app("db", {claim_db(1)})});
  const Instance* i = s.find_instance("0.db.db.default");
  REQUIRE(i);
  REQUIRE(i->state == InstanceState::Running);
  REQUIRE(i->volumes.size() == 1);
  CHECK(i->volumes[0].node.empty());
  CHECK(i->volumes[0].group == "gold");
  auto [first, after] = fail_its_node(s);
  const Instance* moved = after.find_instance("0.db.db.default");
  REQUIRE(moved);
  // A local volume would hold it until the node recovers; the claim goes with it.
  CHECK(moved->state == InstanceState::Running);
  CHECK(moved->node != first);
  REQUIRE(moved->volumes.size() == 1);
  CHECK(moved->volumes[0].group == "gold");
  CHECK(pool_used(after, "gold") == 10 * kGi);
  check_idempotent(after);
}

TEST_CASE("storage classes: a local volume still holds its instance to a down node", "[storage][migration]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("db", {claim_db(1, 10 * kGi, "hdd")})});
  auto [first, after] = fail_its_node(s);
  const Instance* held = after.find_instance("0.db.db.default");
  REQUIRE(held);
  CHECK(held->state != InstanceState::Running);
  REQUIRE(held->volumes.size() == 1);
  CHECK(held->volumes[0].node == first);
}

TEST_CASE("storage classes: a scale down keeps claim volumes in their pool and the ordinal gets them back", "[storage][replicas]") {
  ClusterState s = deploy(gold_cluster(3, 1000 * kGi), {fixture_app("db", {claim_db(3)})});
  REQUIRE(pool_used(s, "gold") == 30 * kGi);
  ScalePlan p = scale_db(s, 1);
  REQUIRE(p.kept.size() == 2);
  for (const auto& k : p.kept) {
    CHECK(k.node.empty());
    CHECK(k.group == "gold");
  }
  for (const auto& e : p.batch.events)
    if (e.reason == "ScaledDown") CHECK(e.message.find("data in claim class gold") != std::string::npos);
  ClusterState down = settle(apply_batch(s, p.batch));
  CHECK(down.snapshot.kept_claims.size() == 2);
  // Kept data still takes its room in the pool.
  CHECK(pool_used(down, "gold") == 30 * kGi);
  check_idempotent(down);

  ScalePlan up = scale_db(down, 3);
  CHECK(up.reattached.size() == 2);
  ClusterState after = settle(apply_batch(down, up.batch));
  CHECK(after.snapshot.kept_claims.empty());
  CHECK(pool_used(after, "gold") == 30 * kGi);
  for (int k = 0; k < 3; ++k) {
    const Instance* i = after.find_instance(fmt::format("{}.db.db.default", k));
    REQUIRE(i);
    CHECK(i->state == InstanceState::Running);
    REQUIRE(i->volumes.size() == 1);
    CHECK(i->volumes[0].group == "gold");
  }
  check_idempotent(after);
}

TEST_CASE("storage classes: --delete-volumes and deleting the app free kept claim volumes", "[storage][replicas]") {
  ClusterState s = deploy(gold_cluster(3, 1000 * kGi), {fixture_app("db", {claim_db(3)})});
  ClusterState down = settle(apply_batch(s, scale_db(s, 1).batch));
  REQUIRE(down.snapshot.kept_claims.size() == 2);

  SECTION("--delete-volumes") {
    ScalePlan del = scale_db(down, 1, true);
    CHECK(del.deleted.size() == 2);
    ClusterState after = settle(apply_batch(down, del.batch));
    CHECK(after.snapshot.kept_claims.empty());
    CHECK(pool_used(after, "gold") == 10 * kGi);
  }
  SECTION("deleting the app") {
    auto gone = plan_delete(down, "default", "db", false);
    REQUIRE(gone);
    ClusterState after = apply_batch(down, gone->batch);
    CHECK(after.snapshot.kept_claims.empty());
    CHECK(pool_used(after, "gold") == 0);
  }
}

TEST_CASE("storage classes: node add refuses volume groups of classes the cluster does not have as local",
          "[storage][node_ops]") {
  ClusterState s = gold_cluster(1, -1);
  s.snapshot.storage_classes = {StorageClass{"silver", StorageKind::Local, "", -1, {}}, claim_class("gold", -1)};
  Node good = fixture_node("n9", 9, 4000, 16);
  good.volume_groups = {VolumeGroup{"vg0", "silver", 100 * kGi, 0}};
  CHECK(decide_node_add(s, {good}));
  Node bad = fixture_node("n8", 8, 4000, 16);  // Its volume group is hdd.
  Node pool = fixture_node("n7", 7, 4000, 16);
  pool.volume_groups = {VolumeGroup{"vg0", "gold", 100 * kGi, 0}};
  auto r = decide_node_add(s, {bad, pool});
  REQUIRE_FALSE(r);
  REQUIRE(r.error().size() == 2);
  CHECK(r.error()[0].message == "node 'n8': volume group vg0 is of class 'hdd', which is not a class of this cluster");
  CHECK_THAT(r.error()[0].hint, Catch::Contains("its local classes are silver"));
  CHECK_THAT(r.error()[1].message, Catch::Contains("a claim class"));
  // A cluster that declares no classes takes any (they become local classes).
  ClusterState plain = fixture_cluster(1);
  CHECK(decide_node_add(plain, {pool}));
}

TEST_CASE("storage classes: migrate --force off a down node keeps the claim volume and drops only the local one",
          "[storage][migrate]") {
  // The warehouse shape: a local volume (hdd here) and a claim volume.
  Role db = claim_db(1);
  db.volumes.push_back(Volume{"wal", 10 * kGi, "hdd", 0, "/wal"});
  ClusterState s = deploy(gold_cluster(3, 1000 * kGi), {fixture_app("db", {db})});
  const Instance* i = s.find_instance("0.db.db.default");
  REQUIRE(i);
  REQUIRE(i->volumes.size() == 2);
  std::string first = i->node;
  auto down = decide_node_fail(s, first, false);
  REQUIRE(down);
  ClusterState waiting = settle(apply_batch(s, down->batch));
  REQUIRE(waiting.find_instance("0.db.db.default")->state == InstanceState::Pending);

  auto m = plan_migrate(waiting, MigrateRequest{"0.db.db.default", std::nullopt, true}, test_ctx().now_ms);
  REQUIRE(m);
  CHECK(m->dropped_volumes == std::vector<std::string>{"wal"});
  CHECK(m->copied_volumes.empty());
  ClusterState after = settle(m->after);
  const Instance* moved = after.find_instance("0.db.db.default");
  REQUIRE(moved);
  CHECK(moved->state == InstanceState::Running);
  CHECK(moved->node != first);
  int claims = 0;
  for (const auto& v : moved->volumes) claims += claim_binding(v);
  CHECK(claims == 1);  // The same claim, not a second one.
  CHECK(moved->volumes.size() == 2);
  CHECK(pool_used(after, "gold") == 10 * kGi);
}

TEST_CASE("storage classes: a claim volume whose node can no longer attach its class is a placement violation",
          "[storage][placement]") {
  ClusterState s = fixture_cluster(2);
  for (auto& n : s.snapshot.nodes) n.labels["zone"] = "z1";
  s.snapshot.storage_classes = {StorageClass{"hdd", StorageKind::Local, "", -1, {}},
                                claim_class("gold", -1, {{"zone", "z1"}})};
  s = deploy(s, {fixture_app("db", {claim_db(1)})});
  const Instance* i = s.find_instance("0.db.db.default");
  REQUIRE(i);
  REQUIRE(i->state == InstanceState::Running);
  CHECK(placement_violations(s).empty());
  s.find_node(i->node)->labels["zone"] = "z2";
  auto v = placement_violations(s);
  REQUIRE(v.size() == 1);
  CHECK(v[0].reason == fmt::format("node {} no longer fits: volume data of class gold cannot be attached there", i->node));
  CHECK_FALSE(v[0].pinned);
}

TEST_CASE("storage classes: cluster create --replace keeps claim volumes whose class stays a claim class",
          "[storage][node_ops]") {
  ClusterState s = deploy(gold_cluster(3, 1000 * kGi), {fixture_app("db", {claim_db(3)}), fixture_app("lo", {claim_db(1, kGi, "hdd")})});
  s = settle(apply_batch(s, scale_db(s, 2).batch));
  REQUIRE(s.snapshot.kept_claims.size() == 1);
  ClusterSpec spec;
  for (int k = 0; k < 3; ++k) spec.nodes.push_back(fixture_node(fmt::format("m{}", k + 1), k + 10, 4000, 16));
  spec.tenants = s.snapshot.tenants;

  SECTION("gold stays a claim class") {
    spec.storage_classes = {StorageClass{"hdd", StorageKind::Local, "", -1, {}}, claim_class("gold", -1)};
    auto r = decide_cluster_create(s, spec, true);
    REQUIRE(r);
    ClusterState after = settle(apply_batch(s, r->batch));
    for (int k = 0; k < 2; ++k) {
      const Instance* i = after.find_instance(fmt::format("{}.db.db.default", k));
      REQUIRE(i);
      CHECK(i->state == InstanceState::Running);
      REQUIRE(i->volumes.size() == 1);
      CHECK(claim_binding(i->volumes[0]));
    }
    CHECK(after.snapshot.kept_claims.size() == 1);
    // The local volume of lo went with the old nodes: a fresh one on a new node.
    const Instance* lo = after.find_instance("0.db.lo.default");
    REQUIRE(lo);
    REQUIRE(lo->volumes.size() == 1);
    CHECK(lo->volumes[0].node.starts_with("m"));
  }
  SECTION("the new cluster has no gold") {
    auto r = decide_cluster_create(s, spec, true);
    REQUIRE(r);
    ClusterState after = apply_batch(s, r->batch);
    CHECK(after.snapshot.kept_claims.empty());
    for (const auto& i : after.snapshot.instances)
      for (const auto& v : i.volumes) CHECK_FALSE(claim_binding(v));
  }
}

TEST_CASE("storage classes: cluster create --replace keeps local volumes where the same node and group remain",
          "[storage][node_ops]") {
  ClusterState s = deploy(fixture_cluster(3), {fixture_app("db", {claim_db(3, 10 * kGi, "hdd")})});
  s = settle(apply_batch(s, scale_db(s, 2).batch));
  std::map<std::string, std::string> node_of;
  for (const auto& i : s.snapshot.instances) node_of[i.key()] = i.node;
  std::string keeper;
  for (const auto& n : s.snapshot.nodes)
    if (!n.kept_volumes.empty()) keeper = n.name;
  REQUIRE(!keeper.empty());
  ClusterSpec spec;
  for (const auto& n : s.snapshot.nodes) {
    Node fresh = n;
    fresh.kept_volumes.clear();  // As a cluster file gives them.
    spec.nodes.push_back(fresh);
  }
  spec.tenants = s.snapshot.tenants;

  SECTION("the same cluster again loses nothing") {
    auto r = decide_cluster_create(s, spec, true);
    REQUIRE(r);
    CHECK(test::events_with(r->batch, "VolumeLost") == 0);
    ClusterState after = settle(apply_batch(s, r->batch));
    for (const auto& [key, node] : node_of) {
      const Instance* i = after.find_instance(key);
      REQUIRE(i);
      CHECK(i->state == InstanceState::Running);
      CHECK(i->node == node);  // Back to its data.
      REQUIRE(i->volumes.size() == 1);
      CHECK(i->volumes[0].node == node);
    }
    CHECK(after.find_node(keeper)->kept_volumes.size() == 1);
  }
  SECTION("a node whose volume group changed class loses that data, and says so") {
    std::string first = node_of.at("0.db.db.default");
    for (auto& n : spec.nodes)
      if (n.name == first || n.name == keeper) n.volume_groups[0].storage_class = "ssd";
    auto r = decide_cluster_create(s, spec, true);
    REQUIRE(r);
    CHECK(test::events_with(r->batch, "VolumeLost") >= 2);  // The instance's and the kept one.
    ClusterState after = settle(apply_batch(s, r->batch));
    CHECK(after.find_node(keeper)->kept_volumes.empty());
    const Instance* i = after.find_instance("0.db.db.default");
    REQUIRE(i);
    CHECK(i->state == InstanceState::Running);
    REQUIRE(i->volumes.size() == 1);
    CHECK(i->volumes[0].node != first);  // A fresh hdd volume where there still is hdd.
  }
}

}  // namespace gaia
