// End-to-end tests of `gaia cluster`, `gaia node`, `gaia get`, `gaia describe` and
// `gaia context` with the real binary, each in its own scratch state directory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <yaml-cpp/yaml.h>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

json json_of(const RunResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  return j;
}

size_t line_count(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

std::string cluster_file(const std::string& name) { return examples_dir() + "/clusters/" + name; }

}  // namespace

TEST_CASE("cluster: create from flags, refuse to overwrite, replace", "[e2e][cluster]") {
  Scratch s;
  auto r = ok(s, {"cluster", "create", "--nodes", "6", "--cpu", "8", "--memory", "32Gi", "--racks", "3", "--zones", "2",
                  "--ssd", "--label", "pool=batch"});
  CHECK(r.out.find("cluster created: 6 nodes, 2 zone(s), 3 rack(s), 3 switch(es)") != std::string::npos);
  json nodes = json_of(s.gaia({"get", "nodes", "-o", "json"}));
  REQUIRE(nodes.size() == 6);
  CHECK(nodes[0]["name"] == "node-1");
  CHECK(nodes[0]["address"] == "10.0.0.1");
  CHECK(nodes[0]["instance_subnet"] == "10.0.128.0/24");
  CHECK(nodes[0]["labels"]["disk"] == "ssd");
  CHECK(nodes[0]["labels"]["pool"] == "batch");
  CHECK(nodes[5]["labels"]["rack"] == "r3");
  CHECK(nodes[5]["labels"]["zone"] == "z2");
  CHECK(nodes[5]["switch"] == "s3");
  CHECK(nodes[0]["capacity"]["cpu_millis"] == 8000);
  CHECK(nodes[0]["volume_groups"].size() == 2);

  auto again = s.gaia({"cluster", "create", "--nodes", "2"});
  CHECK(again.code == 1);
  CHECK(again.err.find("a cluster already exists here (6 nodes)") != std::string::npos);
  CHECK(again.err.find("--replace") != std::string::npos);
  CHECK(json_of(s.gaia({"get", "nodes", "-o", "json"})).size() == 6);

  ok(s, {"cluster", "create", "--nodes", "2", "--replace", "--strategy", "stack"});
  CHECK(json_of(s.gaia({"get", "nodes", "-o", "json"})).size() == 2);
  json show = json_of(s.gaia({"cluster", "show", "-o", "json"}));
  CHECK(show["nodes"]["total"] == 2);
  CHECK(show["profile"]["strategy"] == "stack");
  auto events = s.gaia({"events", "-o", "json", "--reason", "ClusterReplaced"});
  CHECK(events.out.find("ClusterReplaced") != std::string::npos);
}

TEST_CASE("cluster: a cluster with more nodes than the event retention is created", "[e2e][cluster]") {
  // The documented maximum, 100,000 nodes, adds as many NodeAdded events in one commit,
  // more than the default retention of 100,000 events. The same with a small retention:
  // the commit keeps the newest events instead of failing.
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "3"});
  ok(s, {"events", "--retention", "5"});
  auto r = ok(s, {"cluster", "create", "--nodes", "40", "--replace"});
  CHECK_THAT(r.out, Catch::Contains("cluster replaced: 40 nodes"));
  CHECK(json_of(s.gaia({"get", "nodes", "-o", "json"})).size() == 40);
  auto events = json_lines(ok(s, {"events", "-o", "json"}).out);
  REQUIRE(events.size() == 5);
  CHECK(events.back()["node"] == "node-40");
  for (size_t i = 1; i < events.size(); ++i)
    CHECK(events[i]["seq"].get<int64_t>() == events[i - 1]["seq"].get<int64_t>() + 1);
  // And the next commit goes on from there.
  ok(s, {"node", "cordon", "node-1"});
  auto later = json_lines(ok(s, {"events", "-o", "json"}).out);
  REQUIRE(later.size() == 5);
  CHECK(later.back()["reason"] == "NodeCordoned");
}

TEST_CASE("cluster: bad flags are reported together", "[e2e][cluster]") {
  Scratch s;
  auto r = s.gaia({"cluster", "create", "--cpu", "lots", "--memory", "12Qi", "--ports", "9-1"});
  CHECK(r.code == 1);
  CHECK(r.err.find("--cpu") != std::string::npos);
  CHECK(r.err.find("--memory") != std::string::npos);
  CHECK(r.err.find("--ports") != std::string::npos);
  auto big = s.gaia({"cluster", "create", "--nodes", "200"});
  CHECK(big.code == 1);
  CHECK(big.err.find("no free /24") != std::string::npos);
  auto mixed = s.gaia({"cluster", "create", "-f", cluster_file("gpu-pool.yaml"), "--nodes", "3"});
  CHECK(mixed.code == 1);
  CHECK(mixed.err.find("--nodes cannot be combined with -f") != std::string::npos);
  // A refused create makes no store.
  CHECK(s.gaia({"get", "nodes"}).err.find("no store at") != std::string::npos);
}

TEST_CASE("cluster: the example cluster files", "[e2e][cluster]") {
  SECTION("bigdata-50") {
    Scratch s;
    ok(s, {"cluster", "create", "-f", cluster_file("bigdata-50.yaml")});
    CHECK(json_of(s.gaia({"get", "nodes", "-o", "json"})).size() == 50);
    CHECK(json_of(s.gaia({"get", "nodes", "-l", "disk=ssd", "-o", "json"})).size() == 43);
    CHECK(json_of(s.gaia({"get", "nodes", "-l", "gpu-model=a100,rack=r3", "-o", "json"})).size() == 4);
    CHECK(json_of(s.gaia({"get", "nodes", "-l", "rack in (r1,r2),!gpu-model", "-o", "json"})).size() == 31);
    auto table = ok(s, {"get", "nodes", "-l", "node-role=master"});
    CHECK(line_count(table.out) == 4);
    CHECK(table.out.rfind("NAME", 0) == 0);
    auto d = ok(s, {"describe", "node", "datanode-14"});
    CHECK(d.out.find("zone z1, rack r2, switch s2") != std::string::npos);
    CHECK(d.out.find("ssd0") != std::string::npos);
    CHECK(d.out.find("NodeAdded") != std::string::npos);
    auto show = ok(s, {"cluster", "show"});
    CHECK(show.out.find("Nodes:       50 (50 ready, 0 cordoned, 0 down)") != std::string::npos);
    CHECK(show.out.find("analytics") != std::string::npos);
  }
  SECTION("gpu-pool") {
    Scratch s;
    ok(s, {"cluster", "create", "-f", cluster_file("gpu-pool.yaml")});
    json nodes = json_of(s.gaia({"get", "nodes", "-l", "pool=ml", "-o", "json"}));
    CHECK(nodes.size() == 16);
    auto wide = ok(s, {"get", "nodes", "a100-7", "-o", "wide"});
    CHECK(wide.out.find("fd00:10:2::11") != std::string::npos);
    CHECK(wide.out.find("leaf-2") != std::string::npos);
    CHECK(ok(s, {"cluster", "show"}).out.find("strategy stack") != std::string::npos);
  }
}

TEST_CASE("cluster: the big-data cluster hosts the whole example stack", "[e2e][cluster]") {
  Scratch s;
  copy_examples(s);
  ok(s, {"cluster", "create", "-f", "examples/clusters/bigdata-50.yaml"});
  auto submit = s.gaia({"submit", "examples/web", "examples/spark", "examples/trainer"});
  INFO(submit.out << submit.err);
  REQUIRE(submit.code == 0);
  json apps = json_of(s.gaia({"get", "apps", "-o", "json"}));
  std::set<std::string> names;
  for (const auto& a : apps) {
    names.insert(a["name"].get<std::string>());
    INFO(a["name"]);
    CHECK(a["status"] == "Ready");
    CHECK(a["instances"]["running"] == a["instances"]["desired"]);
  }
  CHECK(names == std::set<std::string>{"hbase", "hdfs", "kafka", "spark", "trainer", "web", "zookeeper"});
  json instances = json_of(s.gaia({"get", "instances", "-o", "json"}));
  for (const auto& i : instances) {
    INFO(i["name"]);
    CHECK(i["state"] == "Running");
  }
  // Datanodes on ssd machines, trainers on the A100s, selectors on instance labels.
  json dn = json_of(s.gaia({"get", "instances", "-l", "gaia.io/app=hdfs,gaia.io/role=datanode", "-o", "json"}));
  REQUIRE(dn.size() == 3);
  for (const auto& i : dn) CHECK(i["node"].get<std::string>().rfind("datanode-", 0) == 0);
  json tr = json_of(s.gaia({"get", "instances", "-l", "gaia.io/app=trainer", "-o", "json"}));
  REQUIRE(tr.size() == 4);
  for (const auto& i : tr) CHECK(i["node"].get<std::string>().rfind("gpu-", 0) == 0);
  // Tables and YAML of the same objects.
  auto table = ok(s, {"get", "apps"});
  CHECK(table.out.find("NAME") == 0);
  CHECK(line_count(table.out) == 8);
  YAML::Node y = YAML::Load(ok(s, {"get", "instances", "-o", "yaml"}).out);
  CHECK(y.size() == instances.size());
  auto app = ok(s, {"describe", "app", "hbase"});
  for (const char* part : {"Version:", "Dependencies:", "hdfs", "Dependents:", "web", "Roles:", "regionserver",
                           "Outputs:", "zookeeper_quorum", "Instances (5)", "Events (last 10)"})
    CHECK(app.out.find(part) != std::string::npos);
  auto inst = ok(s, {"describe", "instance", "hdfs/datanode/0"});
  for (const char* part : {"Name:             0.datanode.hdfs.default", "DNS name:", "Address:", "Volumes:", "blocks",
                           "Scheduled"})
    CHECK(inst.out.find(part) != std::string::npos);
  auto missing = s.gaia({"describe", "app", "hbsae"});
  CHECK(missing.code == 1);
  CHECK(missing.err.find("did you mean 'hbase'?") != std::string::npos);
}

TEST_CASE("cluster: bad cluster files give every error with its position", "[e2e][cluster]") {
  Scratch s;
  const std::map<std::string, std::string> files = {
      {"fields", R"(name: broken
nodes:
  - name: n1
    capacity: {cpu: many, memry: 8Gi}
    labels: {disk: "s s d"}
    volume_groups:
      - {name: v, class: nvme, size: 1Ti}
  - {name: n1, capacity: {cpu: 1, memory: 1Gi}}
node_groups:
  - {name: dn, count: 0, capacity: {cpu: 1, memory: 1Gi}}
scheduler: {strategy: balanced}
extra: true
)"},
      {"network", R"(subnets:
  - {cidr: 10.1.0.0/33, rack: r1}
  - {cidr: 10.1.1.0/24}
nodes:
  - {name: a, address: 10.1.1.1, instance_subnet: 10.5.0.0/16, capacity: {cpu: 1, memory: 1Gi}}
  - {name: b, address: 10.1.1.1, instance_subnet: 10.5.3.0/24, capacity: {cpu: 1, memory: 1Gi}}
tenants:
  - {name: ml, pool: {gpu-model: h100}}
)"},
      {"syntax", "nodes:\n  - name: a\n   capacity: {cpu: 1}\n"},
      {"storage", R"(nodes:
  - name: n1
    capacity: {cpu: 4, memory: 8Gi}
    volume_groups:
      - {name: v0, class: ssd, size: 1Ti}
      - {name: v1, class: gold, size: 1Ti}
      - {name: v2, size: 1Ti}
storage_classes:
  - {name: Fast_Disks, kind: local}
  - {name: silver, capacity: 10Ti}
  - {name: gold, kind: claim, capacity: 50Ti, selector: {zone: z1}}
  - {name: gold, kind: claim}
  - {name: nvme, kind: fast, speed: 3}
)"},
  };
  for (const auto& [name, text] : files) {
    s.write(name + ".yaml", text);
    auto r = s.gaia({"cluster", "create", "-f", name + ".yaml"});
    INFO(name);
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    check_golden("cluster/" + name + ".txt", r.err);
  }
  // A refused create makes no store.
  CHECK(s.gaia({"get", "nodes"}).err.find("no store at") != std::string::npos);
}

TEST_CASE("node: add, label, cordon, remove with instances and events", "[e2e][cluster]") {
  Scratch s;
  write_app(s, "big", "big", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { w: { image: 'x', replicas: 2, resources: { cpu: '6', memory: '8Gi' },\n"
            "                node_selector: { tier: 'fast' } } },\n"
            "  outputs: {},\n"
            "}\n");
  ok(s, {"cluster", "create", "--nodes", "1", "--cpu", "8", "--memory", "16Gi"});
  auto submit = s.gaia({"submit", "big"});
  INFO(submit.out << submit.err);
  json pending = json_of(s.gaia({"get", "instances", "-o", "json"}));
  REQUIRE(pending.size() == 2);
  for (const auto& i : pending) CHECK(i["state"] == "Pending");
  auto table = ok(s, {"get", "instances"});
  CHECK(table.out.find("NodeSelector") != std::string::npos);

  // Labelling node-1 makes one instance fit; the other waits for more cpu.
  auto label = ok(s, {"node", "label", "node-1", "tier=fast"});
  CHECK(label.out.find("node node-1 labeled") != std::string::npos);
  CHECK(label.out.find("placed 1 pending instance(s)") != std::string::npos);
  auto refuse = s.gaia({"node", "label", "node-1", "tier=slow"});
  CHECK(refuse.code == 1);
  CHECK(refuse.err.find("--overwrite") != std::string::npos);

  // Adding a labelled node places the second.
  auto add = ok(s, {"node", "add", "--cpu", "8", "--memory", "16Gi", "--label", "tier=fast", "--rack", "r2"});
  CHECK(add.out.find("node node-2 added (10.0.0.2, 10.0.129.0/24)") != std::string::npos);
  CHECK(add.out.find("placed 1 pending instance(s)") != std::string::npos);
  json nodes = json_of(s.gaia({"get", "nodes", "-o", "json"}));
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[1]["rack"] == "r2");
  CHECK(nodes[0]["allocated"]["cpu_millis"] == 6000);
  CHECK(nodes[0]["instance_count"] == 1);
  auto get = ok(s, {"get", "nodes"});
  CHECK(get.out.find("6/8 (75%)") != std::string::npos);

  // Removing a busy node needs --force; its instance is requeued and stays pending.
  auto busy = s.gaia({"node", "remove", "node-2"});
  CHECK(busy.code == 1);
  CHECK(busy.err.find("runs 1 instance(s)") != std::string::npos);
  CHECK(busy.err.find("--force") != std::string::npos);
  ok(s, {"node", "cordon", "node-1"});
  CHECK(ok(s, {"get", "nodes", "node-1"}).out.find("Cordoned") != std::string::npos);
  auto forced = ok(s, {"node", "remove", "node-2", "--force"});
  CHECK(forced.out.find("node node-2 removed") != std::string::npos);
  CHECK(forced.out.find("still pending") != std::string::npos);
  // Uncordoning does not make room (node-1 is full), but the retry runs and says so.
  auto uncordon = ok(s, {"node", "uncordon", "node-1"});
  CHECK(uncordon.out.find("node node-1 uncordoned") != std::string::npos);
  json after = json_of(s.gaia({"get", "instances", "-l", "gaia.io/role=w", "-o", "json"}));
  int running = 0;
  for (const auto& i : after) running += i["state"] == "Running";
  CHECK(running == 1);

  auto events = s.gaia({"events", "-o", "json", "--node", "node-2"});
  for (const char* reason : {"NodeAdded", "NodeRemoved", "Displaced"})
    CHECK(events.out.find(reason) != std::string::npos);
  auto all = s.gaia({"events", "-o", "json"});
  for (const char* reason : {"NodeLabeled", "NodeCordoned", "NodeUncordoned"})
    CHECK(all.out.find(reason) != std::string::npos);
  auto unknown = s.gaia({"node", "cordon", "node-9"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err.find("no node named 'node-9'") != std::string::npos);
}

TEST_CASE("get: selectors, tenants, and errors", "[e2e][cluster]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "3"});
  auto bad = s.gaia({"get", "nodes", "-l", "zone in (a,"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("bad selector 'zone in (a,' at column 12") != std::string::npos);
  auto kind = s.gaia({"get", "pods"});
  CHECK(kind.code == 1);
  CHECK(kind.err.find("unknown kind 'pods'") != std::string::npos);
  CHECK(json_of(s.gaia({"get", "nodes", "-l", "!rack", "-o", "json"})).size() == 3);
  CHECK(s.gaia({"get", "apps"}).err.find("No apps in tenant default found.") != std::string::npos);
  CHECK(json_of(s.gaia({"get", "apps", "-A", "-o", "json"})).empty());
  auto d = s.gaia({"describe", "node", "node-4"});
  CHECK(d.code == 1);
  CHECK(d.err.find("did you mean 'node-1'?") != std::string::npos);
}

TEST_CASE("context: list, add, use, current, remove", "[e2e][cluster]") {
  Scratch s;
  auto list = ok(s, {"context"});
  CHECK(list.out.find("CURRENT   NAME") == 0);
  CHECK(list.out.find("*         default") != std::string::npos);
  ok(s, {"context", "add", "lab", "--store", "lab.db"});
  CHECK(s.gaia({"context", "add", "lab", "--store", "x.db"}).code == 1);
  CHECK(s.gaia({"context", "add", "Bad_Name", "--store", "x.db"}).code == 1);
  auto k8s = s.gaia({"context", "add", "k8s", "--store", "x.db", "--backend", "kubernetes"});
  // The kubernetes backend needs to know how to reach its API server.
  CHECK(k8s.code == 1);
  CHECK(k8s.err.find("--backend kubernetes needs --kubeconfig FILE") != std::string::npos);
  auto mars = s.gaia({"context", "add", "m", "--store", "x.db", "--backend", "mars"});
  CHECK(mars.code == 2);
  CHECK(mars.err.find("--backend: mars not in {sim,process,kubernetes}") != std::string::npos);
  auto stray = s.gaia({"context", "add", "m", "--store", "x.db", "--kubeconfig", "kc"});
  CHECK(stray.code == 1);
  CHECK(stray.err.find("are for --backend kubernetes") != std::string::npos);
  ok(s, {"context", "use", "lab"});
  CHECK(ok(s, {"context", "current"}).out == "lab\n");
  ok(s, {"cluster", "create", "--nodes", "2"});
  CHECK(std::filesystem::exists(s.dir() / "lab.db"));
  CHECK(json_of(s.gaia({"get", "nodes", "-o", "json"})).size() == 2);
  // The default context's store was never created: an error, not an empty cluster.
  auto other = s.gaia({"--context", "default", "get", "nodes", "-o", "json"});
  CHECK(other.code == 1);
  CHECK(other.err.find("(the store of context default)") != std::string::npos);
  auto typo = s.gaia({"context", "use", "lba"});
  CHECK(typo.code == 1);
  CHECK(typo.err.find("did you mean 'lab'?") != std::string::npos);
  auto removed = ok(s, {"context", "remove", "lab"});
  CHECK(removed.out.find("the current context is now default") != std::string::npos);
  CHECK(ok(s, {"context", "list"}).out.find("lab") == std::string::npos);
  CHECK(std::filesystem::exists(s.dir() / "lab.db"));
  CHECK(s.gaia({"context", "remove", "default"}).code == 1);
}
