// Apply sets without the CLI: a folder of specs converged in one transaction under a
// source that owns what it creates; prune deletes only what that source created and
// left the set; --check-revision refuses a store that moved; a dry run writes nothing.
#include <catch2/catch.hpp>

#include "ops/apply_set.hpp"
#include "ops/submission.hpp"
#include "tests/ops/ops_fixture.hpp"

namespace gaia::test {

namespace {

ops::SetRequest set_request(const OpsFixture& f, const std::string& folder, const std::string& source, bool prune = false) {
  ops::SetRequest r;
  r.paths = {(f.dir().path() / folder).string()};
  r.source = source;
  r.prune = prune;
  return r;
}

const AppChange* change_of(const ApplyPlan& plan, const std::string& name) {
  for (const auto& c : plan.apps)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("apply set: the source owns what it creates, and prune deletes only its apps that left the set",
          "[ops][apply]") {
  OpsFixture f;
  f.add_nodes(2);
  f.write_app("set/a", "a");
  f.write_app("set/b", "b");
  f.write_app("other/c", "c");
  f.write_app("elsewhere/d", "d");

  auto first = ops::apply_set(f.ws("op-apply"), set_request(f, "set", "ci"), {});
  REQUIRE(first);
  REQUIRE(change_of(first->plan, "a"));
  CHECK(change_of(first->plan, "a")->action == "deploy");
  CHECK(change_of(first->plan, "b")->action == "deploy");
  REQUIRE(first->controllers);
  CHECK(running_of(first->final_state(), "a") == 1);
  CHECK(first->waited_apps() == std::vector<std::string>{"a", "b"});
  ClusterState st = f.load();
  CHECK(st.find_app("default", "a")->source == "ci");

  // Apps of another source and of a submit are not the set's to prune.
  ops::SubmitRequest submit;
  submit.dirs = {(f.dir().path() / "other" / "c").string()};
  REQUIRE(ops::submit(f.ws(), submit));
  REQUIRE(ops::apply_set(f.ws(), set_request(f, "elsewhere", "cd"), {}));

  std::filesystem::remove_all(f.dir().path() / "set" / "b");
  auto pruned = ops::apply_set(f.ws("op-prune"), set_request(f, "set", "ci", true), {});
  REQUIRE(pruned);
  CHECK(change_of(pruned->plan, "a")->action == "unchanged");
  REQUIRE(change_of(pruned->plan, "b"));
  CHECK(change_of(pruned->plan, "b")->action == "prune");
  CHECK_FALSE(change_of(pruned->plan, "c"));
  CHECK_FALSE(change_of(pruned->plan, "d"));
  CHECK(pruned->waited_apps() == std::vector<std::string>{"a"});
  st = f.load();
  CHECK_FALSE(st.find_app("default", "b"));
  CHECK(instances_of(st, "b") == 0);
  CHECK(st.find_app("default", "c"));
  CHECK(st.find_app("default", "d"));

  // Nothing left to do: nothing is written, not even by the controllers.
  int64_t before = f.revision();
  auto again = ops::apply_set(f.ws(), set_request(f, "set", "ci", true), {});
  REQUIRE(again);
  CHECK_FALSE(again->plan.changed());
  CHECK_FALSE(again->controllers);
  CHECK(f.revision() == before);
}

TEST_CASE("apply set: a prune another app still depends on is kept, with the reason", "[ops][apply]") {
  OpsFixture f;
  f.add_nodes(2);
  f.write_app("set/a", "a");
  f.write_app("set/base", "base");
  REQUIRE(ops::apply_set(f.ws(), set_request(f, "set", "ci"), {}));
  // top, deployed by a submit, depends on base, which then leaves the set.
  f.write_app("submitted/top", "top", "dependencies:\n  - name: base\n    version: \"^1.0\"\n    import: [size]\n", "base");
  ops::SubmitRequest submit;
  submit.dirs = {(f.dir().path() / "submitted" / "top").string()};
  submit.render.repo = {f.dir().path() / "set"};
  REQUIRE(ops::submit(f.ws(), submit));
  std::filesystem::remove_all(f.dir().path() / "set" / "base");

  int64_t before = f.revision();
  auto decided = ops::decide_set(f.ws(), set_request(f, "set", "ci", true));
  REQUIRE(decided);
  CHECK(f.revision() == before);
  REQUIRE(change_of(decided->plan, "base"));
  CHECK(change_of(decided->plan, "base")->action == "keep");
  CHECK(change_of(decided->plan, "base")->note.find("top") != std::string::npos);
  CHECK(change_of(decided->plan, "a")->action == "unchanged");
  CHECK_FALSE(change_of(decided->plan, "top"));
}

TEST_CASE("apply set: --check-revision refuses a store that moved, and a dry run writes nothing", "[ops][apply]") {
  OpsFixture f;
  f.add_nodes(1);
  f.write_app("set/a", "a");
  int64_t at = f.revision();
  auto dry = ops::apply_set(f.ws(), set_request(f, "set", "ci"), ops::ApplyOptions{true, at});
  REQUIRE(dry);
  CHECK(dry->plan.changed());
  CHECK_FALSE(dry->controllers);
  CHECK(f.revision() == at);

  auto moved = ops::apply_set(f.ws(), set_request(f, "set", "ci"), ops::ApplyOptions{false, at - 1});
  REQUIRE_FALSE(moved);
  CHECK(moved.error().front().path == "--check-revision");
  CHECK(moved.error().front().message.starts_with(fmt::format("the store is at revision {}, not {}", at, at - 1)));
  CHECK(f.revision() == at);

  auto applied = ops::apply_set(f.ws(), set_request(f, "set", "ci"), ops::ApplyOptions{false, at});
  REQUIRE(applied);
  CHECK(applied->plan.changed());
  CHECK(f.load().find_app("default", "a"));
}

TEST_CASE("apply set: the source defaults to the canonical paths, and the fingerprint follows the tenant's apps",
          "[ops][apply]") {
  OpsFixture f;
  f.add_nodes(1);
  f.write_app("set/a", "a");
  ops::SetRequest r = set_request(f, "set", "");
  r.paths.push_back(r.paths[0] + "/");
  auto source = ops::apply_source(r);
  REQUIRE(source);
  CHECK(*source == "dir:" + std::filesystem::weakly_canonical(f.dir().path() / "set").string());
  r.source = "two\nlines";
  CHECK_FALSE(ops::apply_source(r));

  std::string empty = ops::resolution_fingerprint(f.load(), "default");
  REQUIRE(ops::apply_set(f.ws(), set_request(f, "set", "ci"), {}));
  CHECK(ops::resolution_fingerprint(f.load(), "default") != empty);
  CHECK(ops::resolution_fingerprint(f.load(), "other") == empty);
}

namespace {

void put(ClusterState& st, const std::string& name, const std::string& source, std::vector<std::string> deps,
         std::vector<RunningRequirement> ranges = {}) {
  AppRecord a;
  a.tenant = "default";
  a.name = name;
  a.version = "1.0.0";
  a.source = source;
  a.dependencies = std::move(deps);
  a.dependency_ranges = std::move(ranges);
  st.apps["default/" + name] = a;
}

}  // namespace

TEST_CASE("apply set: a prune releases the source's apps no other source's app uses, transitively",
          "[ops][apply][prune]") {
  ClusterState st;
  put(st, "oldjob", "ci", {"hdfs"});
  put(st, "hdfs", "ci", {"zk"});
  put(st, "zk", "ci", {});
  put(st, "tool", "ci", {});
  CHECK(ops::prune_released(st, "default", "ci") == std::set<std::string>{"hdfs", "oldjob", "tool", "zk"});
  // A job of another source on hdfs keeps hdfs and, through it, zk.
  put(st, "report", "", {"hdfs"});
  CHECK(ops::prune_released(st, "default", "ci") == std::set<std::string>{"oldjob", "tool"});
  CHECK(ops::prune_released(st, "default", "other").empty());
  CHECK(ops::prune_released(st, "elsewhere", "ci").empty());

  // Released apps stay candidates for reuse but accept any version of what they use.
  put(st, "oldjob", "ci", {"hdfs"}, {{"hdfs", "~5.1"}});
  auto running = ops::running_apps_releasing(st, "default", {"oldjob"}).list("default");
  bool seen = false;
  for (const auto& r : running) {
    if (r.name != "oldjob") continue;
    seen = true;
    CHECK(r.dependency_ranges == std::vector<RunningRequirement>{{"hdfs", "*"}});
  }
  CHECK(seen);
  CHECK(running.size() == st.apps.size());
}

TEST_CASE("apply set: a released app the new plan reuses must still get what its ranges ask",
          "[ops][apply][prune]") {
  ClusterState st;
  put(st, "oldjob", "ci", {"hdfs"}, {{"hdfs", "~5.1"}});
  spec::Plan plan;
  spec::PlanNode hdfs;
  hdfs.name = "hdfs";
  hdfs.version = semver::parse_version("5.2.0").value();
  spec::PlanNode oldjob;
  oldjob.name = "oldjob";
  oldjob.version = semver::parse_version("1.0.0").value();
  oldjob.action = spec::Action::Reuse;
  plan.nodes = {oldjob, hdfs};
  // Reused as it is, oldjob would run on a 5.2.0 it does not accept.
  CHECK_FALSE(ops::released_ranges_hold(plan, st, "default", {"oldjob"}));
  // Not released (its ranges held during resolution), or deployed again from its spec
  // (whose ranges the resolver enforced): nothing to check.
  CHECK(ops::released_ranges_hold(plan, st, "default", {}));
  plan.nodes[0].action = spec::Action::Deploy;
  CHECK(ops::released_ranges_hold(plan, st, "default", {"oldjob"}));
  // Reused on a version inside its range: fine.
  plan.nodes[0].action = spec::Action::Reuse;
  plan.nodes[1].version = semver::parse_version("5.1.3").value();
  CHECK(ops::released_ranges_hold(plan, st, "default", {"oldjob"}));
}


TEST_CASE("apply set: apps of other tenants bound to a release keep it and what it runs on from a prune",
          "[ops][apply][prune][tenant]") {
  ClusterState st;
  put(st, "hdfs", "ci", {"zk"});
  put(st, "zk", "ci", {});
  put(st, "tool", "ci", {});
  std::string before = ops::resolution_fingerprint(st, "default");
  AppRecord lake;
  lake.tenant = "analytics";
  lake.name = "lake";
  lake.version = "1.0.0";
  lake.dependencies = {"default/hdfs"};
  lake.dependency_ranges = {{"hdfs", "^1", "default/hdfs", "hdfs"}};
  st.apps["analytics/lake"] = lake;
  CHECK(ops::prune_released(st, "default", "ci") == std::set<std::string>{"tool"});
  // Another tenant binding to a release of this one is a change an apply must see.
  CHECK(ops::resolution_fingerprint(st, "default") != before);
}

}  // namespace gaia::test
