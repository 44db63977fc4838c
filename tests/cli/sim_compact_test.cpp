// gaia sim compact end to end: the real binary judges the policies on a small generated
// cell, writes nothing to a store, and refuses bad flags with a reason.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

TEST_CASE("sim compact: every policy's smallest cell, as a table and as JSON", "[cli][sim]") {
  Scratch s;
  RunResult r = ok(s, {"sim", "compact", "--machines", "60", "--seeds", "2", "-o", "json"});
  json doc = json::parse(r.out);
  REQUIRE(doc["policies"].size() == 7);
  for (const auto& p : doc["policies"]) {
    INFO(p.dump());
    CHECK(p["runs"].size() == 2);
    CHECK(p["min"].get<int>() >= 1);
    // A cell grows to at most three times its 60 machines; segregated work runs in two.
    CHECK(p["max"].get<int>() <= (p["policy"] == "gaia-segregated" ? 360 : 180));
    CHECK(p["runs"][0]["fits"] == true);
    CHECK(p["min"].get<int>() <= p["p50"].get<int>());
  }
  CHECK(doc["policies"][0]["policy"] == "gaia");

  RunResult text = ok(s, {"sim", "compact", "--machines", "60", "--seeds", "2", "--policy", "best-fit", "--policy", "gaia"});
  CHECK(text.out.find("POLICY") != std::string::npos);
  CHECK(text.out.find("best-fit") != std::string::npos);
  CHECK(text.out.find("k8s-least-allocated") == std::string::npos);
  // No store was created or touched.
  CHECK_FALSE(std::filesystem::exists(s.dir() / "state"));
}

TEST_CASE("sim compact: bad flags are refused with what is expected", "[cli][sim]") {
  Scratch s;
  RunResult unknown = expect_exit(s, 2, {"sim", "compact", "--policy", "first-fit"});
  CHECK(unknown.err.find("first-fit") != std::string::npos);
  CHECK(unknown.err.find("best-fit") != std::string::npos);
  expect_exit(s, 2, {"sim", "compact", "--workload-seed", "-1"});
  RunResult machines = expect_exit(s, 2, {"sim", "compact", "--machines", "0"});
  CHECK(machines.err.find("--machines") != std::string::npos);
  CHECK(machines.err.find("not in range") != std::string::npos);
  RunResult fill = expect_exit(s, 2, {"sim", "compact", "--fill", "1.5"});
  CHECK(fill.err.find("--fill") != std::string::npos);
  expect_exit(s, 2, {"sim", "compact", "--seeds", "many"});
}

TEST_CASE("sim compact: --plot draws the cell sizes with gnuplot", "[cli][sim]") {
  Scratch s;
  auto svg = s.dir() / "compact.svg";
  RunResult r = ok(s, {"sim", "compact", "--machines", "60", "--seeds", "2", "--policy", "gaia", "--policy", "best-fit",
                       "--plot", svg.string()});
  CHECK(contains(r.out, "Plot written to"));
  std::ifstream in(svg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "<svg"));
  CHECK(contains(text, "best-fit"));
  CHECK(contains(text, "machines needed"));
  RunResult bad = expect_exit(s, 2, {"sim", "compact", "--plot", (s.dir() / "x.jpg").string()});
  CHECK(contains(bad.err, ".svg or .png"));
}
