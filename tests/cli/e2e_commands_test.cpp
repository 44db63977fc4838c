// End-to-end tests of the gaia commands (init, validate, render, deps): the real binary
// runs in a scratch directory with relative paths, and each command's happy path, its
// errors and its exit codes (0 ok, 1 error, 2 usage) are checked, plus golden outputs
// for the examples, determinism, the render cache and the environment variables.

#include <catch2/catch.hpp>

#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
namespace fs = std::filesystem;

namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// Two valid specs and two invalid ones (two problems each) in one folder.
void write_mixed_folder(const Scratch& s) {
  write_app(s, "mixed/good1", "good1", "1.0.0");
  write_app(s, "mixed/good2", "good2", "2.0.0");
  // Invalid app.yaml: an unknown field and a version with two parts.
  s.write("mixed/bad1/app.yaml", "name: bad1\nversion: 1.0\nprioity: prod\n");
  s.write("mixed/bad1/config.jsonnet", "{}\n");
  s.write("mixed/bad1/main.jsonnet", one_role_main());
  // Valid app.yaml, but a role with a mistyped memory unit and a weight out of range.
  write_app(s, "mixed/bad2", "bad2", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '8GB' },\n"
            "    anti_affinity: { preferred: [{ target: 'instance', match_labels: { app: 'x' }, weight: 500 }] } } },\n"
            "  outputs: {},\n"
            "}\n");
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Top level and usage errors

TEST_CASE("e2e: --help, --version and a bare gaia exit 0, flags without a command are a usage error", "[e2e]") {
  Scratch s;
  auto help = s.gaia({"--help"});
  CHECK(help.code == 0);
  CHECK_THAT(help.out, Catch::Contains("Subcommands:"));
  for (const char* cmd : {"init", "validate", "render", "deps"}) {
    CHECK_THAT(help.out, Catch::Contains(cmd));
    auto sub = s.gaia({cmd, "--help"});
    INFO(cmd);
    CHECK(sub.code == 0);
    CHECK_THAT(sub.out, Catch::Contains("Examples:"));
  }
  auto version = s.gaia({"--version"});
  CHECK(version.code == 0);
  // The version is the CMake project version (project(gaia VERSION ...)), written nowhere else.
  CHECK(version.out == "gaia " GAIA_VERSION "\n");
  // A bare `gaia` prints the same help as --help and succeeds.
  auto none = s.gaia({});
  CHECK(none.code == 0);
  CHECK(none.out == help.out);
  CHECK(none.err.empty());
  auto flags_only = s.gaia({"--tenant", "team-a"});
  CHECK(flags_only.code == 2);
  CHECK_THAT(flags_only.err, Catch::Contains("subcommand is required"));
}

TEST_CASE("e2e: usage errors exit 2 for every command", "[e2e]") {
  Scratch s;
  write_app(s, "a", "a", "1.0.0");
  const std::vector<std::vector<std::string>> usage = {
      {"frobnicate"},
      {"init"},                                   // NAME is required
      {"init", "x", "--bogus"},
      {"validate"},                               // PATH is required
      {"validate", "a", "-o", "xml"},
      {"render"},                                 // DIR is required
      {"render", "a", "--bogus"},
      {"render", "a", "-o", "toml"},
      {"render", "a", "--target", "nomad"},
      {"render", "a", "--render-timeout", "50"},  // below the 100 ms minimum
      {"render", "a", "--render-timeout", "soon"},
      {"deps", "a", "-o", "yaml"},
      {"deps", "a", "--bogus"},
      {"--color", "sometimes", "deps", "a"},
      {"--error-format", "junit", "deps", "a"},
  };
  for (const auto& args : usage) {
    auto r = s.gaia(args);
    INFO(fmt::format("gaia {}\nstderr: {}", fmt::join(args, " "), r.err));
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_FALSE(r.err.empty());
  }
}

// ---------------------------------------------------------------------------------------
// init

TEST_CASE("e2e init: scaffolds a spec that validates and renders", "[e2e]") {
  Scratch s;
  auto r = s.gaia({"init", "hello"});
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("created hello/"));
  for (const char* f : {"app.yaml", "config.jsonnet", "main.jsonnet"}) CHECK(fs::exists(s.dir() / "hello" / f));
  CHECK(s.gaia({"validate", "hello"}).code == 0);
  auto yaml = s.gaia({"render", "hello"});
  CHECK(yaml.code == 0);
  CHECK_THAT(yaml.out, Catch::Contains("name: hello"));
  // The port is allocated from the node's range, which Kubernetes has no equivalent for:
  // its target needs the port pinned, and says so.
  auto kube = s.gaia({"render", "hello", "--target", "kubernetes"});
  CHECK(kube.code == 1);
  CHECK_THAT(kube.err, Catch::Contains("port 0"));
  CHECK(s.gaia({"render", "hello", "--target", "kubernetes", "--set", "port=8080"}).code == 0);
  CHECK(s.gaia({"deps", "hello"}).code == 0);

  SECTION("--dir and --quiet") {
    auto q = s.gaia({"-q", "init", "other", "--dir", "specs/other"});
    CHECK(q.code == 0);
    CHECK(q.out.empty());
    CHECK(fs::exists(s.dir() / "specs/other/app.yaml"));
    CHECK_THAT(Scratch::slurp(s.dir() / "specs/other/app.yaml"), Catch::Contains("name: other"));
  }
  SECTION("a non-empty directory needs --force") {
    auto again = s.gaia({"init", "hello"});
    CHECK(again.code == 1);
    CHECK_THAT(again.err, Catch::Contains("hello exists and is not empty"));
    CHECK_THAT(again.err, Catch::Contains("--force"));
    s.write("hello/app.yaml", "garbage");
    CHECK(s.gaia({"init", "hello", "--force"}).code == 0);
    CHECK(s.gaia({"validate", "hello"}).code == 0);
  }
  SECTION("an invalid name") {
    auto bad = s.gaia({"init", "Hello_World"});
    CHECK(bad.code == 1);
    CHECK_THAT(bad.err, Catch::Contains("'Hello_World' is not a valid app name"));
    CHECK_FALSE(fs::exists(s.dir() / "Hello_World"));
  }
  SECTION("--dir that is a file") {
    auto bad = s.gaia({"init", "x", "--dir", "hello/app.yaml"});
    CHECK(bad.code == 1);
    CHECK_THAT(bad.err, Catch::Contains("exists and is not a directory"));
  }
}

// ---------------------------------------------------------------------------------------
// validate

TEST_CASE("e2e init: two scaffolded apps share a one-node cluster", "[e2e]") {
  // Each instance's port comes from the node's range: the four instances of two
  // scaffolds (two replicas each) all fit on one node, none waits for a host port.
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1", "--cpu", "8", "--memory", "32Gi"});
  ok(s, {"init", "first"});
  ok(s, {"init", "second"});
  ok(s, {"submit", "first", "--wait", "--timeout", "30s"});
  ok(s, {"submit", "second", "--wait", "--timeout", "30s"});
  auto instances = nlohmann::json::parse(ok(s, {"get", "instances", "-o", "json"}).out);
  REQUIRE(instances.size() == 4);
  std::set<int> ports;
  for (const auto& i : instances) {
    INFO(i.dump());
    CHECK(i["state"] == "Running");
    CHECK(i["node"] == "node-1");
    ports.insert(i["ports"]["http"].get<int>());
  }
  CHECK(ports.size() == 4);  // Four different host ports on the one node.
  // A pinned port is still honoured (and the second replica then has to wait).
  ok(s, {"init", "pinned"});
  s.write("pinned.yaml", "port: 8080\n");
  ok(s, {"submit", "pinned", "--values", "pinned.yaml"});
  auto pinned = nlohmann::json::parse(ok(s, {"get", "instances", "-l", "app=pinned", "-o", "json"}).out);
  REQUIRE(pinned.size() == 2);
  CHECK(pinned[0]["ports"]["http"] == 8080);
}

TEST_CASE("e2e validate: the examples are all valid", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto r = s.gaia({"validate", "examples"});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Contains("ok examples/hdfs (hdfs@3.3.4)"));
  CHECK_THAT(r.out, Catch::Contains("ok examples/web (web@1.4.2)"));
  CHECK_THAT(r.out, Catch::Contains("spec(s) valid"));
  CHECK(s.gaia({"-q", "validate", "examples"}).out.empty());
}

TEST_CASE("e2e validate: every problem of every bad spec, exit 1", "[e2e]") {
  Scratch s;
  write_mixed_folder(s);

  SECTION("text") {
    auto r = s.gaia({"validate", "mixed"});
    CHECK(r.code == 1);
    CHECK_THAT(r.out, Catch::Contains("ok mixed/good1 (good1@1.0.0)"));
    CHECK_THAT(r.out, Catch::Contains("ok mixed/good2 (good2@2.0.0)"));
    CHECK_THAT(r.out, Catch::Contains("FAIL mixed/bad1"));
    CHECK_THAT(r.out, Catch::Contains("FAIL mixed/bad2 (bad2@1.0.0): 2 problem(s)"));
    CHECK_THAT(r.out, Catch::Contains("2 of 4 spec(s) invalid"));
    // Both problems of each bad spec, with their locations.
    CHECK_THAT(r.err, Catch::Contains("mixed/bad1/app.yaml:2:10: error: version:"));
    CHECK_THAT(r.err, Catch::Contains("mixed/bad1/app.yaml:3:1: error: prioity: unknown field"));
    CHECK_THAT(r.err, Catch::Contains("did you mean 'priority'?"));
    CHECK_THAT(r.err, Catch::Contains("mixed/bad2/main.jsonnet: error: roles.web.resources.memory"));
    CHECK_THAT(r.err, Catch::Contains("did you mean 8G or 8Gi?"));
    CHECK_THAT(r.err, Catch::Contains("roles.web.anti_affinity.preferred[0].weight"));
  }
  SECTION("-o json is valid JSON with every error") {
    auto r = s.gaia({"validate", "mixed", "-o", "json"});
    CHECK(r.code == 1);
    auto doc = nlohmann::json::parse(r.out);
    CHECK(doc["valid"] == false);
    REQUIRE(doc["specs"].size() == 4);
    size_t invalid = 0, errors = 0;
    for (const auto& spec : doc["specs"]) {
      if (!spec["valid"].get<bool>()) ++invalid;
      errors += spec["errors"].size();
      for (const auto& e : spec["errors"]) {
        CHECK(e.contains("file"));
        CHECK(e.contains("line"));
        CHECK(e.contains("message"));
      }
    }
    CHECK(invalid == 2);
    CHECK(errors >= 4);
    auto good = s.gaia({"validate", "mixed/good1", "mixed/good2", "-o", "json"});
    CHECK(good.code == 0);
    CHECK(nlohmann::json::parse(good.out)["valid"] == true);
  }
  SECTION("--error-format github prints ::error workflow commands") {
    auto r = s.gaia({"--error-format", "github", "validate", "mixed"});
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("::error file=mixed/bad1/app.yaml,line=3,col=1::"));
    CHECK_THAT(r.err, Catch::Contains("::error file=mixed/bad2/main.jsonnet::"));
    // One line per problem: messages and hints are escaped, never split over lines.
    std::istringstream lines(r.err);
    size_t annotations = 0;
    for (std::string line; std::getline(lines, line);) {
      CHECK_THAT(line, Catch::StartsWith("::error "));
      ++annotations;
    }
    CHECK(annotations >= 4);
  }
}

// ---------------------------------------------------------------------------------------
// render

TEST_CASE("e2e render: golden gaia/v1 and Kubernetes documents of examples/hdfs", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto yaml = s.gaia({"render", "examples/hdfs", "-o", "yaml"});
  INFO(yaml.err);
  REQUIRE(yaml.code == 0);
  check_golden("cli/render_hdfs.yaml", yaml.out);
  auto k8s = s.gaia({"render", "examples/hdfs", "--target", "kubernetes", "-o", "yaml"});
  INFO(k8s.err);
  REQUIRE(k8s.code == 0);
  check_golden("cli/render_hdfs_kubernetes.yaml", k8s.out);
  // yaml is the default output.
  CHECK(s.gaia({"render", "examples/hdfs"}).out == yaml.out);
}

TEST_CASE("e2e render: json, --all and the Kubernetes List", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto json = s.gaia({"render", "examples/hdfs", "-o", "json"});
  REQUIRE(json.code == 0);
  auto doc = nlohmann::json::parse(json.out);
  CHECK(doc["apiVersion"] == "gaia/v1");
  CHECK(doc["metadata"]["name"] == "hdfs");
  CHECK(doc["spec"]["roles"]["datanode"]["replicas"] == 3);

  auto all = s.gaia({"render", "examples/web", "--all", "-o", "json"});
  REQUIRE(all.code == 0);
  auto docs = nlohmann::json::parse(all.out);
  REQUIRE(docs.is_array());
  REQUIRE(docs.size() == 5);
  CHECK(docs.front()["metadata"]["name"] == "zookeeper");  // deploy order
  CHECK(docs.back()["metadata"]["name"] == "web");

  auto all_yaml = s.gaia({"render", "examples/web", "--all"});
  REQUIRE(all_yaml.code == 0);
  CHECK(count(all_yaml.out, "\nkind: App\n") == 5);
  CHECK(count(all_yaml.out, "\n---\n") == 4);

  auto list = s.gaia({"render", "examples/hdfs", "--target", "kubernetes", "-o", "json"});
  REQUIRE(list.code == 0);
  auto k8s = nlohmann::json::parse(list.out);
  CHECK(k8s["kind"] == "List");
  std::set<std::string> kinds;
  for (const auto& item : k8s["items"]) kinds.insert(item["kind"].get<std::string>());
  CHECK(kinds == std::set<std::string>{"ConfigMap", "PodDisruptionBudget", "PriorityClass", "Service", "StatefulSet"});
}

TEST_CASE("e2e render: --set and --values override parameters", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto set = s.gaia({"render", "examples/hdfs", "-o", "json", "--set", "datanodes=5", "--set", "replication=2",
                     "--set", "namenode.heap=16g"});
  REQUIRE(set.code == 0);
  auto doc = nlohmann::json::parse(set.out);
  CHECK(doc["spec"]["roles"]["datanode"]["replicas"] == 5);
  CHECK(doc["config"]["replication"] == 2);
  CHECK(doc["spec"]["roles"]["namenode"]["env"]["HADOOP_HEAPSIZE_MAX"] == "16g");

  s.write("values.yaml", "datanodes: 6\nreplication: 1\n");
  s.write("more.json", "{\"datanodes\": 7}");
  auto values = s.gaia({"render", "examples/hdfs", "-o", "json", "--values", "values.yaml", "--values", "more.json"});
  REQUIRE(values.code == 0);
  auto vdoc = nlohmann::json::parse(values.out);
  CHECK(vdoc["spec"]["roles"]["datanode"]["replicas"] == 7);  // later file wins
  CHECK(vdoc["config"]["replication"] == 1);
  // --set beats --values whatever the order on the command line.
  auto both = s.gaia({"render", "examples/hdfs", "-o", "json", "--set", "datanodes=4", "--values", "values.yaml"});
  REQUIRE(both.code == 0);
  CHECK(nlohmann::json::parse(both.out)["spec"]["roles"]["datanode"]["replicas"] == 4);

  SECTION("errors") {
    auto assert_fails = s.gaia({"render", "examples/hdfs", "--set", "replication=4"});
    CHECK(assert_fails.code == 1);
    CHECK_THAT(assert_fails.err,
               Catch::StartsWith("examples/hdfs/main.jsonnet:6:3: error: replication (4) cannot exceed the number of datanodes (3)"));
    auto not_kv = s.gaia({"render", "examples/hdfs", "--set", "datanodes"});
    CHECK(not_kv.code == 1);
    CHECK_THAT(not_kv.err, Catch::Contains("is not of the form key=value"));
    auto missing = s.gaia({"render", "examples/hdfs", "--values", "nope.yaml"});
    CHECK(missing.code == 1);
    CHECK_THAT(missing.err, Catch::Contains("nope.yaml"));
    s.write("list.yaml", "[1, 2]\n");
    auto list = s.gaia({"render", "examples/hdfs", "--values", "list.yaml"});
    CHECK(list.code == 1);
    CHECK_THAT(list.err, Catch::Contains("must be a mapping"));
    CHECK(list.out.empty());
  }
}

TEST_CASE("e2e render: --config-file supplies config-center keys and labels", "[e2e]") {
  Scratch s;
  copy_examples(s);
  s.write("centers.yaml",
          "config:\n"
          "  hdfs:\n"
          "    datanodes: 7\n"
          "  web.replicas: 5\n"
          "labels:\n"
          "  tenant:\n"
          "    default:\n"
          "      tier: premium\n");
  auto hdfs = s.gaia({"render", "examples/hdfs", "-o", "json", "--config-file", "centers.yaml"});
  REQUIRE(hdfs.code == 0);
  auto doc = nlohmann::json::parse(hdfs.out);
  CHECK(doc["spec"]["roles"]["datanode"]["replicas"] == 7);
  bool found = false;
  for (const auto& read : doc["reads"])
    if (read["key"] == "hdfs.datanodes") {
      found = true;
      CHECK(read["defaulted"] == false);
      CHECK(read["value"] == 7);
    }
  CHECK(found);

  auto web = s.gaia({"render", "examples/web", "-o", "json", "--config-file", "centers.yaml"});
  REQUIRE(web.code == 0);
  auto wdoc = nlohmann::json::parse(web.out);
  CHECK(wdoc["spec"]["roles"]["frontend"]["replicas"] == 5);
  CHECK(wdoc["spec"]["roles"]["frontend"]["resources"]["cpu"] == "2");  // the premium size

  SECTION("errors") {
    s.write("typo.yaml", "confg: {}\n");
    auto typo = s.gaia({"render", "examples/hdfs", "--config-file", "typo.yaml"});
    CHECK(typo.code == 1);
    CHECK_THAT(typo.err, Catch::StartsWith("typo.yaml: error: confg: unknown top-level key"));
    s.write("kind.yaml", "labels:\n  nodes: {}\n");
    auto kind = s.gaia({"render", "examples/hdfs", "--config-file", "kind.yaml"});
    CHECK(kind.code == 1);
    CHECK_THAT(kind.err, Catch::Contains("labels.nodes: unknown label kind"));
    auto missing = s.gaia({"render", "examples/hdfs", "--config-file", "nope.yaml"});
    CHECK(missing.code == 1);
    CHECK_THAT(missing.err, Catch::Contains("nope.yaml: error: cannot read file"));
  }
}

TEST_CASE("e2e render and deps: --running reuses an app and binds its outputs", "[e2e]") {
  Scratch s;
  copy_examples(s);
  s.write("running.yaml",
          "- name: zookeeper\n"
          "  version: 3.8.1\n"
          "  outputs: {quorum: 'zk1:2181,zk2:2181', client_port: 2181}\n");
  auto deps = s.gaia({"deps", "examples/web", "--running", "running.yaml"});
  REQUIRE(deps.code == 0);
  CHECK_THAT(deps.out, Catch::Contains("zookeeper as zk (reuse 3.8.1)"));
  CHECK_THAT(deps.out, Catch::Contains("plan: 4 to deploy, 1 reused"));
  CHECK_THAT(deps.out, Catch::Contains("deploy order: hdfs@3.3.4 -> "));

  auto render = s.gaia({"render", "examples/hdfs", "--running", "running.yaml"});
  REQUIRE(render.code == 0);
  CHECK_THAT(render.out, Catch::Contains("zk1:2181,zk2:2181"));
  auto all = s.gaia({"render", "examples/hdfs", "--running", "running.yaml", "--all", "-o", "json"});
  REQUIRE(all.code == 0);
  // --all -o json is always an array; only hdfs is in it, since zookeeper is reused.
  auto docs = nlohmann::json::parse(all.out);
  REQUIRE(docs.is_array());
  REQUIRE(docs.size() == 1);
  CHECK(docs[0]["metadata"]["name"] == "hdfs");

  SECTION("a running app of another tenant is not reused") {
    s.write("other.yaml", "- {name: zookeeper, version: 3.8.1, tenant: team-a, outputs: {quorum: q}}\n");
    auto other = s.gaia({"deps", "examples/hdfs", "--running", "other.yaml"});
    CHECK(other.code == 0);
    CHECK_THAT(other.out, Catch::Contains("zookeeper as zk (deploy 3.8.1)"));
    auto same = s.gaia({"--tenant", "team-a", "deps", "examples/hdfs", "--running", "other.yaml"});
    CHECK(same.code == 0);
    CHECK_THAT(same.out, Catch::Contains("zookeeper as zk (reuse 3.8.1)"));
  }
  SECTION("errors") {
    s.write("map.yaml", "name: zookeeper\n");
    auto map = s.gaia({"deps", "examples/web", "--running", "map.yaml"});
    CHECK(map.code == 1);
    CHECK_THAT(map.err, Catch::Contains("map.yaml: error: expected a list of running apps"));
    s.write("num.yaml", "- {name: zookeeper, version: 3.8}\n");
    auto num = s.gaia({"deps", "examples/web", "--running", "num.yaml"});
    CHECK(num.code == 1);
    CHECK_THAT(num.err, Catch::Contains("[0]: expected an object with string fields name and version"));
  }
}

TEST_CASE("e2e render: errors of the DIR argument", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto many = s.gaia({"render", "examples"});
  CHECK(many.code == 1);
  CHECK_THAT(many.err, Catch::Contains("render takes one app directory"));
  s.write("empty/readme.txt", "nothing here\n");
  auto empty = s.gaia({"render", "empty"});
  CHECK(empty.code == 1);
  CHECK_THAT(empty.err, Catch::Contains("no app.yaml here or in any direct subdirectory"));
}

TEST_CASE("e2e render: two renders without the cache are byte-identical", "[e2e]") {
  Scratch s;
  copy_examples(s);
  // The whole web chain as YAML, and the Kubernetes manifests of hdfs.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"render", "examples/web", "--all", "--no-cache"},
        {"render", "examples/hdfs", "--target", "kubernetes", "-o", "json", "--no-cache"}}) {
    auto first = s.gaia(args);
    auto second = s.gaia(args);
    REQUIRE(first.code == 0);
    REQUIRE(second.code == 0);
    CHECK_FALSE(first.out.empty());
    CHECK(first.out == second.out);
  }
  CHECK_FALSE(fs::exists(s.dir() / "cache" / "gaia" / "render"));
}

TEST_CASE("e2e render: the second render is served from the cache", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto first = s.gaia({"-v", "render", "examples/web"});
  REQUIRE(first.code == 0);
  // Each evaluation's child allocated from mimalloc (render/render_heap.hpp).
  CHECK_THAT(first.err, Catch::Contains("rendered 5 app(s): 5 evaluation(s) (mimalloc 2."));
  CHECK_THAT(first.err, Catch::Contains("), 0 cache hit(s)"));
  // XDG_CACHE_HOME (the scratch's cache/ dir, set by Scratch) holds the cache.
  CHECK(fs::exists(s.dir() / "cache" / "gaia" / "render"));
  CHECK_FALSE(fs::is_empty(s.dir() / "cache" / "gaia" / "render"));

  auto second = s.gaia({"-v", "render", "examples/web"});
  REQUIRE(second.code == 0);
  CHECK_THAT(second.err, Catch::Contains("rendered 5 app(s): 0 evaluation(s), 5 cache hit(s)"));
  CHECK(second.out == first.out);

  // A changed parameter of the root re-renders only the root.
  auto changed = s.gaia({"-v", "render", "examples/web", "--set", "log_level=debug"});
  REQUIRE(changed.code == 0);
  CHECK_THAT(changed.err, Catch::Contains("rendered 5 app(s): 1 evaluation(s) (mimalloc 2."));
  CHECK_THAT(changed.err, Catch::Contains("), 4 cache hit(s)"));
  // --no-cache neither reads nor writes it.
  auto bypass = s.gaia({"-v", "render", "examples/web", "--no-cache"});
  CHECK_THAT(bypass.err, Catch::Contains("5 evaluation(s) (mimalloc 2."));
  CHECK_THAT(bypass.err, Catch::Contains("), 0 cache hit(s)"));
  // The same bytes with glibc's malloc in the children, and -v says so and why.
  auto glibc = s.gaia({"-v", "render", "examples/web", "--no-cache"}, {{"GAIA_RENDER_MALLOC", "glibc"}});
  REQUIRE(glibc.code == 0);
  CHECK(glibc.out == first.out);
  CHECK_THAT(glibc.err,
             Catch::Contains("5 evaluation(s) (5 with glibc malloc: GAIA_RENDER_MALLOC=glibc)"));
  auto typo = s.gaia({"-v", "render", "examples/web", "--no-cache"}, {{"GAIA_RENDER_MALLOC", "jemalloc"}});
  REQUIRE(typo.code == 0);
  CHECK(typo.out == first.out);
  CHECK_THAT(typo.err, Catch::Contains("(5 with glibc malloc: GAIA_RENDER_MALLOC=jemalloc is neither mimalloc nor glibc)"));
  // The smallest memory limit leaves mimalloc no room (it reserves 32 MiB at a time): the
  // children use glibc, render the same, and -v says why.
  auto tight = s.gaia({"-v", "render", "examples/web", "--no-cache", "--render-memory", "64"});
  REQUIRE(tight.code == 0);
  CHECK(tight.out == first.out);
  CHECK_THAT(tight.err, Catch::Contains("(5 with glibc malloc: the memory limit of 64 MiB leaves mimalloc too little "
                                        "address space"));
  // Without -v, nothing on stderr.
  CHECK(s.gaia({"render", "examples/web"}).err.empty());
}

// ---------------------------------------------------------------------------------------
// deps

TEST_CASE("e2e deps: golden tree of examples/web", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto r = s.gaia({"deps", "examples/web"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  check_golden("cli/deps_web.txt", r.out);
  auto ascii = s.gaia({"deps", "examples/web", "--ascii"});
  REQUIRE(ascii.code == 0);
  for (unsigned char c : ascii.out) CHECK(c < 0x80);
  CHECK_THAT(ascii.out, Catch::Contains("`-- hbase (deploy 2.5.5)"));
}

TEST_CASE("e2e deps: --dot, -o json and several roots", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto dot = s.gaia({"deps", "examples/web", "--dot"});
  REQUIRE(dot.code == 0);
  CHECK_THAT(dot.out, Catch::StartsWith("digraph gaia {"));
  CHECK_THAT(dot.out, Catch::Contains("\"hbase@2.5.5\" -> \"zookeeper@3.8.1\" [label=\"zk\"];"));
  CHECK_THAT(dot.out, Catch::EndsWith("}\n"));

  auto json = s.gaia({"deps", "examples/web", "-o", "json"});
  REQUIRE(json.code == 0);
  auto plan = nlohmann::json::parse(json.out);
  REQUIRE(plan["nodes"].size() == 5);
  std::set<std::string> names;
  for (const auto& n : plan["nodes"]) {
    names.insert(n["name"].get<std::string>());
    CHECK(n["action"] == "deploy");
  }
  CHECK(names == std::set<std::string>{"hbase", "hdfs", "kafka", "web", "zookeeper"});

  auto two = s.gaia({"deps", "examples/spark", "examples/trainer"});
  REQUIRE(two.code == 0);
  CHECK_THAT(two.out, Catch::Contains("hdfs (deploy 3.3.4, see above)"));
  CHECK_THAT(two.out, Catch::Contains("plan: 4 to deploy, 0 reused"));
}

TEST_CASE("e2e deps: --reverse in a plan and over the repository", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto in_plan = s.gaia({"deps", "examples/web", "--reverse", "zookeeper"});
  REQUIRE(in_plan.code == 0);
  CHECK(in_plan.out ==
        "apps in this plan that depend on zookeeper:\n  kafka@3.6.0\n  hbase@2.5.5\n  hdfs@3.3.4\n  web@1.4.2\n");
  auto in_plan_json = s.gaia({"deps", "examples/web", "--reverse", "hdfs", "-o", "json"});
  REQUIRE(in_plan_json.code == 0);
  auto dependents = nlohmann::json::parse(in_plan_json.out);
  REQUIRE(dependents.size() == 2);
  CHECK(dependents[0]["name"] == "hbase");
  CHECK(dependents[1]["name"] == "web");
  auto none = s.gaia({"deps", "examples/web", "--reverse", "web"});
  CHECK(none.code == 0);
  CHECK_THAT(none.out, Catch::Contains("(none)"));
  auto not_in_plan = s.gaia({"deps", "examples/hdfs", "--reverse", "kafka"});
  CHECK(not_in_plan.code == 1);
  CHECK_THAT(not_in_plan.err, Catch::Contains("'kafka' is not part of this plan"));

  // Without DIR, the whole repository: --repo (a global flag, before the command) or GAIA_REPO.
  auto repo = s.gaia({"--repo", "examples", "deps", "--reverse", "hdfs"});
  REQUIRE(repo.code == 0);
  CHECK_THAT(repo.out, Catch::Contains("spark@3.5.0 requires hdfs ^3.3.0"));
  CHECK_THAT(repo.out, Catch::Contains("trainer@1.0.0 requires hdfs"));
  CHECK_THAT(repo.out, Catch::Contains("distcp@1.0.0 requires hdfs ^3.3"));
  CHECK_THAT(repo.out, Catch::Contains("web@1.4.2 requires hbase"));  // transitively
  auto env = s.gaia({"deps", "--reverse", "hdfs"}, {{"GAIA_REPO", "examples"}});
  CHECK(env.code == 0);
  CHECK(env.out == repo.out);
  auto json = s.gaia({"--repo", "examples", "deps", "--reverse", "zookeeper", "-o", "json"});
  REQUIRE(json.code == 0);
  auto all = nlohmann::json::parse(json.out);
  REQUIRE(all.is_array());
  CHECK(all.size() == 7);  // distcp depends on hdfs twice, listed once.
  for (const auto& d : all) CHECK(d.contains("depth"));

  auto unknown = s.gaia({"--repo", "examples", "deps", "--reverse", "zookeepr"});
  CHECK(unknown.code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("no app named 'zookeepr' in the repository"));
  auto nothing = s.gaia({"deps"});
  CHECK(nothing.code != 0);
  CHECK_THAT(nothing.err, Catch::Contains("nothing to show"));
  auto bad_repo = s.gaia({"--repo", "no-such-dir", "deps", "--reverse", "hdfs"});
  CHECK(bad_repo.code == 1);
  CHECK_THAT(bad_repo.err, Catch::Contains("spec repository 'no-such-dir' does not exist"));
}

TEST_CASE("e2e deps: a chain of 3000 apps resolves without overflowing the stack", "[e2e]") {
  Scratch s;
  constexpr int n = 3000;
  for (int i = 0; i < n; ++i) {
    std::string deps = i + 1 < n ? fmt::format("dependencies:\n  - name: a{}\n", i + 1) : "";
    write_app(s, fmt::format("chain/a{}", i), fmt::format("a{}", i), "1.0.0", deps, "{}\n",
              "function(config, deps, app) { roles: {}, outputs: {} }\n");
  }
  auto start = std::chrono::steady_clock::now();
  auto r = s.gaia({"deps", "chain/a0"});
  auto took = std::chrono::steady_clock::now() - start;
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(took < std::chrono::seconds(15));
  CHECK_THAT(r.out, Catch::StartsWith("a0 (deploy 1.0.0)\n"));
  CHECK_THAT(r.out, Catch::Contains(fmt::format("plan: {} to deploy, 0 reused", n)));
  CHECK_THAT(r.out, Catch::Contains("deploy order: a2999@1.0.0 -> a2998@1.0.0 -> "));
  CHECK_THAT(r.out, Catch::EndsWith(" -> a1@1.0.0 -> a0@1.0.0\n"));
  auto json = s.gaia({"deps", "chain/a0", "-o", "json"});
  REQUIRE(json.code == 0);
  CHECK(nlohmann::json::parse(json.out)["nodes"].size() == n);
}

// ---------------------------------------------------------------------------------------
// Environment variables and global flags

TEST_CASE("e2e env: GAIA_PATH and -J add Jsonnet library folders", "[e2e]") {
  Scratch s;
  s.write("libs/util.libsonnet", "{ image: 'busybox:1.36' }\n");
  write_app(s, "app", "app", "1.0.0", "", "{}\n",
            "local util = import 'util.libsonnet';\n"
            "function(config, deps, app) {\n"
            "  roles: { web: { image: util.image, resources: { cpu: '1', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  auto without = s.gaia({"render", "app"});
  CHECK(without.code == 1);
  CHECK_THAT(without.err, Catch::Contains("util.libsonnet"));
  auto with_env = s.gaia({"render", "app"}, {{"GAIA_PATH", "/nonexistent:libs"}});
  INFO(with_env.err);
  CHECK(with_env.code == 0);
  CHECK_THAT(with_env.out, Catch::Contains("image: busybox:1.36"));
  auto with_flag = s.gaia({"-J", "libs", "render", "app"});
  CHECK(with_flag.code == 0);
  CHECK(with_flag.out == with_env.out);
}

TEST_CASE("e2e env: colour follows --color and NO_COLOR", "[e2e]") {
  Scratch s;
  const std::string esc = "\033[";
  // Scratch sets NO_COLOR=1 and output is not a terminal: plain text.
  CHECK_THAT(s.gaia({"render", "nope"}).err, !Catch::Contains(esc));
  CHECK_THAT(s.gaia({"render", "nope"}, {{"NO_COLOR", ""}}).err, !Catch::Contains(esc));
  auto always = s.gaia({"--color", "always", "render", "nope"});
  CHECK(always.code == 1);
  CHECK_THAT(always.err, Catch::Contains(esc + "31merror" + esc + "0m"));
  CHECK_THAT(s.gaia({"--color", "never", "render", "nope"}).err, !Catch::Contains(esc));
}

TEST_CASE("e2e env: --tenant renders into another tenant", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto r = s.gaia({"--tenant", "team-a", "render", "examples/hdfs", "-o", "json"});
  REQUIRE(r.code == 0);
  auto doc = nlohmann::json::parse(r.out);
  CHECK(doc["metadata"]["tenant"] == "team-a");
  CHECK(doc["spec"]["outputs"]["namenode_uri"] == "hdfs://namenode.hdfs.team-a.gaia:8020");
  auto k8s = s.gaia({"--tenant", "team-a", "render", "examples/hdfs", "--target", "kubernetes"});
  REQUIRE(k8s.code == 0);
  CHECK_THAT(k8s.out, Catch::Contains("namespace: team-a"));
}

// ---------------------------------------------------------------------------------------
// Problems found while writing these tests, now fixed: these keep them fixed.

TEST_CASE("e2e fixed: global flags are accepted after the subcommand, as the docs show", "[e2e]") {
  Scratch s;
  copy_examples(s);
  // README, examples/README and `gaia deps --help` all write --repo after the command.
  CHECK(s.gaia({"deps", "--reverse", "zookeeper", "--repo", "examples"}).code == 0);
  CHECK(s.gaia({"render", "examples/web", "--repo", "examples"}).code == 0);
}

TEST_CASE("e2e fixed: an invalid --tenant is a usage error", "[e2e]") {
  Scratch s;
  copy_examples(s);
  CHECK(s.gaia({"--tenant", "Bad Tenant", "render", "examples/zookeeper"}).code != 0);
}

TEST_CASE("e2e fixed: the output-limit hint names a flag that exists", "[e2e]") {
  Scratch s;
  write_output_app(s, "big", "local d(s, n) = if n == 0 then s else d(s + s, n - 1);", "d('x', 24)");
  auto r = s.gaia({"render", "big"});
  CHECK(r.code == 1);
  if (r.err.find("--render-max-output") != std::string::npos)
    CHECK(s.gaia({"render", "big", "--render-max-output", "64"}).code != 2);
}

TEST_CASE("e2e every --tenant rejects a name that is not a DNS label as a usage error", "[e2e]") {
  gaia::test::Scratch s;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--tenant", "Bad Tenant", "deps", "x"},
                                             {"plan", "x", "--tenant", "Bad_T"},
                                             {"submit", "x", "--tenant", "UPPER"},
                                             {"delete", "x", "--tenant", "a.b"},
                                             {"events", "--tenant", "-x-"}}) {
    auto r = s.gaia(args);
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::Contains("is not a DNS label"));
  }
}

TEST_CASE("e2e: commands on the embedded default start without libcurl", "[e2e]") {
  // libcurl and its thirty libraries cost every process 9 ms before main; only the etcd
  // store and the Kubernetes backend open it (net/curl_library.hpp, and the etcd e2e
  // test checks that they do). LD_DEBUG=files makes the dynamic loader name each
  // library it loads.
  Scratch s;
  copy_examples(s);
  const std::map<std::string, std::string> env{{"LD_DEBUG", "files"}, {"LD_DEBUG_OUTPUT", ""}};
  auto created = s.gaia({"cluster", "create", "--nodes", "3"}, env);
  REQUIRE(created.code == 0);
  auto submitted = s.gaia({"submit", "examples/local/kv"}, env);
  INFO(submitted.err);
  REQUIRE(submitted.code == 0);
  auto apps = s.gaia({"get", "apps"}, env);
  REQUIRE(apps.code == 0);
  for (const auto* r : {&created, &submitted, &apps}) {
    CHECK_THAT(r->err, Catch::Contains("file=libjsonnet.so"));  // The log is there...
    CHECK_THAT(r->err, !Catch::Contains("libcurl"));            // ...and names no libcurl.
  }
}

TEST_CASE("e2e: without libcurl, the embedded default works and etcd says so at once", "[e2e]") {
  // As on a machine where libcurl is missing: a preloaded library makes opening it fail.
  Scratch s;
  copy_examples(s);
  const std::map<std::string, std::string> env{{"LD_PRELOAD", GAIA_TEST_NO_CURL}};
  REQUIRE(s.gaia({"cluster", "create", "--nodes", "2"}, env).code == 0);
  auto submitted = s.gaia({"submit", "examples/local/kv"}, env);
  INFO(submitted.err);
  CHECK(submitted.code == 0);
  // An etcd store needs it: the store's opening says so (with the way to install it)
  // before any request, which would fail and be retried as if the server were down.
  auto etcd = s.gaia({"get", "apps", "--store", "etcd://127.0.0.1:9"}, env);
  CHECK(etcd.code == 1);
  CHECK_THAT(etcd.err, Catch::Contains("etcd store etcd://127.0.0.1:9"));
  CHECK_THAT(etcd.err, Catch::Contains("cannot open libcurl"));
  CHECK_THAT(etcd.err, Catch::Contains("hint: bash scripts/setup.sh --main installs libcurl4"));
}
