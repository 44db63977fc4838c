#include "render/workload.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <yaml-cpp/yaml.h>

#include <string>

#include "lib/hash.hpp"
#include "render/yaml_emit.hpp"
#include "tests/golden_util.hpp"
#include "tests/render/workload_fixture.hpp"

using gaia::Diagnostics;
using gaia::Role;
using gaia::Workload;
using gaia::render::from_document;
using gaia::render::RawRender;
using gaia::render::to_document;
using gaia::render::validate_workload;
using nlohmann::json;

namespace {

Workload valid_hdfs() {
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", gaia::test::hdfs_raw());
  if (!w) FAIL(gaia::format_diagnostics(w.error()));
  return *w;
}

const Role& role(const Workload& w, const std::string& name) {
  for (const auto& r : w.roles)
    if (r.name == name) return r;
  FAIL("no role " << name);
  throw std::logic_error("unreachable");
}

// Validates the hdfs fixture with roles.<role>.<field> replaced by `value` (null
// removes the field) and returns the diagnostics.
Diagnostics errors_with(const std::string& role_name, const json::json_pointer& field, const json& value) {
  RawRender raw = gaia::test::hdfs_raw();
  json& r = raw.main["roles"][role_name];
  if (value.is_null()) {
    r.at(field.parent_pointer()).erase(field.back());
  } else {
    r[field] = value;
  }
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  if (w) return {};
  return w.error();
}

// The one diagnostic produced by a change, which must have `path` and mention
// `fragment` in its message or hint.
void expect_error(const std::string& role_name, const std::string& field, const json& value, const std::string& path,
                  const std::string& fragment) {
  Diagnostics ds = errors_with(role_name, json::json_pointer(field), value);
  INFO("field " << field << " = " << value.dump() << "\n" << gaia::format_diagnostics(ds));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].path == path);
  CHECK((ds[0].message + " " + ds[0].hint).find(fragment) != std::string::npos);
  CHECK(ds[0].location.file == "apps/hdfs/main.jsonnet");
  CHECK(ds[0].location.line == 0);
  CHECK(ds[0].message.starts_with("app hdfs"));
}

}  // namespace

TEST_CASE("a valid app validates into typed roles sorted by name", "[workload]") {
  Workload w = valid_hdfs();
  REQUIRE(w.roles.size() == 3);
  CHECK(w.roles[0].name == "balancer");
  CHECK(w.roles[1].name == "datanode");
  CHECK(w.roles[2].name == "namenode");
  CHECK(w.app == "hdfs");
  CHECK(w.version == "3.3.4");
  CHECK(w.tenant == "default");
  CHECK(w.reads.front().kind == "config");  // Sorted by (kind, key).

  const Role& nn = role(w, "namenode");
  CHECK(nn.kind == "service");
  CHECK(nn.replicas == 1);
  CHECK(nn.resources.cpu_millis == 2000);
  CHECK(nn.resources.memory_bytes == 8LL << 30);
  CHECK(nn.priority.to_string() == "prod:300");
  CHECK(nn.near == "zookeeper/server");  // Alias zk rewritten to the dependency's name.
  CHECK(nn.health.type == "tcp");
  CHECK(nn.health.timeout_s == 2);
  CHECK(nn.min_available == 1);
  REQUIRE(nn.required_affinity.size() == 1);
  CHECK(nn.required_affinity[0].target == gaia::AffinityTerm::Target::Node);
  CHECK(nn.required_affinity[0].match[0].values == std::vector<std::string>{"z1", "z2"});

  const Role& dn = role(w, "datanode");
  CHECK(dn.resources.cpu_millis == 4000);  // A number is cores.
  CHECK(dn.resources.memory_bytes == 17179869184);  // A number is bytes.
  CHECK(dn.resources.disk_bytes == 20LL << 30);
  CHECK(dn.priority.to_string() == "prod:200");  // The app's.
  REQUIRE(dn.volumes.size() == 2);
  CHECK(dn.volumes[1].storage_class == "hdd");
  CHECK(dn.volumes[1].mount_path == "/data/logs");
  REQUIRE(dn.required_anti_affinity.size() == 1);
  CHECK(dn.required_anti_affinity[0].target == gaia::AffinityTerm::Target::Instance);
  CHECK(dn.required_anti_affinity[0].match.size() == 2);
  CHECK(dn.preferred_anti_affinity[0].weight == 50);
  CHECK(dn.backoff_ms == 2000);
  CHECK(dn.required_subnet == "10.1.0.0/16");

  const Role& b = role(w, "balancer");
  CHECK(b.kind == "batch");
  CHECK(b.resources.cpu_millis == 500);
  CHECK(b.resources.gpu == 1);
  CHECK_FALSE(b.priority.preemptible);
  CHECK(b.required_topology == "zone=z1");
  CHECK(b.health.type.empty());
}

TEST_CASE("each invalid field gives one diagnostic naming app, role and field", "[workload]") {
  // Required fields and units.
  expect_error("namenode", "/resources/cpu", nullptr, "roles.namenode.resources.cpu", "missing");
  expect_error("namenode", "/resources/memory", nullptr, "roles.namenode.resources.memory", "missing");
  expect_error("namenode", "/resources", nullptr, "roles.namenode.resources", "cpu and memory");
  expect_error("namenode", "/resources/memory", "8Gb", "roles.namenode.resources.memory", "8Gi");
  expect_error("namenode", "/resources/memory", -5, "roles.namenode.resources.memory", "out of range");
  expect_error("namenode", "/resources/memory", 1e30, "roles.namenode.resources.memory", "out of range");
  expect_error("namenode", "/resources/cpu", "2 cores", "roles.namenode.resources.cpu", "500m");
  expect_error("namenode", "/resources/cpu", 0, "roles.namenode.resources.cpu", "more than 0");
  expect_error("namenode", "/resources/cpu", 0.0001, "roles.namenode.resources.cpu", "millicores");
  expect_error("namenode", "/resources/cpu", true, "roles.namenode.resources.cpu", "a boolean");
  expect_error("namenode", "/resources/gpu", 1.5, "roles.namenode.resources.gpu", "whole number");
  expect_error("namenode", "/resources/gpu", "-1", "roles.namenode.resources.gpu", "gpu");
  expect_error("namenode", "/resources/memroy", "1Gi", "roles.namenode.resources.memroy", "did you mean 'memory'");
  // Image and command.
  {
    RawRender raw = gaia::test::hdfs_raw();
    raw.main["roles"]["namenode"].erase("image");
    raw.main["roles"]["namenode"]["command"] = json::array();
    auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
    REQUIRE_FALSE(w);
    REQUIRE(w.error().size() == 1);
    CHECK(w.error()[0].message.find("an image, a command, or both") != std::string::npos);
  }
  expect_error("namenode", "/command", json::array({"hdfs", 3}), "roles.namenode.command[1]", "std.toString");
  expect_error("namenode", "/image", "has space", "roles.namenode.image", "whitespace");
  // Enums.
  expect_error("namenode", "/kind", "daemon", "roles.namenode.kind", "service, batch");
  expect_error("namenode", "/ports/0/protocol", "SCTP", "roles.namenode.ports[0].protocol", "TCP, UDP");
  expect_error("datanode", "/volumes/0/class", "NVMe", "roles.datanode.volumes[0].class", "not a valid storage class name");
  expect_error("datanode", "/anti_affinity/required/0/topology", "region",
               "roles.datanode.anti_affinity.required[0].topology", "node, rack, switch, zone");
  expect_error("namenode", "/affinity/required/0/match/0/op", "in", "roles.namenode.affinity.required[0].match[0].op",
               "did you mean 'In'");
  expect_error("namenode", "/affinity/required/0/match/0/values", json::array(),
               "roles.namenode.affinity.required[0].match[0].values", "non-empty");
  expect_error("namenode", "/affinity/required/0/match/0/op", "Exists",
               "roles.namenode.affinity.required[0].match[0].values", "takes no values");
  expect_error("namenode", "/affinity/required/0/target", nullptr, "roles.namenode.affinity.required[0].target",
               "target: 'node'");
  expect_error("namenode", "/affinity/required/0/topology", "zone", "roles.namenode.affinity.required[0].topology",
               "instance terms only");
  // Weights.
  expect_error("datanode", "/anti_affinity/preferred/0/weight", 0, "roles.datanode.anti_affinity.preferred[0].weight",
               "1 to 100");
  expect_error("datanode", "/anti_affinity/preferred/0/weight", 101,
               "roles.datanode.anti_affinity.preferred[0].weight", "1 to 100");
  expect_error("datanode", "/anti_affinity/preferred/0/weight", nullptr,
               "roles.datanode.anti_affinity.preferred[0].weight", "missing");
  expect_error("datanode", "/anti_affinity/required/0/weight", 5, "roles.datanode.anti_affinity.required[0].weight",
               "preferred terms only");
  // Numbers.
  expect_error("datanode", "/replicas", -1, "roles.datanode.replicas", "0 to 100000");
  expect_error("datanode", "/replicas", 100001, "roles.datanode.replicas", "0 to 100000");
  expect_error("datanode", "/replicas", 1.5, "roles.datanode.replicas", "whole number");
  expect_error("datanode", "/replicas", "3", "roles.datanode.replicas", "a string");
  expect_error("datanode", "/ports/0/port", 65536, "roles.datanode.ports[0].port", "0 to 65535");
  expect_error("datanode", "/volumes/0/iops", -3, "roles.datanode.volumes[0].iops", "0 to");
  expect_error("namenode", "/migration/min_available", 2, "roles.namenode.migration.min_available", "1 replicas");
  // Names and duplicates.
  expect_error("datanode", "/ports/0/name", "http", "roles.datanode.ports[1].name", "already used by ports[0]");
  expect_error("datanode", "/ports/1/port", 9866, "roles.datanode.ports[1].port", "already used by ports[0]");
  expect_error("datanode", "/ports/0/name", "Web_UI", "roles.datanode.ports[0].name", "upper-case");
  expect_error("datanode", "/volumes/1/name", "data", "roles.datanode.volumes[1].name", "duplicate volume name");
  expect_error("datanode", "/volumes/1/mount", "/data", "roles.datanode.volumes[1].mount", "also the mount");
  expect_error("datanode", "/volumes/1/mount", "relative", "roles.datanode.volumes[1].mount", "absolute");
  expect_error("datanode", "/volumes/0/size", nullptr, "roles.datanode.volumes[0].size", "missing");
  // near.
  expect_error("namenode", "/near", "zoo/server", "roles.namenode.near", "dependency aliases: zk, metrics");
  expect_error("namenode", "/near", "zk", "roles.namenode.near", "<dependency alias>/<role>");
  expect_error("namenode", "/near", "zk/Server", "roles.namenode.near", "not a valid role name");
  // Network.
  expect_error("datanode", "/network/subnet", "10.1.0.0/33", "roles.datanode.network.subnet", "0 to 32");
  expect_error("datanode", "/network/subnet", "10.1.2.3/16", "roles.datanode.network.subnet", "did you mean 10.1.0.0/16");
  expect_error("datanode", "/network/subnet", "10.1.0/16", "roles.datanode.network.subnet", "IPv4");
  expect_error("datanode", "/network/subnet", "fd00::1:1/112", "roles.datanode.network.subnet", "host bits");
  expect_error("datanode", "/network/topology", "region=r1", "roles.datanode.network.topology", "LEVEL=NAME");
  // Durations and priorities.
  expect_error("datanode", "/restart/backoff", "1sec", "roles.datanode.restart.backoff", "500ms");
  expect_error("datanode", "/restart/backoff", 1000, "roles.datanode.restart.backoff", "write the unit");
  expect_error("datanode", "/health/period", "1500ms", "roles.datanode.health.period", "whole number of seconds");
  expect_error("namenode", "/priority", "prod:2000", "roles.namenode.priority", "0 to 1000");
  expect_error("namenode", "/priority", "prod:1:non-preemptible", "roles.namenode.priority", "only nonprod");
  // Env, labels and health targets.
  expect_error("namenode", "/env/HADOOP_HEAPSIZE", 4096, "roles.namenode.env.HADOOP_HEAPSIZE", "std.toString");
  expect_error("namenode", "/env/1BAD", "x", "roles.namenode.env.1BAD", "environment variable name");
  expect_error("namenode", "/labels/role", "x", "roles.namenode.labels.role", "reserved");
  expect_error("namenode", "/labels/tier", "not valid!", "roles.namenode.labels.tier", "label value");
  expect_error("namenode", "/health/target", "web", "roles.namenode.health.target", "ports: rpc, http");
  expect_error("namenode", "/health/type", "grpc", "roles.namenode.health.type", "tcp, http, exec");
  // Unknown fields, with and without a close match.
  expect_error("namenode", "/replica", 2, "roles.namenode.replica", "did you mean 'replicas'");
  expect_error("namenode", "/colour", "blue", "roles.namenode.colour", "known fields: kind, image");
}

TEST_CASE("outputs must be exactly the declared ones", "[workload]") {
  RawRender raw = gaia::test::hdfs_raw();
  raw.main["outputs"].erase("webhdfs");
  raw.main["outputs"]["extra"] = 1;
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  REQUIRE_FALSE(w);
  REQUIRE(w.error().size() == 2);
  CHECK(w.error()[0].path == "outputs.webhdfs");
  CHECK(w.error()[0].message.find("missing") != std::string::npos);
  CHECK(w.error()[1].path == "outputs.extra");
  CHECK(w.error()[1].hint.find("declared outputs: namenode_uri, webhdfs") != std::string::npos);
}

TEST_CASE("near without dependencies says so", "[workload]") {
  auto spec = gaia::test::hdfs_spec();
  spec.dependencies.clear();
  auto w = validate_workload(spec, "default", gaia::test::hdfs_raw());
  REQUIRE_FALSE(w);
  REQUIRE(w.error().size() == 1);
  CHECK(w.error()[0].hint.find("has no dependencies") != std::string::npos);
}

TEST_CASE("all errors of a broken render are reported together", "[workload]") {
  RawRender raw;
  raw.main = json::parse(R"({
    "roles": {
      "Bad_Name": { "image": "x", "resources": { "cpu": "1", "memory": "1Gi" } },
      "web": {
        "kind": "deamon", "replicas": -2, "env": { "PORT": 8080 },
        "resources": { "cpu": "lots" },
        "ports": [ { "name": "http", "port": 80 }, { "name": "http", "port": 70000, "protocol": "tcp" } ],
        "volumes": [ { "name": "d", "size": "1Gi", "class": "Flash" }, { "name": "d", "size": "1Gi" } ],
        "affinity": { "preferred": [ { "target": "instance", "match_labels": { "role": "db" }, "weight": 500 } ] },
        "near": "db/primary", "network": { "subnet": "300.0.0.0/8" }, "restart": { "backoff": "soon" },
        "priority": "urgent", "helth": {}
      },
      "worker": "not an object"
    },
    "outputs": { "url": "http://x" },
    "extras": true
  })");
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  REQUIRE_FALSE(w);
  CHECK(w.error().size() > 15);
  gaia::test::check_golden("render/many_errors.err", gaia::format_diagnostics(w.error()));
}

TEST_CASE("the gaia/v1 document is canonical and hashed", "[workload]") {
  Workload w = valid_hdfs();
  json doc = to_document(w);
  CHECK(doc["apiVersion"] == "gaia/v1");
  CHECK(doc["kind"] == "App");
  CHECK(w.hash.size() == 32);
  CHECK(doc["metadata"]["hash"] == w.hash);
  json unhashed = doc;
  unhashed["metadata"].erase("hash");
  CHECK(gaia::content_hash(unhashed.dump()) == w.hash);
  // Defaults are filled and units canonical.
  const json& dn = doc["spec"]["roles"]["datanode"];
  CHECK(dn["resources"]["cpu"] == "4");
  CHECK(dn["resources"]["memory"] == "16Gi");
  CHECK(dn["resources"]["gpu"] == 0);
  CHECK(doc["spec"]["roles"]["balancer"]["resources"]["cpu"] == "500m");
  CHECK(doc["spec"]["roles"]["balancer"]["health"]["period_s"] == 10);
  CHECK(doc["spec"]["roles"]["namenode"]["network"]["subnet"] == "");
  gaia::test::check_golden("render/hdfs.gaia.yaml", gaia::render::emit_yaml(doc));

  // The same meaning written differently gives the same bytes and hash.
  RawRender alt = gaia::test::hdfs_raw();
  alt.main["roles"]["datanode"]["resources"] = {{"cpu", "4000m"}, {"memory", "16Gi"}, {"disk", 21474836480}};
  alt.main["roles"]["balancer"]["resources"]["cpu"] = "500m";
  auto w2 = validate_workload(gaia::test::hdfs_spec(), "default", alt);
  REQUIRE(w2);
  CHECK(to_document(*w2) == doc);
  // Any change of content changes the hash.
  alt.config["hdfs"]["replication"] = 2;
  auto w3 = validate_workload(gaia::test::hdfs_spec(), "default", alt);
  REQUIRE(w3);
  to_document(*w3);
  CHECK(w3->hash != w.hash);
}

TEST_CASE("from_document inverts to_document, also through YAML", "[workload]") {
  Workload w = valid_hdfs();
  json doc = to_document(w);
  auto back = from_document(doc);
  REQUIRE(back);
  CHECK(back->hash == w.hash);
  CHECK(to_document(*back) == doc);
  REQUIRE(back->roles.size() == w.roles.size());
  for (size_t i = 0; i < w.roles.size(); ++i) {
    CHECK(back->roles[i].resources == w.roles[i].resources);
    CHECK(back->roles[i].volumes == w.roles[i].volumes);
    CHECK(back->roles[i].required_anti_affinity == w.roles[i].required_anti_affinity);
  }
  json from_yaml = gaia::test::yaml_to_json(YAML::Load(gaia::render::emit_yaml(doc)));
  CHECK(from_yaml == doc);
  auto via_yaml = from_document(from_yaml);
  REQUIRE(via_yaml);
  CHECK(to_document(*via_yaml) == doc);
}

TEST_CASE("from_document rejects edited and malformed documents", "[workload]") {
  Workload w = valid_hdfs();
  json doc = to_document(w);
  json edited = doc;
  edited["spec"]["roles"]["datanode"]["replicas"] = 30;
  auto e = from_document(edited);
  REQUIRE_FALSE(e);
  CHECK(e.error()[0].path == "metadata.hash");

  json broken = doc;
  broken["spec"]["roles"]["datanode"].erase("resources");
  broken["spec"]["roles"]["namenode"]["replicas"] = "1";
  broken["apiVersion"] = "gaia/v2";
  auto b = from_document(broken);
  REQUIRE_FALSE(b);
  REQUIRE(b.error().size() == 3);
  CHECK(b.error()[0].path == "apiVersion");
  CHECK(b.error()[1].path == "spec.roles.datanode.resources");
  CHECK(b.error()[2].path == "spec.roles.namenode.replicas");
  CHECK_FALSE(from_document(json::array()));
}

TEST_CASE("validate, to_document and from_document agree on random roles", "[workload]") {
  CHECK(rc::check("round trip of generated roles", [] {
    auto millis = *rc::gen::inRange<int64_t>(1, 64000);
    auto mem_mi = *rc::gen::inRange<int64_t>(1, 1 << 20);
    auto replicas = *rc::gen::inRange(0, 1000);
    auto nports = *rc::gen::inRange(0, 4);
    auto weight = *rc::gen::inRange(1, 101);
    auto topology = *rc::gen::elementOf(std::vector<std::string>{"node", "rack", "switch", "zone"});
    json r = {{"image", "img:1"},
              {"replicas", replicas},
              {"resources", {{"cpu", std::to_string(millis) + "m"}, {"memory", std::to_string(mem_mi) + "Mi"}}},
              {"anti_affinity",
               {{"preferred", {{{"match_labels", {{"role", "r"}}}, {"topology", topology}, {"weight", weight}}}}}}};
    for (int i = 0; i < nports; ++i) r["ports"].push_back({{"name", "p" + std::to_string(i)}, {"port", 1000 + i}});
    RawRender raw;
    raw.main = {{"roles", {{"r", r}}}, {"outputs", {{"namenode_uri", "x"}, {"webhdfs", "y"}}}};
    auto w = validate_workload(gaia::test::hdfs_spec(), "t", raw);
    RC_ASSERT(w.has_value());
    RC_ASSERT(w->roles[0].resources.cpu_millis == millis);
    RC_ASSERT(w->roles[0].resources.memory_bytes == (mem_mi << 20));
    json doc = to_document(*w);
    auto back = from_document(doc);
    RC_ASSERT(back.has_value());
    RC_ASSERT(to_document(*back) == doc);
  }));
}

TEST_CASE("grace_period: a duration, in the document only when not the default, read back", "[workload]") {
  // The default keeps documents rendered before the field existed byte-identical.
  Workload plain = valid_hdfs();
  CHECK(role(plain, "namenode").grace_period_ms == 10'000);
  CHECK_FALSE(to_document(plain)["spec"]["roles"]["namenode"].contains("grace_period_ms"));

  RawRender raw = gaia::test::hdfs_raw();
  raw.main["roles"]["namenode"]["grace_period"] = "45s";
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  REQUIRE(w);
  CHECK(role(*w, "namenode").grace_period_ms == 45'000);
  json doc = to_document(*w);
  CHECK(doc["spec"]["roles"]["namenode"]["grace_period_ms"] == 45'000);
  auto back = from_document(doc);
  REQUIRE(back);
  CHECK(role(*back, "namenode").grace_period_ms == 45'000);

  expect_error("namenode", "/grace_period", 30, "roles.namenode.grace_period", "duration");
  expect_error("namenode", "/grace_period", "2h", "roles.namenode.grace_period", "out of range");
  expect_error("namenode", "/grace_period", "-1s", "roles.namenode.grace_period", "");
  json bad = doc;
  bad["spec"]["roles"]["namenode"]["grace_period_ms"] = "soon";
  CHECK_FALSE(from_document(bad));
}

TEST_CASE("limits: absent means the requests, each key defaults to its request, none below it", "[workload][limits]") {
  Workload plain = valid_hdfs();
  CHECK_FALSE(role(plain, "namenode").limits);
  CHECK_FALSE(role(plain, "namenode").burstable());
  CHECK(role(plain, "namenode").limit() == role(plain, "namenode").resources);
  // Documents of Guaranteed roles do not change, so their content hash stays.
  CHECK_FALSE(to_document(plain)["spec"]["roles"]["namenode"].contains("limits"));

  RawRender raw = gaia::test::hdfs_raw();
  raw.main["roles"]["namenode"]["limits"] = {{"cpu", "4"}, {"memory", "12Gi"}};
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  REQUIRE(w);
  const Role& nn = role(*w, "namenode");
  REQUIRE(nn.burstable());
  CHECK(nn.limits->cpu_millis == 4000);
  CHECK(nn.limits->memory_bytes == 12LL << 30);
  CHECK(nn.resources.cpu_millis == 2000);  // The request is untouched.
  json doc = to_document(*w);
  CHECK(doc["spec"]["roles"]["namenode"]["limits"]["cpu"] == "4");
  CHECK(doc["spec"]["roles"]["namenode"]["limits"]["memory"] == "12Gi");
  CHECK(doc["metadata"]["hash"] != to_document(plain)["metadata"]["hash"]);
  auto back = from_document(doc);
  REQUIRE(back);
  CHECK(role(*back, "namenode").limits == nn.limits);

  // Limits equal to the requests are no limits at all: Guaranteed, same document.
  raw.main["roles"]["namenode"]["limits"] = {{"cpu", "2000m"}};
  auto same = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  REQUIRE(same);
  CHECK_FALSE(role(*same, "namenode").burstable());
  CHECK(to_document(*same)["metadata"]["hash"] == to_document(plain)["metadata"]["hash"]);

  struct Case {
    const char* field;
    json value;
    const char* fragment;
  };
  for (const Case& c : {Case{"memory", "4Gi", "below the request of 8Gi"}, Case{"cpu", "500m", "below the request of 2"},
                        Case{"cpu", "lots", ""}, Case{"gpu", 2, "gpus are not shared"}, Case{"memroy", "9Gi", "memory"}})
    expect_error("namenode", std::string("/limits/") + c.field, c.value, std::string("roles.namenode.limits.") + c.field,
                 c.fragment);
  expect_error("namenode", "/limits", "4Gi", "roles.namenode.limits", "an object");
  json bad = doc;
  bad["spec"]["roles"]["namenode"]["limits"]["memory"] = "lots";
  CHECK_FALSE(from_document(bad));
}

TEST_CASE("after: names roles of the app, no repeats, no self, no cycles", "[workload][after]") {
  RawRender raw = gaia::test::hdfs_raw();
  raw.main["roles"]["datanode"]["after"] = {"namenode"};
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", raw);
  REQUIRE(w);
  CHECK(role(*w, "datanode").after == std::vector<std::string>{"namenode"});
  CHECK(role(*w, "namenode").after.empty());
  json doc = to_document(*w);
  CHECK(doc["spec"]["roles"]["datanode"]["after"] == json::array({"namenode"}));
  CHECK_FALSE(doc["spec"]["roles"]["namenode"].contains("after"));
  auto back = from_document(doc);
  REQUIRE(back);
  CHECK(role(*back, "datanode").after == std::vector<std::string>{"namenode"});

  expect_error("datanode", "/after", json::array({"namenod"}), "roles.datanode.after", "did you mean 'namenode'?");
  expect_error("datanode", "/after", json::array({"datanode"}), "roles.datanode.after[0]", "cannot wait for itself");
  expect_error("datanode", "/after", json::array({"namenode", "namenode"}), "roles.datanode.after[1]", "listed twice");
  expect_error("datanode", "/after", json::array({3}), "roles.datanode.after[0]", "a role name");
  expect_error("datanode", "/after", "namenode", "roles.datanode.after", "");

  // A cycle is printed in full, once, whichever role it is entered from.
  RawRender cyc = gaia::test::hdfs_raw();
  cyc.main["roles"]["datanode"]["after"] = {"namenode"};
  cyc.main["roles"]["namenode"]["after"] = {"datanode"};
  auto bad = validate_workload(gaia::test::hdfs_spec(), "default", cyc);
  REQUIRE_FALSE(bad);
  REQUIRE(bad.error().size() == 1);
  CHECK(bad.error()[0].message == "app hdfs, role datanode: the start order has a cycle: datanode -> namenode -> datanode");
  CHECK(bad.error()[0].path == "roles.datanode.after");
  CHECK(bad.error()[0].location.file == "apps/hdfs/main.jsonnet");
}
