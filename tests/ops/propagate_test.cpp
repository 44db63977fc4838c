// Config changes and their propagation without the CLI: a change re-renders the apps
// reading it and, down the chain, the dependents whose imports changed; a dry run
// writes nothing; a change that breaks a reader is refused before anything is written;
// the committed change rolls out through the inline controllers.
#include <catch2/catch.hpp>

#include "ops/center_changes.hpp"
#include "ops/propagate.hpp"
#include "ops/submission.hpp"
#include "tests/ops/ops_fixture.hpp"

namespace gaia::test {

namespace {

using json = nlohmann::json;

// base (reads base.replicas, outputs it as `size`) and top, which imports base's size.
void submit_chain(OpsFixture& f) {
  f.add_nodes(3);
  f.write_app("apps/base", "base");
  f.write_app("apps/top", "top", "dependencies:\n  - name: base\n    version: \"^1.0\"\n    import: [size]\n", "base");
  ops::SubmitRequest request;
  request.dirs = {(f.dir().path() / "apps" / "top").string()};
  auto submitted = ops::submit(f.ws("op-submit"), request);
  REQUIRE(submitted);
  REQUIRE(running_of(f.load(), "base") == 1);
  REQUIRE(running_of(f.load(), "top") == 1);
}

const ops::PropagatedApp* find(const ops::Propagation& p, const std::string& name) {
  for (const auto& a : p.apps)
    if (a.name == name) return &a;
  return nullptr;
}

// Makes `app`'s record look like one an older gaia wrote: no spec bundle, so it
// re-renders from its spec directory.
void forget_bundle(OpsFixture& f, const std::string& app) {
  auto r = f.state().update("op-old", [&](const ClusterState& st, Batch& b) -> Result<void> {
    AppRecord old = *st.find_app("default", app);
    old.bundle.clear();
    b.put_apps.push_back(old);
    return {};
  });
  REQUIRE(r);
}

std::string upstream_env(const ClusterState& st) {
  return st.find_app("default", "top")->workload.roles.at(0).env.at("UPSTREAM");
}

}  // namespace

TEST_CASE("propagate: a dry run shows the readers and the dependents it would re-render, and writes nothing",
          "[ops][propagate]") {
  OpsFixture f;
  submit_chain(f);
  int64_t before = f.revision();
  auto outcome = ops::apply_center_change(f.ws(), set_global(f, "base.replicas", 3), true);
  REQUIRE(outcome);
  CHECK(outcome->dry_run);
  CHECK(f.revision() == before);
  const auto* base = find(outcome->propagation, "base");
  const auto* top = find(outcome->propagation, "top");
  REQUIRE(base);
  REQUIRE(top);
  CHECK(base->direct);
  CHECK(base->rerendered);
  CHECK(base->outputs_changed);
  REQUIRE(base->reads.size() == 1);
  CHECK(base->reads[0].read.key == "base.replicas");
  CHECK_FALSE(top->direct);
  CHECK(top->rerendered);
  CHECK(top->imports == std::vector<std::string>{"base.size"});
  CHECK(outcome->propagation.rerenders.size() == 2);
  CHECK_FALSE(outcome->controllers);
  // Nothing was written: no key, no re-render.
  auto centers = StoreConfigSource::load(f.store());
  REQUIRE(centers);
  CHECK_FALSE(centers->find(std::string(k_global_scope), "base.replicas"));
  CHECK(upstream_env(f.load()) == "1");
}

TEST_CASE("propagate: a config change re-renders the chain and rolls it out", "[ops][propagate]") {
  OpsFixture f;
  submit_chain(f);
  auto outcome = ops::apply_center_change(f.ws("op-config"), set_global(f, "base.replicas", 3), false);
  REQUIRE(outcome);
  CHECK_FALSE(outcome->dry_run);
  CHECK(outcome->committed.applied == std::vector<std::string>{"default/base", "default/top"});
  REQUIRE(outcome->controllers);

  ClusterState st = f.load();
  CHECK(running_of(st, "base") == 3);
  CHECK(upstream_env(st) == "3");
  CHECK(ops::change_settled(*outcome, st));
  auto w = ops::wait_for_change(f.ws(), *outcome, ops::FollowOptions{});
  REQUIRE(w);
  CHECK(w->done);
  CHECK(w->blockers.empty());

  // The change's own event comes first, then the re-renders it caused.
  auto events = f.state().events_after(0);
  REQUIRE(events);
  std::vector<std::string> reasons;
  for (const auto& e : *events)
    if (e.op == "op-config") reasons.push_back(e.reason);
  REQUIRE_FALSE(reasons.empty());
  CHECK(reasons.front() == "ConfigChanged");
  CHECK(std::count(reasons.begin(), reasons.end(), "Rerendered") == 2);
}

TEST_CASE("propagate: a change that breaks a reader's render is refused before it is written", "[ops][propagate]") {
  OpsFixture f;
  submit_chain(f);
  int64_t before = f.revision();
  auto outcome = ops::apply_center_change(f.ws(), set_global(f, "base.replicas", "many"), false);
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().front().message.find("re-rendering base (default) for this change") != std::string::npos);
  CHECK(f.revision() == before);
  auto centers = StoreConfigSource::load(f.store());
  REQUIRE(centers);
  CHECK_FALSE(centers->find(std::string(k_global_scope), "base.replicas"));
}

TEST_CASE("propagate: an edit of the spec directory after submit does not reach a re-render", "[ops][propagate]") {
  OpsFixture f;
  submit_chain(f);
  f.dir().write("apps/base/app.yaml", "name: base\nversion: 2.0.0\noutputs: [size]\n");
  f.dir().write("apps/base/main.jsonnet", "error 'edited'\n");
  // The re-render uses the files submitted (the app's spec bundle), not the folder.
  auto outcome = ops::apply_center_change(f.ws(), set_global(f, "base.replicas", 2), false);
  REQUIRE(outcome);
  ClusterState st = f.load();
  CHECK(st.find_app("default", "base")->version == "1.0.0");
  CHECK(running_of(st, "base") == 2);
}

TEST_CASE("propagate: an app without a bundle whose spec directory moved on is named, and the change refused",
          "[ops][propagate]") {
  OpsFixture f;
  submit_chain(f);
  forget_bundle(f, "base");
  f.dir().write("apps/base/app.yaml", "name: base\nversion: 2.0.0\noutputs: [size]\n");
  auto outcome = ops::apply_center_change(f.ws(), set_global(f, "base.replicas", 2), true);
  REQUIRE_FALSE(outcome);
  CHECK(outcome.error().front().message == "default/base runs base 1.0.0, but its spec directory now holds base 2.0.0");
}

namespace {
struct Crashed {};  // Thrown at the crash point: the command stops there, as a kill would.
}  // namespace

TEST_CASE("propagate: a crash between the config write and the re-render is healed by the next controller pass",
          "[ops][propagate][crash]") {
  OpsFixture f;
  submit_chain(f);
  ops::Workspace ws = f.ws("op-config");
  ws.crash_point = [](std::string_view point) {
    if (point == "center-change-written") throw Crashed{};
  };
  CHECK_THROWS_AS(ops::apply_center_change(ws, set_global(f, "base.replicas", 3), false), Crashed);
  // The value is written, the readers still run their old render: stale.
  auto centers = StoreConfigSource::load(f.store());
  REQUIRE(centers);
  REQUIRE(centers->find(std::string(k_global_scope), "base.replicas"));
  ClusterState st = f.load();
  CHECK(upstream_env(st) == "1");
  auto stale = stale_keys(st, [&](const AppRecord& a) { return ops::app_snapshot(*centers, a); });
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].key == "base.replicas");

  auto healed = ops::heal_stale_renders(f.ws("op-heal"));
  REQUIRE(healed);
  CHECK(healed->applied == std::vector<std::string>{"default/base", "default/top"});
  auto run = ops::run_controllers(f.ws("op-heal"));
  REQUIRE(run);
  st = f.load();
  CHECK(running_of(st, "base") == 3);
  CHECK(upstream_env(st) == "3");
  CHECK(stale_keys(st, [&](const AppRecord& a) { return ops::app_snapshot(*centers, a); }).empty());
  auto events = f.state().events_after(0);
  REQUIRE(events);
  size_t repairs = 0;
  for (const auto& e : *events)
    if (e.op == "op-heal" && e.reason == "Rerendered" && e.message.find("repairing a stale render") != std::string::npos)
      ++repairs;
  CHECK(repairs == 2);

  // Healed: a second pass finds nothing and writes nothing.
  int64_t before = f.revision();
  auto again = ops::heal_stale_renders(f.ws("op-heal-2"));
  REQUIRE(again);
  CHECK(again->applied.empty());
  CHECK(f.revision() == before);
}

TEST_CASE("propagate: a stale app that no longer renders is reported by the healer, and nothing is written",
          "[ops][propagate][crash]") {
  OpsFixture f;
  submit_chain(f);
  ops::Workspace ws = f.ws("op-config");
  ws.crash_point = [](std::string_view point) {
    if (point == "center-change-written") throw Crashed{};
  };
  CHECK_THROWS_AS(ops::apply_center_change(ws, set_global(f, "base.replicas", 3), false), Crashed);
  forget_bundle(f, "base");
  f.dir().write("apps/base/app.yaml", "name: base\nversion: 2.0.0\noutputs: [size]\n");
  int64_t before = f.revision();
  auto healed = ops::heal_stale_renders(f.ws("op-heal"));
  REQUIRE_FALSE(healed);
  CHECK(healed.error().front().message == "default/base runs base 1.0.0, but its spec directory now holds base 2.0.0");
  CHECK(f.revision() == before);
  CHECK(upstream_env(f.load()) == "1");
}

}  // namespace gaia::test
