#include "spec/resolve.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <rapidcheck.h>
#include <set>
#include <fmt/format.h>

#include "spec/plan_format.hpp"
#include "tests/spec/resolve_util.hpp"

using namespace gaia;
using namespace gaia::spec;

namespace {

using gaia::test::errors_text;
using gaia::test::node;
using gaia::test::ver;

struct DepSpec {
  std::string name;
  std::string range = "*";
  std::vector<std::string> imports = {};
  std::string alias = "";
};

// An in-memory spec; dependency i sits on line 4 + i of "<name>/app.yaml", as if written
// out, so that locations can be checked.
AppSpec app(const std::string& name, const std::string& version, const std::vector<DepSpec>& deps = {},
            const std::vector<std::string>& outputs = {}) {
  AppSpec s;
  s.name = name;
  s.version = ver(version);
  s.yaml_file = name + "/app.yaml";
  s.dir = "/repo/" + name + "/" + version;
  s.outputs = outputs;
  for (size_t i = 0; i < deps.size(); ++i) {
    Dependency d;
    d.name = deps[i].name;
    d.range = semver::Range::parse(deps[i].range).value();
    d.alias = deps[i].alias.empty() ? default_alias(d.name) : deps[i].alias;
    d.imports = deps[i].imports;
    d.location = Location{s.yaml_file, static_cast<int>(4 + i), 5};
    s.dependencies.push_back(std::move(d));
  }
  return s;
}

RunningApp running(const std::string& name, const std::string& version, nlohmann::json outputs = nlohmann::json::object(),
                   const std::string& tenant = "default") {
  RunningApp r;
  r.tenant = tenant;
  r.name = name;
  r.version = version;
  r.outputs = std::move(outputs);
  return r;
}

// A running app that was deployed with `requires` (dependency name -> range), each bound
// to the release named after the dependency.
RunningApp running_on(const std::string& name, const std::string& version,
                      const std::vector<std::pair<std::string, std::string>>& ranges,
                      const std::string& tenant = "default") {
  RunningApp r = running(name, version, nlohmann::json::object(), tenant);
  for (const auto& [dep, range] : ranges) {
    RunningRequirement q;
    q.name = dep;
    q.range = range;
    r.dependency_ranges.push_back(q);
  }
  return r;
}

Result<Plan> resolve_one(const AppSpec& root, const SpecRepository& repo, const std::vector<RunningApp>& run = {}) {
  return resolve({&root}, repo, run, "default");
}

std::string order_of(const Plan& plan) {
  std::string out;
  for (size_t i : plan.order) out += (out.empty() ? "" : " ") + plan.nodes[i].id();
  return out;
}

}  // namespace

TEST_CASE("a running app satisfying the range is reused, else the repository's is deployed", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.6.4"));
  repo.add(app("zookeeper", "3.8.1"));
  AppSpec root = app("hdfs", "3.3.4", {{"zookeeper", ">=3.6 <4"}});

  auto reused = resolve_one(root, repo, {running("zookeeper", "3.6.4", {{"quorum", "zk:2181"}})});
  REQUIRE(reused.has_value());
  const PlanNode& zk = node(*reused, "zookeeper");
  CHECK(zk.action == Action::Reuse);
  CHECK(zk.spec == nullptr);
  CHECK(zk.version.to_string() == "3.6.4");
  CHECK(zk.outputs["quorum"] == "zk:2181");
  CHECK(node(*reused, "hdfs").action == Action::Deploy);
  CHECK(node(*reused, "hdfs").root);
  CHECK(node(*reused, "hdfs").spec == &root);

  auto deployed = resolve_one(root, repo, {running("zookeeper", "3.5.0")});
  REQUIRE(deployed.has_value());
  const PlanNode& zk2 = node(*deployed, "zookeeper");
  CHECK(zk2.action == Action::Deploy);
  CHECK(zk2.version.to_string() == "3.8.1");
  REQUIRE(zk2.replaces.has_value());
  CHECK(zk2.replaces->to_string() == "3.5.0");
  CHECK(zk2.spec == repo.find("zookeeper", ver("3.8.1")));

  // Running apps of other tenants are not candidates.
  auto other_tenant = resolve_one(root, repo, {running("zookeeper", "3.6.4", {}, "team-b")});
  REQUIRE(other_tenant.has_value());
  CHECK(node(*other_tenant, "zookeeper").action == Action::Deploy);
}

TEST_CASE("the highest repository version satisfying the range is chosen", "[resolve]") {
  SpecRepository repo;
  for (const char* v : {"3.6.4", "4.0.0", "3.8.1", "3.8.0", "3.9.0-rc.1"}) repo.add(app("zookeeper", v));
  AppSpec root = app("hdfs", "3.3.4", {{"zookeeper", ">=3.6 <4"}});
  auto plan = resolve_one(root, repo);
  REQUIRE(plan.has_value());
  CHECK(node(*plan, "zookeeper").version.to_string() == "3.8.1");
  CHECK(node(*plan, "zookeeper").requirers.size() == 1);
  CHECK(node(*plan, "zookeeper").requirers[0].range.text() == ">=3.6 <4");
}

TEST_CASE("diamonds are shared and deployed in topological order, ties by name", "[resolve]") {
  SpecRepository repo;
  repo.add(app("b", "1.0.0", {{"d"}}));
  repo.add(app("c", "1.0.0", {{"d", "^1"}}));
  repo.add(app("d", "1.0.0"));
  repo.add(app("d", "1.2.0"));
  repo.add(app("d", "2.0.0"));
  AppSpec root = app("a", "1.0.0", {{"c"}, {"b"}});
  auto plan = resolve_one(root, repo);
  REQUIRE(plan.has_value());
  CHECK(plan->nodes.size() == 4);
  CHECK(node(*plan, "d").version.to_string() == "1.2.0");  // both ranges: * and ^1
  CHECK(node(*plan, "d").requirers.size() == 2);
  size_t d = *plan->find("d");
  CHECK(node(*plan, "b").dependencies[0].node == d);
  CHECK(node(*plan, "c").dependencies[0].node == d);
  CHECK(order_of(*plan) == "d@1.2.0 b@1.0.0 c@1.0.0 a@1.0.0");
}

TEST_CASE("a cycle is an error that prints it", "[resolve]") {
  SpecRepository repo;
  repo.add(app("b", "1.0.0", {{"c"}}));
  repo.add(app("c", "1.0.0", {{"x"}, {"a"}}));
  repo.add(app("x", "1.0.0"));
  AppSpec root = app("a", "1.0.0", {{"b"}});
  auto plan = resolve_one(root, repo);
  CHECK(errors_text(plan) ==
        "c/app.yaml:5:5: error: dependencies[1]: dependency cycle: a -> b -> c -> a\n"
        "  hint: apps cannot depend on each other in a loop: remove one of these dependencies\n");
}

TEST_CASE("incompatible ranges name both requirers", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.6.4"));
  repo.add(app("zookeeper", "3.8.1"));
  repo.add(app("hbase", "2.5.0", {{"zookeeper", ">=3.8"}}));
  repo.add(app("kafka", "3.6.0", {{"zookeeper", "<3.7"}}));
  AppSpec root = app("platform", "1.0.0", {{"hbase"}, {"kafka"}});
  auto plan = resolve_one(root, repo);
  CHECK(errors_text(plan) ==
        "kafka/app.yaml:4:5: error: dependencies[0].version: zookeeper: hbase@2.5.0 requires >=3.8, kafka@3.6.0 "
        "requires <3.7; no version satisfies both; available: 3.6.4, 3.8.1\n"
        "  hint: a release runs one version: loosen one of the ranges, or bind one of the two to a release of its "
        "own (release: in app.yaml)\n");
}

TEST_CASE("a root given directly must satisfy the ranges placed on it", "[resolve]") {
  SpecRepository repo;
  repo.add(app("kafka", "3.6.0", {{"zookeeper", "<3.7"}}));
  AppSpec zk = app("zookeeper", "3.8.1");
  AppSpec top = app("platform", "1.0.0", {{"kafka"}});
  auto plan = resolve({&zk, &top}, repo, {}, "default");
  REQUIRE_FALSE(plan.has_value());
  REQUIRE(plan.error().size() == 1);
  CHECK(plan.error()[0].message ==
        "zookeeper: kafka@3.6.0 requires <3.7, but zookeeper@3.8.1 is given to be deployed");
}

TEST_CASE("a later requirer's range changes an earlier choice", "[resolve]") {
  SpecRepository repo;
  repo.add(app("a", "1.0.0"));
  repo.add(app("a", "2.0.0"));
  repo.add(app("b", "1.0.0", {{"a", "<2"}}));
  AppSpec root = app("r", "1.0.0", {{"a"}, {"b"}});
  auto plan = resolve_one(root, repo);
  REQUIRE(plan.has_value());
  CHECK(node(*plan, "a").version.to_string() == "1.0.0");
}

TEST_CASE("ranges from versions no longer chosen do not cause conflicts", "[resolve]") {
  // First a@2 is picked and asks for c >=2; b then forces a <2, and a@1 asks for c <2.
  // The stale ">=2" from a@2 must be forgotten, or c would look unsatisfiable.
  SpecRepository repo;
  repo.add(app("a", "2.0.0", {{"c", ">=2"}, {"gone"}}));
  repo.add(app("a", "1.0.0", {{"c", "<2"}}));
  repo.add(app("b", "1.0.0", {{"a", "<2"}}));
  repo.add(app("c", "1.0.0"));
  repo.add(app("c", "2.0.0"));
  AppSpec root = app("r", "1.0.0", {{"a"}, {"b"}});
  auto plan = resolve_one(root, repo);
  INFO((plan ? "" : format_diagnostics(plan.error())));
  REQUIRE(plan.has_value());
  CHECK(node(*plan, "a").version.to_string() == "1.0.0");
  CHECK(node(*plan, "c").version.to_string() == "1.0.0");
  CHECK(node(*plan, "c").requirers.size() == 1);
  CHECK_FALSE(plan->find("gone").has_value());  // only a@2 wanted it, and it does not exist
  CHECK(order_of(*plan) == "c@1.0.0 a@1.0.0 b@1.0.0 r@1.0.0");
}

TEST_CASE("a missing app lists what exists, with a did-you-mean", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.8.1"));
  repo.add(app("hdfs", "3.3.4"));
  AppSpec root = app("hbase", "2.5.0", {{"hdfs"}, {"zookeper"}});
  CHECK(errors_text(resolve_one(root, repo, {running("kafka", "3.6.0")})) ==
        "hbase/app.yaml:5:5: error: dependencies[1].name: hbase@2.5.0 depends on 'zookeper', which is neither "
        "running in tenant 'default' nor in the spec repository\n"
        "  hint: did you mean 'zookeeper'? apps available: hdfs, kafka, zookeeper\n");
}

TEST_CASE("a missing version lists the versions available", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.8.1"));
  repo.add(app("zookeeper", "3.6.4"));
  AppSpec root = app("hbase", "2.5.0", {{"zookeeper", ">=4"}});
  CHECK(errors_text(resolve_one(root, repo, {running("zookeeper", "3.5.0")})) ==
        "hbase/app.yaml:4:5: error: dependencies[0].version: zookeeper: no version satisfies >=4 (required by "
        "hbase@2.5.0); available: 3.6.4, 3.8.1; running in tenant 'default': 3.5.0\n"
        "  hint: change the range, or add a matching version of zookeeper to the spec repository\n");
}

TEST_CASE("independent errors are collected", "[resolve]") {
  SpecRepository repo;
  repo.add(app("b", "1.0.0", {{"nothere"}}));
  AppSpec root = app("a", "1.0.0", {{"b"}, {"missing"}});
  auto plan = resolve_one(root, repo);
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().size() == 2);
}

TEST_CASE("importing an output the dependency does not declare is an error", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.8.1", {}, {"connect_string", "hosts"}));
  AppSpec root = app("hbase", "2.5.0", {{"zookeeper", "*", {"hosts", "quorum"}, "zk"}});
  CHECK(errors_text(resolve_one(root, repo)) ==
        "hbase/app.yaml:4:5: error: dependencies[0].import[1]: hbase@2.5.0 imports 'quorum' from zookeeper@3.8.1, "
        "which does not declare it; zookeeper@3.8.1 declares: connect_string, hosts\n"
        "  hint: import one of the declared outputs, or add 'quorum' to outputs: in zookeeper's app.yaml\n");

  // A reused app declares the outputs its running instance reports.
  auto reused = resolve_one(root, SpecRepository{}, {running("zookeeper", "3.6.4", {{"hosts", "h"}, {"quorum", "q"}})});
  CHECK(reused.has_value());
}

TEST_CASE("several roots share their dependencies", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.8.1"));
  AppSpec hbase = app("hbase", "2.5.0", {{"zookeeper"}, {"hdfs"}});
  AppSpec hdfs = app("hdfs", "3.3.4", {{"zookeeper"}});
  auto plan = resolve({&hbase, &hdfs, &hdfs}, repo, {}, "default");
  REQUIRE(plan.has_value());
  CHECK(plan->nodes.size() == 3);
  CHECK(plan->roots.size() == 2);
  CHECK(node(*plan, "hdfs").spec == &hdfs);
  CHECK(node(*plan, "zookeeper").requirers.size() == 2);
  CHECK(order_of(*plan) == "zookeeper@3.8.1 hdfs@3.3.4 hbase@2.5.0");

  AppSpec hdfs2 = app("hdfs", "3.4.0");
  auto twice = resolve({&hdfs, &hdfs2}, repo, {}, "default");
  REQUIRE_FALSE(twice.has_value());
  CHECK(twice.error()[0].message.find("two versions of hdfs are given for release 'hdfs': 3.3.4") != std::string::npos);
}

TEST_CASE("broken repository entries matter only when resolution touches them", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.8.1"));
  AppSpec dup = app("zookeeper", "3.8.1");
  dup.dir = "/other/zookeeper";
  repo.add(dup);  // filed as a problem under "zookeeper"
  repo.add(app("hdfs", "3.3.4"));
  REQUIRE(repo.diagnostics().size() == 1);

  AppSpec unrelated = app("app", "1.0.0", {{"hdfs"}});
  CHECK(resolve_one(unrelated, repo).has_value());
  AppSpec touching = app("app", "1.0.0", {{"zookeeper"}});
  std::string text = errors_text(resolve_one(touching, repo));
  CHECK(text.find("zookeeper@3.8.1 is defined twice: in '/repo/zookeeper/3.8.1' and in '/other/zookeeper'") !=
        std::string::npos);
}

TEST_CASE("a 5,000-deep chain resolves without recursion", "[resolve]") {
  SpecRepository repo;
  const int depth = 5000;
  for (int i = 1; i < depth; ++i) {
    std::vector<DepSpec> deps;
    if (i + 1 < depth) deps.push_back({fmt::format("app{}", i + 1), ">=1.0.0"});
    repo.add(app(fmt::format("app{}", i), "1.0.0", deps));
  }
  AppSpec root = app("app0", "1.0.0", {{"app1"}});
  auto plan = resolve_one(root, repo);
  REQUIRE(plan.has_value());
  REQUIRE(plan->nodes.size() == depth);
  CHECK(plan->nodes[plan->order.front()].name == fmt::format("app{}", depth - 1));
  CHECK(plan->nodes[plan->order.back()].name == "app0");
  // The formatters are iterative too.
  CHECK(format_plan_tree(*plan).size() > static_cast<size_t>(depth));
  CHECK(reverse_dependents(*plan, fmt::format("app{}", depth - 1)).size() == depth - 1);

  // A cycle closing the chain is found, also without recursion.
  repo.add(app(fmt::format("app{}", depth - 1), "2.0.0", {{"app0"}}));
  AppSpec again = app("app0", "1.0.0", {{"app1"}});
  auto cyclic = resolve_one(again, repo);
  REQUIRE_FALSE(cyclic.has_value());
  CHECK(cyclic.error()[0].message.starts_with("dependency cycle: app0 -> app1 -> app2 -> "));
}

TEST_CASE("10,000 apps with deep chains and diamonds resolve quickly", "[resolve]") {
  // App i depends on i+1 (a chain through everything) and on two "library" apps further
  // on, so the graph is full of diamonds; each app has three versions and ranges that
  // pick the middle one.
  SpecRepository repo;
  const int n = 10000;
  for (int i = 1; i < n; ++i)
    for (const char* v : {"1.0.0", "1.5.0", "2.0.0"}) {
      std::vector<DepSpec> deps;
      if (i + 1 < n) deps.push_back({fmt::format("app{}", i + 1), "^1"});
      if (i + 7 < n) deps.push_back({fmt::format("app{}", i + 7 + (i % 13) % (n - i - 7)), ">=1.5 <2"});
      if (i + 101 < n) deps.push_back({fmt::format("app{}", n - 1 - (i % 50)), "1.x"});
      repo.add(app(fmt::format("app{}", i), v, deps));
    }
  AppSpec root = app("app0", "1.0.0", {{"app1", "^1"}});
  auto start = std::chrono::steady_clock::now();
  auto plan = resolve_one(root, repo);
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO((plan ? "" : format_diagnostics(plan.error())));
  REQUIRE(plan.has_value());
  CHECK(plan->nodes.size() == n);
  for (const PlanNode& p : plan->nodes)
    if (!p.root) CHECK(p.version.to_string() == "1.5.0");
  WARN("resolved " << n << " apps in " << elapsed << " s");
  CHECK(elapsed < 1.0);
}

TEST_CASE("reverse dependents in a plan and in the repository", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.8.1"));
  repo.add(app("hdfs", "3.3.4", {{"zookeeper", ">=3.6"}}));
  repo.add(app("hdfs", "3.2.0"));
  repo.add(app("hbase", "2.5.0", {{"hdfs"}, {"zookeeper", "^3.8"}}));
  repo.add(app("spark", "3.5.0", {{"hdfs"}}));
  AppSpec root = app("lake", "1.0.0", {{"hbase"}, {"spark"}});
  auto plan = resolve_one(root, repo);
  REQUIRE(plan.has_value());
  std::vector<std::string> names;
  for (size_t i : reverse_dependents(*plan, "zookeeper")) names.push_back(plan->nodes[i].name);
  CHECK(names == std::vector<std::string>{"hbase", "hdfs", "lake", "spark"});
  CHECK(reverse_dependents(*plan, "lake").empty());
  CHECK(reverse_dependents(*plan, "nope").empty());

  auto deps = reverse_dependents(repo, "zookeeper");
  CHECK(format_repo_dependents(deps, "zookeeper") ==
        "hbase@2.5.0 requires zookeeper ^3.8\n"
        "hdfs@3.3.4 requires zookeeper >=3.6\n"
        "  spark@3.5.0 requires hdfs *\n");
  CHECK(repo_dependents_to_json(deps)[2]["depth"] == 2);
  CHECK(format_repo_dependents({}, "x") == "no app in the spec repository depends on x\n");
}

TEST_CASE("plans print as a tree, Graphviz and JSON", "[resolve]") {
  SpecRepository repo;
  repo.add(app("zookeeper", "3.6.4"));
  repo.add(app("hdfs", "3.3.4", {{"zookeeper", ">=3.6", {}, "zk"}}));
  AppSpec root = app("hbase", "2.5.0", {{"hdfs"}, {"zookeeper"}});
  auto plan = resolve_one(root, repo, {running("zookeeper", "3.6.4")});
  REQUIRE(plan.has_value());
  CHECK(format_plan_tree(*plan) ==
        "hbase (deploy 2.5.0)\n"
        "├── hdfs (deploy 3.3.4)\n"
        "│   └── zookeeper as zk (reuse 3.6.4)\n"
        "└── zookeeper (reuse 3.6.4)\n");

  // A shared app with dependencies of its own is expanded once.
  repo.add(app("hive", "4.0.0", {{"hdfs"}}));
  AppSpec top = app("lake", "1.0.0", {{"hive"}, {"hdfs"}});
  auto shared = resolve_one(top, repo);
  REQUIRE(shared.has_value());
  CHECK(format_plan_tree(*shared, {.ascii = true}) ==
        "lake (deploy 1.0.0)\n"
        "|-- hive (deploy 4.0.0)\n"
        "|   `-- hdfs (deploy 3.3.4)\n"
        "|       `-- zookeeper as zk (deploy 3.6.4)\n"
        "`-- hdfs (deploy 3.3.4, see above)\n");

  CHECK(format_plan_dot(*plan) ==
        "digraph gaia {\n"
        "  node [shape=box];\n"
        "  \"hbase@2.5.0\" [label=\"hbase\\ndeploy 2.5.0\"];\n"
        "  \"hdfs@3.3.4\" [label=\"hdfs\\ndeploy 3.3.4\"];\n"
        "  \"zookeeper@3.6.4\" [label=\"zookeeper\\nreuse 3.6.4\", style=dashed];\n"
        "  \"hbase@2.5.0\" -> \"hdfs@3.3.4\";\n"
        "  \"hbase@2.5.0\" -> \"zookeeper@3.6.4\";\n"
        "  \"hdfs@3.3.4\" -> \"zookeeper@3.6.4\" [label=\"zk\"];\n"
        "}\n");

  nlohmann::json j = plan_to_json(*plan);
  CHECK(j["tenant"] == "default");
  CHECK(j["roots"] == nlohmann::json::array({"hbase@2.5.0"}));
  CHECK(j["order"] == nlohmann::json::array({"zookeeper@3.6.4", "hdfs@3.3.4", "hbase@2.5.0"}));
  CHECK(j["nodes"][2]["action"] == "reuse");
  CHECK(j["nodes"][2]["dir"].is_null());
  CHECK(j["nodes"][2]["requirers"].size() == 2);
  CHECK(j["nodes"][1]["dependencies"][0] == nlohmann::json({{"alias", "zk"}, {"app", "zookeeper@3.6.4"}, {"release", "zookeeper"}, {"bound", "running 3.6.4 satisfies >=3.6"}}));
}

TEST_CASE("choices that flip each other settle on a consistent plan", "[resolve]") {
  // a@2 wants b<2 and b@2 wants a<2: changing both at once would flip forever.
  SpecRepository repo;
  repo.add(app("a", "1.0.0"));
  repo.add(app("a", "2.0.0", {{"b", "<2"}}));
  repo.add(app("b", "1.0.0"));
  repo.add(app("b", "2.0.0", {{"a", "<2"}}));
  AppSpec root = app("r", "1.0.0", {{"a"}, {"b"}});
  auto plan = resolve_one(root, repo);
  INFO((plan ? "" : format_diagnostics(plan.error())));
  REQUIRE(plan.has_value());
  std::string a = node(*plan, "a").version.to_string(), b = node(*plan, "b").version.to_string();
  CHECK(((a == "1.0.0" && b == "2.0.0") || (a == "2.0.0" && b == "1.0.0")));
}

namespace {

// Checks what every successful plan promises: each app's version satisfies every range
// placed on it by the plan; a reused app is the best running one and a deployed one the
// highest repository version that fits (when nothing running fits); edges follow the
// specs; the order puts dependencies first.
// The ranges running apps place on other names: their recorded ones, else (records
// from before ranges were kept) those of the repository's copy of their version.
struct RunningRange {
  std::string dependent, name;
  semver::Range range;
};
std::vector<RunningRange> running_ranges(const SpecRepository& repo, const std::vector<RunningApp>& run) {
  std::vector<RunningRange> out;
  for (const RunningApp& r : run) {
    if (!r.dependency_ranges.empty()) {
      for (const auto& q : r.dependency_ranges) out.push_back({r.name, q.name, semver::Range::parse(q.range).value()});
    } else if (const AppSpec* s = repo.find(r.name, ver(r.version))) {
      for (const Dependency& d : s->dependencies) out.push_back({r.name, d.name, d.range});
    }
  }
  return out;
}

void check_plan_invariants(const Plan& plan, const SpecRepository& repo, const std::vector<RunningApp>& run) {
  // A running app's ranges bind unless the plan redeploys it.
  std::vector<RunningRange> binding;
  for (auto& r : running_ranges(repo, run)) {
    auto i = plan.find(r.dependent);
    if (!i || plan.nodes[*i].action == Action::Reuse) binding.push_back(std::move(r));
  }
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& n = plan.nodes[i];
    auto fits = [&](const semver::Version& v) {
      for (const Requirement& r : n.requirers)
        if (!r.range.satisfies(v)) return false;
      return true;
    };
    auto keeps_running = [&](const semver::Version& v) {
      for (const RunningRange& r : binding)
        if (r.name == n.name && !r.range.satisfies(v)) return false;
      return true;
    };
    RC_ASSERT(fits(n.version));
    bool running_version = false;
    for (const RunningApp& r : run) running_version |= r.name == n.name && ver(r.version) == n.version;
    // Nothing running is moved to a version a running dependent does not accept.
    if (n.action == Action::Deploy && !running_version) RC_ASSERT(keeps_running(n.version));
    if (n.spec) {
      RC_ASSERT(n.dependencies.size() == n.spec->dependencies.size());
      for (size_t k = 0; k < n.dependencies.size(); ++k)
        RC_ASSERT(plan.nodes[n.dependencies[k].node].name == n.spec->dependencies[k].name);
    }
    // A fallback plan (with a warning) promises consistency only, not preferred versions.
    if (n.root || !plan.warnings.empty()) continue;
    std::optional<semver::Version> best_running;
    for (const RunningApp& r : run)
      if (r.name == n.name && fits(ver(r.version)) && (!best_running || *best_running < ver(r.version)))
        best_running = ver(r.version);
    if (n.action == Action::Reuse) {
      RC_ASSERT(best_running.has_value());
      RC_ASSERT(*best_running == n.version);
    } else {
      RC_ASSERT(!best_running.has_value());
      for (const AppSpec* s : repo.versions(n.name))
        if (fits(s->version) && keeps_running(s->version)) {
          RC_ASSERT(s == n.spec);
          break;
        }
    }
  }
  RC_ASSERT(plan.order.size() == plan.nodes.size());
  std::vector<size_t> position(plan.nodes.size());
  for (size_t k = 0; k < plan.order.size(); ++k) position[plan.order[k]] = k;
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    for (const PlanEdge& e : plan.nodes[i].dependencies) RC_ASSERT(position[e.node] < position[i]);
}

}  // namespace

TEST_CASE("random repositories resolve to consistent plans or to errors", "[resolve]") {
  rc::check([] {
    const std::vector<std::string> versions = {"1.0.0", "1.1.0", "2.0.0"};
    const std::vector<std::string> ranges = {"*", "^1", ">=1.1", "<2", "2.x", "1.0.0", ">=1.1 <2 || 2.0.0"};
    int names = *rc::gen::inRange(2, 8);
    SpecRepository repo;
    for (int i = 0; i < names; ++i)
      for (const std::string& v : versions) {
        if (*rc::gen::inRange(0, 4) == 0) continue;  // some versions are missing
        std::vector<DepSpec> deps;
        std::set<int> used;
        int count = *rc::gen::inRange(0, 3);
        for (int k = 0; k < count; ++k) {
          int target = *rc::gen::inRange(0, names);
          if (target == i || !used.insert(target).second) continue;
          deps.push_back({fmt::format("n{}", target), ranges[*rc::gen::inRange<size_t>(0, ranges.size())]});
        }
        repo.add(app(fmt::format("n{}", i), v, deps));
      }
    std::vector<RunningApp> run;
    for (int i = 0; i < names; ++i)
      if (*rc::gen::inRange(0, 3) == 0)
        run.push_back(running(fmt::format("n{}", i), versions[*rc::gen::inRange<size_t>(0, versions.size())]));
    std::vector<DepSpec> root_deps;
    for (int i = 0; i < names; ++i)
      if (*rc::gen::inRange(0, 2) == 0) root_deps.push_back({fmt::format("n{}", i), ranges[*rc::gen::inRange<size_t>(0, ranges.size())]});
    AppSpec root = app("root", "1.0.0", root_deps);
    for (const std::string& name : repo.names())
      for (const AppSpec* s : repo.versions(name)) {
        RC_LOG() << s->id() << ":";
        for (const Dependency& d : s->dependencies) RC_LOG() << " " << d.name << "@'" << d.range.text() << "'";
        RC_LOG() << "\n";
      }
    for (const RunningApp& r : run) RC_LOG() << "running " << r.name << "@" << r.version << "\n";
    RC_LOG() << "root:";
    for (const Dependency& d : root.dependencies) RC_LOG() << " " << d.name << "@'" << d.range.text() << "'";
    RC_LOG() << "\n";
    auto plan = resolve_one(root, repo, run);
    if (!plan) RC_LOG() << format_diagnostics(plan.error());
    if (plan) {
      check_plan_invariants(*plan, repo, run);
    } else {
      RC_ASSERT(!plan.error().empty());
      for (const Diagnostic& d : plan.error()) RC_ASSERT(!d.message.empty());
    }
  });
}

TEST_CASE("when preferred choices never settle, a consistent set is used with a warning", "[resolve]") {
  // Reusing the running n0@1.1.0 drops n0@1.0.0's "n1 <2", which lets n1 go to 2.0.0,
  // which wants n0 1.0.0, which brings "n1 <2" back: no choice is stable. n0@1.0.0 with
  // n1@1.1.0 satisfies every range, so that plan is used.
  SpecRepository repo;
  repo.add(app("n0", "1.0.0", {{"n1", "<2"}}));
  repo.add(app("n0", "1.1.0"));
  repo.add(app("n1", "1.0.0", {{"n0"}}));
  repo.add(app("n1", "1.1.0"));
  repo.add(app("n1", "2.0.0", {{"n0", "1.0.0"}}));
  AppSpec root = app("root", "1.0.0", {{"n0"}, {"n1", ">=1.1"}});
  auto plan = resolve_one(root, repo, {running("n0", "1.1.0"), running("n1", "1.0.0")});
  INFO((plan ? "" : format_diagnostics(plan.error())));
  REQUIRE(plan.has_value());
  CHECK(node(*plan, "n0").id() == "n0@1.0.0");
  CHECK(node(*plan, "n1").id() == "n1@1.1.0");
  REQUIRE(plan->warnings.size() == 1);
  CHECK(plan->warnings[0].message.find("never settled") != std::string::npos);
}

// Issue 14.1: with hdfs 5.2.0 running under apps that need ~5.2, a submit of an app of
// the older line rolled hdfs back to 5.1.0 without a word.
TEST_CASE("a submit never moves a dependency out from under the apps running on it", "[resolve]") {
  SpecRepository repo;
  repo.add(app("hdfs", "5.1.0"));
  repo.add(app("hdfs", "5.2.0"));
  std::vector<RunningApp> run = {running("hdfs", "5.2.0"),
                                 running_on("hbase", "2.0.0", {{"hdfs", "~5.2"}}),
                                 running_on("yarn", "5.2.0", {{"hdfs", "~5.2"}, {"zookeeper", "*"}})};

  AppSpec old = app("oldjob", "1.0.0", {{"hdfs", "~5.1"}});
  std::string text = errors_text(resolve_one(old, repo, run));
  CHECK(text.find("oldjob/app.yaml:4:5") != std::string::npos);
  CHECK(text.find("hbase@2.0.0 (running) requires ~5.2") != std::string::npos);
  CHECK(text.find("yarn@5.2.0 (running) requires ~5.2") != std::string::npos);
  CHECK(text.find("deploying 5.1.0 instead of the running 5.2.0") != std::string::npos);
  CHECK(text.find("delete them first") != std::string::npos);

  // What the running apps accept is fine: reuse, or a move inside their ranges.
  AppSpec loose = app("newjob", "1.0.0", {{"hdfs", ">=5"}});
  auto reused = resolve_one(loose, repo, run);
  REQUIRE(reused.has_value());
  CHECK(node(*reused, "hdfs").action == Action::Reuse);
  repo.add(app("hdfs", "5.2.3"));
  AppSpec patch = app("patchjob", "1.0.0", {{"hdfs", ">=5.2.1"}});
  auto moved = resolve_one(patch, repo, run);
  REQUIRE(moved.has_value());
  CHECK(node(*moved, "hdfs").version.to_string() == "5.2.3");

  // The highest version would break them, so a lower one everybody accepts is chosen.
  repo.add(app("hdfs", "6.0.0"));
  AppSpec any = app("anyjob", "1.0.0", {{"hdfs", ">=5.2.1"}});
  auto lower = resolve_one(any, repo, run);
  REQUIRE(lower.has_value());
  CHECK(node(*lower, "hdfs").version.to_string() == "5.2.3");

  // Running apps of other tenants constrain nothing here.
  std::vector<RunningApp> elsewhere = {running("hdfs", "5.2.0"), running_on("hbase", "2.0.0", {{"hdfs", "~5.2"}}, "team-b")};
  auto other = resolve_one(old, repo, elsewhere);
  REQUIRE(other.has_value());
  CHECK(node(*other, "hdfs").version.to_string() == "5.1.0");
}

TEST_CASE("a root given directly may not break its running dependents, unless they move with it", "[resolve]") {
  SpecRepository repo;
  AppSpec hdfs6 = app("hdfs", "6.0.0");
  repo.add(app("hdfs", "5.2.0"));
  repo.add(hdfs6);
  std::vector<RunningApp> run = {running("hdfs", "5.2.0"), running_on("hbase", "2.0.0", {{"hdfs", "~5.2"}})};
  std::string text = errors_text(resolve_one(hdfs6, repo, run));
  CHECK(text.find("hdfs@6.0.0 is given to be deployed, which breaks apps running on hdfs: hbase@2.0.0 (running) "
                  "requires ~5.2") != std::string::npos);

  // Resubmitting the version that runs is always possible.
  AppSpec hdfs52 = app("hdfs", "5.2.0");
  CHECK(resolve_one(hdfs52, repo, run).has_value());

  // Submitted together with a dependent that accepts it, both move.
  AppSpec hbase3 = app("hbase", "3.0.0", {{"hdfs", "^6"}});
  auto both = resolve({&hdfs6, &hbase3}, repo, run, "default");
  REQUIRE(both.has_value());
  CHECK(node(*both, "hdfs").version.to_string() == "6.0.0");

  // A dependent pulled in at a new version is judged by its new ranges.
  repo.add(hbase3);
  AppSpec top = app("web", "1.0.0", {{"hbase", "^3"}});
  auto pulled = resolve_one(top, repo, {running("hdfs", "5.2.0"), running_on("hbase", "2.0.0", {{"hdfs", "~5.2"}})});
  REQUIRE(pulled.has_value());
  CHECK(node(*pulled, "hbase").version.to_string() == "3.0.0");
  CHECK(node(*pulled, "hdfs").version.to_string() == "6.0.0");
}

TEST_CASE("two pipelines with disjoint ranges on a library cannot flip it back and forth", "[resolve]") {
  SpecRepository repo;
  repo.add(app("lib", "1.4.0"));
  repo.add(app("lib", "2.1.0"));
  AppSpec a = app("a", "1.0.0", {{"lib", "^1.0"}});
  AppSpec b = app("b", "1.0.0", {{"lib", ">=2"}});
  // a runs on lib 1.4.0; b's submit would move lib to 2.1.0 under it.
  std::string text =
      errors_text(resolve_one(b, repo, {running("lib", "1.4.0"), running_on("a", "1.0.0", {{"lib", "^1.0"}})}));
  CHECK(text.find("a@1.0.0 (running) requires ^1.0") != std::string::npos);
  // Apps recorded before ranges were kept: the repository's copy of their version says.
  repo.add(a);
  std::string old = errors_text(resolve_one(b, repo, {running("lib", "1.4.0"), running("a", "1.0.0")}));
  CHECK(old.find("a@1.0.0 (running) requires ^1.0") != std::string::npos);
}

TEST_CASE("conditional dependencies: only those whose when holds are resolved", "[resolve][when]") {
  SpecRepository repo;
  repo.add(app("search", "7.17.0"));
  repo.add(app("kafka", "3.6.0"));
  AppSpec root = app("hub", "1.0.0", {{"search"}, {"kafka"}, {"hdfs"}});
  root.dependencies[0].when = parse_condition("search.enabled").value();
  root.dependencies[0].when_location = Location{"hub/app.yaml", 4, 11};
  root.dependencies[1].when = parse_condition("!sharing.local").value();
  root.dependencies[2].when = parse_condition("storage == hdfs").value();  // hdfs is not in the repository.
  std::vector<std::pair<std::string, bool>> asked;
  nlohmann::json config = {{"search", {{"enabled", false}}}, {"sharing", {{"local", false}}}, {"storage", "local"}};
  ConfigEvaluator eval = [&](const AppSpec& s, bool is_root) -> Result<nlohmann::json> {
    asked.emplace_back(s.name, is_root);
    return config;
  };
  auto plan = resolve({&root}, repo, {}, "default", eval);
  REQUIRE(plan);
  CHECK(order_of(*plan) == "kafka@3.6.0 hub@1.0.0");
  const PlanNode& hub = node(*plan, "hub");
  REQUIRE(hub.dependencies.size() == 1);
  CHECK(hub.dependencies[0].alias == "kafka");
  REQUIRE(hub.skipped.size() == 2);
  CHECK(hub.skipped[0].name == "search");
  CHECK(hub.skipped[0].condition == "search.enabled");
  CHECK(hub.skipped[0].value == "search.enabled is false");
  CHECK(hub.skipped[1].value == "storage is \"local\"");
  // Asked once, for the root only: kafka has no conditions.
  CHECK(asked == std::vector<std::pair<std::string, bool>>{{"hub", true}});
  auto tree = format_plan_tree(*plan, {});
  CHECK_THAT(tree, Catch::Contains("kafka (deploy 3.6.0, when !sharing.local)"));
  CHECK_THAT(tree, Catch::Contains("search (skipped: when search.enabled, and search.enabled is false)"));
  auto j = plan_to_json(*plan);
  CHECK(j["nodes"][0]["skipped"][0]["because"] == "search.enabled is false");

  // The flag on: search is resolved; the hdfs condition still keeps a missing app out.
  config["search"]["enabled"] = true;
  auto on = resolve({&root}, repo, {}, "default", eval);
  REQUIRE(on);
  CHECK(order_of(*on) == "kafka@3.6.0 search@7.17.0 hub@1.0.0");

  // A condition naming what is not a parameter: a located error, and nothing resolved
  // through it.
  root.dependencies[0].when = parse_condition("search.enabeld").value();
  auto bad = resolve({&root}, repo, {}, "default", eval);
  REQUIRE_FALSE(bad);
  REQUIRE(bad.error().size() == 1);
  CHECK(bad.error()[0].location.line == 4);
  CHECK(bad.error()[0].path == "dependencies[0].when");
  CHECK_THAT(bad.error()[0].message, Catch::Contains("'search.enabeld' is not a parameter of the app's config"));
  CHECK_THAT(bad.error()[0].hint, Catch::Contains("did you mean 'search.enabled'?"));

  // A config that does not evaluate: its error, once.
  ConfigEvaluator broken = [](const AppSpec&, bool) -> Result<nlohmann::json> {
    return fail(Diagnostic{{"hub/config.jsonnet", 3, 1}, "", "syntax error", ""});
  };
  auto err = resolve({&root}, repo, {}, "default", broken);
  REQUIRE_FALSE(err);
  REQUIRE(err.error().size() == 1);
  CHECK(err.error()[0].message == "syntax error");

  // Without an evaluator every conditional dependency applies (and hdfs is missing).
  root.dependencies[2].when.reset();
  auto all = resolve({&root}, repo, {}, "default");
  REQUIRE_FALSE(all);
  CHECK_THAT(errors_text(all), Catch::Contains("hdfs"));
}
