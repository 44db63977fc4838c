// The heartbeat check: a node whose agent stopped beating is marked down after the
// timeout and its instances move; its agent beating again brings it back; a node a user
// failed by hand, or one no agent ever served, is left alone.
#include <catch2/catch.hpp>

#include "controllers/migration.hpp"
#include "controllers/node_health.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

// Three nodes; four web instances running on n1; n1 and n2 served by an agent that
// beat `ago_ms` before kNow. n3 never had an agent.
ClusterState served(int64_t ago_ms) {
  ClusterState s = fixture_cluster(3);
  add_record(s, fixture_app("web", {fixture_role("web", 4, res(500, 1))}));
  for (int k = 0; k < 4; ++k) pin(s, "web", "web", k, "n1");
  s.apps.at("default/web").status = "Ready";
  s.heartbeats["n1"] = Heartbeat{kNow - ago_ms, "pid 7 on host"};
  s.heartbeats["n2"] = Heartbeat{kNow - ago_ms, "pid 7 on host"};
  return s;
}

ControllerContext ctx_at(int64_t now_ms, int64_t timeout_ms = 30'000) {
  ControllerContext c{now_ms, {}};
  c.options.heartbeat_timeout_ms = timeout_ms;
  return c;
}

}  // namespace

TEST_CASE("node health: fresh heartbeats change nothing and ask to wake at the timeout", "[node_health]") {
  ClusterState s = served(5'000);
  auto r = reconcile_node_health(s, ctx_at(kNow));
  CHECK(r.batch.empty());
  CHECK(r.wake_at_ms == kNow - 5'000 + 30'000 + 1);
}

TEST_CASE("node health: a silent agent's nodes go down and their instances move", "[node_health]") {
  ClusterState s = served(31'000);
  auto r = reconcile_node_health(s, ctx_at(kNow));
  REQUIRE(r.batch.put_nodes.size() == 2);  // n1 and n2; n3 never had an agent.
  for (const auto& n : r.batch.put_nodes) {
    CHECK(n.state == NodeState::Down);
    CHECK(n.down_reason == "heartbeat: no heartbeat from its agent (pid 7 on host) for 31s, timeout 30s");
  }
  REQUIRE(events_with(r.batch, "NodeDown") == 2);
  CHECK(r.batch.events[0].type == "Warning");
  CHECK(r.batch.events[0].message.find("its 4 instance(s) are requeued") != std::string::npos);

  // The default controllers run it first, so the same pass moves the instances to n3.
  ControllerContext c = ctx_at(kNow);
  auto out = settle_sim(s, c);
  REQUIRE(out.converged);
  CHECK(count_if_state(out.after, [](const Instance& i) { return i.node == "n3" && i.state == InstanceState::Running; }) ==
        4);
  // Down once: a second run with the same silence does nothing.
  CHECK(reconcile_node_health(out.after, c).batch.empty());
}

TEST_CASE("node health: the agent beating again brings back only the nodes it took down", "[node_health]") {
  ClusterState s = served(31'000);
  ClusterState down = apply_batch(s, reconcile_node_health(s, ctx_at(kNow)).batch);
  // n2 was also failed by hand later: a user's `node fail` is not undone by a heartbeat.
  down.find_node("n2")->down_reason = "gaia node fail";
  down.heartbeats["n1"].at_ms = kNow + 1'000;
  down.heartbeats["n2"].at_ms = kNow + 1'000;
  auto r = reconcile_node_health(down, ctx_at(kNow + 2'000));
  REQUIRE(r.batch.put_nodes.size() == 1);
  CHECK(r.batch.put_nodes[0].name == "n1");
  CHECK(r.batch.put_nodes[0].state == NodeState::Ready);
  CHECK(r.batch.put_nodes[0].down_reason.empty());
  REQUIRE(events_with(r.batch, "NodeRecovered") == 1);
  CHECK(r.batch.events[0].message.starts_with("its agent (pid 7 on host) reports again: ready again"));
}

TEST_CASE("node health: node fail records its reason and recover clears it", "[node_health]") {
  ClusterState s = served(0);
  auto failed = decide_node_fail(s, "n1", false);
  REQUIRE(failed);
  CHECK(failed->batch.put_nodes[0].down_reason == "gaia node fail");
  CHECK(failed->batch.events[0].message == "marked down (gaia node fail): its 4 instance(s) are requeued");
  ClusterState down = apply_batch(s, failed->batch);
  // A fresh heartbeat does not bring back a node a user failed.
  CHECK(reconcile_node_health(down, ctx_at(kNow)).batch.empty());
  auto back = decide_node_recover(down, "n1");
  REQUIRE(back);
  CHECK(back->batch.put_nodes[0].down_reason.empty());
}

TEST_CASE("node health: removing a node forgets its heartbeat", "[node_health]") {
  ClusterState s = served(0);
  Batch b;
  b.delete_nodes.push_back("n2");
  ClusterState after = apply_batch(s, b);
  CHECK(after.heartbeats.count("n2") == 0);
  CHECK(after.heartbeats.count("n1") == 1);
}

}  // namespace gaia
