// End-to-end tests of storage classes and kinds (issue 15 item 4) with the real binary
// on the embedded default: a cluster file declaring its own classes, the warehouse
// example using a local and a claim class, a class the cluster lacks refused before
// anything is written (located at the spec's string), a claim volume following its
// instance off a node that went down, and the Kubernetes target writing class names
// as given.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// One role with one volume of class `cls`.
std::string volume_main(const std::string& cls, int replicas = 1) {
  return fmt::format(
      "function(config, deps, app) {{\n"
      "  roles: {{\n"
      "    db: {{\n"
      "      image: 'postgres:16', replicas: {}, resources: {{ cpu: '1', memory: '1Gi' }},\n"
      "      volumes: [{{ name: 'data', size: '100Gi', class: '{}', mount: '/data' }}],\n"
      "    }},\n"
      "  }},\n"
      "  outputs: {{}},\n"
      "}}\n",
      replicas, cls);
}

void storage_cluster(const Scratch& s, const StoreCli& cli) {
  copy_examples(s);
  cli.ok({"cluster", "create", "-f", "examples/clusters/storage-classes.yaml"});
}

const json* find_volume(const json& instance, const std::string& name) {
  for (const auto& v : instance["volumes"])
    if (v.value("volume", "") == name) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("storage classes: the cluster's own classes, shown and used by the warehouse example", "[e2e][storage]") {
  Scratch s;
  StoreCli cli(s);
  storage_cluster(s, cli);

  auto show = cli.ok({"cluster", "show"}).out;
  CHECK_THAT(show, Catch::Contains("Storage classes:"));
  CHECK_THAT(show, Catch::Contains("local-nvme"));
  CHECK_THAT(show, Catch::Contains("claim"));
  auto shown = json::parse(cli.ok({"cluster", "show", "-o", "json"}).out);
  std::map<std::string, json> classes;
  for (const auto& c : shown["storage_classes"]) classes[c["name"]] = c;
  REQUIRE(classes.size() == 3);
  CHECK(classes["gold"]["kind"] == "claim");
  CHECK(classes["gold"]["capacity_bytes"] == 50LL << 40);
  CHECK(classes["gold"]["nodes"] == 3);  // The zone z1 nodes.
  CHECK(classes["silver"]["kind"] == "local");
  CHECK(classes["local-nvme"]["capacity_bytes"] == 3 * (4LL << 40));

  cli.ok({"submit", "examples/warehouse", "--wait", "--timeout", "60s"});
  auto instances = json::parse(cli.ok({"get", "instances", "-l", "gaia.io/app=warehouse", "-o", "json"}).out);
  REQUIRE(instances.size() == 3);
  for (const auto& i : instances) {
    CHECK(i["state"] == "Running");
    // Only the fast nodes have local-nvme, and only they reach gold.
    CHECK_THAT(i["node"].get<std::string>(), Catch::StartsWith("fast-"));
    const json* wal = find_volume(i, "wal");
    const json* data = find_volume(i, "data");
    REQUIRE(wal);
    REQUIRE(data);
    CHECK((*wal)["node"] == i["node"]);
    CHECK((*wal)["group"] == "nvme0");
    CHECK((*data)["node"] == "");
    CHECK((*data)["group"] == "gold");
  }
  auto after = json::parse(cli.ok({"cluster", "show", "-o", "json"}).out);
  for (const auto& c : after["storage_classes"])
    if (c["name"] == "gold") CHECK(c["used_bytes"] == 3 * (2LL << 40));

  // The Kubernetes target uses the class names as given.
  auto k8s = cli.ok({"render", "examples/warehouse", "--target", "kubernetes", "-o", "json"}).out;
  CHECK_THAT(k8s, Catch::Contains("\"storageClassName\": \"gold\""));
  CHECK_THAT(k8s, Catch::Contains("\"storageClassName\": \"local-nvme\""));
}

TEST_CASE("storage classes: a class the cluster lacks is a located error and nothing is written", "[e2e][storage]") {
  Scratch s;
  StoreCli cli(s);
  storage_cluster(s, cli);
  write_app(s, "apps/ledger", "ledger", "1.0.0", "", "{}\n", volume_main("platinum"));
  // Rendering does not know the cluster: the name's form is all it checks.
  cli.ok({"validate", "apps/ledger"});
  int64_t before = cli.revision();
  for (const char* verb : {"plan", "submit"}) {
    auto r = cli.expect(1, {verb, "apps/ledger"});
    INFO(r.err);
    CHECK_THAT(r.err, Catch::Contains("apps/ledger/main.jsonnet:5:55: error: roles.db.volumes[0].class"));
    CHECK_THAT(r.err, Catch::Contains("this cluster has no storage class 'platinum'; it has silver, local-nvme, gold (claim)"));
    CHECK_THAT(r.err, Catch::Contains("storage_classes in the cluster file"));
  }
  // CI's path too: diff and apply refuse it the same way.
  for (std::vector<std::string> args : {std::vector<std::string>{"diff", "-f", "apps/ledger"},
                                        std::vector<std::string>{"apply", "-f", "apps/ledger"}}) {
    auto r = cli.expect(1, args);
    INFO(r.err);
    CHECK_THAT(r.err, Catch::Contains("this cluster has no storage class 'platinum'"));
  }
  CHECK(cli.revision() == before);

  // A volume that names no class asks for hdd, which this cluster does not have.
  std::string no_class = volume_main("x");
  replace_all(no_class, " class: 'x',", "");
  write_app(s, "apps/plain", "plain", "1.0.0", "", "{}\n", no_class);
  auto p = cli.expect(1, {"plan", "apps/plain"});
  CHECK_THAT(p.err, Catch::Contains("no storage class 'hdd' (the class of a volume that names none)"));

  // A name Kubernetes would refuse is caught by validate already.
  write_app(s, "apps/bad", "bad", "1.0.0", "", "{}\n", volume_main("Gold_1"));
  auto v = expect_exit(s, 1, {"validate", "apps/bad"});
  CHECK_THAT(v.err, Catch::Contains("roles.db.volumes[0].class"));
  CHECK_THAT(v.err, Catch::Contains("'Gold_1' is not a valid storage class name"));
}

TEST_CASE("storage classes: a claim volume follows its instance off a down node, a local one holds it",
          "[e2e][storage]") {
  Scratch s;
  StoreCli cli(s);
  storage_cluster(s, cli);
  write_app(s, "apps/ledger", "ledger", "1.0.0", "", "{}\n", volume_main("gold"));
  write_app(s, "apps/scratchpad", "scratchpad", "1.0.0", "", "{}\n", volume_main("silver"));
  cli.ok({"submit", "apps/ledger", "apps/scratchpad", "--wait", "--timeout", "60s"});
  auto get = [&](const std::string& key) {
    return json::parse(cli.ok({"get", "instances", key, "-o", "json"}).out);
  };
  auto first = [](const json& j) { return j.is_array() ? j.at(0) : j; };
  json ledger = first(get("0.db.ledger.default"));
  json pad = first(get("0.db.scratchpad.default"));
  std::string ledger_node = ledger["node"], pad_node = pad["node"];

  cli.ok({"node", "fail", ledger_node});
  if (pad_node != ledger_node) cli.ok({"node", "fail", pad_node});
  cli.ok({"controller", "run", "--once"});
  json moved = first(get("0.db.ledger.default"));
  INFO(moved.dump());
  CHECK(moved["state"] == "Running");
  CHECK(moved["node"] != ledger_node);
  const json* data = find_volume(moved, "data");
  REQUIRE(data);
  CHECK((*data)["group"] == "gold");
  CHECK((*data)["node"] == "");

  json held = first(get("0.db.scratchpad.default"));
  INFO(held.dump());
  CHECK(held["state"] != "Running");
  const json* local = find_volume(held, "data");
  REQUIRE(local);
  CHECK((*local)["node"] == pad_node);
}

TEST_CASE("storage classes: scaling down keeps claim volumes in the pool, and scaling up gives them back",
          "[e2e][storage]") {
  Scratch s;
  StoreCli cli(s);
  storage_cluster(s, cli);
  write_app(s, "apps/ledger", "ledger", "1.0.0", "", "{}\n", volume_main("gold", 3));
  cli.ok({"submit", "apps/ledger", "--wait", "--timeout", "60s"});
  auto down = cli.ok({"scale", "ledger/db", "--replicas", "1"}).out;
  CHECK_THAT(down, Catch::Contains("in claim class gold"));
  auto shown = json::parse(cli.ok({"cluster", "show", "-o", "json"}).out);
  for (const auto& c : shown["storage_classes"])
    if (c["name"] == "gold") CHECK(c["used_bytes"] == 3 * (100LL << 30));  // Kept data still takes room.
  cli.ok({"scale", "ledger/db", "--replicas", "3", "--wait", "--timeout", "60s"});
  auto events = cli.ok({"events", "--reason", "ScaledUp"}).out;
  CHECK_THAT(events, Catch::Contains("its kept volumes are reattached: data in claim class gold"));
  auto instances = json::parse(cli.ok({"get", "instances", "-l", "gaia.io/app=ledger", "-o", "json"}).out);
  REQUIRE(instances.size() == 3);
  for (const auto& i : instances) CHECK(i["state"] == "Running");

  // Deleting the app deletes the data kept for it too, and says so first.
  cli.ok({"scale", "ledger/db", "--replicas", "1"});
  CHECK_THAT(cli.ok({"delete", "ledger", "--dry-run"}).out,
             Catch::Contains("1 instance(s), and 2 kept volume(s) with their data"));
  CHECK_THAT(cli.ok({"delete", "ledger"}).out, Catch::Contains("and 2 kept volume(s) with their data"));
  auto gone = json::parse(cli.ok({"cluster", "show", "-o", "json"}).out);
  for (const auto& c : gone["storage_classes"])
    if (c["name"] == "gold") CHECK(c["used_bytes"] == 0);
}

TEST_CASE("storage classes: a config change that names a class the cluster lacks is refused", "[e2e][storage]") {
  Scratch s;
  StoreCli cli(s);
  storage_cluster(s, cli);
  std::string main = volume_main("gold");
  replace_all(main, "class: 'gold'", "class: config.class");
  write_app(s, "apps/ledger", "ledger", "1.0.0", "",
            "local gaia = import 'gaia.libsonnet';\n{ class: gaia.config('ledger.class', 'gold') }\n", main);
  cli.ok({"submit", "apps/ledger", "--wait", "--timeout", "60s"});
  int64_t before = cli.revision();
  auto r = cli.expect(1, {"config", "set", "ledger.class=platinum"});
  INFO(r.err);
  CHECK_THAT(r.err, Catch::Contains("this cluster has no storage class 'platinum'"));
  CHECK(cli.revision() == before);
  // A class it has is taken, through the usual re-render. The volume that exists keeps
  // its storage and data (a new class is for volumes made from now on), as a
  // StatefulSet keeps its claims when its template changes.
  cli.ok({"config", "set", "ledger.class=silver", "--wait", "--timeout", "60s"});
  auto i = json::parse(cli.ok({"get", "instances", "0.db.ledger.default", "-o", "json"}).out);
  if (i.is_array()) i = i.at(0);
  CHECK(i["state"] == "Running");
  const json* data = find_volume(i, "data");
  REQUIRE(data);
  CHECK((*data)["group"] == "gold");
  auto doc = json::parse(cli.ok({"get", "apps", "ledger", "-o", "json"}).out);
  if (doc.is_array()) doc = doc.at(0);
  CHECK(doc["workload"]["roles"][0]["volumes"][0]["storage_class"] == "silver");
}
