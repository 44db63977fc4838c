// What a render reports of its inputs beyond the app dir (Rendered::external, which a
// spec bundle keeps), on a miss and on a cache hit, and renders keyed by a bundle's hash
// (RenderRequest::sources_key), which share cache entries wherever the files are.

#include <catch2/catch.hpp>

#include <filesystem>

#include "render/cache.hpp"
#include "render/renderer.hpp"
#include "tests/render/render_test_util.hpp"

using gaia::test::TempApp;
namespace render = gaia::render;
namespace fs = std::filesystem;

namespace {

const char* k_main =
    "local lib = import 'shared.libsonnet';\n"
    "function(config, deps, app) {\n"
    "  roles: { web: { image: lib.image, replicas: config.replicas,\n"
    "                  resources: { cpu: '1', memory: '1Gi' } } },\n"
    "  outputs: {},\n"
    "}\n";

bool has_file(const std::vector<render::ExternalFile>& ext, const fs::path& p, bool exists) {
  for (const auto& f : ext)
    if (f.path == p.string() && f.exists == exists) return true;
  return false;
}

}  // namespace

TEST_CASE("a render lists the files it imported from outside the app dir, also on a cache hit", "[render][external]") {
  TempApp app("{ replicas: 2 }", k_main);
  fs::path shared = app.write("vendor/shared.libsonnet", "{ image: 'nginx:1.25' }", true);
  render::MemoryRenderCache cache;
  auto req = app.request();

  auto first = render::render_app(req, &cache);
  REQUIRE(first.has_value());
  CHECK_FALSE(first->from_cache);
  CHECK(has_file(first->external, shared, true));
  // The app's own vendor/ was probed first and did not exist: that is recorded too (it
  // is inside the app dir, so it is not an external file).
  for (const auto& f : first->external) CHECK_FALSE(f.path.starts_with(app.dir().string() + "/"));

  auto second = render::render_app(req, &cache);
  REQUIRE(second.has_value());
  CHECK(second->from_cache);
  CHECK(second->external == first->external);
}

TEST_CASE("app_dir_files lists every regular file below the app dir, sorted", "[render][external]") {
  TempApp app;
  app.write("lib/b.libsonnet", "{}");
  app.write("data/a.txt", "x");
  auto files = render::app_dir_files(app.dir());
  std::vector<std::string> rel;
  for (const auto& [r, p] : files) {
    rel.push_back(r);
    CHECK(p == app.dir() / r);
  }
  CHECK(rel == std::vector<std::string>{"app.yaml", "config.jsonnet", "data/a.txt", "lib/b.libsonnet", "main.jsonnet"});
}

TEST_CASE("renders with one sources key share a cache entry wherever the app dir is", "[render][external]") {
  TempApp one("{ replicas: 2 }", TempApp::default_main(), "demo");
  TempApp two("{ replicas: 2 }", TempApp::default_main(), "demo");
  REQUIRE(one.dir() != two.dir());
  render::MemoryRenderCache cache;
  render::RenderStats stats;

  auto a = one.request();
  a.stats = &stats;
  a.sources_key = "0123456789abcdef0123456789abcdef";
  auto first = render::render_app(a, &cache);
  REQUIRE(first.has_value());
  CHECK_FALSE(first->from_cache);

  auto b = two.request();
  b.stats = &stats;
  b.sources_key = a.sources_key;
  auto second = render::render_app(b, &cache);
  REQUIRE(second.has_value());
  CHECK(second->from_cache);
  CHECK(second->workload.hash == first->workload.hash);
  CHECK(stats.evaluations == 1);

  // Without the key, each folder is its own entry.
  b.sources_key.clear();
  auto third = render::render_app(b, &cache);
  REQUIRE(third.has_value());
  CHECK_FALSE(third->from_cache);
  CHECK(stats.evaluations == 2);
}
