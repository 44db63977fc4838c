// plan_submit, reschedule_pending and plan_delete as pure decisions over a ClusterState:
// deploy order, waiting for dependencies, preemption victims requeued, unchanged
// resubmits, updates, address allocation and the topology lookup behind data locality.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "tests/controllers/sim_fixture.hpp"
#include "controllers/app_delete.hpp"
#include "controllers/lifecycle.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"
#include "store/sqlite_store.hpp"
#include "tests/controllers/cluster_builder.hpp"
#include "tests/temp_dir.hpp"

namespace gaia {
namespace {

using test::applied;
using test::kGi;
using test::res;

Node make_node(const std::string& name, int index, int64_t cpu, int64_t mem_gi, const std::string& rack = "") {
  Node n;
  n.name = name;
  n.capacity = res(cpu, mem_gi);
  n.address = fmt::format("10.0.0.{}", index + 1);
  n.instance_subnet = fmt::format("10.0.{}.0/24", 128 + index);
  n.rack = rack;
  if (!rack.empty()) n.labels["rack"] = rack;
  return n;
}

Role make_role(const std::string& name, int replicas, Resources r, Priority p = Priority{}) {
  Role role;
  role.name = name;
  role.replicas = replicas;
  role.resources = r;
  role.priority = p;
  return role;
}

AppToDeploy make_app(const std::string& name, std::vector<Role> roles, std::vector<std::string> deps = {},
                     const std::string& version = "1.0.0", const std::string& tenant = "default") {
  AppToDeploy a;
  a.record.tenant = tenant;
  a.record.name = name;
  a.record.version = version;
  a.record.workload.app = name;
  a.record.workload.version = version;
  a.record.workload.tenant = tenant;
  a.record.workload.roles = std::move(roles);
  std::string h = name + version;
  for (const auto& r : a.record.workload.roles) h += fmt::format("|{}:{}:{}", r.name, r.replicas, r.resources.cpu_millis);
  a.record.workload.hash = fmt::format("{:016x}", std::hash<std::string>{}(h));
  a.record.dependencies = std::move(deps);
  return a;
}

ClusterState sized_cluster(int nodes, int64_t cpu = 4000, int64_t mem_gi = 16) {
  ClusterState s;
  for (int k = 0; k < nodes; ++k) s.snapshot.nodes.push_back(make_node(fmt::format("node-{}", k + 1), k, cpu, mem_gi));
  return s;
}

size_t count_state(const ClusterState& s, const std::string& app, InstanceState st) {
  size_t n = 0;
  for (const auto& i : s.snapshot.instances)
    if (i.app == app && i.state == st) ++n;
  return n;
}

bool has_event(const Batch& b, const std::string& reason, const std::string& app = "") {
  for (const auto& e : b.events)
    if (e.reason == reason && (app.empty() || e.app == app)) return true;
  return false;
}

// Keys put and deleted in one batch would be rejected by the store (as by etcd).
void check_batch_consistent(const Batch& b) {
  std::set<std::string> puts;
  for (const auto& i : b.put_instances) REQUIRE(puts.insert(i.key()).second);
  for (const auto& k : b.delete_instances) REQUIRE_FALSE(puts.count(k));
  std::set<std::string> apps;
  for (const auto& a : b.put_apps) REQUIRE(apps.insert(a.tenant + "/" + a.name).second);
}

// No node holds more than its capacity; every placed instance's node exists.
void check_invariants(const ClusterState& s) {
  std::map<std::string, Resources> used;
  for (const auto& i : s.snapshot.instances) {
    if (i.node.empty()) continue;
    REQUIRE(s.find_node(i.node) != nullptr);
    used[i.node].cpu_millis += i.request.cpu_millis;
    used[i.node].memory_bytes += i.request.memory_bytes;
  }
  for (const auto& [node, u] : used) {
    const Node* n = s.find_node(node);
    CHECK(u.cpu_millis <= n->capacity.cpu_millis);
    CHECK(u.memory_bytes <= n->capacity.memory_bytes);
  }
}

TEST_CASE("submit deploys a chain in dependency order and every app becomes ready", "[submit]") {
  auto state = sized_cluster(3);
  std::vector<AppToDeploy> apps{make_app("zookeeper", {make_role("server", 3, res(500, 1))}),
                                make_app("hdfs", {make_role("datanode", 3, res(1000, 2))}, {"zookeeper"})};
  auto out = plan_submit(state, apps);
  check_batch_consistent(out.batch);
  REQUIRE(out.apps.size() == 2);
  CHECK(out.apps[0].action == "deploy");
  CHECK(out.apps[0].placed.size() == 3);
  CHECK(out.apps[1].placed.size() == 3);
  // Placed, not started: the runner starts them, dependencies first.
  CHECK_FALSE(out.apps[0].ready);
  CHECK_FALSE(out.apps[1].ready);
  CHECK(out.pending == 0);
  CHECK(out.placed == 6);
  // Events tell the story in order: zookeeper is scheduled before hdfs is submitted.
  int64_t zk_scheduled = -1, hdfs_submitted = -1;
  for (size_t k = 0; k < out.batch.events.size(); ++k) {
    const auto& e = out.batch.events[k];
    if (e.reason == "Scheduled" && e.app == "zookeeper") zk_scheduled = static_cast<int64_t>(k);
    if (e.reason == "Submitted" && e.app == "hdfs" && hdfs_submitted < 0) hdfs_submitted = static_cast<int64_t>(k);
  }
  CHECK(zk_scheduled >= 0);
  CHECK(zk_scheduled < hdfs_submitted);
  auto after = applied(state, out.batch);
  CHECK(after.find_app("default", "hdfs")->status == "Ready");
  CHECK(count_state(after, "hdfs", InstanceState::Running) == 3);
  check_invariants(after);
  // The report's state is the one a commit produces.
  CHECK(out.after.snapshot.instances.size() == after.snapshot.instances.size());
}

TEST_CASE("a dependent waits while its dependency is pending, and follows it once capacity appears",
          "[submit]") {
  auto state = sized_cluster(2, 2000, 8);
  // zookeeper needs all 3 servers up to be available (min_available 3).
  Role servers = make_role("server", 3, res(1500, 1));
  servers.min_available = 3;
  std::vector<AppToDeploy> apps{make_app("zookeeper", {servers}),
                                make_app("hdfs", {make_role("datanode", 2, res(200, 1))}, {"zookeeper"})};
  auto out = plan_submit(state, apps);
  check_batch_consistent(out.batch);
  CHECK(out.apps[0].placed.size() == 2);
  REQUIRE(out.apps[0].pending.size() == 1);
  CHECK_THAT(out.apps[0].pending[0].reason, Catch::Contains("ResourceFit"));
  REQUIRE(out.apps[1].pending.size() == 2);
  CHECK(out.apps[1].placed.empty());
  CHECK_THAT(out.apps[1].pending[0].reason, Catch::Contains("waiting for dependency zookeeper"));
  CHECK_FALSE(out.apps[1].ready);
  CHECK(has_event(out.batch, "Waiting", "hdfs"));
  auto after = applied(state, out.batch);
  // Stuck (no node fits the third server): Degraded, and not available to hdfs.
  CHECK(after.find_app("default", "zookeeper")->status == "Degraded");

  // Nothing changed: retrying is a no-op (no new events, no writes).
  auto idle = reschedule_pending(after);
  CHECK(idle.batch.empty());

  // A third node: zookeeper's last server goes there, then hdfs in the same call.
  after.snapshot.nodes.push_back(make_node("node-3", 2, 2000, 8));
  auto retry = reschedule_pending(after);
  check_batch_consistent(retry.batch);
  auto settled = applied(after, retry.batch);
  CHECK(count_state(settled, "zookeeper", InstanceState::Running) == 3);
  CHECK(count_state(settled, "hdfs", InstanceState::Running) == 2);
  CHECK(settled.find_app("default", "hdfs")->status == "Ready");
  check_invariants(settled);
}

TEST_CASE("preemption evicts lower-priority instances, which are requeued and reported", "[submit]") {
  auto state = sized_cluster(2, 2000, 8);
  Priority low{Band::Nonprod, 50};
  Priority high{Band::Prod, 200};
  auto batch_out = plan_submit(state, {make_app("spark", {make_role("worker", 4, res(1000, 1), low)})});
  auto filled = applied(state, batch_out.batch);
  REQUIRE(count_state(filled, "spark", InstanceState::Running) == 4);

  auto out = plan_submit(filled, {make_app("web", {make_role("frontend", 2, res(1000, 1), high)})});
  check_batch_consistent(out.batch);
  CHECK(out.apps[0].placed.size() == 2);
  CHECK(out.preempted == 2);
  REQUIRE(out.others.size() == 1);
  const AppReport& spark = out.others[0];
  CHECK(spark.name == "spark");
  CHECK(spark.preempted.size() == 2);
  for (const auto& p : spark.preempted) CHECK_THAT(p.preemptor, Catch::Contains("frontend.web"));
  // The victims were retried at once; with the cluster full they stay pending, saying
  // who evicted them and why they fit nowhere now.
  REQUIRE(spark.pending.size() == 2);
  CHECK_THAT(spark.pending[0].reason, Catch::StartsWith("preempted by"));
  CHECK_THAT(spark.pending[0].reason, Catch::Contains("then"));
  CHECK_FALSE(spark.ready);
  CHECK(has_event(out.batch, "Preempted", "spark"));
  auto after = applied(filled, out.batch);
  CHECK(after.find_app("default", "spark")->status == "Degraded");
  CHECK(count_state(after, "spark", InstanceState::Pending) == 2);
  CHECK(count_state(after, "web", InstanceState::Running) == 2);
  check_invariants(after);
  for (const auto& i : after.snapshot.instances)
    if (i.state == InstanceState::Pending) CHECK(i.address.empty());

  // Deleting web frees the room: the delete reschedules the victims in the same batch.
  auto del = plan_delete(after, "default", "web", false);
  REQUIRE(del);
  check_batch_consistent(del->batch);
  auto back = applied(after, del->batch);
  CHECK(count_state(back, "spark", InstanceState::Running) == 4);
  CHECK(back.find_app("default", "spark")->status == "Ready");
  CHECK(back.find_app("default", "web") == nullptr);
  check_invariants(back);
}

TEST_CASE("resubmitting an unchanged spec changes nothing", "[submit]") {
  auto state = sized_cluster(3);
  std::vector<AppToDeploy> apps{make_app("zookeeper", {make_role("server", 3, res(500, 1))}),
                                make_app("kafka", {make_role("broker", 2, res(500, 1))}, {"zookeeper"})};
  auto first = plan_submit(state, apps);
  auto after = applied(state, first.batch);
  auto again = plan_submit(after, apps);
  CHECK(again.batch.empty());
  CHECK_FALSE(again.changed());
  for (const auto& r : again.apps) {
    CHECK(r.action == "unchanged");
    CHECK(r.ready);
    CHECK(r.placed.empty());
  }
  CHECK(again.apps[1].running == 2);
}

TEST_CASE("an update rolls the instances out and commits cleanly to a real store", "[submit]") {
  test::TempDir dir("gaia-submit-test");
  auto store = SqliteStore::open(dir.path() / "gaia.db");
  REQUIRE(store);
  ManualClock clock;
  State st(**store, clock);
  auto loaded = st.load();
  REQUIRE(loaded);
  Batch nodes;
  for (int k = 0; k < 3; ++k) {
    nodes.put_nodes.push_back(make_node(fmt::format("node-{}", k + 1), k, 4000, 16));
    nodes.put_nodes.back().volume_groups.push_back(VolumeGroup{"disks", "hdd", 100 * kGi, 1000});
  }
  REQUIRE(st.commit(*loaded, nodes, "op-test").value());

  Role data = make_role("data", 3, res(500, 1));
  data.volumes.push_back(Volume{"store", 10 * kGi, "hdd", 0, "/data"});
  auto v1 = make_app("db", {data});
  auto base = st.load();
  auto first = plan_submit(*base, {v1});
  REQUIRE(st.commit(*base, first.batch, "op-1").value());

  auto s1 = st.load();
  REQUIRE(s1);
  std::map<std::string, std::string> volume_node;
  REQUIRE(s1->snapshot.instances.size() == 3);
  for (const auto& i : s1->snapshot.instances) {
    REQUIRE(i.state == InstanceState::Placed);  // Bound; nothing started them here.
    REQUIRE(i.volumes.size() == 1);
    volume_node[i.key()] = i.volumes[0].node;
  }

  // Version 2 drops a replica and changes the request: 2 is removed at once, instances
  // 0 and 1 stay until the rollout controller replaces them (same keys: put, not
  // deleted).
  data.replicas = 2;
  data.resources = res(700, 1);
  auto v2 = make_app("db", {data}, {}, "2.0.0");
  auto second = plan_submit(*s1, {v2});
  check_batch_consistent(second.batch);
  CHECK(second.apps[0].action == "update");
  CHECK(second.apps[0].removed == std::vector<std::string>{"2.data.db.default"});
  CHECK(second.apps[0].rolling.size() == 2);
  CHECK(has_event(second.batch, "Updated", "db"));
  auto ok = st.commit(*s1, second.batch, "op-2");
  REQUIRE(ok);
  REQUIRE(*ok);
  auto rolling = st.load();
  REQUIRE(rolling);
  CHECK(rolling->find_app("default", "db")->status == "Updating");
  for (const auto& i : rolling->snapshot.instances) CHECK(i.request.cpu_millis == 500);
  auto rollout = test::settle_sim(*rolling, ControllerContext{});
  REQUIRE(rollout.converged);
  check_batch_consistent(rollout.batch);
  CHECK(has_event(rollout.batch, "RolledOut", "db"));
  REQUIRE(st.commit(*rolling, rollout.batch, "op-3").value());
  auto s2 = st.load();
  REQUIRE(s2);
  REQUIRE(s2->snapshot.instances.size() == 2);
  for (const auto& i : s2->snapshot.instances) {
    CHECK(i.request.cpu_millis == 700);
    CHECK(i.state == InstanceState::Running);
    CHECK(i.labels.at("gaia.io/version") == "2.0.0");
    // Stateful instances stay with their volume.
    CHECK(i.node == volume_node.at(i.key()));
  }
  CHECK(s2->find_app("default", "db")->version == "2.0.0");
}

TEST_CASE("an update never hands out an address another app holds", "[submit][address]") {
  auto state = sized_cluster(1);
  auto first = plan_submit(state, {make_app("alpha", {make_role("a", 2, res(100, 1))}),
                                   make_app("beta", {make_role("b", 2, res(100, 1))})});
  auto after = applied(state, first.batch);
  // beta changes: its instances are rolled out while alpha's keep their addresses.
  auto update = plan_submit(after, {make_app("beta", {make_role("b", 3, res(200, 1))}, {}, "2.0.0")});
  auto next = test::settle_sim(applied(after, update.batch), ControllerContext{}).after;
  for (const auto& i : next.snapshot.instances)
    if (i.app == "beta") CHECK(i.request.cpu_millis == 200);
  REQUIRE(next.snapshot.instances.size() == 5);
  std::set<std::string> seen;
  for (const auto& i : next.snapshot.instances) {
    INFO(i.key() << " " << i.address);
    CHECK_FALSE(i.address.empty());
    CHECK(seen.insert(i.address).second);
  }
  for (const auto& i : next.snapshot.instances)
    if (i.app == "alpha") CHECK(after.find_instance(i.key())->address == i.address);
}

TEST_CASE("instance addresses come from the node's instance subnet, IPv4 and IPv6", "[submit][address]") {
  Node v4 = make_node("n4", 0, 4000, 16);
  v4.instance_subnet = "10.1.0.0/30";  // .1 and .2 usable: .0 is the network, .3 broadcast.
  std::vector<Instance> instances;
  auto take = [&](const Node& n) {
    std::string a = allocate_address(n, instances);
    Instance i;
    i.app = "x";
    i.role = "r";
    i.ordinal = static_cast<int>(instances.size());
    i.node = n.name;
    i.address = a;
    instances.push_back(i);
    return a;
  };
  CHECK(take(v4) == "10.1.0.1");
  CHECK(take(v4) == "10.1.0.2");
  CHECK(take(v4) == "");
  // A freed address is reused first.
  instances[0].address.clear();
  CHECK(allocate_address(v4, instances) == "10.1.0.1");

  instances.clear();
  Node v6 = make_node("n6", 1, 4000, 16);
  v6.instance_subnet = "2001:db8:0:1::/126";  // No broadcast in IPv6: ::1, ::2, ::3.
  CHECK(take(v6) == "2001:db8:0:1::1");
  CHECK(take(v6) == "2001:db8:0:1::2");
  CHECK(take(v6) == "2001:db8:0:1::3");
  CHECK(take(v6) == "");

  Node none = make_node("n0", 2, 4000, 16);
  none.instance_subnet.clear();
  CHECK(allocate_address(none, {}).empty());

  // Through a submit: every placed instance gets a distinct address inside its node's
  // subnet, on an IPv6 node too.
  auto state = sized_cluster(2);
  state.snapshot.nodes[1].instance_subnet = "fd00:0:0:2::/64";
  auto out = plan_submit(state, {make_app("web", {make_role("frontend", 6, res(100, 1))})});
  auto after = applied(state, out.batch);
  std::set<std::string> seen;
  for (const auto& i : after.snapshot.instances) {
    REQUIRE_FALSE(i.address.empty());
    CHECK(seen.insert(i.address).second);
    auto prefix = parse_cidr(after.find_node(i.node)->instance_subnet);
    CHECK(prefix->contains(*parse_address(i.address)));
  }
}

TEST_CASE("an instance address looked up in the nodes' topology table gives its node back", "[submit][topology]") {
  auto state = sized_cluster(4);
  state.snapshot.nodes[0].rack = state.snapshot.nodes[1].rack = "r1";
  state.snapshot.nodes[2].rack = state.snapshot.nodes[3].rack = "r2";
  state.snapshot.nodes[3].instance_subnet = "fd00:0:0:4::/64";
  auto out = plan_submit(state, {make_app("hdfs", {make_role("datanode", 8, res(200, 1))})});
  auto after = applied(state, out.batch);
  TopologyTable table = node_topology(after.snapshot.nodes);
  REQUIRE(after.snapshot.instances.size() == 8);
  for (const auto& i : after.snapshot.instances) {
    auto entry = table.lookup(*parse_address(i.address));
    REQUIRE(entry);
    CHECK(entry->node == i.node);
    CHECK(entry->rack == after.find_node(i.node)->rack);
    CHECK(entry->subnet == after.find_node(i.node)->instance_subnet);
  }
  // Host addresses map to their node as well.
  CHECK(table.lookup(*parse_address("10.0.0.3"))->node == "node-3");
  CHECK_FALSE(table.lookup(*parse_address("192.168.1.1")));
}

TEST_CASE("a role with near reports where its dependency's data lives", "[submit][topology]") {
  auto state = sized_cluster(3);
  state.snapshot.nodes[0].rack = "r1";
  state.snapshot.nodes[1].rack = "r1";
  state.snapshot.nodes[2].rack = "r2";
  // One datanode, on node-3 (the only node with the ssd label).
  state.snapshot.nodes[2].labels["disk"] = "ssd";
  Role datanode = make_role("datanode", 1, res(500, 1));
  datanode.node_selector["disk"] = "ssd";
  Role worker = make_role("worker", 3, res(500, 1));
  worker.near = "hdfs/datanode";
  auto out = plan_submit(state, {make_app("hdfs", {datanode}), make_app("spark", {worker}, {"hdfs"})});
  REQUIRE(out.apps[1].placed.size() == 3);
  int same_node = 0;
  for (const auto& p : out.apps[1].placed) {
    CHECK_FALSE(p.locality.empty());
    if (p.node == "node-3") {
      CHECK_THAT(p.locality, Catch::StartsWith("same node as 0.datanode.hdfs.default"));
      ++same_node;
    } else {
      CHECK_THAT(p.locality, Catch::Contains("0.datanode.hdfs.default"));
    }
  }
  CHECK(same_node >= 1);
  CHECK(out.apps[0].placed[0].locality.empty());
}

TEST_CASE("delete refuses while dependents exist and cascades dependents first", "[submit][delete]") {
  auto state = sized_cluster(3);
  std::vector<AppToDeploy> apps{make_app("zookeeper", {make_role("server", 3, res(500, 1))}),
                                make_app("hdfs", {make_role("datanode", 3, res(500, 1))}, {"zookeeper"}),
                                make_app("hbase", {make_role("region", 2, res(500, 1))}, {"hdfs", "zookeeper"}),
                                make_app("other", {make_role("x", 1, res(500, 1))})};
  auto after = applied(state, plan_submit(state, apps).batch);
  CHECK(app_dependents(after, "default", "zookeeper") == std::vector<std::string>{"hbase", "hdfs"});

  auto refused = plan_delete(after, "default", "zookeeper", false);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error()[0].message, Catch::Contains("hbase, hdfs"));
  CHECK_THAT(refused.error()[0].hint, Catch::Contains("--cascade"));

  auto missing = plan_delete(after, "default", "zookeper", false);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error()[0].hint, Catch::Contains("zookeeper"));

  auto cascade = plan_delete(after, "default", "zookeeper", true);
  REQUIRE(cascade);
  check_batch_consistent(cascade->batch);
  REQUIRE(cascade->deleted.size() == 3);
  CHECK(cascade->deleted[0].name == "hbase");
  CHECK(cascade->deleted[1].name == "hdfs");
  CHECK(cascade->deleted[2].name == "zookeeper");
  auto gone = applied(after, cascade->batch);
  CHECK(gone.apps.size() == 1);
  CHECK(gone.snapshot.instances.size() == 1);
  CHECK(has_event(cascade->batch, "Deleted", "hdfs"));
}

TEST_CASE("merge_batch lets later changes win and never puts and deletes one key", "[submit]") {
  Batch a, b;
  Instance i;
  i.app = "x";
  i.role = "r";
  i.tenant = "t";
  a.delete_instances.push_back(i.key());
  i.address = "10.0.0.9";
  b.put_instances.push_back(i);
  merge_batch(a, b);
  CHECK(a.delete_instances.empty());
  REQUIRE(a.put_instances.size() == 1);
  Batch c;
  c.delete_instances.push_back(i.key());
  merge_batch(a, c);
  CHECK(a.put_instances.empty());
  CHECK(a.delete_instances.size() == 1);
}

// Issue 14.6: with one of four datanodes waiting for a node, hbase waited for "hdfs to
// be ready" forever while `get apps` said hdfs Ready 3/4.
TEST_CASE("a dependency with its min_available serving is available: one stuck instance does not stall the chain",
          "[submit][health]") {
  auto state = sized_cluster(3, 2000, 8);
  Role datanode = make_role("datanode", 4, res(1500, 1));
  datanode.min_available = 2;
  auto out = plan_submit(state, {make_app("hdfs", {datanode}),
                                 make_app("hbase", {make_role("regionserver", 2, res(200, 1))}, {"hdfs"})});
  check_batch_consistent(out.batch);
  auto after = applied(state, out.batch);
  CHECK(count_state(after, "hdfs", InstanceState::Running) == 3);
  CHECK(count_state(after, "hdfs", InstanceState::Pending) == 1);
  // The words agree with the counts: hdfs is Degraded 3/4, not Ready.
  CHECK(after.find_app("default", "hdfs")->status == "Degraded");
  REQUIRE(out.apps.size() == 2);
  CHECK(out.apps[0].status == "Degraded");
  CHECK_FALSE(out.apps[0].ready);
  CHECK(has_event(out.batch, "AppDegraded", "hdfs"));
  // hbase went on: placed, running, Ready.
  CHECK(count_state(after, "hbase", InstanceState::Running) == 2);
  CHECK(after.find_app("default", "hbase")->status == "Ready");
  check_invariants(after);

  // Below min_available the dependency is not available and the dependent waits.
  auto tight = sized_cluster(1, 2000, 8);
  auto held = plan_submit(tight, {make_app("hdfs", {datanode}),
                                  make_app("hbase", {make_role("regionserver", 2, res(200, 1))}, {"hdfs"})});
  auto waiting = applied(tight, held.batch);
  CHECK(count_state(waiting, "hdfs", InstanceState::Running) == 1);
  CHECK(count_state(waiting, "hbase", InstanceState::Running) == 0);
  CHECK(waiting.find_app("default", "hdfs")->status == "Degraded");
  CHECK(waiting.find_app("default", "hbase")->status == "Progressing");
}

TEST_CASE("AppReady events follow readiness, not the alphabet", "[submit][health]") {
  auto state = sized_cluster(2, 4000, 16);
  // zeta is placed first, its instances start first, so its AppReady comes first.
  auto out = plan_submit(state, {make_app("zeta", {make_role("server", 2, res(200, 1))}),
                                 make_app("alpha", {make_role("web", 2, res(200, 1))})});
  auto run = reconcile_with_healthy_backend(apply_batch(state, out.batch), ControllerContext{0, {}});
  std::vector<std::string> ready;
  for (const auto& e : run.batch.events)
    if (e.reason == "AppReady") ready.push_back(e.app);
  CHECK(ready == std::vector<std::string>{"zeta", "alpha"});
}

}  // namespace
}  // namespace gaia
