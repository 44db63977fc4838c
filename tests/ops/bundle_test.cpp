// Spec bundles (ops/bundle.hpp): the files an app was rendered from, stored by content
// hash so a config change re-renders it from them on any machine. A bundle round-trips
// (made, stored as JSON, unpacked, rendered: the same workload), its hash follows its
// bytes, an oversized one is refused with the largest files named, and submit, apply and
// propagation keep the store's bundles in step with the apps.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "controllers/app_delete.hpp"
#include "ops/apply_set.hpp"
#include "ops/bundle.hpp"
#include "ops/center_changes.hpp"
#include "ops/propagate.hpp"
#include "ops/submission.hpp"
#include "render/renderer.hpp"
#include "spec/app_spec.hpp"
#include "tests/ops/ops_fixture.hpp"

namespace gaia::test {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// An app `web` in <dir>/apps/web importing a file from the vendor/ beside it and one
// from a library path <dir>/jlib, reading web.replicas from the config center.
fs::path write_importing_app(const TempDir& dir) {
  dir.write("apps/web/app.yaml", "name: web\nversion: 1.0.0\noutputs: [size]\n");
  dir.write("apps/web/config.jsonnet",
            "local gaia = import 'gaia.libsonnet';\n"
            "local base = import 'base.libsonnet';\n"
            "{ replicas: gaia.config('web.replicas', base.replicas) }\n");
  dir.write("apps/web/main.jsonnet",
            "local site = import 'lib/site.libsonnet';\n"
            "local util = import 'util.libsonnet';\n"
            "function(config, deps, app) {\n"
            "  roles: { main: { image: site.image, replicas: config.replicas,\n"
            "                   env: { GREETING: util.greeting },\n"
            "                   resources: { cpu: '100m', memory: '64Mi' } } },\n"
            "  outputs: { size: config.replicas },\n"
            "}\n");
  dir.write("apps/web/lib/site.libsonnet", "{ image: 'busybox:1' }\n");
  dir.write("apps/vendor/base.libsonnet", "{ replicas: 2 }\n");
  dir.write("jlib/util.libsonnet", "{ greeting: 'hello' }\n");
  return dir.path() / "apps" / "web";
}

spec::AppSpec load_spec(const fs::path& dir) {
  auto s = spec::load_app_spec(dir);
  REQUIRE(s);
  return *s;
}

render::Rendered render_spec(const spec::AppSpec& spec, const std::vector<fs::path>& jpaths,
                             const std::string& sources_key = "") {
  render::RenderRequest req;
  req.spec = &spec;
  req.options.jpaths = jpaths;
  req.sources_key = sources_key;
  auto r = render::render_app(req);
  INFO((r ? std::string() : r.error().front().message));
  REQUIRE(r);
  return *r;
}

ops::PackedBundle bundle_of(const fs::path& app_dir, const std::vector<fs::path>& jpaths) {
  auto spec = load_spec(app_dir);
  auto rendered = render_spec(spec, jpaths);
  auto packed = ops::make_bundle(spec, rendered.external, jpaths);
  INFO((packed ? std::string() : packed.error().front().message));
  REQUIRE(packed);
  return *packed;
}

std::optional<std::string> stored(Store& store, const std::string& hash) {
  auto kv = store.get(keys::bundle(hash));
  REQUIRE(kv);
  if (!*kv) return std::nullopt;
  return (*kv)->value;
}

size_t stored_bundles(Store& store) {
  auto kvs = store.range("bundles/");
  REQUIRE(kvs);
  return kvs->size();
}

}  // namespace

TEST_CASE("bundle: made from a render, stored as JSON, unpacked elsewhere, it renders the same workload",
          "[ops][bundle]") {
  TempDir dir;
  fs::path app = write_importing_app(dir);
  std::vector<fs::path> jpaths = {dir.path() / "jlib"};
  auto spec = load_spec(app);
  auto original = render_spec(spec, jpaths);
  auto packed = ops::make_bundle(spec, original.external, jpaths);
  REQUIRE(packed);
  CHECK(packed->hash.size() == 32);

  auto bundle = ops::parse_bundle(packed->json, packed->hash, "the bundle");
  REQUIRE(bundle);
  std::string app_dir = fs::canonical(app).string();
  std::string top = fs::canonical(dir.path()).string();
  CHECK(bundle->app_dir == app_dir);
  CHECK(bundle->jpaths == std::vector<std::string>{top + "/jlib"});
  // Every file of the app dir and the two imported from outside it; nothing else.
  std::vector<std::string> files;
  for (const auto& [path, _] : bundle->files) files.push_back(path);
  CHECK(files == std::vector<std::string>{top + "/apps/vendor/base.libsonnet", app_dir + "/app.yaml",
                                          app_dir + "/config.jsonnet", app_dir + "/lib/site.libsonnet",
                                          app_dir + "/main.jsonnet", top + "/jlib/util.libsonnet"});
  CHECK(packed->files == 6);

  // The original files go away (as on another machine): the unpacked bundle is enough.
  fs::remove_all(dir.path() / "apps");
  fs::remove_all(dir.path() / "jlib");
  fs::path root;
  {
    auto tmp = ops::TempFolder::make();
    REQUIRE(tmp);
    root = tmp->path();
    auto unpacked = ops::materialize_bundle(*bundle, tmp->path());
    REQUIRE(unpacked);
    CHECK(unpacked->app_dir == tmp->path() / fs::path(app_dir).relative_path());
    REQUIRE(unpacked->jpaths.size() == 1);
    auto again_spec = load_spec(unpacked->app_dir);
    auto again = render_spec(again_spec, unpacked->jpaths, packed->hash);
    CHECK(again.workload.hash == original.workload.hash);
    CHECK(again.document == original.document);
    CHECK(unpacked->unmap(tmp->path().string() + "/x/main.jsonnet: boom") == "/x/main.jsonnet: boom");
  }
  CHECK_FALSE(fs::exists(root));  // The temporary folder is removed with its owner.
}

TEST_CASE("bundle: the same files give the same hash, one changed byte another", "[ops][bundle]") {
  TempDir dir;
  fs::path app = write_importing_app(dir);
  std::vector<fs::path> jpaths = {dir.path() / "jlib"};
  auto one = bundle_of(app, jpaths);
  auto two = bundle_of(app, jpaths);
  CHECK(one.hash == two.hash);
  CHECK(one.json == two.json);

  SECTION("a file of the app dir, even one no template imports") {
    dir.write("apps/web/README", "x");
    CHECK(bundle_of(app, jpaths).hash != one.hash);
  }
  SECTION("an imported file outside the app dir") {
    dir.write("jlib/util.libsonnet", "{ greeting: 'hellO' }\n");
    CHECK(bundle_of(app, jpaths).hash != one.hash);
  }
  SECTION("a file outside the app dir that no render imports changes nothing") {
    dir.write("jlib/unused.libsonnet", "{}");
    CHECK(bundle_of(app, jpaths).hash == one.hash);
  }
}

TEST_CASE("bundle: files that are not UTF-8 survive the trip", "[ops][bundle]") {
  TempDir dir;
  fs::path app = write_importing_app(dir);
  const std::string binary("\x00\xff\xfe\x80 gaia\n\xc3", 11);
  dir.write("apps/web/data.bin", binary);
  auto packed = bundle_of(app, {dir.path() / "jlib"});
  auto bundle = ops::parse_bundle(packed.json, packed.hash, "the bundle");
  REQUIRE(bundle);
  CHECK(bundle->files.at(fs::canonical(app).string() + "/data.bin") == binary);
  CHECK(bundle->files.at(fs::canonical(app).string() + "/app.yaml") == "name: web\nversion: 1.0.0\noutputs: [size]\n");
}

TEST_CASE("bundle: one over the size bound is refused, naming its largest files", "[ops][bundle]") {
  TempDir dir;
  fs::path app = write_importing_app(dir);
  dir.write("apps/web/data/big.csv", std::string(600 * 1024, 'x'));
  auto spec = load_spec(app);
  auto rendered = render_spec(spec, {dir.path() / "jlib"});
  auto packed = ops::make_bundle(spec, rendered.external, {dir.path() / "jlib"});
  REQUIRE_FALSE(packed);
  const auto& d = packed.error().front();
  CHECK(d.message.find("the files of web come to") != std::string::npos);
  CHECK(d.message.find("over the 512KiB one bundle may hold") != std::string::npos);
  CHECK(d.hint.find("big.csv (600KiB)") != std::string::npos);
  CHECK(d.hint.find("out of the app directory") != std::string::npos);

  // The same through submit: nothing is written.
  OpsFixture f;
  f.add_nodes(1);
  int64_t before = f.revision();
  ops::SubmitRequest request;
  request.dirs = {app.string()};
  request.render.jpaths = {dir.path() / "jlib"};
  auto submitted = ops::submit(f.ws(), request);
  REQUIRE_FALSE(submitted);
  CHECK(submitted.error().front().message.find("over the 512KiB") != std::string::npos);
  CHECK(f.revision() == before);
}

TEST_CASE("bundle: a stored bundle is checked before it is unpacked", "[ops][bundle]") {
  ops::Bundle b;
  b.app_dir = "/srv/apps/web";
  b.files["/srv/apps/web/app.yaml"] = "name: web\n";
  auto packed = ops::pack_bundle(b);
  CHECK(ops::parse_bundle(packed.json, packed.hash, "the bundle"));
  auto wrong = ops::parse_bundle(packed.json, std::string(32, '0'), "bundle X");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().front().message == "bundle X is unusable: its content does not match its hash");

  b.files["/srv/apps/web/../../../etc/passwd"] = "x";
  auto escaping = ops::pack_bundle(b);
  auto refused = ops::parse_bundle(escaping.json, escaping.hash, "the bundle");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().front().message.find("is not a plain absolute path") != std::string::npos);
}

TEST_CASE("bundle: a submitted app re-renders from its bundle after its folder is gone, and deleting it removes "
          "the bundle",
          "[ops][bundle]") {
  OpsFixture f;
  f.add_nodes(2);
  fs::path app = write_importing_app(f.dir());
  ops::SubmitRequest request;
  request.dirs = {app.string()};
  request.render.jpaths = {f.dir().path() / "jlib"};
  REQUIRE(ops::submit(f.ws("op-submit"), request));
  std::string hash = f.load().find_app("default", "web")->bundle;
  REQUIRE(hash.size() == 32);
  auto text = stored(f.store(), hash);
  REQUIRE(text);
  auto bundle = ops::parse_bundle(*text, hash, "the bundle");
  REQUIRE(bundle);
  CHECK(bundle->files.size() == 6);

  // As on another machine sharing the store: none of the files is there.
  fs::remove_all(f.dir().path() / "apps");
  fs::remove_all(f.dir().path() / "jlib");
  auto outcome = ops::apply_center_change(f.ws("op-config"), set_global(f, "web.replicas", 3), false);
  INFO((outcome ? std::string() : outcome.error().front().message));
  REQUIRE(outcome);
  CHECK(outcome->committed.applied == std::vector<std::string>{"default/web"});
  ClusterState st = f.load();
  const AppRecord* web = st.find_app("default", "web");
  CHECK(web->workload.roles.at(0).replicas == 3);
  CHECK(web->workload.roles.at(0).env.at("GREETING") == "hello");
  CHECK(web->bundle == hash);  // The re-render keeps the files it came from.
  CHECK(running_of(st, "web") == 3);

  // A render error names the files as they were, not the temporary folder.
  auto broken = ops::apply_center_change(f.ws(), set_global(f, "web.replicas", "many"), false);
  REQUIRE_FALSE(broken);
  std::string message = broken.error().front().message + broken.error().front().location.file;
  CHECK(message.find("re-rendering web (default) for this change") != std::string::npos);
  CHECK(message.find("gaia-bundle-") == std::string::npos);

  auto deleted = f.state().update("op-delete", [&](const ClusterState& s, Batch& b) -> Result<void> {
    auto d = plan_delete(s, "default", "web", false);
    if (!d) return fail(d.error());
    b = d->batch;
    return {};
  });
  REQUIRE(deleted);
  CHECK_FALSE(stored(f.store(), hash));
  CHECK(stored_bundles(f.store()) == 0);
}

TEST_CASE("bundle: a resubmit from changed files moves the app to the new bundle and drops the old one",
          "[ops][bundle]") {
  OpsFixture f;
  f.add_nodes(2);
  fs::path app = write_importing_app(f.dir());
  ops::SubmitRequest request;
  request.dirs = {app.string()};
  request.render.jpaths = {f.dir().path() / "jlib"};
  REQUIRE(ops::submit(f.ws(), request));
  std::string first = f.load().find_app("default", "web")->bundle;
  std::string workload = f.load().find_app("default", "web")->workload.hash;

  SECTION("the same files again write nothing") {
    int64_t before = f.revision();
    auto again = ops::submit(f.ws(), request);
    REQUIRE(again);
    CHECK(f.revision() == before);
  }
  SECTION("a comment changes no workload, but the record follows the files") {
    f.dir().write("apps/web/config.jsonnet",
                  "// Sized by the config center.\n"
                  "local gaia = import 'gaia.libsonnet';\n"
                  "local base = import 'base.libsonnet';\n"
                  "{ replicas: gaia.config('web.replicas', base.replicas) }\n");
    auto again = ops::submit(f.ws(), request);
    REQUIRE(again);
    CHECK(again->outcome.apps.at(0).action == "unchanged");
    ClusterState st = f.load();
    const AppRecord* web = st.find_app("default", "web");
    CHECK(web->workload.hash == workload);
    CHECK(web->bundle != first);
    CHECK(stored(f.store(), web->bundle));
    CHECK_FALSE(stored(f.store(), first));
    CHECK(stored_bundles(f.store()) == 1);
  }
  SECTION("an apply of the same folder takes the app over with the new files") {
    f.dir().write("apps/web/lib/site.libsonnet", "{ image: 'busybox:2' }\n");
    ops::SetRequest set;
    set.paths = {app.string()};
    set.render.jpaths = {f.dir().path() / "jlib"};
    auto applied = ops::apply_set(f.ws(), set, {});
    REQUIRE(applied);
    ClusterState st = f.load();
    const AppRecord* web = st.find_app("default", "web");
    CHECK(web->workload.roles.at(0).image == "busybox:2");
    CHECK(web->bundle != first);
    CHECK(stored(f.store(), web->bundle));
    CHECK(stored_bundles(f.store()) == 1);
  }
}

TEST_CASE("bundle: a record without one (an older gaia's) still re-renders from its spec folder", "[ops][bundle]") {
  OpsFixture f;
  f.add_nodes(2);
  fs::path app = f.write_app("apps/base", "base");
  ops::SubmitRequest request;
  request.dirs = {app.string()};
  REQUIRE(ops::submit(f.ws(), request));
  auto cleared = f.state().update("op-old", [&](const ClusterState& s, Batch& b) -> Result<void> {
    AppRecord old = *s.find_app("default", "base");
    old.bundle.clear();
    b.put_apps.push_back(old);
    return {};
  });
  REQUIRE(cleared);
  CHECK(stored_bundles(f.store()) == 0);  // Nobody refers to it any more.
  auto outcome = ops::apply_center_change(f.ws(), set_global(f, "base.replicas", 2), false);
  REQUIRE(outcome);
  CHECK(f.load().find_app("default", "base")->workload.roles.at(0).replicas == 2);

  fs::remove_all(app);
  auto gone = ops::apply_center_change(f.ws(), set_global(f, "base.replicas", 3), false);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().front().message.find("cannot re-render base (default) from") != std::string::npos);
}

}  // namespace gaia::test
