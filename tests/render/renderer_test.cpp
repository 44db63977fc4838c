// Jsonnet rendering: config + overrides + main, deps, app, the gaia library, reads,
// hermetic imports, error locations and determinism.

#include <catch2/catch.hpp>

#include <filesystem>

#include "render/renderer.hpp"
#include "tests/render/render_test_util.hpp"

using gaia::test::TempApp;
using nlohmann::json;
namespace render = gaia::render;
namespace fs = std::filesystem;

namespace {

std::string all_messages(const gaia::Diagnostics& ds) { return gaia::format_diagnostics(ds); }

}  // namespace

TEST_CASE("renders config and main into a raw render", "[renderer]") {
  TempApp app("{ replicas: 2, name: 'x' + 'y' }");
  auto raw = render::evaluate(app.request());
  REQUIRE(raw.has_value());
  CHECK(raw->config == json{{"replicas", 2}, {"name", "xy"}});
  CHECK(raw->main["roles"]["web"]["replicas"] == 2);
  CHECK(raw->main["roles"]["web"]["image"] == "nginx:1.25");
  CHECK(raw->reads.empty());
}

TEST_CASE("main receives the app object", "[renderer]") {
  TempApp app("{}", "function(config, deps, app) { roles: {}, outputs: { who: app } }");
  auto req = app.request();
  req.options.tenant = "team-a";
  auto raw = render::evaluate(req);
  REQUIRE(raw.has_value());
  CHECK(raw->main["outputs"]["who"] ==
        json{{"name", "demo"}, {"app", "demo"}, {"version", "1.2.3"}, {"tenant", "team-a"}, {"scale", json::object()}});
}

TEST_CASE("the counts gaia scale set reach main as app.scale and gaia.replicas", "[renderer][scale]") {
  TempApp app("{ datanodes: 3, replication: 3 }",
              "local gaia = import 'gaia.libsonnet';\n"
              "function(config, deps, app)\n"
              "  local datanodes = gaia.replicas(app, 'datanode', config.datanodes);\n"
              "  assert config.replication <= datanodes : 'replication cannot exceed %d datanodes' % datanodes;\n"
              "  { roles: {}, outputs: { scale: app.scale, datanodes: datanodes, other: gaia.replicas(app, 'x', 7) } }");
  auto req = app.request();
  auto plain = render::evaluate(req);
  REQUIRE(plain.has_value());
  CHECK(plain->main["outputs"]["scale"] == json::object());
  CHECK(plain->main["outputs"]["datanodes"] == 3);  // The default: nothing scaled.
  CHECK(plain->main["outputs"]["other"] == 7);

  req.options.scale = {{"datanode", 5}};
  auto scaled = render::evaluate(req);
  REQUIRE(scaled.has_value());
  CHECK(scaled->main["outputs"]["scale"] == json{{"datanode", 5}});
  CHECK(scaled->main["outputs"]["datanodes"] == 5);
  CHECK(scaled->main["outputs"]["other"] == 7);

  // The template's own check judges the scaled count.
  req.options.scale = {{"datanode", 2}};
  auto refused = render::evaluate(req);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(all_messages(refused.error()), Catch::Contains("replication cannot exceed 2 datanodes"));
}

TEST_CASE("the render cache tells scaled renders apart", "[renderer][scale]") {
  TempApp app("{}", "function(config, deps, app) { roles: {}, outputs: { scale: app.scale } }");
  auto req = app.request();
  json deps = json::object();
  std::string plain = render::render_input_key(req, deps);
  req.options.scale = {{"web", 2}};
  std::string two = render::render_input_key(req, deps);
  req.options.scale = {{"web", 3}};
  std::string three = render::render_input_key(req, deps);
  CHECK(plain != two);
  CHECK(two != three);
  req.options.scale.clear();
  CHECK(render::render_input_key(req, deps) == plain);
}

TEST_CASE("deps carry only the imported outputs", "[renderer]") {
  TempApp app("{}", "function(config, deps, app) { roles: {}, outputs: { q: deps.zk.quorum } }");
  gaia::spec::Dependency d;
  d.name = "zookeeper";
  d.alias = "zk";
  d.imports = {"quorum"};
  app.spec.dependencies.push_back(d);
  auto req = app.request();
  req.deps = json{{"zk", {{"quorum", "zk-0:2181,zk-1:2181"}, {"admin", "secret"}}}};

  auto raw = render::evaluate(req);
  REQUIRE(raw.has_value());
  CHECK(raw->main["outputs"]["q"] == "zk-0:2181,zk-1:2181");

  SECTION("an output that is not imported is a Jsonnet error naming the field") {
    app.write("main.jsonnet", "function(config, deps, app) { roles: {}, outputs: { a: deps.zk.admin } }");
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(all_messages(bad.error()), Catch::Contains("field does not exist: admin"));
    CHECK(bad.error()[0].location.file == "demo/main.jsonnet");
    CHECK(bad.error()[0].location.line == 1);
  }
  SECTION("a missing output of the dependency is an error") {
    req.deps = json{{"zk", {{"admin", "x"}}}};
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error()[0].message, Catch::Contains("has no output 'quorum'"));
    CHECK_THAT(bad.error()[0].hint, Catch::Contains("admin"));
  }
  SECTION("a dependency without outputs given is an error") {
    req.deps = json::object();
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error()[0].message, Catch::Contains("'zk' (zookeeper)"));
  }
}

TEST_CASE("overrides are merged over config before main runs", "[renderer][overrides]") {
  TempApp app("{ replicas: 2, hdfs: { replication: 3, heap: '1g' } }",
              "function(config, deps, app) { roles: {}, outputs: { c: config } }");
  auto req = app.request();
  req.options.overrides = json{{"replicas", 5}, {"hdfs", {{"replication", 2}, {"extra", true}}}};
  auto raw = render::evaluate(req);
  REQUIRE(raw.has_value());
  json expected{{"replicas", 5}, {"hdfs", {{"replication", 2}, {"heap", "1g"}, {"extra", true}}}};
  CHECK(raw->config == expected);
  CHECK(raw->main["outputs"]["c"] == expected);

  SECTION("an unknown top-level key is an error with a hint") {
    req.options.overrides = json{{"replcas", 5}};
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error()[0].path == "replcas");
    CHECK(bad.error()[0].location.file == "demo/config.jsonnet");
    CHECK_THAT(bad.error()[0].hint, Catch::Contains("did you mean 'replicas'"));
    CHECK_THAT(bad.error()[0].hint, Catch::Contains("hdfs, replicas"));
  }
}

TEST_CASE("config and label reads are recorded, sorted and deduplicated", "[renderer]") {
  TempApp app(
      "local gaia = import 'gaia.libsonnet';\n"
      "{\n"
      "  replication: gaia.config('hdfs.replication', 3),\n"
      "  again: gaia.config('hdfs.replication', 3),\n"
      "  heap: gaia.config('hdfs.heap', '1g'),\n"
      "  opts: gaia.config('hdfs.opts', { a: [1, 2] }),\n"
      "  zone: gaia.label('tenant', 'default', 'gaia.io/zone', 'z9'),\n"
      "  unused:: gaia.config('never.forced', 1),\n"
      "}\n",
      "function(config, deps, app) { roles: {}, outputs: {} }");
  auto req = app.request();
  gaia::ConfigSnapshot snapshot;  // What the config center holds for the render.
  snapshot.config["hdfs.heap"] = gaia::ConfigValue{"4g", 17, "center"};
  req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
  snapshot.labels["tenant"]["default"]["gaia.io/zone"] = gaia::ConfigValue{"z1", 4, "center"};
  req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
  auto raw = render::evaluate(req);
  INFO((raw ? std::string() : all_messages(raw.error())));
  REQUIRE(raw.has_value());
  CHECK(raw->config["replication"] == 3);
  CHECK(raw->config["heap"] == "4g");
  CHECK(raw->config["opts"] == json{{"a", {1, 2}}});
  CHECK(raw->config["zone"] == "z1");
  REQUIRE(raw->reads.size() == 4);
  CHECK(raw->reads[0] == gaia::ConfigRead{"config", "hdfs.heap", "4g", 17, false});
  CHECK(raw->reads[1] == gaia::ConfigRead{"config", "hdfs.opts", json{{"a", {1, 2}}}, 0, true});
  CHECK(raw->reads[2] == gaia::ConfigRead{"config", "hdfs.replication", 3, 0, true});
  CHECK(raw->reads[3] == gaia::ConfigRead{"label", "tenant/default/gaia.io/zone", "z1", 4, false});
}

TEST_CASE("gaia.libsonnet helpers", "[renderer]") {
  TempApp app("{}",
              "local gaia = import 'gaia.libsonnet';\n"
              "function(config, deps, app) { roles: {}, outputs: {\n"
              "  svc: gaia.serviceName(app, 'namenode'),\n"
              "  svc2: gaia.serviceName('zookeeper', 'server', 'prod'),\n"
              "  inst: gaia.instanceName(app, 'datanode', 2),\n"
              "  cpu: [gaia.cores(2), gaia.cores(0.5), gaia.millicores(250)],\n"
              "  mem: [gaia.gi(8), gaia.gi(1.5), gaia.mi(512)],\n"
              "  role: gaia.role({ image: 'x' }),\n"
              "  batch: gaia.batch({ image: 'y' }).kind,\n"
              "} }\n");
  auto req = app.request();
  req.options.tenant = "t1";
  auto raw = render::evaluate(req);
  REQUIRE(raw.has_value());
  const json& o = raw->main["outputs"];
  CHECK(o["svc"] == "namenode.demo.t1.gaia");
  CHECK(o["svc2"] == "server.zookeeper.prod.gaia");
  CHECK(o["inst"] == "2.datanode.demo.t1.gaia");
  CHECK(o["cpu"] == json{"2", "500m", "250m"});
  CHECK(o["mem"] == json{"8Gi", "1536Mi", "512Mi"});
  CHECK(o["role"]["kind"] == "service");
  CHECK(o["role"]["replicas"] == 1);
  CHECK(o["role"]["image"] == "x");
  CHECK(o["batch"] == "batch");

  SECTION("a misuse of a helper is located at the caller, not in the library") {
    app.write("main.jsonnet",
              "local gaia = import 'gaia.libsonnet';\n"
              "function(config, deps, app) {\n"
              "  roles: {}, outputs: { cpu: gaia.cores('two') } }\n");
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error()[0].message, Catch::Contains("gaia.cores: n must be a number"));
    CHECK(bad.error()[0].location.file == "demo/main.jsonnet");
    CHECK(bad.error()[0].location.line == 3);
  }
}

TEST_CASE("imports: app dir, vendor/, -J and gaia.libsonnet are allowed", "[renderer]") {
  TempApp app("(import 'lib/params.libsonnet') + (import 'v.libsonnet') + (import 'beside.libsonnet') + "
              "(import 'j.libsonnet') + { text: importstr 'lib/motd.txt' }");
  app.write("lib/params.libsonnet", "{ replicas: (import 'helper.libsonnet').n }");
  app.write("lib/helper.libsonnet", "{ n: 4 }");
  app.write("lib/motd.txt", "hello");
  app.write("vendor/v.libsonnet", "{ v: 'in-vendor' }");
  app.write("vendor/beside.libsonnet", "{ beside: 'vendor beside' }", /*in_root=*/true);
  auto jdir = app.write("jlib/j.libsonnet", "{ j: (import 'gaia.libsonnet').cores(1) }", /*in_root=*/true).parent_path();
  auto req = app.request();
  req.options.jpaths = {jdir};
  auto raw = render::evaluate(req);
  REQUIRE(raw.has_value());
  CHECK(raw->config == json{{"replicas", 4}, {"v", "in-vendor"}, {"beside", "vendor beside"}, {"j", "1"}, {"text", "hello"}});
}

TEST_CASE("imports outside the allowed paths are rejected", "[renderer]") {
  TempApp app;
  auto req = app.request();
  auto expect_rejected = [&](const std::string& main, const std::string& shown) {
    app.write("main.jsonnet", main);
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error()[0].message,
               Catch::Contains("import '" + shown + "' is outside the allowed paths (app dir, vendor/, -J, GAIA_PATH)"));
    CHECK(bad.error()[0].location.file == "demo/main.jsonnet");
    CHECK(bad.error()[0].location.line == 1);
    CHECK_FALSE(bad.error()[0].hint.empty());
  };
  expect_rejected("import '/etc/passwd'", "/etc/passwd");
  expect_rejected("importstr '/etc/passwd'", "/etc/passwd");
  expect_rejected("import '../../x'", "../../x");
  app.write("secret.libsonnet", "{}", /*in_root=*/true);
  expect_rejected("import '../secret.libsonnet'", "../secret.libsonnet");

  SECTION("a symlink out of the app dir") {
    fs::create_symlink("/etc/passwd", app.dir() / "link.txt");
    expect_rejected("importstr 'link.txt'", "link.txt");
  }
  SECTION("no external variables: the environment is not visible") {
    app.write("main.jsonnet", "std.extVar('HOME')");
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error()[0].message, Catch::Contains("undefined external variable: HOME"));
  }
  SECTION("a missing file says where it looked") {
    app.write("main.jsonnet", "import 'nope.libsonnet'");
    auto bad = render::evaluate(req);
    REQUIRE_FALSE(bad.has_value());
    CHECK_THAT(bad.error()[0].message, Catch::Contains("import 'nope.libsonnet' not found"));
  }
}

TEST_CASE("syntax errors keep the Jsonnet location", "[renderer]") {
  TempApp app("{ a: 1 }", "function(config, deps, app)\n{\n  roles: {\n    web: { image: }\n  },\n}\n");
  auto bad = render::evaluate(app.request());
  REQUIRE_FALSE(bad.has_value());
  REQUIRE(bad.error().size() == 1);
  const auto& d = bad.error()[0];
  CHECK(d.location.file == "demo/main.jsonnet");
  CHECK(d.location.line == 4);
  CHECK(d.location.column == 19);
  CHECK_THAT(d.message, Catch::Contains("unexpected"));
  CHECK_THAT(d.to_string(), Catch::StartsWith("demo/main.jsonnet:4:19"));
}

TEST_CASE("runtime errors keep the Jsonnet location and trace", "[renderer]") {
  TempApp app("{ a: 1 }",
              "local check(x) =\n"
              "  if x > 0 then error 'boom: ' + x else x;\n"
              "function(config, deps, app) {\n"
              "  roles: {},\n"
              "  outputs: { v: check(config.a) },\n"
              "}\n");
  auto bad = render::evaluate(app.request());
  REQUIRE_FALSE(bad.has_value());
  const auto& d = bad.error()[0];
  CHECK(d.location.file == "demo/main.jsonnet");
  CHECK(d.location.line == 2);
  CHECK(d.location.column == 17);
  CHECK_THAT(d.message, Catch::StartsWith("boom: 1"));
  // The trace is kept, with the same display paths.
  CHECK_THAT(d.message, Catch::Contains("demo/main.jsonnet:5:"));
  CHECK_THAT(d.message, !Catch::Contains(app.dir().string()));

  SECTION("errors in config.jsonnet and in imported files point there") {
    app.write("config.jsonnet", "{ a: (import 'lib/x.libsonnet').f() }");
    app.write("lib/x.libsonnet", "{\n  f():: std.foo(),\n}\n");
    auto bad2 = render::evaluate(app.request());
    REQUIRE_FALSE(bad2.has_value());
    CHECK(bad2.error()[0].location.file == "demo/lib/x.libsonnet");
    CHECK(bad2.error()[0].location.line == 2);
    CHECK_THAT(bad2.error()[0].message, Catch::Contains("field does not exist: foo"));
  }
  SECTION("without a display dir, paths are bare") {
    auto req = app.request();
    req.options.display_dir = "";
    app.spec.yaml_file = "app.yaml";
    auto bad2 = render::evaluate(req);
    REQUIRE_FALSE(bad2.has_value());
    CHECK(bad2.error()[0].location.to_string() == "main.jsonnet:2:17");
  }
}

TEST_CASE("main.jsonnet must be a function, config an object", "[renderer]") {
  TempApp app("{}", "{ roles: {} }");
  auto bad = render::evaluate(app.request());
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error()[0].location.file == "demo/main.jsonnet");
  CHECK_THAT(bad.error()[0].message, Catch::Contains("must evaluate to a function(config, deps, app), not object"));

  app.write("config.jsonnet", "[1, 2]");
  bad = render::evaluate(app.request());
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error()[0].location.file == "demo/config.jsonnet");
  CHECK_THAT(bad.error()[0].message, Catch::Contains("must evaluate to an object"));
}

TEST_CASE("rendering is deterministic", "[renderer]") {
  TempApp app(
      "local gaia = import 'gaia.libsonnet';\n"
      "{ replicas: gaia.config('demo.replicas', 3), z: 1, a: { y: [3, 2, 1], b: 0.5 } }");
  auto req = app.request();
  gaia::ConfigSnapshot snapshot;  // What the config center holds for the render.
  snapshot.config["demo.replicas"] = gaia::ConfigValue{4, 9, "center"};
  req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
  auto one = render::render_app(req);
  auto two = render::render_app(req);
  REQUIRE(one.has_value());
  REQUIRE(two.has_value());
  CHECK(one->document.dump() == two->document.dump());
  CHECK(one->workload.hash == two->workload.hash);
  CHECK(one->workload.hash.size() == 32);
  REQUIRE(one->workload.roles.size() == 1);
  CHECK(one->workload.roles[0].replicas == 4);
  REQUIRE(one->workload.reads.size() == 1);
  CHECK(one->workload.reads[0].revision == 9);

  auto raw1 = render::evaluate(req);
  auto raw2 = render::evaluate(req);
  REQUIRE(raw1.has_value());
  REQUIRE(raw2.has_value());
  CHECK(render::to_json(*raw1).dump() == render::to_json(*raw2).dump());
}

TEST_CASE("validation errors of the rendered roles come through render_app", "[renderer]") {
  TempApp app("{}", "function(config, deps, app) { roles: { web: { image: 'x' } }, outputs: {} }");
  auto bad = render::render_app(app.request());
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(all_messages(bad.error()), Catch::Contains("resources"));
}
