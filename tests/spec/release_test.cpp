// Releases (docs/spec.md section 8, Releases): several releases of one app in a tenant, and the
// rule that binds each dependency to one of them.
#include <catch2/catch.hpp>

#include "spec/plan_format.hpp"
#include "tests/spec/resolve_util.hpp"
#include "spec/resolve.hpp"

using namespace gaia;
using namespace gaia::spec;

namespace {

using gaia::test::errors_text;
using gaia::test::node;
using gaia::test::ver;

struct Dep {
  std::string name;
  std::string range = "*";
  std::string release = "";
  std::string alias = "";
  std::string tenant = "";
};

// Dependency i sits on line 4 + i of "<name>/app.yaml"; a release: on the line after.
AppSpec release_app(const std::string& name, const std::string& version, const std::vector<Dep>& deps = {}) {
  AppSpec s;
  s.name = name;
  s.version = ver(version);
  s.yaml_file = name + "/app.yaml";
  s.dir = "/repo/" + name + "/" + version;
  s.outputs = {"address"};
  for (size_t i = 0; i < deps.size(); ++i) {
    Dependency d;
    d.name = deps[i].name;
    d.range = semver::Range::parse(deps[i].range).value();
    d.alias = deps[i].alias.empty() ? default_alias(d.name) : deps[i].alias;
    d.release = deps[i].release;
    d.tenant = deps[i].tenant;
    if (!d.tenant.empty()) d.tenant_location = Location{s.yaml_file, static_cast<int>(6 + i), 13};
    d.location = Location{s.yaml_file, static_cast<int>(4 + i), 5};
    d.release_location = Location{s.yaml_file, static_cast<int>(5 + i), 14};
    s.dependencies.push_back(std::move(d));
  }
  return s;
}

// A running release `name` of `app`.
RunningApp release(const std::string& name, const std::string& app, const std::string& version,
                   const std::string& tenant = "default") {
  RunningApp r;
  r.tenant = tenant;
  r.name = name;
  r.version = version;
  r.outputs = {{"address", name + ":8020"}};
  if (app != name) r.app = app;
  return r;
}

// "alias -> release (reason)" for each edge of `from`.
std::vector<std::string> edges(const Plan& plan, const std::string& from) {
  std::vector<std::string> out;
  for (const PlanEdge& e : node(plan, from).dependencies)
    out.push_back(e.alias + " -> " + plan.nodes[e.node].name + " (" + e.reason + ")");
  return out;
}

}  // namespace

TEST_CASE("a spec given with a release name is deployed as that release beside the app's own", "[resolve][release]") {
  SpecRepository repo;
  AppSpec hdfs = release_app("hdfs", "3.3.4");
  auto plan = resolve_releases(std::vector<RootSpec>{{&hdfs, "hdfs-analytics"}}, repo, {release("hdfs", "hdfs", "3.3.4")},
                      "default");
  REQUIRE(plan.has_value());
  REQUIRE(plan->nodes.size() == 1);
  const PlanNode& n = node(*plan, "hdfs-analytics");
  CHECK(n.app == "hdfs");
  CHECK(n.action == Action::Deploy);
  CHECK(n.root);
  // The release named hdfs runs on untouched: a new release replaces nothing.
  CHECK_FALSE(n.replaces.has_value());
  CHECK(plan->find("hdfs") == std::nullopt);
  CHECK(format_plan_tree(*plan) == "hdfs-analytics (release of hdfs) (deploy 3.3.4)\n");
}

TEST_CASE("two releases of one dependency run side by side with dependents bound to each", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "2.7.0"));
  repo.add(release_app("hdfs", "3.3.4"));
  std::vector<RunningApp> run = {release("hdfs", "hdfs", "2.7.0"), release("hdfs-new", "hdfs", "3.3.4")};

  // Each dependent takes the running release its range accepts: no upgrade of the old
  // one, no third hdfs.
  AppSpec legacy = release_app("hive", "1.0.0", {{"hdfs", "^2"}});
  AppSpec modern = release_app("spark", "3.5.0", {{"hdfs", "^3"}});
  auto plan = resolve({&legacy, &modern}, repo, run, "default");
  REQUIRE(plan.has_value());
  CHECK(node(*plan, "hdfs").action == Action::Reuse);
  CHECK(node(*plan, "hdfs").version.to_string() == "2.7.0");
  CHECK(node(*plan, "hdfs-new").action == Action::Reuse);
  CHECK(node(*plan, "hdfs-new").app == "hdfs");
  CHECK(edges(*plan, "hive") == std::vector<std::string>{"hdfs -> hdfs (running 2.7.0 satisfies ^2)"});
  CHECK(edges(*plan, "spark") == std::vector<std::string>{"hdfs -> hdfs-new (running 3.3.4 satisfies ^3)"});
  CHECK(plan->nodes.size() == 4);

  // The tree says which release and why; the one named after the app needs no note.
  std::string tree = format_plan_tree(*plan);
  CHECK(tree.find("hdfs, release hdfs-new (reuse 3.3.4; bound: running 3.3.4 satisfies ^3)") != std::string::npos);
  CHECK(tree.find("└── hdfs (reuse 2.7.0)") != std::string::npos);
  auto json = plan_to_json(*plan);
  bool found = false;
  for (const auto& n : json["nodes"])
    if (n["name"] == "spark") {
      CHECK(n["dependencies"][0]["release"] == "hdfs-new");
      CHECK(n["dependencies"][0]["bound"] == "running 3.3.4 satisfies ^3");
      found = true;
    }
  CHECK(found);
}

TEST_CASE("release: binds a dependency to the named release, deploying it when it does not run", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "3.3.4"));
  repo.add(release_app("hdfs", "3.4.0"));
  // A replicator reads one cluster and writes the other.
  AppSpec mirror = release_app("mirror", "1.0.0",
                       {{"hdfs", "^3", "hdfs-a", "source"}, {"hdfs", "^3", "hdfs-b", "target"}});
  auto plan = resolve({&mirror}, repo, {release("hdfs-a", "hdfs", "3.3.4")}, "default");
  REQUIRE(plan.has_value());
  CHECK(node(*plan, "hdfs-a").action == Action::Reuse);
  CHECK(node(*plan, "hdfs-b").action == Action::Deploy);
  CHECK(node(*plan, "hdfs-b").version.to_string() == "3.4.0");
  CHECK(node(*plan, "hdfs-b").app == "hdfs");
  CHECK(edges(*plan, "mirror") == std::vector<std::string>{"source -> hdfs-a (named by its release: field)",
                                                           "target -> hdfs-b (named by its release: field)"});
  // hdfs-b is deployed before mirror, which waits for it.
  CHECK(plan->nodes[plan->order.back()].name == "mirror");
}

TEST_CASE("without a satisfying release the dependency binds to the release named after the app", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "2.7.0"));
  repo.add(release_app("hdfs", "3.3.4"));
  AppSpec spark = release_app("spark", "3.5.0", {{"hdfs", "^3"}});

  SECTION("it runs out of range: upgraded in place, as before releases") {
    auto plan = resolve({&spark}, repo, {release("hdfs", "hdfs", "2.7.0"), release("hdfs-old", "hdfs", "2.7.0")},
                        "default");
    REQUIRE(plan.has_value());
    CHECK(node(*plan, "hdfs").action == Action::Deploy);
    CHECK(node(*plan, "hdfs").replaces->to_string() == "2.7.0");
    CHECK(edges(*plan, "spark") == std::vector<std::string>{"hdfs -> hdfs (the release named after the app)"});
    CHECK(plan->find("hdfs-old") == std::nullopt);
  }
  SECTION("a release of that name runs another app: an error, nothing replaced") {
    auto r = resolve({&spark}, repo, {release("hdfs", "kafka", "3.3.4")}, "default");
    std::string text = errors_text(r);
    CHECK(text.find("spark/app.yaml:4:5: error: dependencies[0].name: spark@3.5.0 depends on hdfs through release "
                    "'hdfs', but release 'hdfs' in tenant 'default' runs app kafka") != std::string::npos);
    CHECK(text.find("gaia submit --name") != std::string::npos);
  }
}

TEST_CASE("a given release is what its dependents in the same submission bind to", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "3.3.4"));
  AppSpec hdfs = release_app("hdfs", "3.4.0");
  AppSpec spark = release_app("spark", "3.5.0", {{"hdfs", "^3.4"}});
  auto plan = resolve_releases(std::vector<RootSpec>{{&hdfs, "hdfs-b"}, {&spark, ""}}, repo,
                      {release("hdfs", "hdfs", "3.3.4")}, "default");
  REQUIRE(plan.has_value());
  CHECK(edges(*plan, "spark") == std::vector<std::string>{"hdfs -> hdfs-b (given in this submission)"});
  CHECK(plan->find("hdfs") == std::nullopt);  // Nothing binds to it.
}

TEST_CASE("running apps' ranges hold per release", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "2.7.0"));
  repo.add(release_app("hdfs", "3.3.4"));
  // hive runs on release hdfs-old and requires ^2 of it; release hdfs may move to 3.
  RunningApp hive = release("hive", "hive", "1.0.0");
  hive.dependency_ranges = {{"hdfs", "^2", "hdfs-old", "hdfs"}};
  std::vector<RunningApp> run = {release("hdfs", "hdfs", "2.7.0"), release("hdfs-old", "hdfs", "2.7.0"), hive};
  AppSpec hdfs3 = release_app("hdfs", "3.3.4");
  auto moved = resolve({&hdfs3}, repo, run, "default");
  REQUIRE(moved.has_value());
  CHECK(node(*moved, "hdfs").replaces->to_string() == "2.7.0");

  // Moving hdfs-old itself would break hive.
  auto broken = resolve_releases(std::vector<RootSpec>{{&hdfs3, "hdfs-old"}}, repo, run, "default");
  CHECK(errors_text(broken).find("hive@1.0.0 (running) requires ^2") != std::string::npos);
}

TEST_CASE("release names are unique in a tenant", "[resolve][release]") {
  SpecRepository repo;
  AppSpec hdfs = release_app("hdfs", "3.3.4");
  AppSpec kafka = release_app("kafka", "3.6.0");
  SECTION("a release of another app runs under the name") {
    auto r = resolve_releases(std::vector<RootSpec>{{&kafka, "hdfs"}}, repo, {release("hdfs", "hdfs", "3.3.4")}, "default");
    std::string text = errors_text(r);
    CHECK(text.find("kafka@3.6.0 is given to be deployed as release 'hdfs', but release 'hdfs' in tenant 'default' "
                    "runs app hdfs") != std::string::npos);
    CHECK(text.find("delete release 'hdfs' first") != std::string::npos);
  }
  SECTION("two apps given under one name") {
    auto r = resolve_releases(std::vector<RootSpec>{{&hdfs, "shared"}, {&kafka, "shared"}}, repo, {}, "default");
    CHECK(errors_text(r).find("is given for app hdfs") != std::string::npos);
  }
  SECTION("two dependencies bind one release to different apps") {
    AppSpec both = release_app("both", "1.0.0", {{"hdfs", "*", "store"}, {"kafka", "*", "store"}});
    repo.add(hdfs);
    repo.add(kafka);
    auto r = resolve({&both}, repo, {}, "default");
    std::string text = errors_text(r);
    CHECK(text.find("both/app.yaml:6:14: error: dependencies[1].release: both@1.0.0 depends on kafka through release "
                    "'store', but release 'store' is bound to app hdfs by another dependency") != std::string::npos);
  }
}

TEST_CASE("tenant: binds to a release another tenant exports, reused and never changed", "[resolve][release][tenant]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "3.3.4"));
  AppSpec spark = release_app("spark", "3.5.0", {{"hdfs", "^3", "", "", "shared"}});
  RunningApp shared = release("hdfs", "hdfs", "3.3.4", "shared");

  SECTION("exported to the tenant: reused") {
    shared.exports = {"analytics"};
    auto plan = resolve({&spark}, repo, {shared}, "analytics");
    REQUIRE(plan.has_value());
    REQUIRE(plan->nodes.size() == 2);
    const PlanNode& n = plan->nodes[1];
    CHECK(n.name == "hdfs");
    CHECK(n.tenant == "shared");
    CHECK(n.action == Action::Reuse);
    CHECK(n.outputs["address"] == "hdfs:8020");
    CHECK(plan->find("hdfs") == std::nullopt);  // Not a release of this tenant.
    CHECK(plan->nodes[0].dependencies[0].reason == "exported by tenant shared");
    CHECK(format_plan_tree(*plan).find("hdfs, tenant shared (reuse 3.3.4; bound: exported by tenant shared)") !=
          std::string::npos);
    // "*" exports to every tenant.
    shared.exports = {"*"};
    CHECK(resolve({&spark}, repo, {shared}, "analytics").has_value());
  }
  SECTION("not exported to it: an error with the command that exports it, nothing deployed") {
    shared.exports = {"ml"};
    std::string text = errors_text(resolve({&spark}, repo, {shared}, "analytics"));
    CHECK(text.find("spark/app.yaml:6:13: error: dependencies[0].tenant: spark@3.5.0 depends on hdfs of tenant shared, "
                    "but tenant shared does not export release 'hdfs' to tenant analytics") != std::string::npos);
    CHECK(text.find("gaia export hdfs --tenant shared --to analytics") != std::string::npos);
  }
  SECTION("not running there: never deployed into another tenant") {
    std::string text = errors_text(resolve({&spark}, repo, {}, "analytics"));
    CHECK(text.find("no release 'hdfs' runs in tenant shared") != std::string::npos);
    CHECK(text.find("a submit never deploys into another tenant") != std::string::npos);
  }
  SECTION("out of range: never upgraded from here") {
    shared.exports = {"analytics"};
    shared.version = "2.7.0";
    std::string text = errors_text(resolve({&spark}, repo, {shared}, "analytics"));
    CHECK(text.find("spark@3.5.0 requires hdfs ^3, but tenant shared runs hdfs at 2.7.0") != std::string::npos);
  }
}

TEST_CASE("tenant: the exporting tenant keeps the ranges of other tenants' apps bound to it", "[resolve][release][tenant]") {
  SpecRepository repo;
  AppSpec hdfs4 = release_app("hdfs", "4.0.0");
  RunningApp shared = release("hdfs", "hdfs", "3.3.4", "shared");
  shared.exports = {"analytics"};
  RunningApp spark = release("spark", "spark", "3.5.0", "analytics");
  spark.dependency_ranges = {{"hdfs", "^3", "shared/hdfs", "hdfs"}};
  std::string text = errors_text(resolve({&hdfs4}, repo, {shared, spark}, "shared"));
  CHECK(text.find("spark@3.5.0 (running in tenant analytics) requires ^3") != std::string::npos);
  // Its own apps of the same name elsewhere are not constraints.
  RunningApp other = release("spark", "spark", "3.5.0", "analytics");
  other.dependency_ranges = {{"hdfs", "^3", "hdfs", "hdfs"}};
  CHECK(resolve({&hdfs4}, repo, {shared, other}, "shared").has_value());
}

TEST_CASE("a dependent that runs keeps its release, and a move is said", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "3.3.4"));
  std::vector<RunningApp> run = {release("hdfs", "hdfs", "3.3.4"), release("hdfs-b", "hdfs", "3.2.0")};
  RunningApp web = release("web", "web", "1.0.0");
  web.dependency_ranges = {{"hdfs", "^3", "hdfs-b", "hdfs"}};
  run.push_back(web);

  // Resubmitted: hdfs (the release named after the app) would also do, but web stays
  // where its data is.
  AppSpec again = release_app("web", "1.0.1", {{"hdfs", "^3"}});
  auto plan = resolve({&again}, repo, run, "default");
  REQUIRE(plan.has_value());
  CHECK(edges(*plan, "web") ==
        std::vector<std::string>{"hdfs -> hdfs-b (bound to it since its last submit; running 3.2.0 satisfies ^3)"});

  // Its new range rules hdfs-b out: it moves, and the plan says from where.
  AppSpec newer = release_app("web", "2.0.0", {{"hdfs", "^3.3"}});
  plan = resolve({&newer}, repo, run, "default");
  REQUIRE(plan.has_value());
  CHECK(edges(*plan, "web") ==
        std::vector<std::string>{"hdfs -> hdfs (running 3.3.4 satisfies ^3.3; was bound to hdfs-b)"});
  CHECK(format_plan_tree(*plan).find("was bound to hdfs-b") != std::string::npos);
}

TEST_CASE("two entries of one app bound to one release are an error", "[resolve][release]") {
  SpecRepository repo;
  repo.add(release_app("hdfs", "3.3.4"));
  // source has no release: and hdfs-b is the only release running: both would copy
  // within hdfs-b.
  AppSpec mirror = release_app("mirror", "1.0.0", {{"hdfs", "^3", "", "source"}, {"hdfs", "^3", "hdfs-b", "target"}});
  auto r = resolve({&mirror}, repo, {release("hdfs-b", "hdfs", "3.3.4")}, "default");
  CHECK(errors_text(r).find("mirror/app.yaml:5:5: error: dependencies[1]: mirror@1.0.0: dependencies[0] (source) and "
                            "dependencies[1] (target) both bind to release hdfs-b") != std::string::npos);
}

TEST_CASE("tenant: a loop across tenants through what runs is an error", "[resolve][release][tenant]") {
  SpecRepository repo;
  // shared/y runs bound to analytics/x; x is resubmitted bound to shared/y.
  RunningApp y = release("y", "y", "1.0.0", "shared");
  y.exports = {"analytics"};
  y.dependency_ranges = {{"x", "*", "analytics/x", "x"}};
  RunningApp x = release("x", "x", "1.0.0", "analytics");
  AppSpec again = release_app("x", "1.1.0", {{"y", "*", "", "", "shared"}});
  std::string text = errors_text(resolve({&again}, repo, {x, y}, "analytics"));
  CHECK(text.find("dependency loop across tenants: analytics/x -> shared/y -> analytics/x") != std::string::npos);
}
