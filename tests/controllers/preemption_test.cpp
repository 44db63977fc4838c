#include <catch2/catch.hpp>

#include "controllers/scheduler.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

const Priority kNonprod10{Band::Nonprod, 10};
const Priority kNonprod50{Band::Nonprod, 50};
const Priority kProd{Band::Prod, 100};

}  // namespace

TEST_CASE("prod preempts nonprod on the node needing the fewest victims", "[preemption]") {
  ClusterBuilder b;
  // "a-three" would win a name tie, so only the victim count can send it to "b-one".
  b.node("a-three", 3000, 16);
  b.node("b-one", 3000, 16);
  b.role("t1", "batch", "small", res(1000, 1), kNonprod10);
  b.role("t1", "batch", "big", res(3000, 1), kNonprod50);
  for (int i = 0; i < 3; ++i) b.instance("t1", "batch", "small", i, "a-three");
  b.instance("t1", "batch", "big", 0, "b-one");
  b.role("t1", "shop", "api", res(3000, 1), kProd);
  b.instance("t1", "shop", "api", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "b-one");
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "0.big.batch.t1");
  CHECK(d.preemptions[0].node == "b-one");
  CHECK(d.preemptions[0].preemptor == "0.api.shop.t1");
}

TEST_CASE("among equally many victims the lowest priority goes", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 2000, 16);
  b.node("n2", 2000, 16);
  b.role("t1", "batch", "mid", res(2000, 1), kNonprod50);
  b.role("t1", "batch", "low", res(2000, 1), kNonprod10);
  b.instance("t1", "batch", "mid", 0, "n1");
  b.instance("t1", "batch", "low", 0, "n2");
  b.role("t1", "shop", "api", res(2000, 1), kProd);
  b.instance("t1", "shop", "api", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "0.low.batch.t1");
  CHECK(d.placements.at(0).node == "n2");
}

TEST_CASE("only what is needed is evicted", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 4000, 16);
  b.role("t1", "batch", "w", res(1000, 1), kNonprod10);
  for (int i = 0; i < 4; ++i) b.instance("t1", "batch", "w", i, "n1");
  b.role("t1", "shop", "api", res(2000, 1), kProd);
  b.instance("t1", "shop", "api", 0);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.preemptions.size() == 2);
  CHECK(d.placements.size() == 1);
}

TEST_CASE("a non-preemptible nonprod instance is never a victim", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 2000, 16);
  b.role("t1", "platform", "agent", res(2000, 1), Priority{Band::Nonprod, 10, false});
  b.instance("t1", "platform", "agent", 0, "n1");
  b.role("t1", "shop", "api", res(2000, 1), kProd);
  b.instance("t1", "shop", "api", 0);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.preemptions.empty());
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason ==
        "0/1 nodes fit: 1 ResourceFit (cpu); preemption: no node where evicting lower-priority instances makes room");
}

TEST_CASE("equal priority does not preempt", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 2000, 16);
  b.role("t1", "a", "x", res(2000, 1), kProd);
  b.instance("t1", "a", "x", 0, "n1");
  b.role("t1", "b", "y", res(2000, 1), kProd);
  b.instance("t1", "b", "y", 0);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.preemptions.empty());
  CHECK(d.unschedulable.size() == 1);
}

TEST_CASE("min_available of the victims' role is respected", "[preemption]") {
  ClusterBuilder b;
  b.node("a", 4000, 16);
  b.node("b", 4000, 16);
  // One victim on "a" would be cheapest, but its role must keep one running instance.
  b.role("t1", "batch", "keep", res(4000, 1), kNonprod10).min_available = 1;
  b.instance("t1", "batch", "keep", 0, "a");
  b.role("t1", "batch", "free", res(2000, 1), kNonprod50);
  b.instance("t1", "batch", "free", 0, "b");
  b.instance("t1", "batch", "free", 1, "b");
  b.role("t1", "shop", "api", res(4000, 1), kProd);
  b.instance("t1", "shop", "api", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].node == "b");
  CHECK(d.preemptions.size() == 2);
  for (const auto& p : d.preemptions) CHECK(p.victim.find("free") != std::string::npos);

  // Without the budget, the single cheaper victim on "a" is taken.
  b.s.roles.at("t1/batch/keep").min_available = 0;
  d = schedule(b.s, b.pending());
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "0.keep.batch.t1");
}

TEST_CASE("a sys instance that fits nowhere even with preemption stays pending", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32);
  b.node("n2", 8000, 32);
  b.role("t1", "batch", "w", res(8000, 1), kNonprod10);
  b.instance("t1", "batch", "w", 0, "n1");
  b.role("sys", "infra", "giant", res(64000, 1), Priority{Band::Sys, 100});
  b.instance("sys", "infra", "giant", 0);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.placements.empty());
  CHECK(d.preemptions.empty());
  REQUIRE(d.unschedulable.size() == 1);
  CHECK(d.unschedulable[0].reason ==
        "0/2 nodes fit: 2 ResourceFit (cpu); preemption: no node where evicting lower-priority instances makes room");
}

TEST_CASE("sys preempts prod, a fixed port holder is evicted", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32);
  b.role("t1", "shop", "edge", res(1000, 1), kProd).ports = {Port{"http", 443, "TCP"}};
  b.instance("t1", "shop", "edge", 0, "n1").ports = {{"http", 443}};
  b.role("sys", "infra", "lb", res(1000, 1), Priority{Band::Sys, 100}).ports = {Port{"https", 443, "TCP"}};
  b.instance("sys", "infra", "lb", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.preemptions.size() == 1);
  CHECK(d.preemptions[0].victim == "0.edge.shop.t1");
  REQUIRE(d.placements.size() == 1);
  CHECK(d.placements[0].ports.at("https") == 443);
}

TEST_CASE("preemption does not break required anti-affinity", "[preemption]") {
  ClusterBuilder b;
  b.node("n1", 2000, 16);
  AffinityTerm anti;
  anti.target = AffinityTerm::Target::Instance;
  anti.match = {{"gaia.io/role", "In", {"dn"}}};
  anti.topology = "node";
  b.role("t1", "hdfs", "dn", res(1000, 1), kProd).required_anti_affinity = {anti};
  b.instance("t1", "hdfs", "dn", 0, "n1");
  b.role("t1", "batch", "w", res(1000, 1), kNonprod10);
  b.instance("t1", "batch", "w", 0, "n1");
  b.instance("t1", "hdfs", "dn", 1);
  Decision d = schedule(b.s, b.pending());
  CHECK(d.preemptions.empty());
  REQUIRE(d.unschedulable.size() == 1);
  // Resources fail first on that node, and evicting cannot fix the anti-affinity.
  CHECK(d.unschedulable[0].reason.starts_with("0/1 nodes fit: 1 ResourceFit (cpu); preemption: no node"));
}
