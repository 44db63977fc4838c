// End-to-end tests of `gaia scale` (issue 14 item 5): --replicas is a count and a sign
// there is refused with the --by spelling, --by changes the count, a stateful role
// scaled down keeps its volumes on their nodes and a scale up gives each ordinal its own
// back, --delete-volumes deletes them, --dry-run lists every volume, and the app's
// template refuses a count it rejects (nothing is written).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// Runs a command that must fail with `code`, mention each of `needles` on stderr, and
// write nothing.
void refused_all(const StoreCli& g, const std::vector<std::string>& args, int code, const std::vector<std::string>& needles) {
  int64_t before = g.revision();
  auto r = g.run(args);
  INFO("gaia " << fmt::format("{}", fmt::join(args, " ")) << "\nstdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == code);
  for (const auto& n : needles) CHECK(r.err.find(n) != std::string::npos);
  CHECK(g.revision() == before);
}

// Every kept volume, as "<instance key> <volume> on <node>", sorted.
std::vector<std::string> kept_volumes(const gaia::ClusterState& st) {
  std::vector<std::string> out;
  for (const auto& n : st.snapshot.nodes)
    for (const auto& k : n.kept_volumes)
      out.push_back(fmt::format("{}.{}.{}.{} {} on {}", k.ordinal, k.role, k.app, k.tenant, k.volume, n.name));
  std::sort(out.begin(), out.end());
  return out;
}

// An app `db` with one stateful role of `replicas` instances, each with a 10Gi volume.
void write_db(const Scratch& s, int replicas) {
  write_app(s, "apps/db", "db", "1.0.0", "", "{}\n",
            fmt::format("function(config, deps, app) {{\n"
                        "  roles: {{ db: {{ image: 'postgres:16', replicas: {}, resources: {{ cpu: '1', memory: '1Gi' }},\n"
                        "                 volumes: [{{ name: 'data', size: '10Gi', class: 'ssd', mount: '/data' }}] }} }},\n"
                        "  outputs: {{}},\n"
                        "}}\n",
                        replicas));
}

// A 3-node cluster running web: one stateless role of 5 replicas.
void deploy_web(const Scratch& s, StoreCli& g) {
  g.ok({"cluster", "create", "--nodes", "3", "--cpu", "4", "--memory", "16Gi"});
  write_app(s, "apps/web", "web", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'nginx:1.25', replicas: 5, resources: { cpu: '500m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  g.ok({"submit", "apps/web", "--wait", "--timeout", "30s"});
}

// A 3-node cluster with SSDs running db at 3 replicas, each with its volume.
void deploy_db(const Scratch& s, StoreCli& g) {
  g.ok({"cluster", "create", "--nodes", "3", "--cpu", "4", "--memory", "16Gi", "--ssd", "--ssd-size", "100Gi"});
  write_db(s, 3);
  g.ok({"submit", "apps/db", "--wait", "--timeout", "30s"});
}

}  // namespace

TEST_CASE("scale: --replicas is a count, a sign there is refused with the --by spelling", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  deploy_web(s, g);
  REQUIRE(ordinals(g.load(), "web") == std::vector<int>{0, 1, 2, 3, 4});

  // What took web from 5 to 0: now a usage error naming the relative spelling.
  refused_all(g, {"scale", "web", "--replicas", "-5"}, 2, {"--replicas -5: a replica count cannot be negative", "--by -5"});
  refused_all(g, {"scale", "web", "--replicas=-5"}, 2, {"cannot be negative", "--by -5"});
  refused_all(g, {"scale", "web", "--replicas", "+2"}, 2, {"takes the count itself", "--by +2"});
  refused_all(g, {"scale", "web", "--by", "2"}, 2, {"--by 2: a change needs its sign", "--by +2", "--replicas 2"});
  refused_all(g, {"scale", "web", "--by", "lots"}, 2, {"expected a signed change"});
  refused_all(g, {"scale", "web", "--replicas", "lots"}, 2, {"expected a count"});
  refused_all(g, {"scale", "web"}, 2, {"--replicas N or --by"});
  refused_all(g, {"scale", "web", "--replicas", "3", "--by", "+1"}, 2, {"excludes"});
  refused_all(g, {"scale", "web", "--by", "-6"}, 1, {"web/web has 5 replica(s); --by -6 would make -1", "--by -5"});
  refused_all(g, {"scale", "web", "--by", "+100000"}, 1, {"more than the 10000"});
  CHECK(ordinals(g.load(), "web") == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(g.load().apps.at("default/web").scale.empty());
}

TEST_CASE("scale: --by changes the count from the current one", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  deploy_web(s, g);

  auto down = g.ok({"scale", "web", "--by", "-2"});
  CHECK(down.out.find("scaled web/web: 5 -> 3 replica(s)") != std::string::npos);
  auto st = g.load();
  CHECK(ordinals(st, "web") == std::vector<int>{0, 1, 2});
  CHECK(st.apps.at("default/web").scale.at("web") == 3);
  auto up = g.ok({"scale", "web/web", "--by", "+1", "-o", "json"});
  auto j = json::parse(up.out);
  CHECK(j["from"] == 3);
  CHECK(j["to"] == 4);
  CHECK(ordinals(g.load(), "web") == std::vector<int>{0, 1, 2, 3});
  // --by -N down to nothing is allowed: it is spelled as the change it is.
  g.ok({"scale", "web", "--by", "-4"});
  CHECK(ordinals(g.load(), "web").empty());
}

TEST_CASE("scale: a stateful role scaled down keeps its volumes, and a scale up reattaches them", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  deploy_db(s, g);
  auto st = g.load();
  gaia::VolumeBinding one = instance(st, "1.db.db.default").volumes.at(0);
  gaia::VolumeBinding two = instance(st, "2.db.db.default").volumes.at(0);

  auto down = g.ok({"scale", "db", "--replicas", "1"});
  CHECK(down.out.find("scaled db/db: 3 -> 1 replica(s)") != std::string::npos);
  CHECK(down.out.find(fmt::format("keep volume data of 2.db.db.default on {} (10Gi in ssd0)", two.node)) !=
        std::string::npos);
  CHECK(down.out.find(fmt::format("keep volume data of 1.db.db.default on {}", one.node)) != std::string::npos);
  st = g.load();
  CHECK(ordinals(st, "db") == std::vector<int>{0});
  auto expected = std::vector<std::string>{fmt::format("1.db.db.default data on {}", one.node),
                                           fmt::format("2.db.db.default data on {}", two.node)};
  std::sort(expected.begin(), expected.end());
  CHECK(kept_volumes(st) == expected);
  auto events = g.ok({"events", "--reason", "ScaledDown"});
  CHECK(events.out.find("volumes are kept for a scale up: data on " + two.node) != std::string::npos);
  // The kept data still takes its space on the node, and the node says whose it is.
  bool shown = false;
  for (const auto& n : json::parse(g.ok({"get", "nodes", "-o", "json"}).out)) {
    if (n["name"] != two.node) continue;
    shown = true;
    CHECK(n["volume_used"]["ssd0"].get<int64_t>() >= 10LL << 30);
    REQUIRE(n["kept_volumes"].size() == 1);
    CHECK(n["kept_volumes"][0]["ordinal"] == 2);
  }
  CHECK(shown);

  auto up = g.ok({"scale", "db", "--replicas", "3", "--wait", "--timeout", "30s"});
  CHECK(up.out.find(fmt::format("reattach volume data of 2.db.db.default on {}", two.node)) != std::string::npos);
  st = g.load();
  CHECK(kept_volumes(st).empty());
  for (const auto& [key, was] : std::vector<std::pair<std::string, gaia::VolumeBinding>>{{"1.db.db.default", one},
                                                                                        {"2.db.db.default", two}}) {
    INFO(key);
    const auto& i = instance(st, key);
    CHECK(i.state == gaia::InstanceState::Running);
    CHECK(i.node == was.node);
    REQUIRE(i.volumes.size() == 1);
    CHECK(i.volumes[0].node == was.node);
    CHECK(i.volumes[0].group == was.group);
  }
  auto created = g.ok({"events", "--reason", "ScaledUp"});
  CHECK(created.out.find("its kept volumes are reattached: data on " + two.node) != std::string::npos);
}

// A new version asking for fewer replicas is no request to delete data: the removed
// ordinals keep their volumes, and a later version asking for more gives them back.
TEST_CASE("scale: a submit lowering the count keeps the volumes, a submit raising it reattaches them", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  deploy_db(s, g);
  auto st = g.load();
  gaia::VolumeBinding two = instance(st, "2.db.db.default").volumes.at(0);

  write_db(s, 2);
  g.ok({"submit", "apps/db", "--wait", "--timeout", "30s"});
  st = g.load();
  CHECK(ordinals(st, "db") == std::vector<int>{0, 1});
  CHECK(kept_volumes(st) == std::vector<std::string>{fmt::format("2.db.db.default data on {}", two.node)});
  CHECK(g.ok({"events", "--reason", "Removed"}).out.find("its volumes are kept: data on " + two.node) !=
        std::string::npos);

  write_db(s, 3);
  g.ok({"submit", "apps/db", "--wait", "--timeout", "30s"});
  st = g.load();
  CHECK(ordinals(st, "db") == std::vector<int>{0, 1, 2});
  CHECK(kept_volumes(st).empty());
  const gaia::Instance& back = instance(st, "2.db.db.default");
  REQUIRE(back.volumes.size() == 1);
  CHECK(back.volumes[0].node == two.node);
  CHECK(back.node == two.node);
}

TEST_CASE("scale: --delete-volumes deletes them and --dry-run lists every volume", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  deploy_db(s, g);
  auto st = g.load();
  std::string node1 = instance(st, "1.db.db.default").node, node2 = instance(st, "2.db.db.default").node;

  // Dry runs: every volume listed, with what would become of it; nothing written.
  int64_t before = g.revision();
  auto keep = g.ok({"scale", "db", "--replicas", "1", "--dry-run"});
  CHECK(keep.out.find("would scale db/db: 3 -> 1 replica(s)") != std::string::npos);
  CHECK(keep.out.find("keep volume data of 2.db.db.default on " + node2) != std::string::npos);
  CHECK(keep.out.find("keep volume data of 1.db.db.default on " + node1) != std::string::npos);
  CHECK(keep.out.find("delete volume") == std::string::npos);
  auto del = g.ok({"scale", "db", "--by", "-2", "--delete-volumes", "--dry-run", "-o", "json"});
  auto j = json::parse(del.out);
  CHECK(j["volumes"]["kept"].empty());
  REQUIRE(j["volumes"]["deleted"].size() == 2);
  CHECK(j["volumes"]["deleted"][0]["instance"] == "2.db.db.default");
  CHECK(j["volumes"]["deleted"][0]["node"] == node2);
  CHECK(j["volumes"]["deleted"][1]["instance"] == "1.db.db.default");
  CHECK(g.revision() == before);

  // Scale down keeping them, then delete the kept ones beyond the count: listed first.
  g.ok({"scale", "db", "--replicas", "1"});
  REQUIRE(kept_volumes(g.load()).size() == 2);
  before = g.revision();
  auto listed = g.ok({"scale", "db", "--replicas", "2", "--delete-volumes", "--dry-run"});
  CHECK(listed.out.find("delete volume data of 2.db.db.default on " + node2 + " (10Gi in ssd0), kept earlier") !=
        std::string::npos);
  CHECK(listed.out.find("reattach volume data of 1.db.db.default on " + node1) != std::string::npos);
  CHECK(g.revision() == before);
  auto gone = g.ok({"scale", "db", "--replicas", "2", "--delete-volumes"});
  CHECK(gone.out.find("delete volume data of 2.db.db.default") != std::string::npos);
  st = g.load();
  CHECK(kept_volumes(st).empty());
  CHECK(instance(st, "1.db.db.default").node == node1);
  auto deleted = g.ok({"events", "--reason", "VolumeDeleted"});
  CHECK(deleted.out.find("kept volume data of 2.db.db.default deleted (--delete-volumes)") != std::string::npos);

  // Removed with --delete-volumes: nothing kept, the event says the data went.
  g.ok({"scale", "db", "--replicas", "0", "--delete-volumes"});
  CHECK(kept_volumes(g.load()).empty());
  auto removed = g.ok({"events", "--reason", "ScaledDown"});
  CHECK(removed.out.find("its volumes are deleted (--delete-volumes): data on") != std::string::npos);

  // Deleting the app deletes what its scale downs kept, as it deletes its instances.
  g.ok({"scale", "db", "--replicas", "2", "--wait", "--timeout", "30s"});
  g.ok({"scale", "db", "--replicas", "0"});
  REQUIRE(kept_volumes(g.load()).size() == 2);
  g.ok({"delete", "db"});
  CHECK(kept_volumes(g.load()).empty());
}

TEST_CASE("scale: a count the template refuses is refused with the template's error", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "4", "--cpu", "4", "--memory", "16Gi"});
  // The hdfs rule: the replication factor cannot exceed the datanodes; the count comes
  // from the config or from `gaia scale` (gaia.replicas), and at most 6 either way.
  write_app(s, "apps/store", "store", "1.0.0", "", "{ replication: 3, datanodes: 3 }\n",
            "local gaia = import 'gaia.libsonnet';\n"
            "function(config, deps, app)\n"
            "  local datanodes = gaia.replicas(app, 'datanode', config.datanodes);\n"
            "  assert config.replication <= datanodes :\n"
            "         'replication (%d) cannot exceed the number of datanodes (%d)' % [config.replication, datanodes];\n"
            "  if datanodes > 6 then error 'at most 6 datanodes per store' else {\n"
            "  roles: { datanode: { image: 'busybox', replicas: datanodes, resources: { cpu: '500m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  g.ok({"submit", "apps/store", "--wait", "--timeout", "30s"});

  refused_all(g, {"scale", "store", "--replicas", "2"}, 1,
          {"refuses 2 replica(s) of datanode", "replication (3) cannot exceed the number of datanodes (2)"});
  refused_all(g, {"scale", "store", "--by", "-1"}, 1, {"replication (3) cannot exceed the number of datanodes (2)"});
  refused_all(g, {"scale", "store", "--replicas", "2", "--dry-run"}, 1, {"cannot exceed the number of datanodes (2)"});
  refused_all(g, {"scale", "store", "--replicas", "7"}, 1, {"refuses 7 replica(s) of datanode", "at most 6 datanodes per store"});
  auto st = g.load();
  CHECK(ordinals(st, "store") == std::vector<int>{0, 1, 2});
  CHECK(st.apps.at("default/store").scale.empty());

  // A count it accepts goes through, and the next check sees the scaled count.
  g.ok({"scale", "store", "--replicas", "5"});
  CHECK(ordinals(g.load(), "store") == std::vector<int>{0, 1, 2, 3, 4});
  g.ok({"scale", "store", "--by", "-2"});
  refused_all(g, {"scale", "store", "--by", "-1"}, 1, {"cannot exceed the number of datanodes (2)"});
}

TEST_CASE("scale: the hdfs example refuses fewer datanodes than its replication", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  copy_examples(s);
  g.ok({"cluster", "create", "-f", "examples/clusters/bigdata-50.yaml"});
  g.ok({"submit", "examples/hdfs", "--wait", "--timeout", "60s"});
  refused_all(g, {"scale", "hdfs/datanode", "--replicas", "2"}, 1,
          {"replication (3) cannot exceed the number of datanodes (2)"});
  auto up = g.ok({"scale", "hdfs/datanode", "--by", "+1"});
  CHECK(up.out.find("scaled hdfs/datanode: 3 -> 4 replica(s)") != std::string::npos);
}
