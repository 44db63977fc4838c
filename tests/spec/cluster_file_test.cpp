#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "lib/codec.hpp"
#include "spec/cluster_file.hpp"

using namespace gaia;

namespace {

const Node& node(const spec::ClusterFile& f, const std::string& name) {
  auto it = std::find_if(f.cluster.nodes.begin(), f.cluster.nodes.end(), [&](const Node& n) { return n.name == name; });
  REQUIRE(it != f.cluster.nodes.end());
  return *it;
}

Diagnostics cluster_file_errors(const std::string& text) {
  auto r = spec::parse_cluster_file(text, "c.yaml");
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

bool has_error(const Diagnostics& ds, int line, int col, const std::string& fragment) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic& d) {
    return d.location.line == line && (col == 0 || d.location.column == col) &&
           (d.message.find(fragment) != std::string::npos || d.path.find(fragment) != std::string::npos);
  });
}

std::string dump(const Diagnostics& ds) { return format_diagnostics(ds); }

}  // namespace

TEST_CASE("cluster file: the big-data example", "[cluster_file]") {
  auto f = spec::load_cluster_file(std::string(GAIA_SOURCE_DIR) + "/examples/clusters/bigdata-50.yaml");
  INFO((f ? "" : dump(f.error())));
  REQUIRE(f.has_value());
  CHECK(f->cluster.name == "bigdata-50");
  REQUIRE(f->cluster.nodes.size() == 50);
  const Node& d14 = node(*f, "datanode-14");
  CHECK(d14.address == "10.1.2.20");
  CHECK(d14.instance_subnet == "10.102.0.0/24");
  CHECK(d14.rack == "r2");
  CHECK(d14.switch_ == "s2");
  CHECK(d14.zone == "z1");
  CHECK(d14.labels.at("disk") == "ssd");
  CHECK(d14.labels.at("rack") == "r2");
  CHECK(d14.capacity.cpu_millis == 32000);
  CHECK(d14.capacity.memory_bytes == 128LL << 30);
  REQUIRE(d14.volume_groups.size() == 2);
  CHECK(d14.volume_groups[1].storage_class == "hdd");
  CHECK(d14.volume_groups[1].size_bytes == 12LL << 40);
  const Node& gpu = node(*f, "gpu-4");
  CHECK(gpu.capacity.gpu == 4);
  CHECK(gpu.labels.at("gpu-model") == "a100");
  CHECK(gpu.zone == "z2");
  CHECK(gpu.port_min == 30000);
  std::set<std::string> racks, names;
  for (const auto& n : f->cluster.nodes) {
    racks.insert(n.rack);
    names.insert(n.name);
  }
  CHECK(racks == std::set<std::string>{"r1", "r2", "r3"});
  CHECK(names.size() == 50);
  REQUIRE(f->cluster.tenants.size() == 2);
  CHECK(f->cluster.tenants[1].name == "analytics");
  CHECK(f->cluster.tenants[1].pool_selector.at("disk") == "ssd");
  CHECK(f->cluster.tenants[1].quota.cpu_millis == 400000);
  CHECK(f->cluster.profile.w_locality == 3);
}

TEST_CASE("cluster file: the IPv6 GPU pool example", "[cluster_file]") {
  auto f = spec::load_cluster_file(std::string(GAIA_SOURCE_DIR) + "/examples/clusters/gpu-pool.yaml");
  INFO((f ? "" : dump(f.error())));
  REQUIRE(f.has_value());
  CHECK(f->cluster.nodes.size() == 20);
  const Node& a7 = node(*f, "a100-7");
  CHECK(a7.address == "fd00:10:2::11");
  CHECK(a7.instance_subnet == "fd00:20:2::/64");
  CHECK(a7.rack == "r2");
  CHECK(a7.switch_ == "leaf-2");
  CHECK(node(*f, "a100-2").instance_subnet == "fd00:20:1:1::/64");
  CHECK(f->cluster.profile.strategy == "stack");
  CHECK(f->cluster.tenants[1].pool_selector.at("pool") == "ml");
}

TEST_CASE("cluster file: nodes without addresses are carved from the subnet", "[cluster_file]") {
  auto f = spec::parse_cluster_file(R"(
subnet: 10.9.0.0/16
node_groups:
  - {name: w, count: 2, capacity: {cpu: 4, memory: 8Gi}}
nodes:
  - {name: fixed, address: 10.9.0.1, capacity: {cpu: 4, memory: 8Gi}}
)",
                                    "c.yaml");
  INFO((f ? "" : dump(f.error())));
  REQUIRE(f.has_value());
  CHECK(node(*f, "w-1").address == "10.9.0.2");  // 10.9.0.1 is taken by `fixed`.
  CHECK(node(*f, "w-1").instance_subnet == "10.9.128.0/24");
  CHECK(node(*f, "w-2").address == "10.9.0.3");
  CHECK(node(*f, "fixed").instance_subnet == "10.9.130.0/24");
  // A default tenant is always there.
  REQUIRE(f->cluster.tenants.size() == 1);
  CHECK(f->cluster.tenants[0].name == "default");
}

TEST_CASE("cluster file: every error is reported with its position", "[cluster_file]") {
  auto ds = cluster_file_errors(R"(name: bad
subnets:
  - {cidr: 10.1.1.0/33, rack: r1}
  - {cidr: 10.1.2.0/24}
nodes:
  - name: n1
    capacity: {cpu: lots, memory: 8Gi, gpus: 1}
    labels: {disk: "s s d"}
    volume_groups:
      - {name: v, class: nvme, size: 1Ti}
    ports: 30000-20000
  - name: Bad_Name
    capacity: {cpu: 1}
  - {name: n1, capacity: {cpu: 1, memory: 1Gi}}
tenants:
  - {name: t, quota: {cpu: 10}, pool: {gpu-model: h100}}
scheduler:
  strategy: balanced
  weights: {locality: -1, colour: 2}
extra: 1
)");
  INFO(dump(ds));
  CHECK(has_error(ds, 3, 0, "prefix length"));
  CHECK(has_error(ds, 4, 5, "no switch, rack or zone"));
  CHECK(has_error(ds, 7, 21, "cpu"));
  CHECK(has_error(ds, 7, 40, "unknown field 'gpus'"));
  CHECK(has_error(ds, 8, 20, "bad label value"));
  CHECK(has_error(ds, 10, 26, "unknown storage class 'nvme'"));
  CHECK(has_error(ds, 11, 12, "30000-20000"));
  CHECK(has_error(ds, 12, 11, "not a valid node name"));
  CHECK(has_error(ds, 13, 15, "missing required field 'memory'"));
  CHECK(has_error(ds, 18, 13, "unknown strategy"));
  CHECK(has_error(ds, 19, 23, "locality"));
  CHECK(has_error(ds, 19, 27, "unknown field 'colour'"));
  CHECK(has_error(ds, 20, 1, "unknown field 'extra'"));
  // "did you mean" for a near miss.
  auto gpus = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.message.find("gpus") != std::string::npos; });
  REQUIRE(gpus != ds.end());
  CHECK(gpus->hint == "did you mean 'gpu'?");
}

TEST_CASE("cluster file: cross-node checks", "[cluster_file]") {
  auto ds = cluster_file_errors(R"(nodes:
  - {name: a, address: 10.0.0.1, instance_subnet: 10.5.0.0/16, capacity: {cpu: 1, memory: 1Gi}}
  - {name: b, address: 10.0.0.1, instance_subnet: 10.5.3.0/24, capacity: {cpu: 1, memory: 1Gi}}
  - {name: a, address: 10.5.9.9, instance_subnet: 10.6.0.0/24, capacity: {cpu: 1, memory: 1Gi}}
tenants:
  - {name: t, pool: {gpu-model: h100}}
  - {name: t}
)");
  INFO(dump(ds));
  CHECK(has_error(ds, 4, 0, "node name 'a' is used twice"));
  CHECK(has_error(ds, 3, 0, "address 10.0.0.1 is used twice"));
  CHECK(has_error(ds, 3, 0, "overlaps 10.5.0.0/16"));
  CHECK(has_error(ds, 4, 0, "lies in the instance subnet 10.5.0.0/16"));
  CHECK(has_error(ds, 7, 5, "tenant 't' is listed twice"));
  CHECK(has_error(ds, 6, 5, "matches no node"));
}

TEST_CASE("cluster file: YAML syntax errors and empty files", "[cluster_file]") {
  auto ds = cluster_file_errors("nodes:\n  - {name: a\n");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].message.find("invalid YAML") != std::string::npos);
  CHECK(ds[0].location.line > 0);
  ds = cluster_file_errors("");
  CHECK(ds[0].message.find("empty") != std::string::npos);
  ds = cluster_file_errors("name: x\n");
  CHECK(ds[0].message.find("no nodes") != std::string::npos);
  ds = cluster_file_errors("node_groups:\n  - {name: g, count: 3, instance_subnets: 10.0.0.0/23, capacity: {cpu: 1, memory: 1Gi}}\n");
  CHECK(ds[0].message.find("cannot hold 3 /24") != std::string::npos);
}

// Found by fuzzing (fuzz/targets/cluster_file.cpp): a stray ',' at the top level hung
// `gaia cluster create -f` in yaml-cpp's LoadAll.
TEST_CASE("a stray comma in a cluster file is a located error, not a hang", "[cluster-file][fuzz]") {
  auto ds = cluster_file_errors("nodes:\n  - {name: a, capacity: {cpu: 1, memory: 1Gi}}\n---\n, \n");
  REQUIRE_FALSE(ds.empty());
  CHECK_THAT(ds.front().message, Catch::Contains("invalid YAML"));
  ds = cluster_file_errors("nodes:\n  - name: \"n\xFF\"\n");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].location.line == 2);
  CHECK_THAT(ds[0].message, Catch::Contains("not UTF-8"));
}

// Storage classes (docs/cluster-file.md#storage-classes).

TEST_CASE("cluster file: the storage classes example", "[cluster_file]") {
  auto f = spec::load_cluster_file(std::string(GAIA_SOURCE_DIR) + "/examples/clusters/storage-classes.yaml");
  INFO((f ? "" : dump(f.error())));
  REQUIRE(f.has_value());
  CHECK(f->cluster.nodes.size() == 6);
  REQUIRE(f->cluster.storage_classes.size() == 3);
  CHECK(f->cluster.storage_classes[0].name == "silver");
  CHECK(f->cluster.storage_classes[1].name == "local-nvme");
  const StorageClass& gold = f->cluster.storage_classes[2];
  CHECK(gold.name == "gold");
  CHECK(gold.kind == StorageKind::Claim);
  CHECK(gold.capacity_bytes == 50LL << 40);
  CHECK(gold.node_selector == std::map<std::string, std::string>{{"zone", "z1"}});
  const Node& fast = node(*f, "fast-2");
  CHECK(fast.rack == "r1");
  CHECK(fast.zone == "z1");
  REQUIRE(fast.volume_groups.size() == 2);
  CHECK(fast.volume_groups[0].storage_class == "local-nvme");
  CHECK(fast.volume_groups[1].storage_class == "silver");
  CHECK(node(*f, "bulk-3").volume_groups[1].storage_class == "silver");
  CHECK(node(*f, "bulk-3").zone == "z2");
}

TEST_CASE("cluster file: storage classes are read with their kinds, capacity and selector", "[cluster_file]") {
  auto f = spec::parse_cluster_file(R"(
storage_classes:
  - {name: silver, kind: local, description: "SATA disks"}
  - {name: local-nvme}
  - {name: gold, kind: claim, capacity: 50Ti, selector: {zone: z1}, description: "Ceph RBD"}
  - {name: nfs.shared, kind: claim}
nodes:
  - {name: a, capacity: {cpu: 1, memory: 1Gi}, volume_groups: [{name: v, class: silver, size: 1Ti}]}
)",
                                    "c.yaml");
  INFO((f ? "" : dump(f.error())));
  REQUIRE(f.has_value());
  // Exactly the declared classes, in order: the defaults are gone.
  const auto& cs = f->cluster.storage_classes;
  REQUIRE(cs.size() == 4);
  CHECK(cs[0] == StorageClass{"silver", StorageKind::Local, "SATA disks", -1, {}});
  CHECK(cs[1] == StorageClass{"local-nvme", StorageKind::Local, "", -1, {}});
  // The selector matches no node (node a has no zone): allowed, nodes can come later.
  CHECK(cs[2] == StorageClass{"gold", StorageKind::Claim, "Ceph RBD", 50LL << 40, {{"zone", "z1"}}});
  CHECK(cs[3] == StorageClass{"nfs.shared", StorageKind::Claim, "", -1, {}});
}

TEST_CASE("cluster file: without storage_classes the cluster has hdd and ssd", "[cluster_file]") {
  auto f = spec::parse_cluster_file(R"(
nodes:
  - {name: a, capacity: {cpu: 1, memory: 1Gi}, volume_groups: [{name: v, class: ssd, size: 1Ti}, {name: w, size: 1Ti}]}
)",
                                    "c.yaml");
  INFO((f ? "" : dump(f.error())));
  REQUIRE(f.has_value());
  // Left as ClusterSpec has it when a file declares none (empty: the defaults).
  CHECK((f->cluster.storage_classes.empty() || f->cluster.storage_classes == default_storage_classes()));
  CHECK(node(*f, "a").volume_groups[1].storage_class == "hdd");
  // Only those two are valid there, and the error says so in the new form.
  auto ds = cluster_file_errors(R"(nodes:
  - name: a
    capacity: {cpu: 1, memory: 1Gi}
    volume_groups: [{name: v, class: sdd, size: 1Ti}]
)");
  INFO(dump(ds));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].location.line == 4);
  CHECK(ds[0].location.column == 38);
  CHECK(ds[0].path == "nodes[0].volume_groups[0].class");
  CHECK(ds[0].message == "unknown storage class 'sdd': this cluster has hdd, ssd");
  CHECK(ds[0].hint == "use one of hdd, ssd, or declare 'sdd' under storage_classes");
}

TEST_CASE("cluster file: volume groups may name declared local classes before or after storage_classes",
          "[cluster_file]") {
  const std::string classes = R"(storage_classes:
  - {name: silver}
  - {name: local-nvme, kind: local}
)";
  const std::string nodes = R"(nodes:
  - name: a
    capacity: {cpu: 1, memory: 1Gi}
    volume_groups: [{name: v, class: local-nvme, size: 1Ti}, {name: w, class: silver, size: 2Ti}]
node_groups:
  - name: g
    count: 2
    capacity: {cpu: 1, memory: 1Gi}
    volume_groups: [{name: v, class: silver, size: 1Ti}]
)";
  for (const std::string& text : {classes + nodes, nodes + classes}) {
    auto f = spec::parse_cluster_file(text, "c.yaml");
    INFO(text << (f ? "" : dump(f.error())));
    REQUIRE(f.has_value());
    CHECK(node(*f, "a").volume_groups[0].storage_class == "local-nvme");
    CHECK(node(*f, "a").volume_groups[1].storage_class == "silver");
    CHECK(node(*f, "g-2").volume_groups[0].storage_class == "silver");
    REQUIRE(f->cluster.storage_classes.size() == 2);
  }
}

TEST_CASE("cluster file: a volume group naming an unknown or claim class", "[cluster_file]") {
  auto ds = cluster_file_errors(R"(nodes:
  - name: a
    capacity: {cpu: 1, memory: 1Gi}
    volume_groups:
      - {name: v0, class: ssd, size: 1Ti}
      - {name: v1, class: gold, size: 1Ti}
      - {name: v2, size: 1Ti}
node_groups:
  - {name: g, count: 3, capacity: {cpu: 1, memory: 1Gi}, volume_groups: [{name: v, class: nvme, size: 1Ti}]}
storage_classes:
  - {name: silver, kind: local}
  - {name: gold, kind: claim, capacity: 5Ti}
  - {name: local-nvme}
)");
  INFO(dump(ds));
  // ssd is no class here: the declared local classes are listed, in declaration order.
  CHECK(has_error(ds, 5, 27, "unknown storage class 'ssd': this cluster has silver, local-nvme"));
  // A claim class is a network pool, not a node's disk.
  CHECK(has_error(ds, 6, 27, "'gold' is a claim class: claim classes are network pools, not node disks"));
  // No class means hdd, which this cluster does not have.
  CHECK(has_error(ds, 7, 9, "names no class and this cluster has no class 'hdd'"));
  // A group's volume group is reported once, not once per node.
  CHECK(std::count_if(ds.begin(), ds.end(), [](const Diagnostic& d) {
          return d.message.find("'nvme'") != std::string::npos;
        }) == 1);
  CHECK(has_error(ds, 9, 91, "unknown storage class 'nvme'"));
  CHECK(ds.size() == 4);
  auto unknown = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.location.line == 5; });
  REQUIRE(unknown != ds.end());
  CHECK(unknown->hint == "use one of silver, local-nvme, or declare 'ssd' under storage_classes");
  auto claim = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.location.line == 6; });
  REQUIRE(claim != ds.end());
  CHECK_THAT(claim->hint, Catch::Contains("declare a local class for node disks"));
}

TEST_CASE("cluster file: storage class errors", "[cluster_file]") {
  auto ds = cluster_file_errors(R"(storage_classes:
  - {name: Gold_Pool, kind: claim}
  - {name: silver, capacity: 10Ti, selector: {zone: z1}}
  - {name: gold, kind: claim, capacity: lots}
  - {name: gold, kind: local}
  - {name: nvme, kind: fast, speed: 3}
  - {kind: claim}
  - {name: -edge-}
nodes:
  - {name: a, capacity: {cpu: 1, memory: 1Gi}}
)");
  INFO(dump(ds));
  CHECK(has_error(ds, 2, 12, "'Gold_Pool' is not a valid storage class name"));
  CHECK(has_error(ds, 3, 30, "local classes take their capacity from node volume groups"));
  CHECK(has_error(ds, 3, 46, "a local class has no selector"));
  CHECK(has_error(ds, 4, 41, "lots"));
  CHECK(has_error(ds, 5, 5, "storage class 'gold' is declared twice (first on line 4)"));
  CHECK(has_error(ds, 6, 24, "unknown storage kind 'fast': expected local or claim"));
  CHECK(has_error(ds, 6, 30, "unknown field 'speed'"));
  CHECK(has_error(ds, 7, 5, "missing required field 'name'"));
  CHECK(has_error(ds, 8, 12, "'-edge-' is not a valid storage class name: it must start and end"));
  CHECK(ds.size() == 9);
  auto speed = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.path == "storage_classes[4].speed"; });
  REQUIRE(speed != ds.end());
  CHECK(speed->hint == "known fields are: name, kind, description, capacity, selector");
  // Too long for a Kubernetes name.
  ds = cluster_file_errors("storage_classes: [{name: " + std::string(254, 'a') + "}]\nnodes: [{name: a, capacity: {cpu: 1, memory: 1Gi}}]\n");
  REQUIRE(ds.size() == 1);
  CHECK_THAT(ds[0].message, Catch::Contains("at most 253"));
  // 253 characters with dots is fine.
  std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." + std::string(63, 'c') + "." +
                        std::string(61, 'd');
  REQUIRE(longest.size() == 253);
  auto f = spec::parse_cluster_file("storage_classes: [{name: " + longest + "}]\nnodes: [{name: a, capacity: {cpu: 1, memory: 1Gi}}]\n", "c.yaml");
  INFO((f ? "" : dump(f.error())));
  CHECK(f.has_value());
}

TEST_CASE("cluster file: an empty storage_classes is an error", "[cluster_file]") {
  for (const char* empty : {"storage_classes: []\n", "storage_classes:\n"}) {
    auto ds = cluster_file_errors(std::string(empty) + "nodes:\n  - {name: a, capacity: {cpu: 1, memory: 1Gi}, volume_groups: [{name: v, size: 1Ti}]}\n");
    INFO(dump(ds));
    // One error: the volume group's class is not also reported.
    REQUIRE(ds.size() == 1);
    CHECK(ds[0].location.line == 1);
    CHECK(ds[0].path == "storage_classes");
    CHECK_THAT(ds[0].message, Catch::Contains("a cluster needs at least one storage class"));
  }
  auto ds = cluster_file_errors("storage_classes: {name: ssd}\nnodes: [{name: a, capacity: {cpu: 1, memory: 1Gi}}]\n");
  REQUIRE(ds.size() == 1);
  CHECK_THAT(ds[0].message, Catch::Contains("expected a list of storage classes"));
}

TEST_CASE("cluster file: scheduler weights include scarce, and the profile survives the store's codec",
          "[cluster_file]") {
  auto r = spec::parse_cluster_file(R"(name: c
nodes:
  - {name: n1, capacity: {cpu: 4, memory: 8Gi}}
scheduler:
  weights: {scarce: 0, spread: 3}
  percentage_of_nodes_to_score: 40
)",
                                    "c.yaml");
  REQUIRE(r);
  CHECK(r->cluster.profile.w_scarce == 0);
  CHECK(r->cluster.profile.w_spread == 3);
  // Stored and read back as the store keeps it: nothing of the profile is lost.
  nlohmann::json j = r->cluster.profile;
  SchedulerProfile back = j.get<SchedulerProfile>();
  CHECK(back.w_scarce == 0);
  CHECK(back.w_spread == 3);
  CHECK(back.percentage_of_nodes_to_score == 40);
  // A store written before the scarce weight existed reads as the default.
  j.erase("w_scarce");
  CHECK(j.get<SchedulerProfile>().w_scarce == 2);
}
