#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "controllers/context.hpp"
#include "controllers/scheduler.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

AffinityTerm instance_term(const std::string& key, const std::string& value, const std::string& topology,
                           int weight = 0) {
  AffinityTerm t;
  t.target = AffinityTerm::Target::Instance;
  t.match = {LabelRequirement{key, "In", {value}}};
  t.topology = topology;
  t.weight = weight;
  return t;
}

// Four datanodes kept apart by a required anti-affinity on three nodes: one per node,
// and the fourth unschedulable for that reason.
void expect_one_datanode_per_node(const Decision& d) {
  REQUIRE(d.placements.size() == 3);
  std::set<std::string> nodes;
  for (const auto& p : d.placements) nodes.insert(p.node);
  CHECK(nodes.size() == 3);
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason.starts_with("0/3 nodes fit: 3 InstanceAntiAffinity"));
}

}  // namespace

TEST_CASE("resources exhausted leaves instances pending with a reason", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 4000, 16);
  b.node("n2", 4000, 16);
  b.role("t1", "web", "api", res(3000, 1));
  for (int i = 0; i < 3; ++i) b.instance("t1", "web", "api", i);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 2);
  CHECK(d.placements[0].node != d.placements[1].node);
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].instance == "2.api.web.t1");
  CHECK(d.unschedulable[0].reason.starts_with("0/2 nodes fit: 2 ResourceFit (cpu)"));
}

TEST_CASE("memory is checked too and the reason names it", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 8000, 8);
  b.role("t1", "db", "main", res(1000, 9));
  b.instance("t1", "db", "main", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason.starts_with("0/1 nodes fit: 1 ResourceFit (memory)"));
}

TEST_CASE("tenant pool and node selector restrict nodes", "[scheduler]") {
  ClusterBuilder b;
  b.node("a", 8000, 32, {{"pool", "gold"}, {"disk", "hdd"}});
  b.node("b", 8000, 32, {{"pool", "gold"}, {"disk", "ssd"}});
  b.node("c", 8000, 32, {{"pool", "silver"}, {"disk", "ssd"}});
  b.node("d", 8000, 32, {{"disk", "ssd"}});
  b.s.tenants.push_back(Tenant{"t1", {}, {{"pool", "gold"}}});
  b.role("t1", "app", "svc", res(1000, 1)).node_selector = {{"disk", "ssd"}};
  b.instance("t1", "app", "svc", 0);
  b.role("t1", "app", "nvme", res(1000, 1)).node_selector = {{"disk", "nvme"}};
  b.instance("t1", "app", "nvme", 0);
  Decision d = schedule(b.s, b.pending());
  const Placement* p = find_placement(d, "0.svc.app.t1");
  REQUIRE(p);
  CHECK(p->node == "b");
  const Unschedulable* u = find_unschedulable(d, "0.nvme.app.t1");
  REQUIRE(u);
  CHECK(u->reason.starts_with("0/4 nodes fit: 2 TenantPool, 2 NodeSelector"));
}

TEST_CASE("required node affinity supports In, NotIn, Exists and DoesNotExist", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32, {{"gpu-model", "t4"}});
  b.node("n2", 8000, 32, {{"gpu-model", "a100"}, {"maintenance", "soon"}});
  b.node("n3", 8000, 32, {{"gpu-model", "a100"}});
  b.node("n4", 8000, 32);
  AffinityTerm t;
  t.target = AffinityTerm::Target::Node;
  t.match = {{"gpu-model", "Exists", {}}, {"gpu-model", "NotIn", {"t4"}}, {"maintenance", "DoesNotExist", {}},
             {"gpu-model", "In", {"a100", "h100"}}};
  b.role("t1", "ml", "train", res(1000, 1)).required_affinity = {t};
  b.instance("t1", "ml", "train", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "n3");
}

TEST_CASE("datanodes spread by required anti-affinity on node", "[scheduler]") {
  ClusterBuilder b;
  for (int i = 0; i < 3; ++i) b.node(fmt::format("n{}", i), 16000, 64);
  b.role("t1", "hdfs", "datanode", res(1000, 2)).required_anti_affinity = {
      instance_term("gaia.io/role", "datanode", "node")};
  for (int i = 0; i < 4; ++i) b.instance("t1", "hdfs", "datanode", i);
  expect_one_datanode_per_node(schedule(b.s, b.pending()));
}

TEST_CASE("terms name gaia's instance labels by their short keys, as specs write them", "[scheduler]") {
  // Specs write match_labels { app: 'hdfs', role: 'datanode' } (docs/spec.md 5.3);
  // instances carry gaia.io/app and gaia.io/role. Such a term once matched nothing, so a
  // required anti-affinity let two datanodes share a node.
  ClusterBuilder b;
  for (int i = 0; i < 3; ++i) b.node(fmt::format("n{}", i), 16000, 64);
  AffinityTerm t = instance_term("role", "datanode", "node");
  t.match.push_back({"app", "In", {"hdfs"}});
  b.role("t1", "hdfs", "datanode", res(1000, 2)).required_anti_affinity = {t};
  for (int i = 0; i < 4; ++i) b.instance("t1", "hdfs", "datanode", i);
  expect_one_datanode_per_node(schedule(b.s, b.pending()));
  // The short key stands for gaia's label: an instance has a role, and NotIn compares
  // with it.
  const auto& labels = b.s.instances[0].labels;
  CHECK_FALSE(sched::requirement_matches({"role", "DoesNotExist", {}}, labels));
  CHECK_FALSE(sched::requirement_matches({"role", "NotIn", {"datanode"}}, labels));
  CHECK(sched::requirement_matches({"role", "Exists", {}}, labels));
  // A node label under the short key is still the node's own.
  Node n;
  n.labels["role"] = "storage";
  CHECK(sched::requirement_matches({"role", "In", {"storage"}}, n.labels));
}

TEST_CASE("anti-affinity by rack and required affinity by zone", "[scheduler]") {
  ClusterBuilder b;
  b.node("a1", 16000, 64, {{"zone", "z1"}, {"rack", "r1"}});
  b.node("a2", 16000, 64, {{"zone", "z1"}, {"rack", "r1"}});
  b.node("b1", 16000, 64, {{"zone", "z1"}, {"rack", "r2"}});
  b.node("c1", 16000, 64, {{"zone", "z2"}, {"rack", "r3"}});
  b.role("t1", "kv", "replica", res(1000, 1)).required_anti_affinity = {instance_term("gaia.io/role", "replica", "rack")};
  for (int i = 0; i < 3; ++i) b.instance("t1", "kv", "replica", i);
  // The cache wants to be in the zone of the kv replicas placed in this same call.
  b.role("t1", "kv", "cache", res(1000, 1), Priority{Band::Prod, 50}).required_affinity = {
      instance_term("gaia.io/role", "replica", "zone")};
  b.instance("t1", "kv", "cache", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 4);
  std::set<std::string> racks;
  for (int i = 0; i < 3; ++i) {
    const Placement* p = find_placement(d, fmt::format("{}.replica.kv.t1", i));
    REQUIRE(p);
    racks.insert(p->node == "a1" || p->node == "a2" ? "r1" : p->node == "b1" ? "r2" : "r3");
  }
  CHECK(racks.size() == 3);
  CHECK(find_placement(d, "0.cache.kv.t1"));
}

TEST_CASE("spark-like executors land next to datanodes via near", "[scheduler]") {
  ClusterBuilder b;
  for (int i = 0; i < 8; ++i)
    b.node(fmt::format("n{}", i), 16000, 64, {{"zone", "z1"}, {"rack", fmt::format("r{}", i / 2)}});
  b.role("t1", "hdfs", "datanode", res(1000, 4));
  b.instance("t1", "hdfs", "datanode", 0, "n3");
  b.instance("t1", "hdfs", "datanode", 1, "n6");
  b.role("t1", "spark", "executor", res(2000, 4)).near = "hdfs/datanode";
  for (int i = 0; i < 4; ++i) b.instance("t1", "spark", "executor", i);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 4);
  std::map<std::string, int> per_node;
  for (const auto& p : d.placements) ++per_node[p.node];
  CHECK(per_node["n3"] == 2);
  CHECK(per_node["n6"] == 2);
}

TEST_CASE("near prefers the same rack when the datanode's node is full", "[scheduler]") {
  ClusterBuilder b;
  b.node("a", 4000, 64, {{"zone", "z1"}, {"rack", "r1"}});
  b.node("b", 16000, 64, {{"zone", "z1"}, {"rack", "r1"}});
  b.node("c", 16000, 64, {{"zone", "z1"}, {"rack", "r2"}});
  b.role("t1", "hdfs", "datanode", res(4000, 4));
  b.instance("t1", "hdfs", "datanode", 0, "a");
  b.role("t1", "spark", "executor", res(2000, 4)).near = "hdfs/datanode";
  b.instance("t1", "spark", "executor", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "b");
}

TEST_CASE("ssd volumes go to a node with a fitting ssd volume group", "[scheduler]") {
  ClusterBuilder b;
  b.node("hdd-only", 16000, 64).volume_groups = {VolumeGroup{"vg0", "hdd", 1000 * kGi, 1000}};
  b.node("small-ssd", 16000, 64).volume_groups = {VolumeGroup{"vg0", "ssd", 50 * kGi, 10000}};
  b.node("big-ssd", 16000, 64).volume_groups = {VolumeGroup{"vg0", "hdd", 1000 * kGi, 1000},
                                                 VolumeGroup{"fast", "ssd", 500 * kGi, 10000}};
  Role& r = b.role("t1", "pg", "db", res(1000, 4));
  r.volumes = {Volume{"data", 100 * kGi, "ssd", 3000, "/data"}};
  b.instance("t1", "pg", "db", 0);
  b.instance("t1", "pg", "db", 1);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 2);
  for (const auto& p : d.placements) {
    CHECK(p.node == "big-ssd");
    REQUIRE(p.volumes.size() == 1);
    CHECK(p.volumes[0].group == "fast");
    CHECK(p.volumes[0].node == "big-ssd");
  }
  // Iops run out: 10000 iops at 3000 each fits three volumes, not four.
  b.s.instances.clear();
  for (int i = 0; i < 4; ++i) b.instance("t1", "pg", "db", i);
  d = schedule(b.s, b.pending());
  CHECK(d.placements.size() == 3);
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason.find("Storage") != std::string::npos);
}

TEST_CASE("a stateful instance sticks to the node holding its volume", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 16000, 64);
  b.node("n2", 16000, 64).volume_groups = {VolumeGroup{"vg", "ssd", 100 * kGi, 1000}};
  b.node("n3", 16000, 64);
  b.role("t1", "zk", "server", res(1000, 4)).volumes = {Volume{"data", 10 * kGi, "ssd", 0, "/data"}};
  b.role("t1", "x", "filler", res(8000, 8));
  b.instance("t1", "x", "filler", 0, "n2");
  Instance& zk = b.instance("t1", "zk", "server", 0);
  zk.volumes = {VolumeBinding{"data", "n2", "vg", 10 * kGi, 0}};
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "n2");
  CHECK(d.placements[0].volumes.empty());  // Already bound: nothing new to allocate.

  b.s.nodes[1].state = NodeState::Down;
  d = schedule(b.s, b.pending());
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason.starts_with("0/3 nodes fit: 2 Storage, 1 NodeState"));
}

TEST_CASE("required subnet and required topology", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 16000, 64, {{"zone", "z1"}}).address = "10.1.0.5";
  Node& n2 = b.node("n2", 16000, 64, {{"zone", "z1"}});
  n2.address = "192.168.0.2";
  n2.instance_subnet = "10.2.3.0/24";
  b.node("n3", 16000, 64, {{"zone", "z2"}}).address = "10.2.0.9";
  b.role("t1", "a", "inner", res(1000, 1)).required_subnet = "10.2.0.0/16";
  b.instance("t1", "a", "inner", 0);
  b.instance("t1", "a", "inner", 1);
  b.role("t1", "a", "zoned", res(1000, 1)).required_topology = "zone=z2";
  b.instance("t1", "a", "zoned", 0);
  b.role("t1", "a", "v6", res(1000, 1)).required_subnet = "fd00::/8";
  b.instance("t1", "a", "v6", 0);
  Decision d = schedule(b.s, b.pending());
  std::set<std::string> inner{find_placement(d, "0.inner.a.t1")->node, find_placement(d, "1.inner.a.t1")->node};
  CHECK(inner == std::set<std::string>{"n2", "n3"});
  CHECK(find_placement(d, "0.zoned.a.t1")->node == "n3");
  const Unschedulable* u = find_unschedulable(d, "0.v6.a.t1");
  REQUIRE(u);
  CHECK(u->reason.starts_with("0/3 nodes fit: 3 Network"));
}

TEST_CASE("cidr parsing and containment for v4 and v6", "[scheduler]") {
  using gaia::sched::cidr_contains;
  using gaia::sched::parse_subnet;
  CHECK(cidr_contains(*parse_subnet("10.0.0.0/8"), *parse_subnet("10.200.1.1")));
  CHECK_FALSE(cidr_contains(*parse_subnet("10.0.0.0/9"), *parse_subnet("10.200.1.1")));
  CHECK(cidr_contains(*parse_subnet("10.1.0.0/16"), *parse_subnet("10.1.4.0/24")));
  CHECK_FALSE(cidr_contains(*parse_subnet("10.1.4.0/24"), *parse_subnet("10.1.0.0/16")));
  CHECK(cidr_contains(*parse_subnet("fd00::/8"), *parse_subnet("fd12:3456::1")));
  CHECK_FALSE(cidr_contains(*parse_subnet("fd00::/8"), *parse_subnet("10.0.0.1")));
  CHECK(cidr_contains(*parse_subnet("0.0.0.0/0"), *parse_subnet("1.2.3.4")));
  CHECK_FALSE(parse_subnet("10.0.0.0/33"));
  CHECK_FALSE(parse_subnet("banana/8"));
}

TEST_CASE("fixed host ports conflict, allocated ports come from the range", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 16000, 64);
  b.node("n2", 16000, 64);
  Role& web = b.role("t1", "site", "web", res(1000, 1));
  web.ports = {Port{"http", 8080, "TCP"}, Port{"admin", 0, "TCP"}, Port{"metrics", 0, "TCP"}};
  b.role("t1", "other", "proxy", res(1000, 1));
  b.instance("t1", "other", "proxy", 0, "n1").ports = {{"http", 8080}};
  for (int i = 0; i < 3; ++i) b.instance("t1", "site", "web", i);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "n2");
  CHECK(d.placements[0].ports == std::map<std::string, int>{{"admin", 20000}, {"http", 8080}, {"metrics", 20001}});
  REQUIRE(d.unschedulable.size() == 2);
  CHECK(d.unschedulable[0].reason.starts_with("0/2 nodes fit: 2 Ports"));

  // A tiny range runs out of dynamic ports.
  b.s.nodes[1].port_min = 30000;
  b.s.nodes[1].port_max = 30001;
  b.instance("t1", "other", "proxy", 1, "n2").ports = {{"http", 30000}};
  d = schedule(b.s, b.pending());
  CHECK(d.placements.empty());
}

TEST_CASE("quota exceeded gives a clear reason", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 64000, 256);
  Tenant t{"t1", {}, {}};
  t.quota.cpu_millis = 12000;
  b.s.tenants.push_back(t);
  b.role("t1", "big", "w", res(6000, 1));
  b.instance("t1", "big", "w", 0, "n1");
  b.instance("t1", "big", "w", 1, "n1");
  b.role("t1", "app", "svc", res(2000, 1));
  b.instance("t1", "app", "svc", 0);
  b.instance("t1", "app", "svc", 1);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.placements.empty());
  REQUIRE(d.unschedulable.size() == 2);
  CHECK(d.unschedulable[0].reason == "quota exceeded: tenant t1 cpu 12000m used + 2000m requested > 12000m quota");

  // The instance count quota counts placements made earlier in the same call.
  b.s.tenants[0].quota = Quota{};
  b.s.tenants[0].quota.instances = 3;
  d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason == "quota exceeded: tenant t1 instances 3 used + 1 requested > 3 quota");
}

TEST_CASE("pending instances are taken in priority order", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 4000, 16);
  b.role("t1", "a", "low", res(4000, 1), Priority{Band::Nonprod, 500});
  b.role("t1", "z", "high", res(4000, 1), Priority{Band::Prod, 1});
  b.instance("t1", "a", "low", 0);
  b.instance("t1", "z", "high", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].instance == "0.high.z.t1");
}

TEST_CASE("nonprod fits against reservations, prod against requests", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 4000, 16);
  b.role("t1", "svc", "api", res(3000, 1));
  b.instance("t1", "svc", "api", 0, "n1").reservation = res(1000, 1);
  b.role("t1", "batch", "job", res(2000, 1), Priority{Band::Nonprod, 100});
  b.instance("t1", "batch", "job", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "n1");

  b.s.instances.pop_back();
  b.role("t1", "svc", "web", res(2000, 1));
  b.instance("t1", "svc", "web", 0);
  d = schedule(b.s, b.pending());
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason.starts_with("0/1 nodes fit: 1 ResourceFit (cpu)"));
}

TEST_CASE("spread and stack strategies", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32);
  b.node("n2", 8000, 32);
  b.role("t1", "a", "w", res(1000, 1));
  b.instance("t1", "a", "w", 0);
  b.instance("t1", "a", "w", 1);
  b.instance("t1", "a", "w", 2);
  b.s.profile.strategy = "spread";
  Decision d = schedule(b.s, b.pending());
  std::map<std::string, int> per;
  for (const auto& p : d.placements) ++per[p.node];
  CHECK(per == std::map<std::string, int>{{"n1", 2}, {"n2", 1}});

  b.s.profile.strategy = "stack";
  b.s.profile.w_spread = 0;
  b.s.profile.w_allocation = 3;
  d = schedule(b.s, b.pending());
  per.clear();
  for (const auto& p : d.placements) ++per[p.node];
  CHECK(per == std::map<std::string, int>{{"n1", 3}});
}

TEST_CASE("cached image and preferred affinity tilt the choice", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32, {{"zone", "z1"}});
  b.node("n2", 8000, 32, {{"zone", "z2"}}).cached_images = {"registry/app:1"};
  b.role("t1", "a", "img", res(1000, 1)).image = "registry/app:1";
  b.instance("t1", "a", "img", 0);
  AffinityTerm pref;
  pref.target = AffinityTerm::Target::Node;
  pref.match = {{"zone", "In", {"z1"}}};
  pref.weight = 50;
  b.role("t1", "a", "pref", res(1000, 1)).preferred_affinity = {pref};
  b.instance("t1", "a", "pref", 0);
  Decision d = schedule(b.s, b.pending());
  CHECK(find_placement(d, "0.img.a.t1")->node == "n2");
  CHECK(find_placement(d, "0.pref.a.t1")->node == "n1");
}

TEST_CASE("unknown and already placed keys are reported", "[scheduler]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32);
  b.role("t1", "a", "w", res(1000, 1));
  b.instance("t1", "a", "w", 0, "n1");
  Decision d = schedule(b.s, {"0.w.a.t1", "9.nope.a.t1"});
  REQUIRE(d.unschedulable.size() == 2);
  CHECK(d.unschedulable[0].reason == "not pending: already on node n1");
  CHECK(d.unschedulable[1].reason == "unknown instance");
}

TEST_CASE("determinism: same snapshot, same decision, whatever the pending order", "[scheduler]") {
  ClusterBuilder b;
  for (int i = 0; i < 40; ++i)
    b.node(fmt::format("n{:02}", i), 8000 + (i % 3) * 4000, 32,
           {{"zone", fmt::format("z{}", i % 3)}, {"rack", fmt::format("r{}", i % 7)}});
  for (int r = 0; r < 12; ++r) {
    Role& role = b.role("t1", fmt::format("app{}", r % 4), fmt::format("role{}", r), res(500 + 250 * (r % 5), 1 + r % 3),
                        Priority{r % 3 == 0 ? Band::Nonprod : Band::Prod, 100 + r});
    if (r % 4 == 1) role.required_anti_affinity = {instance_term("gaia.io/role", role.name, "node")};
    if (r % 4 == 2) role.near = "app1/role1";
    for (int i = 0; i < 15; ++i) b.instance("t1", fmt::format("app{}", r % 4), role.name, i);
  }
  std::vector<std::string> keys = b.pending();
  std::string first = decision_text(schedule(b.s, keys));
  std::reverse(keys.begin(), keys.end());
  CHECK(decision_text(schedule(b.s, keys)) == first);
  CHECK(decision_text(schedule(b.s, keys)) == first);
  CHECK(first.find("place") != std::string::npos);
}

TEST_CASE("sampling is deterministic and still finds the only fitting node", "[scheduler]") {
  ClusterBuilder b;
  b.s.profile.percentage_of_nodes_to_score = 5;
  for (int i = 0; i < 400; ++i) b.node(fmt::format("n{:03}", i), i == 399 ? 8000 : 1000, 32);
  b.role("t1", "a", "big", res(4000, 1));
  b.instance("t1", "a", "big", 0);
  b.role("t1", "a", "small", res(500, 1));
  for (int i = 0; i < 30; ++i) b.instance("t1", "a", "small", i);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(find_placement(d, "0.big.a.t1"));
  CHECK(find_placement(d, "0.big.a.t1")->node == "n399");
  CHECK(d.placements.size() == 31);
  CHECK(decision_text(schedule(b.s, b.pending())) == decision_text(d));
}

TEST_CASE("work without a GPU request keeps off GPU nodes while plain nodes have room", "[scheduler]") {
  // An empty GPU node, larger than the plain one: least-allocated alone would choose it.
  ClusterBuilder b;
  b.node("gpu1", 32000, 128).capacity.gpu = 4;
  b.node("plain1", 8000, 32);
  b.role("t1", "batch", "etl", res(2000, 8));
  b.instance("t1", "batch", "etl", 0, "plain1");
  b.role("t1", "web", "api", res(2000, 4));
  b.role("t1", "ml", "train", res(4000, 16, 2));
  for (int i = 0; i < 4; ++i) b.instance("t1", "web", "api", i);
  b.instance("t1", "ml", "train", 0);

  SECTION("on by default: api fills the plain node, train takes the GPU node") {
    Decision d = schedule(b.s, b.pending());
    REQUIRE(d.unschedulable.empty());
    // plain1 has 6 of 8 cores free: three 2-core api instances fit there; the fourth does not.
    int on_gpu = 0;
    for (int i = 0; i < 4; ++i) on_gpu += find_placement(d, fmt::format("{}.api.web.t1", i))->node == "gpu1";
    CHECK(on_gpu == 1);
    CHECK(find_placement(d, "0.train.ml.t1")->node == "gpu1");
  }
  SECTION("weight 0 turns it off: least allocated sends the api instances to the empty GPU node") {
    b.s.profile.w_scarce = 0;
    Decision d = schedule(b.s, b.pending());
    REQUIRE(d.unschedulable.empty());
    CHECK(find_placement(d, "0.api.web.t1")->node == "gpu1");
  }
}
