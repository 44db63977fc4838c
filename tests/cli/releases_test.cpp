// End-to-end tests of releases with the real binary: two releases of one app in a
// tenant (`submit --name`), dependents bound to each (by range, and by `release:`),
// instance names and outputs following the release, the binding shown by deps and plan,
// a config change re-rendering each release with its own dependents, and the guards
// (a release of another app under the name, deleting a release something is bound to).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

struct ReleaseCatalog {
  Scratch s;
  StoreCli cli{s};

  ReleaseCatalog() {
    s.write("cluster.yaml", "name: sim\nnodes:\n  - name: n1\n    capacity: {cpu: 16, memory: 32Gi}\n");
    cli.ok({"cluster", "create", "-f", "cluster.yaml"});
    // The address is made of app.name, the release: two releases answer apart.
    write_app(s, "apps/hdfs", "hdfs", "3.3.4", "outputs: [address]\n",
              "local gaia = import 'gaia.libsonnet';\n{ port: gaia.config('hdfs.port', 8020) }\n",
              "function(config, deps, app) {\n"
              "  roles: { datanode: { image: 'busybox:1', resources: { cpu: '1', memory: '1Gi' } } },\n"
              "  outputs: { address: app.name + ':' + config.port },\n"
              "}\n");
    auto dependent = [](const std::string& env) {
      return "function(config, deps, app) {\n"
             "  roles: { worker: { image: 'busybox:1', resources: { cpu: '1', memory: '1Gi' },\n"
             "    env: { " + env + " } } },\n"
             "  outputs: {},\n"
             "}\n";
    };
    write_app(s, "apps/spark", "spark", "3.5.0", "dependencies:\n  - name: hdfs\n    import: [address]\n", "{}\n",
              dependent("HDFS: deps.hdfs.address"));
    write_app(s, "apps/etl", "etl", "1.0.0",
              "dependencies:\n  - name: hdfs\n    release: hdfs-analytics\n    import: [address]\n", "{}\n",
              dependent("HDFS: deps.hdfs.address"));
  }

  json apps(const std::string& name = "") const {
    std::vector<std::string> args{"get", "apps", "-o", "json"};
    if (!name.empty()) args.insert(args.begin() + 2, name);
    return json::parse(cli.ok(args).out);
  }
  std::string env(const std::string& app) const { return apps(app)[0]["document"]["spec"]["roles"]["worker"]["env"]["HDFS"]; }
  std::vector<std::string> instances() const {
    std::vector<std::string> out;
    for (const auto& i : json::parse(cli.ok({"get", "instances", "-o", "json"}).out)) out.push_back(i["name"]);
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

TEST_CASE("releases: two releases of hdfs side by side, dependents bound to each", "[e2e][release]") {
  ReleaseCatalog c;
  c.cli.ok({"submit", "apps/hdfs"});
  auto second = c.cli.ok({"submit", "apps/hdfs", "--name", "hdfs-analytics"}).out;
  CHECK_THAT(second, Catch::Contains("hdfs-analytics"));

  auto both = c.apps();
  REQUIRE(both.size() == 2);
  auto analytics = c.apps("hdfs-analytics")[0];
  CHECK(analytics["app"] == "hdfs");
  CHECK(analytics["version"] == "3.3.4");
  CHECK(analytics["workload"]["outputs"]["address"] == "hdfs-analytics:8020");
  CHECK(c.apps("hdfs")[0]["workload"]["outputs"]["address"] == "hdfs:8020");
  auto names = c.instances();
  CHECK(std::find(names.begin(), names.end(), "0.datanode.hdfs-analytics.default") != names.end());
  CHECK(std::find(names.begin(), names.end(), "0.datanode.hdfs.default") != names.end());

  // deps says where each dependent binds and why, before anything is submitted.
  auto etl_deps = c.cli.ok({"deps", "apps/etl"}).out;
  CHECK_THAT(etl_deps, Catch::Contains("hdfs, release hdfs-analytics (reuse 3.3.4; bound: named by its release: field)"));
  auto spark_deps = c.cli.ok({"deps", "apps/spark"}).out;
  CHECK_THAT(spark_deps, Catch::Contains("hdfs (reuse 3.3.4)"));
  auto plan = c.cli.ok({"plan", "apps/etl"}).out;
  CHECK_THAT(plan, Catch::Contains("dependencies bound to releases:"));
  CHECK_THAT(plan, Catch::Contains("etl -> hdfs: release hdfs-analytics (named by its release: field)"));

  c.cli.ok({"submit", "apps/spark", "apps/etl"});
  CHECK(c.env("spark") == "hdfs:8020");
  CHECK(c.env("etl") == "hdfs-analytics:8020");
  auto etl = json::parse(c.cli.ok({"describe", "app", "etl", "-o", "json"}).out);
  REQUIRE(etl["dependencies"].size() == 1);
  CHECK(etl["dependencies"][0]["name"] == "hdfs-analytics");

  // A release something is bound to is not deleted under it; the other one is free.
  int64_t before = c.cli.revision();
  auto refused = c.cli.expect(1, {"delete", "hdfs-analytics"});
  CHECK_THAT(refused.err, Catch::Contains("etl"));
  CHECK(c.cli.revision() == before);

  // A config change both releases read re-renders each, and each dependent gets the
  // address of its own release.
  auto changed = c.cli.ok({"config", "set", "hdfs.port=9000"}).out;
  CHECK(c.env("spark") == "hdfs:9000");
  CHECK(c.env("etl") == "hdfs-analytics:9000");
  CHECK(c.apps("hdfs-analytics")[0]["workload"]["outputs"]["address"] == "hdfs-analytics:9000");

  // Scaling a release re-renders it as that release.
  c.cli.ok({"scale", "hdfs-analytics/datanode", "--replicas", "2"});
  names = c.instances();
  CHECK(std::find(names.begin(), names.end(), "1.datanode.hdfs-analytics.default") != names.end());
  CHECK(std::find(names.begin(), names.end(), "1.datanode.hdfs.default") == names.end());
}

TEST_CASE("releases: a dependency reuses any release its range accepts", "[e2e][release]") {
  ReleaseCatalog c;
  // Only a release of another name runs: spark reuses it instead of deploying hdfs.
  c.cli.ok({"submit", "apps/hdfs", "--name", "hdfs-shared"});
  auto deps = c.cli.ok({"deps", "apps/spark"}).out;
  CHECK_THAT(deps, Catch::Contains("hdfs, release hdfs-shared (reuse 3.3.4; bound: running 3.3.4 satisfies *)"));
  c.cli.ok({"submit", "apps/spark"});
  auto apps = c.apps();
  CHECK(apps.size() == 2);
  CHECK(c.env("spark") == "hdfs-shared:8020");
}

TEST_CASE("releases: bad names and a name taken by another app are refused, nothing written", "[e2e][release]") {
  ReleaseCatalog c;
  c.cli.ok({"submit", "apps/hdfs"});
  int64_t before = c.cli.revision();

  auto taken = c.cli.expect(1, {"submit", "apps/spark", "--name", "hdfs"});
  CHECK_THAT(taken.err, Catch::Contains("spark@3.5.0 is given to be deployed as release 'hdfs', but release 'hdfs' in "
                                        "tenant 'default' runs app hdfs"));
  auto bad = c.cli.expect(1, {"submit", "apps/hdfs", "--name", "HDFS_2"});
  CHECK_THAT(bad.err, Catch::Contains("--name 'HDFS_2' is not a valid release name"));
  auto two = c.cli.expect(1, {"submit", "apps/hdfs", "apps/spark", "--name", "x"});
  CHECK_THAT(two.err, Catch::Contains("--name x names one release, but 2 specs are given"));
  CHECK(c.cli.revision() == before);

  // A release: that is not a DNS label is a located error of app.yaml.
  c.s.write("apps/etl/app.yaml",
            "name: etl\nversion: 1.0.0\ndependencies:\n  - name: hdfs\n    release: Hdfs_A\n    import: [address]\n");
  auto v = expect_exit(c.s, 1, {"validate", "apps/etl"});
  CHECK_THAT(v.err, Catch::Contains("app.yaml:5:14: error: dependencies[0].release: 'Hdfs_A' is not a valid release name"));
  CHECK(c.cli.revision() == before);
}

TEST_CASE("releases: an app binds to a release another tenant exports, which is guarded there", "[e2e][release][tenant]") {
  ReleaseCatalog c;
  write_app(c.s, "apps/lake", "lake", "1.0.0", "dependencies:\n  - name: hdfs\n    tenant: shared\n    import: [address]\n",
            "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { worker: { image: 'busybox:1', resources: { cpu: '1', memory: '1Gi' },\n"
            "    env: { HDFS: deps.hdfs.address } } },\n"
            "  outputs: {},\n"
            "}\n");
  c.cli.ok({"submit", "apps/hdfs", "--tenant", "shared"});

  // Not exported yet: refused with the command that exports it, nothing written.
  int64_t before = c.cli.revision();
  auto refused = c.cli.expect(1, {"submit", "apps/lake", "--tenant", "analytics"});
  CHECK_THAT(refused.err, Catch::Contains("apps/lake/app.yaml:5:13"));
  CHECK_THAT(refused.err, Catch::Contains("tenant shared does not export release 'hdfs' to tenant analytics"));
  CHECK_THAT(refused.err, Catch::Contains("gaia export hdfs --tenant shared --to analytics"));
  CHECK(c.cli.revision() == before);

  auto bad_name = c.cli.expect(1, {"export", "hdfs", "--tenant", "shared", "--to", "Bad_Name"});
  CHECK_THAT(bad_name.err, Catch::Contains("'Bad_Name' is not a tenant name"));
  auto own = c.cli.expect(1, {"export", "hdfs", "--tenant", "shared", "--to", "shared"});
  CHECK_THAT(own.err, Catch::Contains("release hdfs belongs to tenant shared"));
  auto missing = c.cli.expect(1, {"export", "hdfz", "--tenant", "shared", "--to", "analytics"});
  CHECK_THAT(missing.err, Catch::Contains("no release named 'hdfz' in tenant 'shared'"));
  CHECK(c.cli.revision() == before);
  auto exported = c.cli.ok({"export", "hdfs", "--tenant", "shared", "--to", "analytics"}).out;
  CHECK_THAT(exported, Catch::Contains("release hdfs (tenant shared) exported to analytics"));
  auto plan = c.cli.ok({"plan", "apps/lake", "--tenant", "analytics"}).out;
  CHECK_THAT(plan, Catch::Contains("lake -> hdfs: release hdfs of tenant shared (exported by tenant shared)"));
  c.cli.ok({"submit", "apps/lake", "--tenant", "analytics"});
  auto lake = json::parse(c.cli.ok({"get", "apps", "lake", "--tenant", "analytics", "-o", "json"}).out)[0];
  CHECK(lake["document"]["spec"]["roles"]["worker"]["env"]["HDFS"] == "hdfs:8020");
  CHECK(lake["dependencies"] == json::array({"shared/hdfs"}));
  // Bound and exported: it starts (its dependency is ready in its own tenant).
  auto inst = json::parse(c.cli.ok({"get", "instances", "--tenant", "analytics", "-o", "json"}).out);
  REQUIRE(inst.size() == 1);
  CHECK(inst[0]["state"] == "Running");
  auto described = json::parse(c.cli.ok({"describe", "app", "hdfs", "--tenant", "shared", "-o", "json"}).out);
  CHECK(described["exports"] == json::array({"analytics"}));
  CHECK(described["dependents"][0]["name"] == "analytics/lake");

  // Guarded where it runs: no delete, no revoke, not even with --cascade.
  before = c.cli.revision();
  auto slash = c.cli.expect(1, {"delete", "analytics/shared/hdfs", "--cascade"});
  CHECK_THAT(slash.err, Catch::Contains("no app named 'shared/hdfs' in tenant 'analytics'"));
  auto del = c.cli.expect(1, {"delete", "hdfs", "--tenant", "shared", "--cascade"});
  CHECK_THAT(del.err, Catch::Contains("apps of other tenants depend on it: analytics/lake"));
  auto revoke = c.cli.expect(1, {"export", "hdfs", "--tenant", "shared", "--revoke", "analytics"});
  CHECK_THAT(revoke.err, Catch::Contains("cannot revoke: analytics/lake is bound to release hdfs of tenant shared"));
  CHECK(c.cli.revision() == before);

  // A resubmit of the release keeps its exports; a config change it reads reaches the
  // other tenant's dependent.
  c.cli.ok({"submit", "apps/hdfs", "--tenant", "shared", "--set", "port=8021"});
  described = json::parse(c.cli.ok({"describe", "app", "hdfs", "--tenant", "shared", "-o", "json"}).out);
  CHECK(described["exports"] == json::array({"analytics"}));
  c.cli.ok({"submit", "apps/hdfs", "--tenant", "shared"});
  c.cli.ok({"config", "set", "hdfs.port=9000"});
  lake = json::parse(c.cli.ok({"get", "apps", "lake", "--tenant", "analytics", "-o", "json"}).out)[0];
  CHECK(lake["document"]["spec"]["roles"]["worker"]["env"]["HDFS"] == "hdfs:9000");

  // Once the dependent is gone, the revoke goes through.
  c.cli.ok({"delete", "lake", "--tenant", "analytics"});
  auto revoked = c.cli.ok({"export", "shared/hdfs", "--revoke", "analytics"}).out;
  CHECK_THAT(revoked, Catch::Contains("no longer exported to analytics"));

  // Exported to every tenant, one cannot be left out silently.
  c.cli.ok({"export", "shared/hdfs", "--to", "*"});
  auto star = c.cli.expect(1, {"export", "shared/hdfs", "--revoke", "analytics"});
  CHECK_THAT(star.err, Catch::Contains("release hdfs is exported to every tenant ('*'), so analytics keeps it"));
}
