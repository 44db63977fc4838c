#include <catch2/catch.hpp>

#include <sstream>

#include "controllers/explain.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

const FilterFailureInfo* failure(const NodeExplanation& n, const std::string& filter) {
  for (const auto& f : n.failures)
    if (f.filter == filter) return &f;
  return nullptr;
}

}  // namespace

TEST_CASE("explain a pending instance: per-node failures and counts", "[explain]") {
  ClusterBuilder b;
  b.node("n1", 8000, 8, {{"disk", "ssd"}});
  b.node("n2", 8000, 32, {{"disk", "hdd"}});
  b.node("n3", 8000, 32, {{"disk", "ssd"}}).state = NodeState::Cordoned;
  b.role("t1", "x", "used", res(1000, 1));
  b.instance("t1", "x", "used", 0, "n1");
  Role& r = b.role("t1", "db", "main", res(1000, 8));
  r.node_selector = {{"disk", "ssd"}};
  b.instance("t1", "db", "main", 0);
  auto e = explain(b.s, "0.main.db.t1");
  REQUIRE(e);
  CHECK_FALSE(e->placed);
  CHECK(e->fitting == 0);
  CHECK(e->summary ==
        "0/3 nodes fit: 1 NodeState, 1 NodeSelector, 1 ResourceFit (memory); preemption: no node where evicting "
        "lower-priority instances makes room");
  REQUIRE(e->nodes.size() == 3);
  const NodeExplanation& n1 = e->nodes[0];
  CHECK(n1.node == "n1");
  const FilterFailureInfo* fit = failure(n1, "ResourceFit");
  REQUIRE(fit);
  CHECK(fit->message == "memory 7Gi free < 8Gi requested");
  CHECK(n1.failures.size() == 1);
  REQUIRE(failure(e->nodes[1], "NodeSelector"));
  CHECK(failure(e->nodes[1], "NodeSelector")->message == "node_selector needs label disk=ssd, node has disk=hdd");
  CHECK(failure(e->nodes[2], "NodeState")->message == "node is Cordoned");

  std::string text = format_explanation(*e);
  CHECK(text.find("ResourceFit: memory 7Gi free < 8Gi requested") != std::string::npos);
  // Columns line up: "FIT" starts at the same offset as each row's yes/no.
  std::istringstream lines(text);
  std::string line;
  size_t fit_col = std::string::npos;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (line.starts_with("NODE")) fit_col = line.find("FIT");
    else if (fit_col != std::string::npos && line.starts_with("n")) {
      CHECK(line.substr(fit_col, 2) == "no");
      ++rows;
    }
  }
  CHECK(rows == 3);
}

TEST_CASE("explain a pending instance that would preempt", "[explain]") {
  ClusterBuilder b;
  b.node("n1", 2000, 8);
  b.role("t1", "batch", "w", res(2000, 1), Priority{Band::Nonprod, 10});
  b.instance("t1", "batch", "w", 0, "n1");
  b.role("t1", "shop", "api", res(2000, 1));
  b.instance("t1", "shop", "api", 0);
  auto e = explain(b.s, "0.api.shop.t1");
  REQUIRE(e);
  REQUIRE(e->preemptions.size() == 1);
  CHECK(e->preemptions[0].victim == "0.w.batch.t1");
  CHECK(e->summary == "0/1 nodes fit: 1 ResourceFit (cpu); would preempt 1 instance on n1");
  CHECK(format_explanation(*e).find("Would evict on n1:\n    0.w.batch.t1") != std::string::npos);
}

TEST_CASE("explain a placed instance: chosen node versus runner-up", "[explain]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32);
  b.node("n2", 8000, 32).cached_images = {"img:1"};
  b.node("n3", 1000, 32);
  b.role("t1", "a", "w", res(2000, 1)).image = "img:1";
  b.instance("t1", "a", "w", 0);
  Decision d = schedule(b.s, b.pending());
  REQUIRE(d.placements.size() == 1);
  apply_decision(b.s, d);
  auto e = explain(b.s, "0.w.a.t1");
  REQUIRE(e);
  CHECK(e->placed);
  CHECK(e->node == "n2");
  REQUIRE(e->chosen);
  REQUIRE(e->runner_up);
  CHECK(e->chosen->node == "n2");
  CHECK(e->chosen->feasible);
  CHECK(e->runner_up->node == "n1");
  CHECK(e->chosen->total > e->runner_up->total);
  CHECK(e->chosen->total == Approx(d.placements[0].score));
  bool image_term = false;
  for (const auto& s : e->chosen->scores)
    if (s.plugin == "CachedImage") {
      image_term = true;
      CHECK(s.raw == 100);
      CHECK(s.weighted == 100 * s.weight);
    }
  CHECK(image_term);
  CHECK(e->summary.starts_with("placed on n2 (score "));
  std::string text = format_explanation(*e);
  CHECK(text.find("n2 (chosen)") != std::string::npos);
  CHECK(text.find("n1 (runner-up)") != std::string::npos);

  auto one = explain(b.s, "0.w.a.t1", std::string("n3"));
  REQUIRE(one);
  REQUIRE(one->nodes.size() == 1);
  CHECK(one->nodes[0].failures.at(0).message == "cpu 1000m free < 2000m requested");
}

TEST_CASE("explain reports quota and unknown names", "[explain]") {
  ClusterBuilder b;
  b.node("n1", 8000, 32);
  Tenant t{"t1", {}, {}};
  t.quota.gpu = 0;
  b.s.tenants.push_back(t);
  b.role("t1", "ml", "gpu", res(1000, 1, 1));
  b.instance("t1", "ml", "gpu", 0);
  auto e = explain(b.s, "0.gpu.ml.t1");
  REQUIRE(e);
  CHECK(e->summary == "quota exceeded: tenant t1 gpu 0 used + 1 requested > 0 quota");
  CHECK(e->nodes.at(0).failures.at(0).filter == "TenantQuota");

  auto missing = explain(b.s, "0.nope.ml.t1");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().at(0).message == "unknown instance '0.nope.ml.t1'");
  CHECK_FALSE(explain(b.s, "0.gpu.ml.t1", std::string("n9")));
}
