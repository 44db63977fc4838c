// The scheduler's index kept across the apps of a submission (controllers/scheduler.hpp
// KeptIndex): plan_submit must decide exactly as when it indexes the whole cluster for
// every app, and schedule() with a kept index exactly as without.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <nlohmann/json.hpp>

#include "controllers/submit.hpp"
#include "lib/codec.hpp"
#include "tests/controllers/cluster_builder.hpp"
#include "tests/controllers/state_fixture.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

// Everything a submission decided, as text: what it writes, what it reports, and the
// state it leaves.
std::string outcome_text(const SubmitOutcome& out) {
  std::string s;
  for (const auto& i : out.batch.put_instances) s += "put " + nlohmann::json(i).dump() + "\n";
  for (const auto& k : out.batch.delete_instances) s += "delete " + k + "\n";
  for (const auto& a : out.batch.put_apps) s += "app " + nlohmann::json(a).dump() + "\n";
  for (const auto& n : out.batch.put_nodes) s += "node " + nlohmann::json(n).dump() + "\n";
  for (const auto& e : out.batch.events)
    s += fmt::format("event {} {} {} {} {}\n", e.reason, e.type, e.app, e.instance, e.message);
  for (const auto* reports : {&out.apps, &out.others})
    for (const auto& r : *reports) {
      s += fmt::format("report {} {} {} {} {} {}\n", r.name, r.action, r.status, r.instances, r.running, r.ready);
      for (const auto& p : r.placed) s += fmt::format("  placed {} {} {} {} {}\n", p.instance, p.node, p.address, p.score, p.locality);
      for (const auto& p : r.pending) s += fmt::format("  pending {} {}\n", p.instance, p.reason);
      for (const auto& p : r.preempted) s += fmt::format("  preempted {} {} {}\n", p.victim, p.node, p.preemptor);
    }
  s += fmt::format("totals {} {} {}\n", out.placed, out.pending, out.preempted);
  for (const auto& i : out.after.snapshot.instances) s += "after " + nlohmann::json(i).dump() + "\n";
  return s;
}

// What the runner does next: every placed instance runs.
ClusterState started_copies(ClusterState st) {
  for (auto& i : st.snapshot.instances)
    if (i.state == InstanceState::Placed) i.state = InstanceState::Running;
  return st;
}

// Random clusters, chains and what happens between submissions (first written by a
// review of the kept index): clusters past 100 nodes with sampling, three tenants (one
// without a record), GPUs, stateful and batch roles, the same app twice in one
// submission; evictions, failures, lowered reservations, stopping stateful copies, new
// nodes and app records gone while their instances stay.
ClusterState random_cluster() {
  ClusterState st;
  bool big = *rc::gen::inRange(0, 3) == 0;
  int nodes = big ? *rc::gen::inRange(101, 161) : *rc::gen::inRange(1, 12);
  bool gpus = *rc::gen::inRange(0, 3) == 0;
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.name = fmt::format("n{:03d}", (i * 37) % 997);  // Index order differs from name order.
    n.capacity = res(*rc::gen::inRange(1, 9) * 1000, *rc::gen::inRange(1, 17), gpus ? *rc::gen::inRange(0, 2) : 0);
    n.labels = {{"disk", *rc::gen::element<std::string>("hdd", "ssd")},
                {"zone", fmt::format("z{}", *rc::gen::inRange(0, 2))}};
    n.rack = fmt::format("r{}", *rc::gen::inRange(0, 4));
    n.address = fmt::format("10.0.{}.{}", i / 200, i % 200 + 1);
    n.instance_subnet = fmt::format("10.{}.{}.0/{}", 1 + i / 250, i % 250, *rc::gen::element(24, 29));
    n.port_min = 20000;
    n.port_max = 20000 + *rc::gen::inRange(0, 4);
    if (*rc::gen::arbitrary<bool>())
      n.volume_groups = {VolumeGroup{"vg", "ssd", *rc::gen::inRange(1, 200) * kGi, *rc::gen::inRange(0, 5000)}};
    if (*rc::gen::inRange(0, 6) == 0) n.state = NodeState::Cordoned;
    if (*rc::gen::inRange(0, 5) == 0) n.cached_images = {"img"};
    st.snapshot.nodes.push_back(std::move(n));
  }
  for (const char* name : {"t1", "t2"}) {
    Tenant t{name, {}, {}};
    if (*rc::gen::inRange(0, 3) == 0) t.quota.cpu_millis = *rc::gen::inRange(1, 40) * 1000;
    if (*rc::gen::inRange(0, 3) == 0) t.quota.instances = *rc::gen::inRange(1, 30);
    if (*rc::gen::inRange(0, 4) == 0) t.pool_selector = {{"disk", "ssd"}};
    st.snapshot.tenants.push_back(t);
  }
  // t3 has no tenant record.
  st.snapshot.profile.strategy = *rc::gen::element<std::string>("spread", "stack");
  st.snapshot.profile.percentage_of_nodes_to_score = *rc::gen::element(100, 100, 50, 20, 5);
  if (*rc::gen::arbitrary<bool>()) {
    StorageClass gold{"gold", StorageKind::Claim, "", -1, {}};
    if (*rc::gen::inRange(0, 4) != 0) gold.capacity_bytes = *rc::gen::inRange(1, 150) * kGi;
    st.snapshot.storage_classes = {StorageClass{"ssd", StorageKind::Local, "", -1, {}}, gold};
  }
  return st;
}

Role random_role(const std::string& app, const std::string& name, bool claims, bool low) {
  Role role;
  role.name = name;
  role.replicas = *rc::gen::inRange(0, 9);
  role.resources = res(*rc::gen::inRange(1, 16) * 250, *rc::gen::inRange(1, 9));
  if (*rc::gen::inRange(0, 6) == 0) role.resources.gpu = 1;
  role.priority = Priority{low ? Band::Nonprod : *rc::gen::element(Band::Nonprod, Band::Prod, Band::Sys),
                           *rc::gen::inRange(0, 3) * 100, *rc::gen::inRange(0, 5) != 0};
  if (role.priority.band != Band::Nonprod) role.priority.preemptible = true;
  if (*rc::gen::inRange(0, 3) == 0) role.min_available = *rc::gen::inRange(1, 3);
  if (*rc::gen::inRange(0, 3) == 0) role.node_selector = {{"disk", "ssd"}};
  if (*rc::gen::inRange(0, 3) == 0) {
    AffinityTerm anti;
    anti.target = AffinityTerm::Target::Instance;
    anti.match = {{"gaia.io/role", "In", {name}}, {"gaia.io/app", "In", {app}}};
    anti.topology = *rc::gen::element<std::string>("node", "rack", "zone");
    role.required_anti_affinity = {anti};
  }
  if (*rc::gen::inRange(0, 4) == 0) {
    AffinityTerm pref;
    pref.target = AffinityTerm::Target::Instance;
    pref.match = {{"gaia.io/app", "In", {app}}};
    pref.topology = "rack";
    pref.weight = *rc::gen::inRange(1, 100);
    role.preferred_affinity = {pref};
  }
  if (*rc::gen::inRange(0, 6) == 0) {
    AffinityTerm req;
    req.target = AffinityTerm::Target::Instance;
    req.match = {{"gaia.io/role", "Exists", {}}};
    req.topology = "zone";
    role.required_affinity = {req};
  }
  if (*rc::gen::inRange(0, 4) == 0) role.ports.push_back(Port{"fixed", 80, "TCP"});
  if (*rc::gen::inRange(0, 4) == 0) role.ports.push_back(Port{"dyn", 0, "TCP"});
  if (*rc::gen::inRange(0, 3) == 0)
    role.volumes = {Volume{"data", *rc::gen::inRange(1, 60) * kGi, "ssd", *rc::gen::inRange(0, 2000), "/d"}};
  if (claims && *rc::gen::inRange(0, 3) == 0)
    role.volumes.push_back(Volume{"pool", *rc::gen::inRange(1, 80) * kGi, "gold", 0, "/pool"});
  if (*rc::gen::inRange(0, 5) == 0) role.image = "img";
  if (name != "r0" && *rc::gen::inRange(0, 4) == 0) role.near = app + "/r0";
  if (*rc::gen::inRange(0, 8) == 0) role.kind = "batch";
  return role;
}

std::vector<AppToDeploy> random_chain(const ClusterState& st, const std::vector<std::string>& names, bool low) {
  std::vector<AppToDeploy> apps;
  for (size_t k = 0; k < names.size(); ++k) {
    AppToDeploy a;
    a.record.tenant = *rc::gen::element<std::string>("t1", "t1", "t2", "t3");
    a.record.name = names[k];
    a.record.version = fmt::format("1.{}", *rc::gen::inRange(0, 2));
    a.record.workload.app = a.record.name;
    a.record.workload.version = a.record.version;
    a.record.workload.tenant = a.record.tenant;
    int roles = *rc::gen::inRange(1, 4);
    for (int r = 0; r < roles; ++r)
      a.record.workload.roles.push_back(
          random_role(a.record.name, fmt::format("r{}", r), !st.snapshot.storage_classes.empty(), low));
    for (size_t d = 0; d < k; ++d)
      if (*rc::gen::inRange(0, 3) == 0) a.record.dependencies.push_back(names[d]);
    a.record.workload.hash = fmt::format("h{}", *rc::gen::inRange(0, 3));
    apps.push_back(std::move(a));
  }
  return apps;
}

// What time does between submissions: copies start, some are evicted or fail, some
// reservations are lowered, now and then a node comes or goes.
ClusterState time_passes(ClusterState st) {
  for (auto& i : st.snapshot.instances) {
    if (i.state == InstanceState::Placed) i.state = InstanceState::Running;
    if (i.state != InstanceState::Running) continue;
    int roll = *rc::gen::inRange(0, 12);
    if (roll == 0) {
      // Evicted: pending again (a stateful one keeps its volumes and goes back there).
      i.node.clear();
      i.address.clear();
      i.ports.clear();
      i.state = InstanceState::Pending;
      i.pending_reason = "preempted by someone";
    } else if (roll == 1) {
      i.state = InstanceState::Failed;
      i.node.clear();
    } else if (roll == 2) {
      Resources r = i.request;
      r.cpu_millis /= 2;
      r.memory_bytes /= 2;
      i.reservation = r;
    } else if (roll == 3 && !i.volumes.empty()) {
      i.state = InstanceState::Terminating;
    }
  }
  // Now and then an app record (and its role specs) goes while its instances stay.
  if (!st.apps.empty() && *rc::gen::inRange(0, 3) == 0) {
    auto it = std::next(st.apps.begin(), *rc::gen::inRange(0, static_cast<int>(st.apps.size())));
    std::string prefix = it->first + "/";
    st.apps.erase(it);
    if (*rc::gen::arbitrary<bool>()) std::erase_if(st.snapshot.roles, [&](const auto& kv) { return kv.first.starts_with(prefix); });
  }
  if (*rc::gen::inRange(0, 4) == 0) {
    Node n;
    n.name = fmt::format("m{}", st.snapshot.nodes.size());
    n.capacity = res(*rc::gen::inRange(1, 9) * 1000, *rc::gen::inRange(1, 17));
    n.address = fmt::format("10.9.0.{}", st.snapshot.nodes.size() % 250 + 1);
    n.instance_subnet = fmt::format("10.9.{}.0/24", st.snapshot.nodes.size() % 250);
    n.volume_groups = {VolumeGroup{"vg", "ssd", 100 * kGi, 1000}};
    st.snapshot.nodes.push_back(std::move(n));
  }
  return st;
}

// One random history, decided with the index kept across apps and afresh per call:
// nonprod work first, then chains that may preempt it, then updates of the first apps,
// with what time does between submissions.
void decides_as_fresh() {
  ScheduleTuning fresh;
  fresh.keep_index = false;
  ClusterState st = random_cluster();
  std::vector<std::string> first = {"b0", "b1", "b2", "b3", "b4"};
  first.resize(static_cast<size_t>(*rc::gen::inRange(1, 5)));
  for (int step = 0; step < 4; ++step) {
    std::vector<std::string> names = step == 1 ? std::vector<std::string>{"a0", "a1", "a2"} : first;
    if (step == 3) names.push_back("c0");
    std::vector<AppToDeploy> chain = random_chain(st, names, step == 0);
    if (*rc::gen::inRange(0, 4) == 0 && chain.size() > 1) chain.push_back(chain[0]);  // Same app twice.
    SubmitOutcome kept = plan_submit(st, chain);
    SubmitOutcome each = plan_submit(st, chain, fresh);
    RC_ASSERT(outcome_text(kept) == outcome_text(each));
    if (step == 2) RC_CLASSIFY(kept.preempted > 0, "preempted");
    if (step == 2) RC_CLASSIFY(st.snapshot.nodes.size() > 100 && st.snapshot.profile.percentage_of_nodes_to_score < 100, "sampled");
    st = time_passes(std::move(kept.after));
    SubmitOutcome rk = reschedule_pending(st);
    SubmitOutcome re = reschedule_pending(st, fresh);
    RC_ASSERT(outcome_text(rk) == outcome_text(re));
    if (*rc::gen::arbitrary<bool>()) st = time_passes(std::move(rk.after));
  }
}

}  // namespace

TEST_CASE("property: plan_submit and reschedule_pending decide the same with the index kept across apps",
          "[submit][kept-index]") {
  // A stale index shows only in some shapes (a stateful victim that keeps its node, keys
  // out of order): 500 cases, five checks of 100, a few seconds.
  for (int round = 0; round < 5; ++round) REQUIRE(rc::check("same outcome", decides_as_fresh));
}

TEST_CASE("schedule() with a kept index: an eviction makes the next call index afresh", "[scheduler][kept-index]") {
  ClusterBuilder b;
  b.node("n0", 4000, 16);
  b.role("t1", "batch", "job", res(2000, 2), Priority{Band::Nonprod, 0});
  b.role("t1", "shop", "web", res(3000, 2), Priority{Band::Prod, 100});
  b.instance("t1", "batch", "job", 0, "n0");
  b.instance("t1", "batch", "job", 1, "n0");
  b.instance("t1", "shop", "web", 0);
  KeptIndex kept;
  Decision first = schedule(b.s, {"0.web.shop.t1"}, {}, kept);
  REQUIRE(first.preemptions.size() == 2);
  apply_decision(b.s, first);
  b.instance("t1", "shop", "web", 1);
  Decision second = schedule(b.s, {"1.web.shop.t1"}, {}, kept);
  CHECK(kept.reused() == 0);
  CHECK(decision_text(second) == decision_text(schedule(b.s, {"1.web.shop.t1"})));
}

TEST_CASE("schedule() with a kept index: the next call indexes only the new instances", "[scheduler][kept-index]") {
  ClusterBuilder b;
  for (int n = 0; n < 4; ++n) b.node(fmt::format("n{}", n), 4000, 16, {{"rack", fmt::format("r{}", n % 2)}});
  b.role("t1", "a", "web", res(1000, 2));
  for (int k = 0; k < 3; ++k) b.instance("t1", "a", "web", k);
  Snapshot s = b.s;
  KeptIndex kept;
  Decision first = schedule(s, b.pending(), {}, kept);
  REQUIRE(first.placements.size() == 3);
  REQUIRE(kept.reused() == 0);
  apply_decision(s, first);

  // A second app arrives at the end of the list, in a copy of the snapshot elsewhere in
  // memory (as plan_submit's working state grows and moves).
  Snapshot grown = s;
  ClusterBuilder more;
  more.s = grown;
  more.role("t1", "b", "db", res(2000, 4));
  for (int k = 0; k < 4; ++k) more.instance("t1", "b", "db", k);
  grown = more.s;
  s = Snapshot{};  // The old snapshot is gone: the index must not read it.
  std::vector<std::string> keys;
  for (int k = 0; k < 4; ++k) keys.push_back(fmt::format("{}.db.b.t1", k));
  Decision second = schedule(grown, keys, {}, kept);
  CHECK(kept.reused() == 1);
  CHECK(decision_text(second) == decision_text(schedule(grown, keys)));
  REQUIRE(second.placements.size() == 4);

  SECTION("an instance placed but not applied as decided: the index is built again") {
    apply_decision(grown, second);
    Instance* moved = find_instance(grown, "0.db.b.t1");
    moved->node = moved->node == "n3" ? "n2" : "n3";
    ClusterBuilder late;
    late.s = grown;
    late.instance("t1", "a", "web", 3);
    Decision third = schedule(late.s, {"3.web.a.t1"}, {}, kept);
    CHECK(kept.reused() == 1);
    CHECK(decision_text(third) == decision_text(schedule(late.s, {"3.web.a.t1"})));
  }
  SECTION("a node that went: the index is built again") {
    apply_decision(grown, second);
    grown.nodes.pop_back();
    Decision third = schedule(grown, {}, {}, kept);
    CHECK(kept.reused() == 1);
    CHECK(third.placements.empty());
  }
  SECTION("applied as decided: reused again, with every node's use counted") {
    apply_decision(grown, second);
    ClusterBuilder late;
    late.s = grown;
    late.role("t1", "c", "big", res(4000, 16));
    for (int k = 0; k < 3; ++k) late.instance("t1", "c", "big", k);
    std::vector<std::string> big = {"0.big.c.t1", "1.big.c.t1", "2.big.c.t1"};
    Decision third = schedule(late.s, big, {}, kept);
    CHECK(kept.reused() == 2);
    CHECK(decision_text(third) == decision_text(schedule(late.s, big)));
    // 7 instances of 1-2 cores on 4 nodes of 4: no node is empty, so no 4-core instance fits.
    CHECK(third.placements.empty());
  }
}

TEST_CASE("schedule() with a kept index: instances that arrive already on a node count in the node order",
          "[scheduler][kept-index]") {
  ClusterBuilder b;
  for (int n = 0; n < 4; ++n) b.node(fmt::format("n{}", n), 4000, 16);
  // Stack: the most used node that fits wins, so a node the order still files as empty
  // would be passed over.
  b.s.profile.strategy = "stack";
  b.role("t1", "a", "web", res(500, 1));
  for (int k = 0; k < 2; ++k) b.instance("t1", "a", "web", k);
  KeptIndex kept;
  Decision first = schedule(b.s, b.pending(), {}, kept);
  REQUIRE(first.placements.size() == 2);
  apply_decision(b.s, first);
  // Short runs of plain instances take the bounded search over nodes kept in order of
  // their use: the two that arrive running must move their nodes in that order.
  b.role("t1", "b", "big", res(3500, 12));
  b.instance("t1", "b", "big", 0, "n2");
  b.instance("t1", "b", "big", 1, "n3");
  b.role("t1", "c", "api", res(500, 1));
  for (int k = 0; k < 2; ++k) b.instance("t1", "c", "api", k);
  std::vector<std::string> keys = {"0.api.c.t1", "1.api.c.t1"};
  Decision second = schedule(b.s, keys, {}, kept);
  CHECK(kept.reused() == 1);
  CHECK(decision_text(second) == decision_text(schedule(b.s, keys)));
  for (const auto& p : second.placements) CHECK((p.node == "n2" || p.node == "n3"));
}

TEST_CASE("plan_submit: a dependency in another tenant counts as placed", "[submit][kept-index]") {
  ClusterState st;
  st.snapshot.nodes.push_back(fixture_node("n0", 0, 8000, 32));
  SubmitOutcome db = plan_submit(st, {fixture_app("db", {fixture_role("server", 1, res(1000, 1))}, {}, "platform")});
  REQUIRE(db.placed == 1);
  st = started_copies(std::move(db.after));
  SubmitOutcome web = plan_submit(st, {fixture_app("web", {fixture_role("w", 1, res(1000, 1))}, {"platform/db"}, "t1")});
  CHECK(web.placed == 1);
  CHECK(web.pending == 0);
}

TEST_CASE("reschedule_pending with two instances of one key decides as with a fresh index", "[submit][kept-index]") {
  ClusterState st;
  st.snapshot.nodes.push_back(fixture_node("n0", 0, 4000, 16));
  auto inst = [](std::string app, std::string role, Resources r, std::string node) {
    Instance i;
    i.tenant = "t1";
    i.app = app;
    i.role = role;
    i.request = r;
    i.labels = {{"gaia.io/app", app}, {"gaia.io/role", role}};
    i.node = node;
    i.state = node.empty() ? InstanceState::Pending : InstanceState::Running;
    return i;
  };
  // "0.x.y.z.t1" twice: role x of app y.z (pending, too big) before role x.y of app z
  // (running), so the key finds the running one when the pending one cannot be placed.
  st.snapshot.instances.push_back(inst("y.z", "x", res(3000, 1), ""));
  st.snapshot.instances.push_back(inst("z", "x.y", res(3000, 1), "n0"));
  st.snapshot.instances.push_back(inst("d", "r", res(500, 1), ""));
  st.snapshot.instances.push_back(inst("w", "r", res(1000, 1), ""));
  for (auto [name, deps] : {std::pair<std::string, std::vector<std::string>>{"d", {}}, {"w", {"d"}}}) {
    AppRecord a = fixture_app(name, {fixture_role("r", 1, res(name == "d" ? 500 : 1000, 1))}, deps, "t1").record;
    st.apps["t1/" + name] = a;
    st.snapshot.roles["t1/" + name + "/r"] = a.workload.roles[0];
  }
  ScheduleTuning fresh;
  fresh.keep_index = false;
  CHECK(outcome_text(reschedule_pending(st)) == outcome_text(reschedule_pending(st, fresh)));
}

TEST_CASE("schedule() with a kept index: new instances ordered before ones it had are found", "[scheduler][kept-index]") {
  ClusterBuilder b;
  b.node("n0", 8000, 32);
  b.role("t1", "a", "web", res(1000, 1));
  b.instance("t1", "a", "web", 5, "n0");
  KeptIndex kept;
  schedule(b.s, {}, {}, kept);
  b.instance("t1", "a", "web", 0);
  b.instance("t1", "a", "web", 1);
  std::vector<std::string> keys = {"0.web.a.t1", "1.web.a.t1"};
  Decision d = schedule(b.s, keys, {}, kept);
  CHECK(kept.reused() == 1);
  CHECK(d.placements.size() == 2);
  CHECK(decision_text(d) == decision_text(schedule(b.s, keys)));
}

TEST_CASE("plan_submit of an app whose role has a leftover instance decides as with a fresh index",
          "[submit][kept-index]") {
  ClusterState st;
  st.snapshot.nodes.push_back(fixture_node("n0", 0, 8000, 32));
  // An instance of t1/shop/web with no app record (ordinal 3), left in the state.
  Instance o;
  o.tenant = "t1";
  o.app = "shop";
  o.role = "web";
  o.ordinal = 3;
  o.request = res(500, 1);
  o.labels = {{"gaia.io/app", "shop"}, {"gaia.io/role", "web"}};
  st.snapshot.instances.push_back(o);
  std::vector<AppToDeploy> apps = {fixture_app("first", {fixture_role("r", 1, res(500, 1))}, {}, "t1"),
                                   fixture_app("shop", {fixture_role("web", 2, res(500, 1))}, {}, "t1")};
  ScheduleTuning fresh;
  fresh.keep_index = false;
  SubmitOutcome kept = plan_submit(st, apps);
  CHECK(kept.apps[1].placed.size() == 2);
  CHECK(outcome_text(kept) == outcome_text(plan_submit(st, apps, fresh)));
}

namespace {

// A stream of submissions planned by one SubmitPlanner, each on the state the last one
// left (with the old states given back now and then, so working copies are assigned
// over them), decides byte for byte as plan_submit; after what time does between
// submissions, the planner is told to start over with plan().
void planner_decides_as_plan_submit() {
  ClusterState st = random_cluster();
  SubmitPlanner planner;
  bool continues = false;
  std::vector<std::string> first = {"b0", "b1", "b2", "b3"};
  first.resize(static_cast<size_t>(*rc::gen::inRange(1, 4)));
  for (int step = 0; step < 6; ++step) {
    std::vector<std::string> names;
    if (step % 3 == 0) names = first;  // Again later: an update of the same apps.
    else names = {fmt::format("s{}a", step), fmt::format("s{}b", step)};
    std::vector<AppToDeploy> chain = random_chain(st, names, step == 0);
    SubmitOutcome expected = plan_submit(st, chain);
    SubmitOutcome got = continues ? planner.plan_next(st, chain) : planner.plan(st, chain);
    RC_ASSERT(outcome_text(got) == outcome_text(expected));
    RC_CLASSIFY(continues, "continued");
    ClusterState old = std::move(st);
    st = std::move(got.after);
    if (*rc::gen::arbitrary<bool>()) planner.give_back(std::move(old));
    continues = true;
    if (*rc::gen::inRange(0, 4) == 0) {
      st = time_passes(std::move(st));
      continues = false;
    }
  }
}

}  // namespace

TEST_CASE("property: SubmitPlanner decides as plan_submit on the state each submission leaves",
          "[submit][kept-index][planner]") {
  REQUIRE(rc::check("same outcome", planner_decides_as_plan_submit));
}

TEST_CASE("SubmitPlanner: plan_next refuses a state that is not its last outcome's", "[submit][planner]") {
  ClusterState st;
  for (int n = 0; n < 3; ++n) st.snapshot.nodes.push_back(fixture_node(fmt::format("n{}", n), n, 8000, 32));
  SubmitPlanner planner;
  std::vector<AppToDeploy> web = {fixture_app("web", {fixture_role("fe", 2, res(500, 1))})};
  std::vector<AppToDeploy> db = {fixture_app("db", {fixture_role("data", 2, res(500, 1))})};
  CHECK_THROWS_AS(planner.plan_next(st, web), std::logic_error);  // Nothing planned yet.
  SubmitOutcome a = planner.plan(st, web);
  // A copy of the right state is another state: what was kept may not hold for it.
  ClusterState copy = a.after;
  CHECK_THROWS_AS(planner.plan_next(copy, db), std::logic_error);
  // Changed in a way that shows (another submission's instances): refused too.
  ClusterState& after = a.after;
  after.snapshot.instances.pop_back();
  CHECK_THROWS_AS(planner.plan_next(after, db), std::logic_error);
  after.snapshot.instances.push_back(copy.snapshot.instances.back());
  // The state itself, only its revisions stamped: accepted, and as plan_submit decides.
  after.stamp_commit(42);
  SubmitOutcome b = planner.plan_next(after, db);
  CHECK(b.placed == 2);
  CHECK(outcome_text(b) == outcome_text(plan_submit(after, db)));
}
