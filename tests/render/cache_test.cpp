// The render cache: a hit runs no Jsonnet; any change of a file, a config or label
// value read, or an external import invalidates; corrupt entries are ignored.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "render/cache.hpp"
#include "render/renderer.hpp"
#include "tests/render/render_test_util.hpp"

using gaia::test::TempApp;
using nlohmann::json;
namespace render = gaia::render;
namespace fs = std::filesystem;

namespace {

const char* k_config =
    "local gaia = import 'gaia.libsonnet';\n"
    "{ replicas: gaia.config('demo.replicas', 2), zone: gaia.label('node', 'n1', 'zone', 'z0') }\n";

}  // namespace

TEST_CASE("a cache hit does no Jsonnet work", "[cache]") {
  TempApp app(k_config);
  render::MemoryRenderCache cache;
  render::RenderStats stats;
  auto req = app.request();
  gaia::ConfigSnapshot snapshot;  // What the config center holds for the render.
  req.stats = &stats;

  auto first = render::render_app(req, &cache);
  REQUIRE(first.has_value());
  CHECK_FALSE(first->from_cache);
  CHECK(stats.evaluations == 1);
  CHECK(stats.cache_misses == 1);
  CHECK(cache.size() == 1);

  auto second = render::render_app(req, &cache);
  REQUIRE(second.has_value());
  CHECK(second->from_cache);
  CHECK(stats.evaluations == 1);
  CHECK(stats.cache_hits == 1);
  CHECK(second->document.dump() == first->document.dump());

  SECTION("a change of any file of the app dir misses") {
    app.write("lib/unused.libsonnet", "{}");
    auto third = render::render_app(req, &cache);
    REQUIRE(third.has_value());
    CHECK_FALSE(third->from_cache);
    CHECK(stats.evaluations == 2);
  }
  SECTION("a change of a config value read misses, an unrelated key does not") {
    snapshot.config["unrelated.key"] = gaia::ConfigValue{1, 5, "center"};
    req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
    REQUIRE(render::render_app(req, &cache).value().from_cache);
    CHECK(stats.evaluations == 1);

    snapshot.config["demo.replicas"] = gaia::ConfigValue{3, 6, "center"};
    req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
    auto changed = render::render_app(req, &cache);
    REQUIRE(changed.has_value());
    CHECK_FALSE(changed->from_cache);
    CHECK(stats.evaluations == 2);
    CHECK(changed->workload.roles[0].replicas == 3);

    // Same value at a new revision: the recorded provenance differs, so it re-renders.
    snapshot.config["demo.replicas"] = gaia::ConfigValue{3, 7, "center"};
    req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
    CHECK_FALSE(render::render_app(req, &cache).value().from_cache);
    CHECK(stats.evaluations == 3);

    // Both earlier states are still cached (one manifest each).
    snapshot.config["demo.replicas"] = gaia::ConfigValue{3, 6, "center"};
    req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
    CHECK(render::render_app(req, &cache).value().from_cache);
    snapshot.config.erase("demo.replicas");
    req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
    CHECK(render::render_app(req, &cache).value().from_cache);
    CHECK(stats.evaluations == 3);
  }
  SECTION("a label read that changes misses") {
    snapshot.labels["node"]["n1"]["zone"] = gaia::ConfigValue{"z1", 3, "center"};
    req.options.config = std::make_shared<const gaia::ConfigSnapshot>(snapshot);
    CHECK_FALSE(render::render_app(req, &cache).value().from_cache);
    CHECK(stats.evaluations == 2);
  }
  SECTION("overrides, tenant and deps are part of the key") {
    req.options.overrides = json{{"replicas", 5}};
    CHECK_FALSE(render::render_app(req, &cache).value().from_cache);
    req.options.overrides = json::object();
    req.options.tenant = "other";
    CHECK_FALSE(render::render_app(req, &cache).value().from_cache);
    CHECK(stats.evaluations == 3);
  }
}

TEST_CASE("external imports are validated on lookup", "[cache]") {
  TempApp app("(import 'lib.libsonnet') + { replicas: 1 }");
  auto jdir = app.write("jlib/lib.libsonnet", "{ a: 1 }", /*in_root=*/true).parent_path();
  fs::create_directories(app.root() / "jfirst");
  render::MemoryRenderCache cache;
  render::RenderStats stats;
  auto req = app.request();
  req.stats = &stats;
  req.options.jpaths = {app.root() / "jfirst", jdir};

  REQUIRE(render::render_app(req, &cache).has_value());
  REQUIRE(render::render_app(req, &cache).value().from_cache);

  SECTION("a changed library file") {
    app.write("jlib/lib.libsonnet", "{ a: 2 }", true);
    auto r = render::render_app(req, &cache);
    REQUIRE(r.has_value());
    CHECK_FALSE(r->from_cache);
    CHECK(r->workload.config["a"] == 2);
  }
  SECTION("a new file that shadows it earlier on the path") {
    app.write("jfirst/lib.libsonnet", "{ a: 3 }", true);
    auto r = render::render_app(req, &cache);
    REQUIRE(r.has_value());
    CHECK_FALSE(r->from_cache);
    CHECK(r->workload.config["a"] == 3);
  }
  CHECK(stats.evaluations == 2);
}

TEST_CASE("directory cache: persistent, atomic, corrupt entries ignored", "[cache]") {
  TempApp app(k_config);
  const fs::path dir = app.root() / "cache";
  render::RenderStats stats;
  auto req = app.request();
  req.stats = &stats;
  std::string key;
  {
    render::DirectoryRenderCache cache(dir);
    REQUIRE(render::render_app(req, &cache).has_value());
    key = render::render_input_key(req, json::object());
    CHECK(fs::exists(cache.path_of(key)));
  }
  {
    render::DirectoryRenderCache cache(dir);
    CHECK(render::render_app(req, &cache).value().from_cache);
    CHECK(stats.evaluations == 1);
    // No temporary files are left behind.
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) CHECK(e.path().filename().string() == key);
    }
    std::ofstream(cache.path_of(key), std::ios::trunc) << "{\"format\": 1, \"manifests\": [{\"raw\": 3}]";
    auto r = render::render_app(req, &cache);
    REQUIRE(r.has_value());
    CHECK_FALSE(r->from_cache);
    CHECK(stats.evaluations == 2);
    CHECK(render::render_app(req, &cache).value().from_cache);  // Overwritten with a good entry.
    CHECK(stats.evaluations == 2);
  }
}

TEST_CASE("read_still_holds compares value, revision and absence", "[cache]") {
  gaia::ConfigSnapshot s;
  s.config["a"] = gaia::ConfigValue{1, 3, "center"};
  s.labels["node"]["n1"]["gaia.io/zone"] = gaia::ConfigValue{"z1", 2, "center"};
  CHECK(render::read_still_holds({"config", "a", 1, 3, false}, s));
  CHECK_FALSE(render::read_still_holds({"config", "a", 1, 4, false}, s));
  CHECK_FALSE(render::read_still_holds({"config", "a", 2, 3, false}, s));
  CHECK_FALSE(render::read_still_holds({"config", "a", 1, 0, true}, s));
  CHECK(render::read_still_holds({"config", "b", 1, 0, true}, s));
  CHECK(render::read_still_holds({"label", "node/n1/gaia.io/zone", "z1", 2, false}, s));
  CHECK_FALSE(render::read_still_holds({"label", "node/n2/gaia.io/zone", "z1", 2, false}, s));
  CHECK_FALSE(render::read_still_holds({"label", "broken", "z1", 2, false}, s));
}
