// plan_rebalance: bounded moves that make a pending large instance fit, packing of
// lightly used nodes, the --max-moves bound, and migrate_times respected.
#include <catch2/catch.hpp>

#include <set>

#include "controllers/rebalance.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

// n1: three 1-core instances (1 core free); n2: one (3 free); a pending 4-core instance
// fits nowhere until the small one leaves n2 (it fits on n1).
ClusterState fragmented() {
  ClusterState s = fixture_cluster(2);
  add_record(s, fixture_app("small", {fixture_role("s", 4, res(1000, 1))}));
  add_record(s, fixture_app("big", {fixture_role("b", 1, res(4000, 1))}));
  for (int k = 0; k < 3; ++k) pin(s, "small", "s", k, "n1");
  pin(s, "small", "s", 3, "n2");
  Instance big = new_instance("default", "big", "1.0.0", s.snapshot.roles.at("default/big/b"), 0);
  big.pending_reason = "0/2 nodes fit";
  s.snapshot.instances.push_back(big);
  return s;
}

TEST_CASE("rebalance: one move makes a pending large instance fit", "[rebalance]") {
  ClusterState s = fragmented();
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  REQUIRE(p.moves.size() == 1);
  CHECK(p.moves[0].instance == "3.s.small.default");
  CHECK(p.moves[0].from == "n2");
  CHECK(p.moves[0].to == "n1");
  REQUIRE(p.fits.size() == 1);
  CHECK(p.fits[0].instance == "0.b.big.default");
  CHECK(p.fits[0].node == "n2");
  CHECK(p.after.find_instance("3.s.small.default")->migrations == 1);
  // Committing the plan and running the controllers places the big instance.
  ClusterState after = settle(p.after);
  const Instance* big = after.find_instance("0.b.big.default");
  CHECK(big->state == InstanceState::Running);
  CHECK(big->node == "n2");
  check_idempotent(after);
}

TEST_CASE("rebalance: --max-moves bounds the plan", "[rebalance]") {
  ClusterState s = fragmented();
  RebalancePlan none = plan_rebalance(s, RebalanceOptions{0, 20}, 0);
  CHECK(none.moves.empty());
  CHECK(none.batch.empty());
}

TEST_CASE("rebalance: instances past migrate_times are not moved", "[rebalance]") {
  ClusterState s = fragmented();
  s.find_instance("3.s.small.default")->migrations = 3;  // The role's default migrate_times.
  // The one-move plan is gone; moving the three from n1 to n2 is the way left.
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  CHECK(p.moves.size() == 3);
  for (const auto& m : p.moves) CHECK(m.instance != "3.s.small.default");
  REQUIRE(p.fits.size() == 1);
  CHECK(p.fits[0].node == "n1");
  // With only two moves allowed nothing helps, and the plan says so.
  RebalancePlan two = plan_rebalance(s, RebalanceOptions{2, 20}, 0);
  CHECK(two.fits.empty());
  REQUIRE_FALSE(two.notes.empty());
  CHECK(two.notes[0].find("0.b.big.default still fits nowhere") != std::string::npos);
}

TEST_CASE("rebalance: defragmentation empties lightly used nodes", "[rebalance]") {
  ClusterState s = fixture_cluster(4);
  add_record(s, fixture_app("web", {fixture_role("w", 4, res(500, 1))}));
  for (int k = 0; k < 4; ++k) pin(s, "web", "w", k, fmt::format("n{}", k + 1));
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  CHECK(p.nodes_in_use_before == 4);
  CHECK(p.nodes_in_use_after == 1);
  CHECK(p.moves.size() == 3);
  CHECK(p.emptied.size() == 3);
  CHECK(p.allocation_after > p.allocation_before);
  for (const auto& m : p.moves) CHECK(m.purpose.starts_with("defragment"));
  // Nothing moved twice.
  std::set<std::string> moved;
  for (const auto& m : p.moves) CHECK(moved.insert(m.instance).second);
  check_idempotent(p.after);
  // A second plan on the packed cluster has nothing to do.
  CHECK(plan_rebalance(p.after, RebalanceOptions{}, 0).moves.empty());
}

TEST_CASE("rebalance: defragmentation stops at max-moves", "[rebalance]") {
  ClusterState s = fixture_cluster(4);
  add_record(s, fixture_app("web", {fixture_role("w", 4, res(500, 1))}));
  for (int k = 0; k < 4; ++k) pin(s, "web", "w", k, fmt::format("n{}", k + 1));
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{1, 20}, 0);
  CHECK(p.moves.size() == 1);
  CHECK(p.nodes_in_use_after == 3);
}

TEST_CASE("rebalance: allocation rate counts ready nodes in use", "[rebalance]") {
  ClusterState s = fixture_cluster(2);
  add_record(s, fixture_app("web", {fixture_role("w", 1, res(2000, 8))}));
  pin(s, "web", "w", 0, "n1");
  auto [rate, in_use] = allocation_rate(s);
  CHECK(in_use == 1);
  CHECK(rate == Approx(50.0));  // Half of n1's cpu and half of its memory.
}

}  // namespace
}  // namespace gaia
