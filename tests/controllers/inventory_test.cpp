// Nodes from a backend that owns them (Kubernetes): new ones are added one by one, a
// node not ready for longer than the heartbeat timeout goes down, and a node the
// backend stops listing is only cordoned: nothing the user did not name is stopped.
#include <catch2/catch.hpp>

#include "controllers/inventory.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

ClusterState with_web() {
  ClusterState s = fixture_cluster(3);
  add_record(s, fixture_app("web", {fixture_role("web", 2, res(500, 1))}));
  pin(s, "web", "web", 0, "n1");
  pin(s, "web", "web", 1, "n2");
  return s;
}

std::vector<InventoryNode> listed(const ClusterState& s) {
  std::vector<InventoryNode> out;
  for (const auto& n : s.snapshot.nodes) out.push_back(InventoryNode{n, true, "", 0, false});
  return out;
}

ControllerContext ctx(int64_t timeout_ms = 30'000) {
  ControllerContext c{kNow, {}};
  c.options.heartbeat_timeout_ms = timeout_ms;
  return c;
}

const Node& node_in(const ClusterState& s, const Batch& b, const std::string& name) {
  static ClusterState after;
  after = apply_batch(s, b);
  const Node* n = after.find_node(name);
  REQUIRE(n);
  return *n;
}

}  // namespace

TEST_CASE("inventory: the same nodes change nothing", "[inventory]") {
  ClusterState s = with_web();
  CHECK(sync_inventory(s, listed(s), ctx()).batch.empty());
}

TEST_CASE("inventory: an empty node list changes nothing", "[inventory]") {
  // An API server that answers with no nodes (a selector that matches nothing after an
  // edit, a cluster being rebuilt) must not take every node down and stop every pod.
  ClusterState s = with_web();
  CHECK(sync_inventory(s, {}, ctx()).batch.empty());
}

TEST_CASE("inventory: a node the backend no longer lists is cordoned and keeps its instances", "[inventory]") {
  ClusterState s = with_web();
  auto inv = listed(s);
  inv.erase(inv.begin());  // n1 is gone from the list (deleted, or no longer selected).
  auto r = sync_inventory(s, inv, ctx());
  const Node& n1 = node_in(s, r.batch, "n1");
  CHECK(n1.state == NodeState::Cordoned);
  ClusterState after = apply_batch(s, r.batch);
  for (const auto& i : after.snapshot.instances) CHECK(!i.node.empty());
  bool said = false;
  for (const auto& e : r.batch.events) said |= e.reason == "NodeCordoned" && e.message.find("no longer lists") != std::string::npos;
  CHECK(said);
  // Listed again: uncordoned.
  auto back = sync_inventory(after, listed(s), ctx());
  CHECK(node_in(after, back.batch, "n1").state == NodeState::Ready);
}

TEST_CASE("inventory: a node not ready past the timeout goes down, and recovers when ready", "[inventory]") {
  ClusterState s = with_web();
  auto inv = listed(s);
  inv[0].ready = false;
  inv[0].not_ready_reason = "KubeletNotReady";
  inv[0].not_ready_since_ms = kNow - 10'000;
  auto early = sync_inventory(s, inv, ctx());
  CHECK(early.batch.empty());
  CHECK(early.wake_at_ms == kNow - 10'000 + 30'001);
  inv[0].not_ready_since_ms = kNow - 40'000;
  auto late = sync_inventory(s, inv, ctx());
  const Node& down = node_in(s, late.batch, "n1");
  CHECK(down.state == NodeState::Down);
  CHECK(down.down_reason.starts_with("kubernetes: node not ready for 40s"));
  ClusterState after = apply_batch(s, late.batch);
  auto recovered = sync_inventory(after, listed(s), ctx());
  CHECK(node_in(after, recovered.batch, "n1").state != NodeState::Down);
}

TEST_CASE("inventory: new nodes are added one by one, a refused one does not hold the others back",
          "[inventory]") {
  ClusterState s = with_web();
  auto inv = listed(s);
  Node clash = fixture_node("n9", 9, 4000, 16);
  clash.address = s.snapshot.nodes[0].address;  // The address of n1.
  Node fine = fixture_node("n10", 10, 4000, 16);
  inv.push_back(InventoryNode{clash, true, "", 0, false});
  inv.push_back(InventoryNode{fine, true, "", 0, false});
  auto r = sync_inventory(s, inv, ctx());
  ClusterState after = apply_batch(s, r.batch);
  CHECK(after.find_node("n10"));
  CHECK(!after.find_node("n9"));
  bool warned = false;
  for (const auto& e : r.batch.events) warned |= e.reason == "NodeSyncFailed" && e.message.find("n9") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("inventory: changed capacity and labels update the node in place", "[inventory]") {
  ClusterState s = with_web();
  auto inv = listed(s);
  inv[1].node.capacity.cpu_millis = 8000;
  inv[1].node.labels["disk"] = "ssd";
  auto r = sync_inventory(s, inv, ctx());
  const Node& n2 = node_in(s, r.batch, "n2");
  CHECK(n2.capacity.cpu_millis == 8000);
  CHECK(n2.labels.at("disk") == "ssd");
  ClusterState after = apply_batch(s, r.batch);
  int on_n2 = 0;
  for (const auto& i : after.snapshot.instances) on_n2 += i.node == "n2";
  CHECK(on_n2 == 1);
}

}  // namespace gaia
