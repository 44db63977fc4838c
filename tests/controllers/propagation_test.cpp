// Config and label propagation, the pure part: which reads a change touches, which apps
// it re-renders, the order down the dependency chain, which dependents follow, and what
// committing a re-render does to instances. Also the placement re-check after a node
// label change.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/controllers/sim_fixture.hpp"
#include "controllers/placement.hpp"
#include "controllers/propagation.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/rollout.hpp"
#include "controllers/submit.hpp"
#include "tests/controllers/cluster_builder.hpp"

namespace gaia {
namespace {

using json = nlohmann::json;
using test::applied;
using test::res;

ConfigRead config_read(const std::string& key, json value, bool defaulted = false) {
  return ConfigRead{"config", key, std::move(value), 1, defaulted};
}

AppRecord record(const std::string& tenant, const std::string& name, std::vector<ConfigRead> reads,
                 std::vector<std::string> deps = {}) {
  AppRecord a;
  a.tenant = tenant;
  a.name = name;
  a.version = "1.0.0";
  a.workload.reads = std::move(reads);
  a.workload.hash = name + "-h1";
  a.dependencies = std::move(deps);
  return a;
}

void add(ClusterState& s, AppRecord a) { s.apps[a.tenant + "/" + a.name] = std::move(a); }

ConfigSnapshot snapshot(std::map<std::string, json> values) {
  ConfigSnapshot s;
  for (auto& [k, v] : values) s.config[k] = ConfigValue{v, 5, "center:_global"};
  return s;
}

std::vector<std::string> ids(const std::vector<DirectImpact>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) out.push_back(d.tenant + "/" + d.app);
  return out;
}

}  // namespace

TEST_CASE("propagation: a read is touched by its key, a parent or a child of it", "[propagation]") {
  auto r = config_read("web.port", 80);
  CHECK(read_touches(r, {"config", "web.port"}));
  CHECK(read_touches(r, {"config", "web"}));
  CHECK(read_touches(config_read("web", json::object()), {"config", "web.port"}));
  CHECK_FALSE(read_touches(r, {"config", "web.ports"}));
  CHECK_FALSE(read_touches(r, {"config", "webx"}));
  CHECK_FALSE(read_touches(r, {"label", "web.port"}));
  ConfigRead label{"label", "node/n1/gaia.io/zone", "z1", 3, false};
  CHECK(read_touches(label, {"label", "node/n1/gaia.io/zone"}));
  CHECK_FALSE(read_touches(label, {"label", "node/n1/gaia.io"}));
  ConfigSnapshot s;
  s.labels["node"]["n1"]["gaia.io/zone"] = ConfigValue{"z2", 9, "node"};
  CHECK(read_now(label, s)->value == "z2");
  CHECK_FALSE(read_holds(label, s));
}

TEST_CASE("propagation: exactly the apps whose reads change are touched", "[propagation]") {
  ClusterState st;
  add(st, record("default", "a", {config_read("web.replicas", 3)}));            // Reads the key.
  add(st, record("default", "b", {config_read("web", {{"replicas", 3}})}));     // Reads its parent.
  add(st, record("default", "c", {config_read("db.size", 10)}));                // Unrelated.
  add(st, record("shop", "d", {config_read("web.replicas", 7)}));               // Tenant value stays 7.
  add(st, record("default", "e", {config_read("web.replicas", 0, true)}));      // Read its default.
  auto after = [](const AppRecord& a) {
    if (a.tenant == "shop") return snapshot({{"web.replicas", 7}, {"web", {{"replicas", 7}}}});
    return snapshot({{"web.replicas", 5}, {"web", {{"replicas", 5}}}});
  };
  auto impact = direct_impact(st, {{"config", "web.replicas"}}, after);
  CHECK(ids(impact) == std::vector<std::string>{"default/a", "default/b", "default/e"});
  REQUIRE(impact[0].reads.size() == 1);
  CHECK(impact[0].reads[0].now->value == 5);
  // Setting a key back to the value an app was rendered with touches nothing.
  auto same = [](const AppRecord& a) {
    return a.tenant == "shop" ? snapshot({{"web.replicas", 7}}) : snapshot({{"web.replicas", 3}, {"web", {{"replicas", 3}}}});
  };
  CHECK(ids(direct_impact(st, {{"config", "web.replicas"}}, same)) == std::vector<std::string>{"default/e"});
  // An unset makes a reader fall back to its default.
  auto unset = [](const AppRecord&) { return ConfigSnapshot{}; };
  auto gone = direct_impact(st, {{"config", "web"}}, unset);
  CHECK(ids(gone) == std::vector<std::string>{"default/a", "default/b", "shop/d"});
  CHECK_FALSE(gone[0].reads[0].now.has_value());
}

TEST_CASE("propagation: order follows the dependency chain, dependencies first", "[propagation]") {
  ClusterState st;
  add(st, record("default", "zk", {}));
  add(st, record("default", "hdfs", {}, {"zk"}));
  add(st, record("default", "hbase", {}, {"hdfs", "zk"}));
  add(st, record("default", "web", {}, {"hbase"}));
  add(st, record("default", "other", {}));
  add(st, record("shop", "hdfs", {}, {"zk"}));  // Another tenant's zk: not downstream.
  CHECK(propagation_order(st, {"default/zk"}) ==
        std::vector<std::string>{"default/zk", "default/hdfs", "default/hbase", "default/web"});
  CHECK(propagation_order(st, {"default/hbase", "default/zk"}) ==
        std::vector<std::string>{"default/zk", "default/hdfs", "default/hbase", "default/web"});
  CHECK(propagation_order(st, {"default/other"}) == std::vector<std::string>{"default/other"});
  CHECK(propagation_order(st, {"default/missing"}).empty());
}

TEST_CASE("propagation: a dependent follows only when an output it imports changed", "[propagation]") {
  std::map<std::string, std::pair<json, json>> changed = {
      {"zk", {{{"quorum", "a:1"}, {"admin", "x"}}, {{"quorum", "a:2"}, {"admin", "x"}}}},
      {"db", {{{"url", "u"}}, {{"url", "u"}, {"extra", 1}}}},
  };
  CHECK(changed_imports({{"zk", {"quorum"}}}, changed) == std::vector<std::string>{"zk.quorum"});
  CHECK(changed_imports({{"zk", {"admin"}}}, changed).empty());
  CHECK(changed_imports({{"db", {"url"}}}, changed).empty());
  CHECK(changed_imports({{"db", {"extra"}}}, changed) == std::vector<std::string>{"db.extra"});
  CHECK(changed_imports({{"other", {"quorum"}}}, changed).empty());
  CHECK(changed_imports({{"zk", {}}}, changed).empty());
}

TEST_CASE("propagation: committing re-renders rolls instances, or rehashes them in place", "[propagation]") {
  test::ClusterBuilder b;
  b.node("n1", 8000, 32);
  ClusterState st;
  st.snapshot = b.s;
  AppToDeploy web;
  web.record = record("default", "web", {config_read("web.replicas", 2)});
  Role role;
  role.name = "web";
  role.replicas = 2;
  role.resources = res(500, 1);
  web.record.workload.roles = {role};
  web.record.document = {{"spec", {{"roles", {{"web", {{"replicas", 2}}}}}}}};
  st = applied(st, plan_submit(st, {web}).batch);
  st.apps["default/web"].scale["web"] = 2;  // Kept across a re-render.

  // Roles unchanged (only the read's revision moved): instances keep running, new hash.
  Rerender same{web.record, "web-h1", "reads config web.replicas"};
  same.record.workload.hash = "web-h2";
  auto kept = plan_rerender(st, {same});
  CHECK(kept.applied == std::vector<std::string>{"default/web"});
  CHECK(kept.rolling == 0);
  CHECK(kept.batch.put_instances.size() == 2);
  auto after_same = applied(st, kept.batch);
  for (const auto& i : after_same.snapshot.instances) {
    CHECK(i.hash == "web-h2");
    CHECK(i.state == InstanceState::Running);
  }
  CHECK(after_same.find_app("default", "web")->scale.at("web") == 2);
  CHECK(test::settle_sim(after_same, ControllerContext{}).batch.empty());

  // Roles changed: the app is Updating and the rollout controller replaces instances.
  Rerender changed{web.record, "web-h2", "reads config web.replicas"};
  changed.record.workload.hash = "web-h3";
  changed.record.document = {{"spec", {{"roles", {{"web", {{"replicas", 2}, {"image", "new"}}}}}}}};
  auto rolled = plan_rerender(after_same, {changed});
  CHECK(rolled.rolling == 2);
  CHECK(rolled.batch.put_instances.empty());
  REQUIRE(rolled.batch.events.size() == 1);
  CHECK(rolled.batch.events[0].reason == "Rerendered");
  auto updating = applied(after_same, rolled.batch);
  CHECK(updating.find_app("default", "web")->status == "Updating");
  auto r = test::settle_sim(updating, ControllerContext{});
  REQUIRE(r.converged);
  for (const auto& i : r.after.snapshot.instances) CHECK(i.hash == "web-h3");
  CHECK(r.after.find_app("default", "web")->status == "Ready");

  // A re-render of a record that changed meanwhile (resubmitted) is skipped.
  auto stale = plan_rerender(r.after, {changed});
  CHECK(stale.skipped == std::vector<std::string>{"default/web"});
  CHECK(stale.batch.empty());
}

TEST_CASE("placement: a node label change moves what no longer fits, keeps pinned data", "[propagation][placement]") {
  test::ClusterBuilder b;
  b.node("n1", 8000, 32, {{"disk", "ssd"}});
  b.node("n2", 8000, 32, {{"disk", "ssd"}});
  auto& r = b.role("default", "db", "db", res(500, 1));
  r.node_selector = {{"disk", "ssd"}};
  auto& kv = b.role("default", "kv", "kv", res(500, 1));
  kv.required_affinity.push_back(AffinityTerm{AffinityTerm::Target::Node, {{"disk", "In", {"ssd"}}}, "node", 0});
  b.instance("default", "db", "db", 0, "n1");
  b.instance("default", "kv", "kv", 0, "n1");
  auto& pinned = b.instance("default", "db", "db", 1, "n1");
  pinned.volumes.push_back(VolumeBinding{"data", "n1", "disks", 1, 0});
  ClusterState st;
  st.snapshot = b.s;
  CHECK(placement_violations(st).empty());
  CHECK(placement_controller(st, {}).batch.empty());

  st.snapshot.nodes[0].labels["disk"] = "hdd";
  auto v = placement_violations(st);
  REQUIRE(v.size() == 3);
  CHECK(v[0].instance == "0.db.db.default");
  CHECK(v[0].reason.find("node_selector needs label disk=ssd, node has disk=hdd") != std::string::npos);
  CHECK(v[2].pinned);
  auto moved = placement_controller(st, {});
  REQUIRE(moved.batch.put_instances.size() == 2);
  for (const auto& i : moved.batch.put_instances) {
    CHECK(i.state == InstanceState::Pending);
    CHECK(i.node.empty());
  }
  // The scheduler puts them on n2; then nothing is left to move (the pinned one stays).
  auto next = applied(st, moved.batch);
  next = applied(next, reschedule_pending(next).batch);
  for (const auto& i : next.snapshot.instances)
    if (i.ordinal == 0) CHECK(i.node == "n2");
  CHECK(placement_controller(next, {}).batch.empty());
  CHECK(next.find_instance("1.db.db.default")->node == "n1");
}

}  // namespace gaia
