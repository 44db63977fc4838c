// gaia map end to end: the real binary draws the example cluster with the example stack
// on it (text, JSON, SVG, usage), follows it with --watch until interrupted, shows
// pending work and hot spots on a small full cluster, and refuses bad flags with exit 2.
#include <catch2/catch.hpp>

#include <signal.h>

#include <filesystem>

#include "cli/table.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

std::vector<std::string> map_lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t map_occurrences(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("map: the example cluster with the example stack, as text, JSON and SVG", "[e2e][map]") {
  Scratch s;
  copy_examples(s);
  StoreCli cli(s);
  // No store yet: an error, not an empty map.
  RunResult missing = cli.expect(1, {"map"});
  CHECK(contains(missing.err, "store"));

  cli.ok({"cluster", "create", "-f", "examples/clusters/bigdata-50.yaml"});
  cli.ok({"submit", "examples/web", "--wait", "--timeout", "2m"});
  cli.ok({"submit", "examples/spark", "examples/trainer", "--wait", "--timeout", "2m"});
  auto st = cli.load();
  int occupying = 0;
  for (const auto& i : st.snapshot.instances) occupying += gaia::occupies_node(i) ? 1 : 0;
  REQUIRE(occupying > 10);

  SECTION("text, fitted to --width, without colour under NO_COLOR") {
    for (const char* width : {"60", "80", "132"}) {
      RunResult r = cli.ok({"map", "--width", width});
      INFO(r.out);
      CHECK(contains(r.out, "cluster bigdata-50 · allocation · "));
      CHECK(contains(r.out, "50 nodes in 3 racks, " + std::to_string(occupying) + " instances"));
      CHECK(contains(r.out, "rack z1/r1 · 15 nodes"));
      CHECK(contains(r.out, "rack z2/r3"));
      CHECK(contains(r.out, "legend:"));
      CHECK(contains(r.out, "pending: none"));
      CHECK(contains(r.out, "hot spots (90% or more):"));
      CHECK_FALSE(contains(r.out, "\033["));
      for (const auto& l : map_lines_of(r.out)) CHECK(gaia::cli::display_width(l) <= std::stoul(width));
    }
    // Not a terminal and no --width: 80 columns.
    RunResult plain = cli.ok({"map"});
    for (const auto& l : map_lines_of(plain.out)) CHECK(gaia::cli::display_width(l) <= 80);
    // 50 nodes fit with their names; --compact draws two characters a node.
    CHECK(contains(plain.out, "master-1 "));
    RunResult compact = cli.ok({"map", "--compact"});
    CHECK_FALSE(contains(compact.out, "master-1 "));
    cli.expect(2, {"map", "--compact", "--names"});
    RunResult colour = cli.ok({"--color", "always", "map"});
    CHECK(contains(colour.out, "\033[48;5;"));
  }

  SECTION("JSON: every node with its rack, figures and instances") {
    json j = parsed(cli.ok({"map", "-o", "json"}));
    CHECK(j["cluster"] == "bigdata-50");
    CHECK(j["by"] == "allocation");
    REQUIRE(j["nodes"].size() == 50);
    REQUIRE(j["racks"].size() == 3);
    CHECK(j["racks"][0]["name"] == "z1/r1");
    CHECK(j["racks"][2]["name"] == "z2/r3");
    size_t on_nodes = 0;
    for (const auto& n : j["nodes"]) {
      INFO(n.dump());
      on_nodes += n["instances"].size();
      CHECK(n["capacity"]["cpu_millis"].get<int64_t>() > 0);
      CHECK(n["allocated"]["cpu_millis"].get<int64_t>() <= n["capacity"]["cpu_millis"].get<int64_t>());
      CHECK(n["level"].get<int>() >= 0);
      CHECK(n["level"].get<int>() <= 9);
      CHECK_FALSE(n["rack"].get<std::string>().empty());
    }
    CHECK(on_nodes == static_cast<size_t>(occupying));
    CHECK(j["instances"] == occupying);
    CHECK(j["pending"]["count"] == 0);
    CHECK(j["hot_spots"].is_array());
  }

  SECTION("SVG: one rectangle per node, racks as groups, the cluster's name") {
    RunResult r = cli.ok({"map", "--svg", "map.svg"});
    CHECK(contains(r.out, "wrote map.svg: 50 node(s) in 3 rack(s)"));
    std::string svg = Scratch::slurp(s.dir() / "map.svg");
    CHECK(svg.starts_with("<?xml"));
    CHECK(contains(svg, "</svg>"));
    CHECK(map_occurrences(svg, "<rect class=\"node\"") == 50);
    CHECK(map_occurrences(svg, "<g class=\"rack\"") == 3);
    CHECK(contains(svg, "cluster bigdata-50"));
    CHECK(contains(svg, "<title>master-1 (rack z1/r1)"));
    CHECK_FALSE(std::filesystem::exists(s.dir() / "map.svg.tmp"));
    // With -o json the data goes to stdout as well.
    json j = parsed(cli.ok({"map", "--svg", "again.svg", "-o", "json"}));
    CHECK(j["nodes"].size() == 50);
    CHECK(std::filesystem::exists(s.dir() / "again.svg"));
    // A folder that does not exist: an error naming the file.
    RunResult bad = cli.expect(1, {"map", "--svg", "no/such/dir/map.svg"});
    CHECK(contains(bad.err, "no/such/dir/map.svg"));
  }

  SECTION("--by usage: nothing reported until the sim backend has a usage model") {
    RunResult before = cli.ok({"map", "--by", "usage"});
    CHECK(contains(before.out, "no instance reports usage"));
    CHECK(contains(before.out, "??"));
    cli.ok({"sim", "usage", "--all", "--cpu", "0.5", "--memory", "0.25"});
    json j = parsed(cli.ok({"map", "--by", "usage", "-o", "json"}));
    CHECK(j["by"] == "usage");
    CHECK(j["usage_unreported"] == 0);
    for (const auto& n : j["nodes"]) {
      INFO(n.dump());
      REQUIRE_FALSE(n["usage"].is_null());
      // Half the cpu requested, a quarter of the memory.
      CHECK(n["usage"]["cpu_millis"].get<int64_t>() * 2 == n["allocated"]["cpu_millis"].get<int64_t>());
      CHECK(n["level"].is_number());
    }
    RunResult after = cli.ok({"map", "--by", "usage"});
    CHECK_FALSE(contains(after.out, "no instance reports usage"));
    CHECK(contains(after.out, "used: cpu"));
  }
}

TEST_CASE("map: pending work and hot spots on a small full cluster", "[e2e][map]") {
  Scratch s;
  StoreCli cli(s);
  cli.ok({"cluster", "create", "--nodes", "3", "--cpu", "2", "--memory", "4Gi", "--racks", "1", "--name", "tiny"});
  write_app(s, "fill", "fill", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { work: { image: 'busybox:1.36', replicas: 4, resources: { cpu: '1900m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  cli.run({"submit", "fill"});
  json j = parsed(cli.ok({"map", "-o", "json"}));
  CHECK(j["cluster"] == "tiny");
  CHECK(j["pending"]["count"] == 1);
  REQUIRE(j["pending"]["largest"].size() == 1);
  CHECK(j["pending"]["largest"][0]["request"]["cpu_millis"] == 1900);
  CHECK(j["hot_spots"].size() == 3);
  RunResult text = cli.ok({"map"});
  CHECK(contains(text.out, "pending: 1 instance asking for cpu 1.9, memory 1Gi; the largest:"));
  CHECK(contains(text.out, ".work.fill.default"));
  CHECK(contains(text.out, "hot spots (90% or more): 3 nodes"));
  CHECK(contains(cli.ok({"map", "--compact"}).out, "@@ @@ @@"));
  RunResult higher = cli.ok({"map", "--hot", "99"});
  CHECK(contains(higher.out, "hot spots (99% or more): none"));
  // A cordoned node keeps its level with a mark.
  cli.ok({"node", "cordon", "node-1"});
  CHECK(contains(cli.ok({"map"}).out, "node-1 @/"));
}

TEST_CASE("map: --watch draws again every --interval until interrupted", "[e2e][map]") {
  Scratch s;
  StoreCli cli(s);
  cli.ok({"cluster", "create", "--nodes", "4", "--racks", "2"});
  pid_t pid = s.spawn({"--store", cli.store, "map", "--watch", "--interval", "100ms"}, "watch");
  KillOnExit guard(pid);
  auto out = [&] { return Scratch::slurp(s.dir() / "watch.out"); };
  CHECK(eventually([&] { return map_occurrences(out(), "legend:") >= 3; }, std::chrono::seconds(20)));
  ::kill(pid, SIGINT);
  CHECK(guard.wait() == 0);
  // To a file, pictures follow each other a blank line apart, with no screen clearing.
  CHECK_FALSE(contains(out(), "\033[2J"));
  CHECK(contains(out(), "\n\ncluster "));

  // JSON lines, one document a picture.
  pid_t jpid = s.spawn({"--store", cli.store, "map", "--watch", "--interval", "100ms", "-o", "json"}, "watchjson");
  KillOnExit jguard(jpid);
  auto jout = [&] { return Scratch::slurp(s.dir() / "watchjson.out"); };
  CHECK(eventually([&] { return map_occurrences(jout(), "\n") >= 2; }, std::chrono::seconds(20)));
  ::kill(jpid, SIGTERM);
  CHECK(jguard.wait() == 0);
  std::string text = jout();
  text = text.substr(0, text.rfind('\n') + 1);  // Whole lines only.
  for (const auto& doc : json_lines(text)) CHECK(doc["nodes"].size() == 4);
}

TEST_CASE("map: bad flags are usage errors (exit 2)", "[e2e][map]") {
  Scratch s;
  RunResult by = expect_exit(s, 2, {"map", "--by", "cpu"});
  CHECK(contains(by.err, "allocation"));
  RunResult width = expect_exit(s, 2, {"map", "--width", "5"});
  CHECK(contains(width.err, "--width"));
  expect_exit(s, 2, {"map", "--width", "wide"});
  expect_exit(s, 2, {"map", "-o", "yaml"});
  expect_exit(s, 2, {"map", "--hot", "0"});
  RunResult interval = expect_exit(s, 2, {"map", "--watch", "--interval", "0s"});
  CHECK(contains(interval.err, "must be positive"));
  expect_exit(s, 2, {"map", "--watch", "--interval", "soon"});
  RunResult alone = expect_exit(s, 2, {"map", "--interval", "1s"});
  CHECK(contains(alone.err, "--interval only applies with --watch"));
  expect_exit(s, 2, {"map", "extra"});
}

TEST_CASE("map: --svg onto a folder says so", "[cli][map]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "2", "--cpu", "4", "--memory", "16Gi"});
  std::filesystem::create_directories(s.dir() / "pictures");
  RunResult r = g.run({"map", "--svg", (s.dir() / "pictures").string()});
  CHECK(r.code == 1);
  CHECK(contains(r.err, "--svg"));
  CHECK_FALSE(contains(r.err, "Success"));
}
