// End-to-end tests of conditional dependencies (`when:` in app.yaml) with the real
// binary: deps and submit honour the flag, --set flips it, a config change that flips it
// binds or unbinds the dependency through the impact chain, and a flip that would need
// an app that does not run is refused with the store unchanged.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

struct Catalog {
  Scratch s;
  StoreCli cli{s};

  Catalog() {
    s.write("cluster.yaml", "name: sim\nnodes:\n  - name: n1\n    capacity: {cpu: 8, memory: 16Gi}\n");
    cli.ok({"cluster", "create", "-f", "cluster.yaml"});
    write_app(s, "apps/search", "search", "1.0.0", "outputs: [url]\n", "{}\n",
              "function(config, deps, app) {\n"
              "  roles: { node: { image: 'busybox:1', resources: { cpu: '1', memory: '1Gi' } } },\n"
              "  outputs: { url: 'http://search:9200' },\n"
              "}\n");
    write_app(s, "apps/hub", "hub", "1.0.0",
              "dependencies:\n"
              "  - name: search\n"
              "    import: [url]\n"
              "    when: search.enabled\n",
              "local gaia = import 'gaia.libsonnet';\n"
              "{ search: { enabled: gaia.config('hub.search', false) } }\n",
              "function(config, deps, app) {\n"
              "  roles: { web: { image: 'busybox:1', resources: { cpu: '1', memory: '1Gi' },\n"
              "    env: if std.objectHas(deps, 'search') then { SEARCH_URL: deps.search.url } else {} } },\n"
              "  outputs: {},\n"
              "}\n");
  }

  std::vector<std::string> apps() const {
    std::vector<std::string> out;
    for (const auto& a : json::parse(cli.ok({"get", "apps", "-o", "json"}).out)) out.push_back(a["name"]);
    std::sort(out.begin(), out.end());
    return out;
  }
  json hub() const { return json::parse(cli.ok({"describe", "app", "hub", "-o", "json"}).out); }
};

}  // namespace

TEST_CASE("when: deps and submit leave out a dependency whose flag is off, --set turns it on", "[e2e][when]") {
  Catalog c;
  auto off = c.cli.ok({"deps", "apps/hub"}).out;
  CHECK_THAT(off, Catch::Contains("search (skipped: when search.enabled, and search.enabled is false)"));
  auto on = c.cli.ok({"deps", "apps/hub", "--set", "search.enabled=true"}).out;
  CHECK_THAT(on, Catch::Contains("search (deploy 1.0.0, when search.enabled)"));
  auto j = json::parse(c.cli.ok({"deps", "apps/hub", "-o", "json"}).out);
  CHECK(j["nodes"][0]["skipped"][0]["name"] == "search");

  auto sub = c.cli.ok({"submit", "apps/hub"}).out;
  CHECK_THAT(sub, Catch::Contains("dependencies left out by their conditions:"));
  CHECK_THAT(sub, Catch::Contains("hub -> search: when search.enabled, and search.enabled is false"));
  CHECK(c.apps() == std::vector<std::string>{"hub"});
  CHECK(c.hub()["dependencies"].empty());

  // In another tenant, the same spec with the flag set deploys its dependency first.
  c.cli.ok({"submit", "apps/hub", "--tenant", "t2", "--set", "search.enabled=true"});
  auto t2 = json::parse(c.cli.ok({"get", "apps", "--tenant", "t2", "-o", "json"}).out);
  CHECK(t2.size() == 2);
}

TEST_CASE("when: a config change that turns a flag on binds the running dependency, off unbinds it",
          "[e2e][when]") {
  Catalog c;
  c.cli.ok({"submit", "apps/hub"});

  // Nothing named search runs: the change is refused and nothing is written.
  int64_t before = c.cli.revision();
  auto refused = c.cli.expect(1, {"config", "set", "hub.search=true"});
  CHECK_THAT(refused.err, Catch::Contains("app.yaml:6:11"));
  CHECK_THAT(refused.err, Catch::Contains("depends on search (when search.enabled), and search does not run there"));
  CHECK_THAT(refused.err, Catch::Contains("deploy search in tenant default first"));
  CHECK(c.cli.revision() == before);

  c.cli.ok({"submit", "apps/search"});
  auto on = c.cli.ok({"config", "set", "hub.search=true"}).out;
  CHECK_THAT(on, Catch::Contains("now depends on search (when search.enabled)"));
  auto hub = c.hub();
  REQUIRE(hub["dependencies"].size() == 1);
  CHECK(hub["dependencies"][0]["name"] == "search");
  auto doc = json::parse(c.cli.ok({"get", "apps", "hub", "-o", "json"}).out);
  CHECK(doc[0]["document"]["spec"]["roles"]["web"]["env"]["SEARCH_URL"] == "http://search:9200");
  // Bound now: search cannot be deleted under it.
  auto del = c.cli.expect(1, {"delete", "search"});
  CHECK_THAT(del.err, Catch::Contains("hub"));

  auto off = c.cli.ok({"config", "set", "hub.search=false"}).out;
  CHECK_THAT(off, Catch::Contains("no longer depends on search (when search.enabled) (it keeps running)"));
  CHECK(c.hub()["dependencies"].empty());
  CHECK(c.apps() == std::vector<std::string>{"hub", "search"});
}

TEST_CASE("when: a condition naming no parameter is a located error", "[e2e][when]") {
  Catalog c;
  std::string yaml = "name: hub\nversion: 1.0.0\ndependencies:\n  - name: search\n    import: [url]\n"
                     "    when: search.enabeld\n";
  c.s.write("apps/hub/app.yaml", yaml);
  int64_t before = c.cli.revision();
  auto r = c.cli.expect(1, {"submit", "apps/hub"});
  CHECK_THAT(r.err, Catch::Contains("app.yaml:6:11"));
  CHECK_THAT(r.err, Catch::Contains("'search.enabeld' is not a parameter of the app's config"));
  CHECK_THAT(r.err, Catch::Contains("did you mean 'search.enabled'?"));
  CHECK(c.cli.revision() == before);
  auto v = expect_exit(c.s, 1, {"validate", "apps/hub"});
  CHECK_THAT(v.err, Catch::Contains("'search.enabeld' is not a parameter"));
}

TEST_CASE("when: a flag that would close a dependency loop is refused and nothing is written", "[e2e][when]") {
  Catalog c;
  c.cli.ok({"submit", "apps/hub"});
  // search now depends on hub, so hub depending on search would be a loop.
  write_app(c.s, "apps/search", "search", "1.0.0", "dependencies:\n  - name: hub\noutputs: [url]\n", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { node: { image: 'busybox:1', resources: { cpu: '1', memory: '1Gi' } } },\n"
            "  outputs: { url: 'http://search:9200' },\n"
            "}\n");
  c.cli.ok({"submit", "apps/search"});
  int64_t before = c.cli.revision();
  auto r = c.cli.expect(1, {"config", "set", "hub.search=true"});
  CHECK_THAT(r.err, Catch::Contains("depends on search (when search.enabled), which depends on hub"));
  CHECK_THAT(r.err, Catch::Contains("loop"));
  CHECK(c.cli.revision() == before);
  CHECK(c.hub()["dependencies"].empty());
}
