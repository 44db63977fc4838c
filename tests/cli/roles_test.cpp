// End-to-end tests of two role fields with the real binary on the embedded default:
// `after` (a role starts once the roles it follows serve) and `limits` (Burstable roles:
// what describe, render and the sim's run-time controller do with them). The start gate
// is decided once for every backend (controllers/lifecycle.cpp, plan_actuation).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// coord (2 instances, both needed), then server after coord, then client after server.
std::string ordered_main() {
  return "function(config, deps, app) {\n"
         "  local base = { image: 'busybox:1', resources: { cpu: '500m', memory: '256Mi' } },\n"
         "  roles: {\n"
         "    coord: base + { replicas: 2, migration: { min_available: 2 } },\n"
         "    server: base + { after: ['coord'] },\n"
         "    client: base + { after: ['server'] },\n"
         "  },\n"
         "  outputs: {},\n"
         "}\n";
}

void one_node(const Scratch& s, const StoreCli& cli) {
  s.write("cluster.yaml", "name: sim\nnodes:\n  - name: n1\n    capacity: {cpu: 8, memory: 16Gi}\n");
  cli.ok({"cluster", "create", "-f", "cluster.yaml"});
}

}  // namespace

TEST_CASE("after: each role starts only once the roles it follows serve, and describe shows the order",
          "[e2e][after]") {
  Scratch s;
  StoreCli cli(s);
  one_node(s, cli);
  write_app(s, "apps/chain", "chain", "1.0.0", "", "{}\n", ordered_main());
  cli.ok({"submit", "apps/chain", "--wait"});

  // The timeline's Started events, in sequence order: both coords, then the server,
  // then the client.
  std::vector<std::string> started;
  for (const auto& e : json_lines(cli.ok({"events", "-o", "json", "--reason", "Started"}).out))
    started.push_back(e.value("instance", ""));
  INFO(fmt::format("{}", fmt::join(started, " ")));
  REQUIRE(started.size() == 4);
  CHECK(std::find(started.begin(), started.end(), "0.server.chain.default") - started.begin() == 2);
  CHECK(started[3] == "0.client.chain.default");

  auto describe = cli.ok({"describe", "app", "chain"}).out;
  CHECK_THAT(describe, Catch::Contains("client starts after server"));
  CHECK_THAT(describe, Catch::Contains("server starts after coord"));
  auto doc = json::parse(cli.ok({"render", "apps/chain", "-o", "json"}).out);
  CHECK(doc["spec"]["roles"]["client"]["after"] == json::array({"server"}));
  CHECK_FALSE(doc["spec"]["roles"]["coord"].contains("after"));
}

TEST_CASE("after: a role whose roles before it cannot serve stays placed, and says why", "[e2e][after]") {
  Scratch s;
  StoreCli cli(s);
  one_node(s, cli);
  // Two coords that may not share a node, on one node: one stays pending, and coord
  // (min_available 2) is never available.
  std::string main = ordered_main();
  replace_all(main, "coord: base + {",
              "coord: base + { anti_affinity: { required: [{ target: 'instance', match_labels: { role: 'coord' }, "
              "topology: 'node' }] },");
  write_app(s, "apps/chain", "chain", "1.0.0", "", "{}\n", main);
  cli.ok({"submit", "apps/chain"});
  auto list = json::parse(cli.ok({"get", "instances", "-o", "json"}).out);
  for (const auto& i : list)
    if (i["role"] != "coord") CHECK(i["state"] == "Placed");
  auto text = cli.ok({"get", "instances"}).out;
  CHECK_THAT(text, Catch::Contains("waiting for role coord of app chain to be ready (after)"));
  CHECK_THAT(text, Catch::Contains("waiting for role server of app chain to be ready (after)"));
  auto one = cli.ok({"describe", "instance", "0.server.chain.default"}).out;
  CHECK_THAT(one, Catch::Contains("waiting for role coord of app chain to be ready (after)"));
  CHECK(json_lines(cli.ok({"events", "-o", "json", "--reason", "Started", "--instance", "0.server.chain.default"}).out)
            .empty());
}

TEST_CASE("after: a cycle or an unknown role is a located error and nothing is submitted", "[e2e][after]") {
  Scratch s;
  StoreCli cli(s);
  one_node(s, cli);
  std::string main = ordered_main();
  replace_all(main, "coord: base + {", "coord: base + { after: ['client'],");
  write_app(s, "apps/chain", "chain", "1.0.0", "", "{}\n", main);
  int64_t before = cli.revision();
  auto r = cli.expect(1, {"submit", "apps/chain"});
  CHECK_THAT(r.err, Catch::Contains("main.jsonnet"));
  CHECK_THAT(r.err, Catch::Contains("roles.client.after"));
  CHECK_THAT(r.err, Catch::Contains("the start order has a cycle: client -> server -> coord -> client"));
  CHECK(cli.revision() == before);

  replace_all(main, "after: ['client'],", "after: ['clinet'],");
  write_app(s, "apps/chain", "chain", "1.0.0", "", "{}\n", main);
  auto v = expect_exit(s, 1, {"validate", "apps/chain"});
  CHECK_THAT(v.err, Catch::Contains("'clinet' is not a role of app chain"));
  CHECK_THAT(v.err, Catch::Contains("did you mean 'client'?"));
}

TEST_CASE("limits: a Burstable role reserves its requests, shows its limits, and is killed above its memory limit",
          "[e2e][limits]") {
  Scratch s;
  StoreCli cli(s);
  one_node(s, cli);
  write_app(s, "apps/burst", "burst", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { worker: { image: 'busybox:1', replicas: 2,\n"
            "    resources: { cpu: '1', memory: '2Gi' }, limits: { cpu: '4', memory: '3Gi' },\n"
            "    restart: { retry_times: 3, backoff: '1h' } } },\n"
            "  outputs: {},\n"
            "}\n");
  cli.ok({"submit", "apps/burst", "--wait"});

  // The node's allocation counts the requests only.
  auto nodes = json::parse(cli.ok({"get", "nodes", "-o", "json"}).out);
  REQUIRE(nodes.size() == 1);
  CHECK(nodes[0]["allocated"]["memory_bytes"] == 4LL << 30);
  auto inst = cli.ok({"describe", "instance", "0.worker.burst.default"}).out;
  CHECK_THAT(inst, Catch::Contains("Burstable"));
  CHECK_THAT(inst, Catch::Contains("Limits"));
  auto app = cli.ok({"describe", "app", "burst"}).out;
  CHECK_THAT(app, Catch::Contains("1/4"));
  CHECK_THAT(app, Catch::Contains("2Gi/3Gi"));

  // Kubernetes manifests carry both.
  auto kube = json::parse(cli.ok({"render", "apps/burst", "--target", "kubernetes", "-o", "json"}).out);
  bool found = false;
  for (const auto& item : kube["items"]) {
    if (item["kind"] != "Deployment") continue;
    const auto& res = item["spec"]["template"]["spec"]["containers"][0]["resources"];
    CHECK(res["limits"] == json{{"cpu", "4"}, {"memory", "3Gi"}});
    CHECK(res["requests"] == json{{"cpu", "1"}, {"memory", "2Gi"}});
    found = true;
  }
  CHECK(found);

  // Memory at 140% of the request (2.8Gi) is within the limit: nothing happens. Cpu at
  // 600% is throttled at the 4-core limit.
  cli.ok({"sim", "usage", "burst", "--cpu", "6", "--memory", "1.4"});
  auto w = json::parse(cli.ok({"get", "instances", "-o", "json"}).out);
  for (const auto& i : w) {
    CHECK(i["state"] == "Running");
    CHECK(i["usage"]["cpu_millis"] == 4000);
  }
  CHECK(json_lines(cli.ok({"events", "-o", "json", "--reason", "OOMKilled"}).out).empty());

  // One instance at 160% (3.2Gi) is above its 3Gi limit: killed by its own limit on a
  // node with room to spare.
  cli.ok({"sim", "usage", "0.worker.burst.default", "--memory", "1.6"});
  auto killed = json_lines(cli.ok({"events", "-o", "json", "--reason", "OOMKilled"}).out);
  REQUIRE(killed.size() == 1);
  CHECK(killed[0]["instance"] == "0.worker.burst.default");
  CHECK_THAT(killed[0]["message"].get<std::string>(), Catch::Contains("above its limit of 3Gi"));
}

TEST_CASE("limits: a limit below its request is a located error", "[e2e][limits]") {
  Scratch s;
  write_app(s, "apps/bad", "bad", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { w: { image: 'busybox:1', resources: { cpu: '2', memory: '2Gi' }, limits: { memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  auto r = expect_exit(s, 1, {"validate", "apps/bad"});
  CHECK_THAT(r.err, Catch::Contains("roles.w.limits.memory"));
  CHECK_THAT(r.err, Catch::Contains("1Gi is below the request of 2Gi"));
}
