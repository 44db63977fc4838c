// The migration controller and the node decisions behind drain and node fail|recover:
// instances leave a down node without spending migrate_times, stateful ones wait for
// their volume's node (or move with --move-stateful), drains move in batches that keep
// min_available, refuse moves past migrate_times, and every reconcile is idempotent.
// Explicit moves (plan_migrate) explain refusals.
#include <catch2/catch.hpp>

#include "controllers/migrate.hpp"
#include "controllers/migration.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

ClusterState change(const ClusterState& s, const Result<NodeChange>& c) {
  REQUIRE(c);
  return apply_batch(s, c->batch);
}

int running_of(const ClusterState& s, const std::string& role) {
  return count_if_state(s, [&](const Instance& i) { return i.role == role && i.state == InstanceState::Running; });
}

int on_node(const ClusterState& s, const std::string& node) {
  return count_if_state(s, [&](const Instance& i) { return i.node == node; });
}

// Four replicas on n1 (pinned), plus empty n2 and n3.
ClusterState four_on_n1(int min_available, int migrate_times = 3) {
  ClusterState s = fixture_cluster(3);
  Role web = fixture_role("web", 4, res(500, 1));
  web.min_available = min_available;
  web.migrate_times = migrate_times;
  auto app = fixture_app("web", {web});
  add_record(s, app);
  for (int k = 0; k < 4; ++k) pin(s, "web", "web", k, "n1");
  s.apps.at("default/web").status = "Ready";
  return s;
}

TEST_CASE("migration: nothing to do on a healthy cluster", "[migration]") {
  ClusterState s = four_on_n1(0);
  CHECK(reconcile_migration(s, test_ctx()).batch.empty());
  check_idempotent(s);
}

TEST_CASE("migration: instances of a down node are re-placed without spending migrate_times", "[migration]") {
  ClusterState s = four_on_n1(3, 0);  // migrate_times 0: no user move allowed at all.
  ClusterState failed = change(s, decide_node_fail(s, "n1", false));
  auto r = reconcile_migration(failed, test_ctx());
  CHECK(events_with(r.batch, "Evicted") == 4);
  ClusterState after = settle(failed);
  CHECK(on_node(after, "n1") == 0);
  CHECK(running_of(after, "web") == 4);
  for (const auto& i : after.snapshot.instances) CHECK(i.migrations == 0);
  check_idempotent(after);
}

TEST_CASE("migration: node fail decision and its no-op repeat", "[migration]") {
  ClusterState s = four_on_n1(0);
  auto c = decide_node_fail(s, "n1", false);
  REQUIRE(c);
  CHECK(c->changed);
  REQUIRE(c->batch.put_nodes.size() == 1);
  CHECK(c->batch.put_nodes[0].state == NodeState::Down);
  CHECK(events_with(c->batch, "NodeDown") == 1);
  ClusterState down = change(s, c);
  auto again = decide_node_fail(down, "n1", false);
  REQUIRE(again);
  CHECK_FALSE(again->changed);
  CHECK(again->batch.empty());
  CHECK_FALSE(decide_node_fail(s, "nope", false));
  auto recover_healthy = decide_node_recover(s, "n1");
  REQUIRE(recover_healthy);
  CHECK_FALSE(recover_healthy->changed);
}

TEST_CASE("migration: a stateful instance waits for the node holding its volume", "[migration]") {
  ClusterState s = fixture_cluster(3);
  Role db = fixture_role("db", 1, res(500, 1));
  db.volumes.push_back(Volume{"data", 10 * kGi, "hdd", 0, "/data"});
  add_record(s, fixture_app("db", {db}));
  pin(s, "db", "db", 0, "n1");
  ClusterState failed = change(s, decide_node_fail(s, "n1", false));
  ClusterState after = settle(failed);
  const Instance* i = after.find_instance("0.db.db.default");
  REQUIRE(i);
  CHECK(i->state == InstanceState::Pending);
  CHECK(i->node.empty());
  CHECK(i->pending_reason == "waiting for node n1 (holds volume data)");
  REQUIRE(i->volumes.size() == 1);
  CHECK(i->volumes[0].node == "n1");
  // The scheduler leaves it alone: the reconcile converges and a second one is empty.
  check_idempotent(after);

  // Recovery brings it back onto its node, with its data.
  ClusterState back = settle(change(after, decide_node_recover(after, "n1")));
  const Instance* j = back.find_instance("0.db.db.default");
  CHECK(j->state == InstanceState::Running);
  CHECK(j->node == "n1");
  CHECK(j->migrations == 0);
  check_idempotent(back);
}

TEST_CASE("migration: --move-stateful drops the volume and moves the instance", "[migration]") {
  ClusterState s = fixture_cluster(3);
  Role db = fixture_role("db", 1, res(500, 1));
  db.volumes.push_back(Volume{"data", 10 * kGi, "hdd", 0, "/data"});
  add_record(s, fixture_app("db", {db}));
  pin(s, "db", "db", 0, "n1");
  auto c = decide_node_fail(s, "n1", true);
  REQUIRE(c);
  CHECK(c->dropped == std::vector<std::string>{"0.db.db.default"});
  CHECK(events_with(c->batch, "VolumeLost") == 1);
  ClusterState after = settle(change(s, c));
  const Instance* i = after.find_instance("0.db.db.default");
  CHECK(i->state == InstanceState::Running);
  CHECK(i->node != "n1");
  REQUIRE(i->volumes.size() == 1);
  CHECK(i->volumes[0].node == i->node);  // A fresh (empty) volume where it landed.
  check_idempotent(after);
}

TEST_CASE("migration: drain moves in batches that keep min_available", "[migration]") {
  ClusterState s = four_on_n1(3);
  ClusterState st = change(s, decide_drain(s, "n1"));
  CHECK(st.find_node("n1")->state == NodeState::Cordoned);
  CHECK(st.find_node("n1")->draining);
  int passes = 0;
  while (on_node(st, "n1") > 0 && passes < 10) {
    auto r = reconcile_migration(st, test_ctx());
    // Never more than running - min_available leave at once.
    int unplaced = 0;
    for (const auto& i : r.batch.put_instances)
      if (i.node.empty()) ++unplaced;
    CHECK(unplaced <= running_of(st, "web") - 3);
    ClusterState mid = apply_batch(st, r.batch);
    CHECK(running_of(mid, "web") >= 3);
    // One pass (migration, then scheduler), then the backend starts what was placed.
    st = started(reconcile(st, test_ctx(), default_controllers(), 1).after);
    CHECK(running_of(st, "web") == 4);
    ++passes;
  }
  CHECK(on_node(st, "n1") == 0);
  CHECK(passes == 4);  // One instance per pass: 4 running, min_available 3.
  ClusterState done = settle(st);
  CHECK_FALSE(done.find_node("n1")->draining);
  CHECK(done.find_node("n1")->state == NodeState::Cordoned);
  for (const auto& i : done.snapshot.instances) CHECK(i.migrations == 1);
  check_idempotent(done);
}

TEST_CASE("migration: a drain ends with a Drained event, once", "[migration]") {
  ClusterState s = four_on_n1(0);
  ClusterState st = change(s, decide_drain(s, "n1"));
  auto out = reconcile(st, test_ctx());
  REQUIRE(out.converged);
  CHECK(events_with(out.batch, "Drained") == 1);
  CHECK(events_with(out.batch, "Migrated") == 4);
  check_idempotent(out.after);
  auto again = decide_drain(out.after, "n1");
  REQUIRE(again);
  CHECK(again->changed);  // Drained and no longer draining: a new drain may start (and ends at once).
}

TEST_CASE("migration: migrate_times stops drain moves and is explained", "[migration]") {
  ClusterState s = four_on_n1(0, 1);
  for (auto& i : s.snapshot.instances)
    if (i.ordinal == 0) i.migrations = 1;
  ClusterState after = settle(change(s, decide_drain(s, "n1")));
  CHECK(after.find_instance("0.web.web.default")->node == "n1");
  CHECK(on_node(after, "n1") == 1);
  CHECK(after.find_node("n1")->draining);
  auto blockers = drain_blockers(after, "n1");
  REQUIRE(blockers.size() == 1);
  CHECK(blockers[0].instance == "0.web.web.default");
  CHECK(blockers[0].reason.find("migrate_times") != std::string::npos);
  check_idempotent(after);
  CHECK(migrate_times_refusal(s, *s.find_instance("0.web.web.default")) != "");
  CHECK(migrate_times_refusal(s, *s.find_instance("1.web.web.default")) == "");
  CHECK(after.find_instance("1.web.web.default")->migrations == 1);  // Moved once: now spent too.
}

TEST_CASE("migration: a drain leaves what fits nowhere, and says why", "[migration]") {
  ClusterState s = fixture_cluster(2);
  add_record(s, fixture_app("big", {fixture_role("big", 2, res(3000, 1))}));
  pin(s, "big", "big", 0, "n1");
  pin(s, "big", "big", 1, "n2");
  ClusterState after = settle(change(s, decide_drain(s, "n1")));
  CHECK(after.find_instance("0.big.big.default")->node == "n1");
  CHECK(after.find_instance("0.big.big.default")->state == InstanceState::Running);
  auto blockers = drain_blockers(after, "n1");
  REQUIRE(blockers.size() == 1);
  CHECK(blockers[0].reason.starts_with("fits on no other node"));
  check_idempotent(after);
}

TEST_CASE("migration: uncordoning a draining node cancels the drain", "[migration]") {
  ClusterState s = four_on_n1(4);  // min_available 4: nothing can move.
  ClusterState st = settle(change(s, decide_drain(s, "n1")));
  REQUIRE(st.find_node("n1")->draining);
  st.find_node("n1")->state = NodeState::Ready;
  auto r = reconcile_migration(st, test_ctx());
  CHECK(events_with(r.batch, "DrainCancelled") == 1);
  check_idempotent(settle(st));
}

TEST_CASE("migration: a node that fails while draining resumes the drain on recovery", "[migration]") {
  ClusterState s = four_on_n1(4);
  ClusterState st = settle(change(s, decide_drain(s, "n1")));
  st = settle(change(st, decide_node_fail(st, "n1", false)));
  CHECK(on_node(st, "n1") == 0);
  st = settle(change(st, decide_node_recover(st, "n1")));
  CHECK(st.find_node("n1")->state == NodeState::Cordoned);
  CHECK_FALSE(st.find_node("n1")->draining);  // Empty: drained.
}

TEST_CASE("migration: drain refuses a down node", "[migration]") {
  ClusterState s = four_on_n1(0);
  ClusterState down = change(s, decide_node_fail(s, "n1", false));
  auto r = decide_drain(down, "n1");
  REQUIRE_FALSE(r);
  CHECK(r.error().front().message.find("down") != std::string::npos);
}

TEST_CASE("migration: what-if reports landing nodes and writes nothing", "[migration]") {
  ClusterState s = four_on_n1(0);
  auto c = decide_drain(s, "n1");
  REQUIRE(c);
  WhatIf w = what_if(s, c->batch, test_ctx());
  REQUIRE(w.moves.size() == 4);
  for (const auto& m : w.moves) {
    CHECK(m.from == "n1");
    CHECK((m.to == "n2" || m.to == "n3"));
    CHECK(m.state == "Running");  // Where it runs once a healthy backend started it.
  }
  CHECK(s.find_node("n1")->state == NodeState::Ready);  // The input is untouched.
}

TEST_CASE("migration: what-if names preemption victims and locality", "[migration]") {
  ClusterState s = fixture_cluster(2);
  s.find_node("n1")->rack = "r1";
  s.find_node("n2")->rack = "r1";
  Role dn = fixture_role("dn", 1, res(500, 1));
  Role compute = fixture_role("c", 1, res(3000, 1));
  compute.near = "data/dn";
  Role low = fixture_role("low", 1, res(3000, 1));
  low.priority = Priority{Band::Nonprod, 100, true};
  add_record(s, fixture_app("data", {dn}));
  add_record(s, fixture_app("calc", {compute}));
  add_record(s, fixture_app("filler", {low}));
  pin(s, "data", "dn", 0, "n2");
  pin(s, "calc", "c", 0, "n1");
  pin(s, "filler", "low", 0, "n2");
  auto c = decide_drain(s, "n1");
  WhatIf w = what_if(s, c->batch, test_ctx());
  REQUIRE(w.moves.size() == 1);
  CHECK(w.moves[0].instance == "0.c.calc.default");
  CHECK(w.moves[0].to == "n2");
  CHECK(w.moves[0].locality.starts_with("same node as 0.dn.data.default"));
  REQUIRE(w.preempted.size() == 1);
  CHECK(w.preempted[0].instance == "0.low.filler.default");
  CHECK(w.preempted[0].from == "n2");
}

TEST_CASE("migrate: moves an instance and counts it", "[migration]") {
  ClusterState s = four_on_n1(0);
  auto m = plan_migrate(s, MigrateRequest{"0.web.web.default", std::nullopt, false}, 5);
  REQUIRE(m);
  CHECK(m->from == "n1");
  CHECK(m->to != "n1");
  CHECK(m->migrations == 1);
  const Instance* i = m->after.find_instance("0.web.web.default");
  CHECK(i->node == m->to);
  CHECK(i->state == InstanceState::Placed);  // The backend starts the new copy.
  CHECK(i->generation == 1);
  CHECK_FALSE(i->address.empty());
  CHECK(events_with(m->batch, "Migrated") == 1);
  check_idempotent(m->after);
}

TEST_CASE("migrate: --to a node that does not fit explains the filter", "[migration]") {
  ClusterState s = four_on_n1(0);
  s.snapshot.nodes.push_back(fixture_node("tiny", 5, 100, 1));
  auto m = plan_migrate(s, MigrateRequest{"0.web.web.default", "tiny", false}, 0);
  REQUIRE_FALSE(m);
  CHECK(m.error().front().message.find("ResourceFit") != std::string::npos);
  CHECK(m.error().front().hint.find("gaia explain") != std::string::npos);
  auto same = plan_migrate(s, MigrateRequest{"0.web.web.default", "n1", false}, 0);
  REQUIRE_FALSE(same);
  CHECK(same.error().front().message.find("already on n1") != std::string::npos);
  auto ok = plan_migrate(s, MigrateRequest{"0.web.web.default", "n3", false}, 0);
  REQUIRE(ok);
  CHECK(ok->to == "n3");
}

TEST_CASE("migrate: refuses past migrate_times unless forced", "[migration]") {
  ClusterState s = four_on_n1(0, 2);
  s.snapshot.instances[0].migrations = 2;
  auto m = plan_migrate(s, MigrateRequest{"0.web.web.default", std::nullopt, false}, 0);
  REQUIRE_FALSE(m);
  CHECK(m.error().front().message.find("migrate_times") != std::string::npos);
  auto forced = plan_migrate(s, MigrateRequest{"0.web.web.default", std::nullopt, true}, 0);
  REQUIRE(forced);
  CHECK(forced->migrations == 3);
}

TEST_CASE("migrate: a stateful instance copies its volume from a live node", "[migration]") {
  ClusterState s = fixture_cluster(2);
  Role db = fixture_role("db", 1, res(500, 1));
  db.volumes.push_back(Volume{"data", 10 * kGi, "hdd", 0, "/data"});
  add_record(s, fixture_app("db", {db}));
  pin(s, "db", "db", 0, "n1");
  auto m = plan_migrate(s, MigrateRequest{"0.db.db.default", std::nullopt, false}, 0);
  REQUIRE(m);
  CHECK(m->to == "n2");
  CHECK(m->copied_volumes == std::vector<std::string>{"data"});
  const Instance* i = m->after.find_instance("0.db.db.default");
  REQUIRE(i->volumes.size() == 1);
  CHECK(i->volumes[0].node == "n2");
}

TEST_CASE("migrate: waiting for a down node needs --force, which drops the data", "[migration]") {
  ClusterState s = fixture_cluster(2);
  Role db = fixture_role("db", 1, res(500, 1));
  db.volumes.push_back(Volume{"data", 10 * kGi, "hdd", 0, "/data"});
  add_record(s, fixture_app("db", {db}));
  pin(s, "db", "db", 0, "n1");
  ClusterState waiting = settle(change(s, decide_node_fail(s, "n1", false)));
  auto refused = plan_migrate(waiting, MigrateRequest{"0.db.db.default", std::nullopt, false}, 0);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().front().message.find("waiting for node n1") != std::string::npos);
  CHECK(refused.error().front().hint.find("--force") != std::string::npos);
  auto forced = plan_migrate(waiting, MigrateRequest{"0.db.db.default", std::nullopt, true}, 0);
  REQUIRE(forced);
  CHECK(forced->to == "n2");
  CHECK(forced->dropped_volumes == std::vector<std::string>{"data"});
  const Instance* i = forced->after.find_instance("0.db.db.default");
  REQUIRE(i->volumes.size() == 1);
  CHECK(i->volumes[0].node == "n2");
  check_idempotent(forced->after);
}

TEST_CASE("migrate: a pending instance is not moved", "[migration]") {
  ClusterState s = deploy(fixture_cluster(1, 1000), {fixture_app("web", {fixture_role("web", 2, res(1000, 1))})});
  auto m = plan_migrate(s, MigrateRequest{"1.web.web.default", std::nullopt, false}, 0);
  REQUIRE_FALSE(m);
  CHECK(m.error().front().message.find("pending") != std::string::npos);
}

}  // namespace
}  // namespace gaia
