// The instance lifecycle between the store and a backend (controllers/lifecycle.hpp):
// what an observation does to stored instances, and which copies get started and
// stopped. Every case also checks that deciding again on the result changes nothing.
#include <catch2/catch.hpp>
#include <algorithm>
#include <fmt/format.h>

#include "controllers/lifecycle.hpp"
#include "tests/controllers/runtime_fixture.hpp"

namespace gaia {
namespace {

using test::inst;
using test::kT0;
using test::res;

ObservedCopy copy_of(const Instance& i, CopyPhase phase, int exit_code = 0) {
  ObservedCopy c;
  c.instance = i.key();
  c.node = i.node;
  c.generation = i.generation;
  c.phase = phase;
  c.exit_code = exit_code;
  c.started_ms = kT0 - 1000;
  return c;
}

Instance& mut(ClusterState& s, const std::string& key) {
  for (auto& i : s.snapshot.instances)
    if (i.key() == key) return i;
  throw std::logic_error("no instance " + key);
}

// One app "web" with role "fe" (2 instances on n1, n2) and one dependency-free app.
ClusterState two_placed(const std::string& kind = "service") {
  test::ClusterBuilder b;
  b.node("n1", 4000, 16);
  b.node("n2", 4000, 16);
  b.role("default", "web", "fe", res(500, 1)).kind = kind;
  b.instance("default", "web", "fe", 0, "n1");
  b.instance("default", "web", "fe", 1, "n2");
  ClusterState s = test::runtime_state(b);
  for (auto& i : s.snapshot.instances) {
    i.state = InstanceState::Placed;
    i.generation = 1;
    i.started_ms = kT0 - 1000;  // What copy_of reports, for the cases where they run.
  }
  s.apps["default/web"].status = "Pending";
  return s;
}

TEST_CASE("lifecycle: a placed instance runs once the backend reports its copy ready", "[lifecycle]") {
  ClusterState s = two_placed();
  Observation obs;
  obs.copies.push_back(copy_of(inst(s, "0.fe.web.default"), CopyPhase::Running));
  obs.copies.push_back(copy_of(inst(s, "1.fe.web.default"), CopyPhase::Starting));
  Batch b = observe_instances(s, obs, kT0);
  ClusterState after = apply_batch(s, b);
  CHECK(inst(after, "0.fe.web.default").state == InstanceState::Running);
  CHECK(inst(after, "0.fe.web.default").started_ms == kT0 - 1000);
  CHECK(inst(after, "1.fe.web.default").state == InstanceState::Placed);  // Not ready yet.
  CHECK(test::find_event(b, "Started", "0.fe.web.default"));
  CHECK(observe_instances(after, obs, kT0).empty());
}

TEST_CASE("lifecycle: a backend that addresses its copies gives the instance its address", "[lifecycle]") {
  ClusterState s = two_placed();
  mut(s, "0.fe.web.default").address = "";
  Observation obs;
  ObservedCopy c = copy_of(inst(s, "0.fe.web.default"), CopyPhase::Running);
  c.address = "10.244.0.7";
  obs.copies.push_back(c);
  Batch b = observe_instances(s, obs, kT0);
  ClusterState after = apply_batch(s, b);
  CHECK(inst(after, "0.fe.web.default").address == "10.244.0.7");
  const TimelineEvent* started = test::find_event(b, "Started", "0.fe.web.default");
  REQUIRE(started);
  CHECK(started->message == "running on n1, address 10.244.0.7");
  CHECK(observe_instances(after, obs, kT0).empty());
  // A new address for a running copy (a pod recreated in place) is taken too; no address
  // (sim, process) leaves gaia's own allocation.
  obs.copies[0].address = "10.244.0.9";
  ClusterState moved = apply_batch(after, observe_instances(after, obs, kT0));
  CHECK(inst(moved, "0.fe.web.default").address == "10.244.0.9");
  obs.copies[0].address.clear();
  CHECK(observe_instances(moved, obs, kT0).empty());
}

TEST_CASE("lifecycle: a copy of an earlier generation says nothing about the current placement", "[lifecycle]") {
  ClusterState s = two_placed();
  ObservedCopy old = copy_of(inst(s, "0.fe.web.default"), CopyPhase::Exited, 1);
  old.generation = 0;
  Observation obs;
  obs.copies.push_back(old);
  CHECK(observe_instances(s, obs, kT0).empty());
  // ...and it is cleaned up, while the current placement is started.
  Actuation a = plan_actuation(s, obs);
  REQUIRE(a.stops.size() == 1);
  CHECK(a.stops[0].generation == 0);
  CHECK(a.starts.size() == 2);
}

TEST_CASE("lifecycle: a batch copy that exits 0 finishes its instance, other exits fail it", "[lifecycle]") {
  ClusterState s = two_placed("batch");
  for (auto& i : s.snapshot.instances) i.state = InstanceState::Running;
  Observation obs;
  obs.copies.push_back(copy_of(inst(s, "0.fe.web.default"), CopyPhase::Exited, 0));
  obs.copies.push_back(copy_of(inst(s, "1.fe.web.default"), CopyPhase::Exited, 3));
  Batch b = observe_instances(s, obs, kT0);
  ClusterState after = apply_batch(s, b);
  CHECK(inst(after, "0.fe.web.default").state == InstanceState::Succeeded);
  const Instance& failed = inst(after, "1.fe.web.default");
  CHECK(failed.state == InstanceState::Failed);
  CHECK(failed.exit_code == 3);
  CHECK(failed.failure == "exited with code 3");
  CHECK_FALSE(failed.internal_failure);
  CHECK(test::find_event(b, "Completed", "0.fe.web.default"));
  CHECK(observe_instances(after, obs, kT0).empty());
  // A finished copy is neither restarted nor stopped.
  CHECK(plan_actuation(after, obs).starts.empty());
}

TEST_CASE("lifecycle: a service copy that exits 0 has failed", "[lifecycle]") {
  ClusterState s = two_placed();
  for (auto& i : s.snapshot.instances) i.state = InstanceState::Running;
  Observation obs;
  obs.copies.push_back(copy_of(inst(s, "0.fe.web.default"), CopyPhase::Exited, 0));
  obs.copies.push_back(copy_of(inst(s, "1.fe.web.default"), CopyPhase::Running));
  ClusterState after = apply_batch(s, observe_instances(s, obs, kT0));
  CHECK(inst(after, "0.fe.web.default").state == InstanceState::Failed);
}

TEST_CASE("lifecycle: a running copy the backend no longer reports is lost, an internal failure", "[lifecycle]") {
  ClusterState s = two_placed();
  for (auto& i : s.snapshot.instances) i.state = InstanceState::Running;
  Observation obs;
  obs.copies.push_back(copy_of(inst(s, "1.fe.web.default"), CopyPhase::Running));
  Batch b = observe_instances(s, obs, kT0);
  ClusterState after = apply_batch(s, b);
  const Instance& lost = inst(after, "0.fe.web.default");
  CHECK(lost.state == InstanceState::Failed);
  CHECK(lost.internal_failure);  // Restarting it does not spend retry_times.
  CHECK(test::find_event(b, "Lost", "0.fe.web.default"));

  SECTION("unless its node is out of reach: then nothing is known") {
    obs.nodes.push_back(ObservedNode{"n1", false, "agent silent"});
    CHECK(observe_instances(s, obs, kT0).put_instances.empty());
  }
}

TEST_CASE("lifecycle: usage follows the observation without events", "[lifecycle]") {
  ClusterState s = two_placed();
  for (auto& i : s.snapshot.instances) i.state = InstanceState::Running;
  Observation obs;
  for (const auto& i : s.snapshot.instances) {
    obs.copies.push_back(copy_of(i, CopyPhase::Running));
    obs.copies.back().usage = res(200, 1);
  }
  s.apps["default/web"].status = "Ready";
  Batch b = observe_instances(s, obs, kT0);
  CHECK(b.put_instances.size() == 2);
  CHECK(b.events.empty());
  CHECK(observe_instances(apply_batch(s, b), obs, kT0).empty());
}

TEST_CASE("lifecycle: dependents start only once their dependencies serve", "[lifecycle]") {
  ClusterState s = two_placed();
  // api depends on web; both bound, nothing runs yet.
  AppRecord api = s.apps["default/web"];
  api.name = "api";
  api.dependencies = {"web"};
  s.apps["default/api"] = api;
  s.snapshot.roles["default/api/fe"] = s.snapshot.roles["default/web/fe"];
  Instance x = inst(s, "0.fe.web.default");
  x.app = "api";
  s.snapshot.instances.push_back(x);
  Actuation a = plan_actuation(s, Observation{});
  CHECK(a.starts.size() == 2);  // web's two.
  REQUIRE(a.held.size() == 1);
  CHECK(a.held[0].first == "0.fe.api.default");
  CHECK_THAT(a.held[0].second, Catch::Contains("waiting for dependency web to be ready"));

  // Once web's instances run, api starts.
  for (auto& i : s.snapshot.instances)
    if (i.app == "web") i.state = InstanceState::Running;
  Observation obs;
  for (const auto& i : s.snapshot.instances)
    if (i.app == "web") obs.copies.push_back(copy_of(i, CopyPhase::Running));
  Actuation b = plan_actuation(s, obs);
  REQUIRE(b.starts.size() == 1);
  CHECK(b.starts[0].instance.key() == "0.fe.api.default");
  CHECK(b.starts[0].env.at("GAIA_INSTANCE") == "0.fe.api.default");
  CHECK(b.stops.empty());
}

TEST_CASE("lifecycle: a role with after starts once the roles it follows serve", "[lifecycle][after]") {
  test::ClusterBuilder b;
  b.node("n1", 8000, 16);
  b.role("default", "hdfs", "zk", res(500, 1));
  b.role("default", "hdfs", "namenode", res(500, 1)).after = {"zk"};
  b.role("default", "hdfs", "datanode", res(500, 1)).after = {"namenode"};
  b.instance("default", "hdfs", "zk", 0, "n1");
  b.instance("default", "hdfs", "zk", 1, "n1");
  b.instance("default", "hdfs", "namenode", 0, "n1");
  b.instance("default", "hdfs", "datanode", 0, "n1");
  ClusterState s = test::runtime_state(b);
  // runtime_state copies the builder's roles into the app record; min_available 2 on
  // zk means the namenode waits for both.
  for (auto& r : s.apps["default/hdfs"].workload.roles)
    if (r.name == "zk") r.min_available = 2;
  s.snapshot.roles["default/hdfs/zk"].min_available = 2;
  for (auto& i : s.snapshot.instances) {
    i.state = InstanceState::Placed;
    i.generation = 1;
  }
  auto keys = [](const Actuation& a) {
    std::vector<std::string> out;
    for (const auto& st : a.starts) out.push_back(st.instance.key());
    std::sort(out.begin(), out.end());
    return out;
  };
  Actuation a = plan_actuation(s, Observation{});
  CHECK(keys(a) == std::vector<std::string>{"0.zk.hdfs.default", "1.zk.hdfs.default"});
  REQUIRE(a.held.size() == 2);
  for (const auto& [key, why] : a.held) {
    if (key == "0.namenode.hdfs.default") CHECK(why == "waiting for role zk of app hdfs to be ready (after)");
    else CHECK(why == "waiting for role namenode of app hdfs to be ready (after)");
  }

  // One zk serving is not enough for min_available 2.
  Observation obs;
  mut(s, "0.zk.hdfs.default").state = InstanceState::Running;
  obs.copies.push_back(copy_of(inst(s, "0.zk.hdfs.default"), CopyPhase::Running));
  obs.copies.push_back(copy_of(inst(s, "1.zk.hdfs.default"), CopyPhase::Starting));
  CHECK(keys(plan_actuation(s, obs)).empty());

  // Both serve: the namenode starts, the datanode still waits for it.
  mut(s, "1.zk.hdfs.default").state = InstanceState::Running;
  obs.copies[1].phase = CopyPhase::Running;
  Actuation c = plan_actuation(s, obs);
  CHECK(keys(c) == std::vector<std::string>{"0.namenode.hdfs.default"});
  REQUIRE(c.held.size() == 1);
  CHECK(c.held[0].first == "0.datanode.hdfs.default");

  // The namenode serves: the datanode starts.
  mut(s, "0.namenode.hdfs.default").state = InstanceState::Running;
  obs.copies.push_back(copy_of(inst(s, "0.namenode.hdfs.default"), CopyPhase::Running));
  CHECK(keys(plan_actuation(s, obs)) == std::vector<std::string>{"0.datanode.hdfs.default"});

  // A zk copy that fails takes the role below min_available again: a namenode that
  // restarts now waits, as it did the first time.
  mut(s, "1.zk.hdfs.default").state = InstanceState::Failed;
  mut(s, "0.namenode.hdfs.default").state = InstanceState::Placed;
  mut(s, "0.namenode.hdfs.default").generation = 2;
  Actuation d = plan_actuation(s, obs);
  bool namenode_held = false;
  for (const auto& [key, why] : d.held) namenode_held = namenode_held || key == "0.namenode.hdfs.default";
  CHECK(namenode_held);
}

TEST_CASE("lifecycle: a dependent's environment lists where its dependencies serve", "[lifecycle]") {
  ClusterState s = two_placed();
  AppRecord api = s.apps["default/web"];
  api.name = "api";
  api.dependencies = {"web"};
  s.apps["default/api"] = api;
  int k = 0;
  for (auto& i : s.snapshot.instances) {
    i.address = fmt::format("127.64.128.{}", 1 + k);
    i.ports = {{"http", 8080 + k}};
    i.state = k == 0 ? InstanceState::Running : InstanceState::Placed;  // Only ordinal 0 serves.
    ++k;
  }
  Instance x = inst(s, "0.fe.web.default");
  x.app = "api";
  auto env = instance_env(s, x);
  CHECK(env.at("GAIA_DEP_WEB_FE_HTTP") == "127.64.128.1:8080");
  for (auto& i : s.snapshot.instances) i.state = InstanceState::Running;
  env = instance_env(s, x);
  CHECK(env.at("GAIA_DEP_WEB_FE_HTTP") == "127.64.128.1:8080,127.64.128.2:8081");
  CHECK(env.at("GAIA_ADDRESS") == "127.64.128.1");
  CHECK(env.at("GAIA_PORT_HTTP") == "8080");
}

TEST_CASE("lifecycle: GAIA_DEP_ names the app, whichever release or tenant it is bound to", "[lifecycle][release]") {
  ClusterState s = two_placed();
  // web runs as release web-b of tenant shared; api (tenant default) is bound to it.
  std::map<std::string, AppRecord> apps;
  AppRecord web = s.apps["default/web"];
  web.tenant = "shared";
  web.name = "web-b";
  web.app = "web";
  web.workload.outputs = {{"url", "http://web-b"}};
  apps["shared/web-b"] = web;
  AppRecord api = s.apps["default/web"];
  api.name = "api";
  api.dependencies = {"shared/web-b"};
  api.dependency_ranges = {{"web", "*", "shared/web-b", "web"}};
  apps["default/api"] = api;
  s.apps = apps;
  int k = 0;
  for (auto& i : s.snapshot.instances) {
    i.tenant = "shared";
    i.app = "web-b";
    i.address = fmt::format("127.64.128.{}", 1 + k);
    i.ports = {{"http", 8080 + k}};
    i.state = InstanceState::Running;
    ++k;
  }
  Instance x = s.snapshot.instances[0];
  x.tenant = "default";
  x.app = "api";
  auto env = instance_env(s, x);
  CHECK(env.at("GAIA_DEP_WEB_URL") == "http://web-b");
  CHECK(env.at("GAIA_DEP_WEB_FE_HTTP") == "127.64.128.1:8080,127.64.128.2:8081");

  // Two releases of one app: each under its alias.
  AppRecord other = web;
  other.name = "web-c";
  other.workload.outputs = {{"url", "http://web-c"}};
  s.apps["shared/web-c"] = other;
  s.apps["default/api"].dependencies = {"shared/web-b", "shared/web-c"};
  s.apps["default/api"].dependency_ranges = {{"web", "*", "shared/web-b", "front"}, {"web", "*", "shared/web-c", "back"}};
  env = instance_env(s, x);
  CHECK(env.at("GAIA_DEP_FRONT_URL") == "http://web-b");
  CHECK(env.at("GAIA_DEP_BACK_URL") == "http://web-c");
  CHECK(env.count("GAIA_DEP_WEB_URL") == 0);
}

TEST_CASE("lifecycle: copies nobody wants are stopped and starting twice is not asked", "[lifecycle]") {
  ClusterState s = two_placed();
  Observation obs;
  obs.copies.push_back(copy_of(inst(s, "0.fe.web.default"), CopyPhase::Starting));
  ObservedCopy orphan = copy_of(inst(s, "0.fe.web.default"), CopyPhase::Running);
  orphan.instance = "7.fe.web.default";
  obs.copies.push_back(orphan);
  Actuation a = plan_actuation(s, obs);
  REQUIRE(a.starts.size() == 1);  // Only ordinal 1: ordinal 0's copy is starting.
  CHECK(a.starts[0].instance.key() == "1.fe.web.default");
  REQUIRE(a.stops.size() == 1);
  CHECK(a.stops[0].instance == "7.fe.web.default");
  CHECK(a.stops[0].reason == "no longer wanted");
}

TEST_CASE("lifecycle: a stateless instance moves make-before-break", "[lifecycle]") {
  ClusterState s = two_placed();
  Instance& i = *s.find_instance("0.fe.web.default");
  Observation obs;
  obs.copies.push_back(copy_of(i, CopyPhase::Running));  // On n1, generation 1.
  bind_instance(i, "n2");                                 // Moved: generation 2 on n2.
  Actuation a = plan_actuation(s, obs);
  CHECK(a.starts.size() == 2);
  CHECK(a.stops.empty());  // The old copy serves until the new one runs...
  i.state = InstanceState::Running;
  obs.copies.push_back(copy_of(i, CopyPhase::Running));
  Actuation b = plan_actuation(s, obs);
  REQUIRE(b.stops.size() == 1);  // ...then it goes.
  CHECK(b.stops[0].node == "n1");
}

TEST_CASE("lifecycle: a stateful instance never has two live copies", "[lifecycle]") {
  ClusterState s = two_placed();
  s.snapshot.roles["default/web/fe"].volumes.push_back(Volume{});
  Instance& i = *s.find_instance("0.fe.web.default");
  i.volumes.push_back(VolumeBinding{"data", "n1", "vg0", 1, 0});
  i.state = InstanceState::Running;
  Observation obs;
  obs.copies.push_back(copy_of(i, CopyPhase::Running));

  SECTION("evicted: it stays Terminating on its node until the copy is gone") {
    evict_instance(i, "preempted by x on n1");
    CHECK(i.state == InstanceState::Terminating);
    CHECK(i.node == "n1");
    Actuation a = plan_actuation(s, obs);
    REQUIRE(a.stops.size() == 1);
    CHECK(observe_instances(s, obs, kT0).empty());  // Still live: still Terminating.
    Batch gone = observe_instances(s, Observation{}, kT0);
    ClusterState after = apply_batch(s, gone);
    CHECK(inst(after, "0.fe.web.default").state == InstanceState::Pending);
    CHECK(inst(after, "0.fe.web.default").pending_reason == "preempted by x on n1");
    CHECK(inst(after, "0.fe.web.default").volumes.size() == 1);  // Back to its data.
  }
  SECTION("moved: the new copy waits for the old one to stop") {
    bind_instance(i, "n2");
    Actuation a = plan_actuation(s, obs);
    REQUIRE(a.stops.size() == 1);
    CHECK(a.stops[0].node == "n1");
    for (const auto& st : a.starts) CHECK(st.instance.key() != "0.fe.web.default");
    bool held = false;
    for (const auto& [key, why] : a.held) held |= key == "0.fe.web.default" && why.find("never two live copies") != std::string::npos;
    CHECK(held);
  }
  SECTION("on a down node the copy is presumed gone with it") {
    evict_instance(i, "node n1 is down", true);
    CHECK(i.state == InstanceState::Pending);
  }
}

}  // namespace
}  // namespace gaia
