// End-to-end: the spec bundles of submitted apps (ops/bundle.hpp) with the real binary.
// An app chain submitted from a copy of the examples is re-rendered by config changes
// after that copy is deleted, as on another machine sharing the store; `gaia describe
// app` shows the bundle, and deleting an app removes its bundle from the store.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "store/sqlite_store.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// The value stored under bundles/<hash>, if any.
std::optional<std::string> stored_bundle(const std::string& store, const std::string& hash) {
  auto st = gaia::SqliteStore::open(store);
  REQUIRE(st);
  auto kv = (*st)->get(gaia::keys::bundle(hash));
  REQUIRE(kv);
  if (!*kv) return std::nullopt;
  return (*kv)->value;
}

std::vector<json> events_of(const StoreCli& cli, const std::string& op) {
  return json_lines(cli.ok({"events", "-o", "json", "--op", op}).out);
}

}  // namespace

TEST_CASE("bundles: a config change re-renders apps whose spec folder is gone, and delete drops the bundle",
          "[e2e][bundle]") {
  Scratch s;
  StoreCli cli(s);
  copy_examples(s);
  cli.ok({"cluster", "create", "-f", "examples/clusters/bigdata-50.yaml"});
  cli.ok({"submit", "examples/web"});
  auto before = cli.load();
  std::map<std::string, std::string> bundles;  // App -> bundle hash.
  for (const auto& [id, app] : before.apps) {
    INFO(id);
    REQUIRE(app.bundle.size() == 32);
    CHECK(stored_bundle(cli.store, app.bundle));
    bundles[app.name] = app.bundle;
  }
  REQUIRE(bundles.size() == 5);  // web, kafka, hbase, hdfs, zookeeper.

  auto described = cli.ok({"describe", "app", "hdfs"});
  // hdfs has app.yaml, config.jsonnet, main.jsonnet and lib/site.libsonnet.
  CHECK(described.out.find("Bundle:           " + bundles["hdfs"] + " (4 files, ") != std::string::npos);

  // As on another machine: the folder the specs were submitted from does not exist.
  std::filesystem::remove_all(s.dir() / "examples");

  auto servers = cli.ok({"config", "set", "zookeeper.servers=5", "-o", "json"});
  json change = json::parse(servers.out);
  std::set<std::string> rerendered;
  for (const auto& a : change["apps"])
    if (a.value("rerendered", false)) rerendered.insert(a["app"].get<std::string>());
  CHECK(rerendered.count("zookeeper") == 1);
  CHECK(rerendered.size() > 1);  // Dependents importing the quorum follow.
  auto after = cli.load();
  const auto* zk = after.find_app("default", "zookeeper");
  REQUIRE(zk);
  CHECK(zk->workload.roles.at(0).replicas == 5);
  for (const auto& [id, app] : after.apps) CHECK(app.bundle == bundles[app.name]);

  auto replicas = cli.ok({"config", "set", "web.replicas=4", "-o", "json"});
  std::string op = json::parse(replicas.out).value("op", "");
  REQUIRE_FALSE(op.empty());
  size_t rerenders = 0;
  for (const auto& e : events_of(cli, op))
    if (e.value("reason", "") == "Rerendered" && e.value("app", "") == "web") ++rerenders;
  CHECK(rerenders == 1);

  // Deleting web takes its bundle along; the others keep theirs.
  cli.ok({"delete", "web"});
  CHECK_FALSE(stored_bundle(cli.store, bundles["web"]));
  for (const auto& name : {"kafka", "hbase", "hdfs", "zookeeper"}) CHECK(stored_bundle(cli.store, bundles[name]));
}
