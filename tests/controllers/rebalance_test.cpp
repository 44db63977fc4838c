// plan_rebalance: bounded moves that make a pending large instance fit, packing of
// lightly used nodes, the --max-moves and --target bounds, migrate_times and
// min_available respected, a fragmented cluster lifted to what a fresh packing achieves;
// and the rebalance controller: its budget per period, nothing between periods, and
// min_available across periods.
#include <catch2/catch.hpp>

#include <set>

#include "controllers/controller_options.hpp"
#include "controllers/rebalance.hpp"
#include "controllers/scheduler.hpp"
#include "tests/controllers/sim_fixture.hpp"
#include "tests/controllers/state_fixture.hpp"

namespace gaia {
namespace {

using namespace test;

// n1: three 1-core instances (1 core free); n2: one (3 free); a pending 4-core instance
// fits nowhere until the small one leaves n2 (it fits on n1).
ClusterState fragmented() {
  ClusterState s = fixture_cluster(2);
  add_record(s, fixture_app("small", {fixture_role("s", 4, res(1000, 1))}));
  add_record(s, fixture_app("big", {fixture_role("b", 1, res(4000, 1))}));
  for (int k = 0; k < 3; ++k) pin(s, "small", "s", k, "n1");
  pin(s, "small", "s", 3, "n2");
  Instance big = new_instance("default", "big", "1.0.0", s.snapshot.roles.at("default/big/b"), 0);
  big.pending_reason = "0/2 nodes fit";
  s.snapshot.instances.push_back(big);
  return s;
}

TEST_CASE("rebalance: one move makes a pending large instance fit", "[rebalance]") {
  ClusterState s = fragmented();
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  REQUIRE(p.moves.size() == 1);
  CHECK(p.moves[0].instance == "3.s.small.default");
  CHECK(p.moves[0].from == "n2");
  CHECK(p.moves[0].to == "n1");
  REQUIRE(p.fits.size() == 1);
  CHECK(p.fits[0].instance == "0.b.big.default");
  CHECK(p.fits[0].node == "n2");
  CHECK(p.after.find_instance("3.s.small.default")->migrations == 1);
  // Committing the plan and running the controllers places the big instance.
  ClusterState after = settle(p.after);
  const Instance* big = after.find_instance("0.b.big.default");
  CHECK(big->state == InstanceState::Running);
  CHECK(big->node == "n2");
  check_idempotent(after);
}

TEST_CASE("rebalance: --max-moves bounds the plan", "[rebalance]") {
  ClusterState s = fragmented();
  RebalancePlan none = plan_rebalance(s, RebalanceOptions{0, 20}, 0);
  CHECK(none.moves.empty());
  CHECK(none.batch.empty());
}

TEST_CASE("rebalance: instances past migrate_times are not moved", "[rebalance]") {
  ClusterState s = fragmented();
  s.find_instance("3.s.small.default")->migrations = 3;  // The role's default migrate_times.
  // The one-move plan is gone; moving the three from n1 to n2 is the way left.
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  CHECK(p.moves.size() == 3);
  for (const auto& m : p.moves) CHECK(m.instance != "3.s.small.default");
  REQUIRE(p.fits.size() == 1);
  CHECK(p.fits[0].node == "n1");
  // With only two moves allowed nothing helps, and the plan says so.
  RebalancePlan two = plan_rebalance(s, RebalanceOptions{2, 20}, 0);
  CHECK(two.fits.empty());
  REQUIRE_FALSE(two.notes.empty());
  CHECK(two.notes[0].find("0.b.big.default still fits nowhere") != std::string::npos);
}

TEST_CASE("rebalance: defragmentation empties lightly used nodes", "[rebalance]") {
  ClusterState s = fixture_cluster(4);
  add_record(s, fixture_app("web", {fixture_role("w", 4, res(500, 1))}));
  for (int k = 0; k < 4; ++k) pin(s, "web", "w", k, fmt::format("n{}", k + 1));
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  CHECK(p.nodes_in_use_before == 4);
  CHECK(p.nodes_in_use_after == 1);
  CHECK(p.moves.size() == 3);
  CHECK(p.emptied.size() == 3);
  CHECK(p.allocation_after > p.allocation_before);
  for (const auto& m : p.moves) CHECK(m.purpose.starts_with("defragment"));
  // Nothing moved twice.
  std::set<std::string> moved;
  for (const auto& m : p.moves) CHECK(moved.insert(m.instance).second);
  check_idempotent(p.after);
  // A second plan on the packed cluster has nothing to do.
  CHECK(plan_rebalance(p.after, RebalanceOptions{}, 0).moves.empty());
}

TEST_CASE("rebalance: defragmentation stops at max-moves", "[rebalance]") {
  ClusterState s = fixture_cluster(4);
  add_record(s, fixture_app("web", {fixture_role("w", 4, res(500, 1))}));
  for (int k = 0; k < 4; ++k) pin(s, "web", "w", k, fmt::format("n{}", k + 1));
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{1, 20}, 0);
  CHECK(p.moves.size() == 1);
  CHECK(p.nodes_in_use_after == 3);
}

TEST_CASE("rebalance: allocation rate counts ready nodes in use", "[rebalance]") {
  ClusterState s = fixture_cluster(2);
  add_record(s, fixture_app("web", {fixture_role("w", 1, res(2000, 8))}));
  pin(s, "web", "w", 0, "n1");
  auto [rate, in_use] = allocation_rate(s);
  CHECK(in_use == 1);
  CHECK(rate == Approx(50.0));  // Half of n1's cpu and half of its memory.
}

// Eight nodes of 4 cores and 16 GiB under a packing profile (most allocated, no
// even-spread score), each half used by two of the sixteen 1-core, 4-GiB instances of
// web/w: a fresh packing needs four nodes.
ClusterState half_used(int min_available = 0) {
  ClusterState s = fixture_cluster(8);
  s.snapshot.profile.strategy = "stack";
  s.snapshot.profile.w_spread = 0;
  Role w = fixture_role("w", 16, res(1000, 4));
  w.min_available = min_available;
  add_record(s, fixture_app("web", {w}));
  for (int k = 0; k < 16; ++k) pin(s, "web", "w", k, fmt::format("n{}", k / 2 + 1));
  return s;
}

// The allocation rate of the same instances scheduled from scratch on the same nodes.
double fresh_packing_rate(const ClusterState& s) {
  ClusterState fresh = s;
  for (auto& i : fresh.snapshot.instances) {
    i.node.clear();
    i.address.clear();
    i.state = InstanceState::Pending;
  }
  Decision d = schedule(fresh.snapshot);
  REQUIRE(d.unschedulable.empty());
  for (const auto& p : d.placements) {
    Instance* i = fresh.find_instance(p.instance);
    i->node = p.node;
    i->state = InstanceState::Running;
  }
  return allocation_rate(fresh).first;
}

int running_in_role(const ClusterState& s, const std::string& role) {
  int n = 0;
  for (const auto& i : s.snapshot.instances)
    if (i.role == role && i.state == InstanceState::Running) ++n;
  return n;
}

size_t rebalance_events(const Batch& b, const std::string& reason) {
  return static_cast<size_t>(
      std::count_if(b.events.begin(), b.events.end(), [&](const TimelineEvent& e) { return e.reason == reason; }));
}

TEST_CASE("rebalance: a fragmented cluster reaches what a fresh packing achieves", "[rebalance]") {
  ClusterState s = half_used();
  double fresh = fresh_packing_rate(s);
  CHECK(fresh == Approx(100.0));  // Four full nodes.
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{100, 20}, 0);
  CHECK(p.allocation_before == Approx(50.0));
  CHECK(p.nodes_in_use_before == 8);
  CHECK(p.allocation_after >= 0.9 * fresh);
  CHECK(p.allocation_after == Approx(100.0));
  CHECK(p.nodes_in_use_after == 4);
  CHECK(p.moves.size() == 8);
  CHECK(p.emptied.size() == 4);
  CHECK(p.schedules <= 3);
  std::set<std::string> moved;
  for (const auto& m : p.moves) CHECK(moved.insert(m.instance).second);
  check_idempotent(p.after);
}

TEST_CASE("rebalance: --target stops once the nodes in use are that allocated", "[rebalance]") {
  ClusterState s = half_used();
  RebalanceOptions o{100, 20};
  o.target_pct = 75;
  RebalancePlan p = plan_rebalance(s, o, 0);
  // Three nodes emptied: 16 cores on five nodes of 4, 80%; two would give 66.7%.
  CHECK(p.moves.size() == 6);
  CHECK(p.nodes_in_use_after == 5);
  CHECK(p.allocation_after == Approx(80.0));
  CHECK(p.stopped.starts_with("target reached"));
  // Already there: nothing to do.
  o.target_pct = 50;
  RebalancePlan none = plan_rebalance(s, o, 0);
  CHECK(none.moves.empty());
  CHECK(none.stopped.starts_with("target reached"));
}

TEST_CASE("rebalance: a plan never takes a role below min_available", "[rebalance]") {
  // 16 running, min_available 13: three may leave at once, so one node of two.
  ClusterState s = half_used(13);
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{100, 20}, 0);
  CHECK(p.moves.size() == 2);
  CHECK(p.emptied.size() == 1);
  // The moved instances run again only once the backend starts them.
  CHECK(running_in_role(p.after, "w") == 14);
  // With none to spare nothing moves.
  ClusterState tight = half_used(16);
  CHECK(plan_rebalance(tight, RebalanceOptions{100, 20}, 0).moves.empty());
}

TEST_CASE("rebalance: a node holding an instance whose migrate_times is spent is not emptied", "[rebalance]") {
  ClusterState s = fixture_cluster(4);
  add_record(s, fixture_app("web", {fixture_role("w", 4, res(500, 1))}));
  for (int k = 0; k < 4; ++k) pin(s, "web", "w", k, fmt::format("n{}", k + 1));
  s.find_instance("0.w.web.default")->migrations = 3;  // The role's default migrate_times.
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  CHECK(p.moves.size() == 3);
  for (const auto& m : p.moves) {
    CHECK(m.instance != "0.w.web.default");
    CHECK(m.to == "n1");  // The others join it.
  }
  CHECK(p.after.find_instance("0.w.web.default")->node == "n1");
  CHECK(p.nodes_in_use_after == 1);
  // Each moved instance counted one migration.
  for (const auto& m : p.moves) CHECK(p.after.find_instance(m.instance)->migrations == 1);
}

TEST_CASE("rebalance controller: off by default, then at most the budget per period", "[rebalance][controller]") {
  ClusterState s = half_used();
  ControllerContext ctx = test_ctx();
  CHECK(rebalance_controller(s, ctx).batch.empty());
  ctx.options.rebalance_budget = 3;
  ctx.options.periodic = true;
  ctx.options.rebalance_period_ms = 60'000;
  double fresh = fresh_packing_rate(s);
  int periods = 0;
  size_t moves = 0;
  for (; periods < 10; ++periods) {
    ControllerResult r = rebalance_controller(s, ctx);
    size_t moved = rebalance_events(r.batch, "Migrated");
    CHECK(moved <= 3);
    REQUIRE(r.batch.put_settings.count(k_rebalance_setting) == 1);
    CHECK(rebalance_events(r.batch, "Rebalanced") == (moved > 0 ? 1u : 0u));
    s = started(apply_batch(s, r.batch), ctx.now_ms);
    // Between periods: nothing.
    ControllerContext soon = ctx;
    soon.now_ms += 30'000;
    ControllerResult idle = rebalance_controller(s, soon);
    CHECK(idle.batch.empty());
    ctx.now_ms += 60'000;
    if (moved == 0) break;
    moves += moved;
  }
  // Eight moves at three per period: three periods, then one that finds nothing to do.
  CHECK(periods == 3);
  CHECK(moves == 8);
  auto [rate, in_use] = allocation_rate(s);
  CHECK(in_use == 4);
  CHECK(rate >= 0.9 * fresh);
}

TEST_CASE("rebalance controller: the summary event says before and after", "[rebalance][controller]") {
  ClusterState s = half_used();
  ControllerContext ctx = test_ctx();
  ctx.options.rebalance_budget = 100;
  ctx.options.periodic = true;
  ControllerResult r = rebalance_controller(s, ctx);
  const TimelineEvent* summary = nullptr;
  for (const auto& e : r.batch.events)
    if (e.reason == "Rebalanced") summary = &e;
  REQUIRE(summary);
  CHECK(summary->message.find("moved 8 instance(s)") != std::string::npos);
  CHECK(summary->message.find("allocation of nodes in use 50.0% on 8 node(s) -> 100.0% on 4 node(s)") !=
        std::string::npos);
  const auto& rec = r.batch.put_settings.at(k_rebalance_setting);
  CHECK(rec.at("last_run_ms") == ctx.now_ms);
  CHECK(rec.at("moves") == 8);
}

TEST_CASE("rebalance controller: min_available holds across periods until moved instances run", "[rebalance][controller]") {
  // 16 running, min_available 15: one instance may be away at a time.
  ClusterState s = half_used(15);
  ControllerContext ctx = test_ctx();
  ctx.options.rebalance_budget = 10;
  ctx.options.periodic = true;
  ctx.options.rebalance_period_ms = 1000;
  ControllerResult first = rebalance_controller(s, ctx);
  CHECK(rebalance_events(first.batch, "Migrated") == 1);  // Partial: one of n1's two.
  s = apply_batch(s, first.batch);
  CHECK(running_in_role(s, "w") == 15);
  // The backend has not started it yet: the next period moves nothing.
  ctx.now_ms += 1000;
  ControllerResult blocked = rebalance_controller(s, ctx);
  CHECK(rebalance_events(blocked.batch, "Migrated") == 0);
  s = apply_batch(s, blocked.batch);
  // Once it runs, the next one goes, and n1 is empty.
  s = started(s, ctx.now_ms);
  ctx.now_ms += 1000;
  ControllerResult second = rebalance_controller(s, ctx);
  CHECK(rebalance_events(second.batch, "Migrated") == 1);
  s = apply_batch(s, second.batch);
  CHECK(running_in_role(s, "w") == 15);
  int on_n1 = 0;
  for (const auto& i : s.snapshot.instances)
    if (i.node == "n1") ++on_n1;
  CHECK(on_n1 == 0);
}

TEST_CASE("rebalance controller: in the controller loop, converged and idempotent", "[rebalance][controller]") {
  ClusterState s = half_used();
  ControllerContext ctx = test_ctx();
  ctx.options.rebalance_budget = 100;
  ctx.options.periodic = true;
  auto first = settle_sim(s, ctx);
  REQUIRE(first.converged);
  CHECK(std::find(first.active.begin(), first.active.end(), "rebalance") != first.active.end());
  CHECK(allocation_rate(first.after).second == 4);
  for (const auto& i : first.after.snapshot.instances) CHECK(i.state == InstanceState::Running);
  // Again at the same time: the period has not passed, nothing to do.
  auto again = settle_sim(first.after, ctx);
  CHECK(again.batch.empty());
  CHECK(again.wake_at_ms == 0);  // Nothing else pending: a `--wait` sees it settled.
}

TEST_CASE("rebalance controller: its options are kept with the others", "[rebalance][options]") {
  ClusterState s;
  ControllerOptions o;
  o.rebalance_budget = 20;
  o.rebalance_period_ms = 120'000;
  o.rebalance_target_pct = 90;
  s.settings[k_controller_options_setting] = controller_options_json(o);
  ControllerOptions back = stored_controller_options(s);
  CHECK(back.rebalance_budget == 20);
  CHECK(back.rebalance_period_ms == 120'000);
  CHECK(back.rebalance_target_pct == 90);
  CHECK(ControllerOptions{}.rebalance_budget == 0);  // Off unless asked for.
}

}  // namespace
}  // namespace gaia

namespace gaia {
namespace {

TEST_CASE("rebalance: higher-priority work is not moved to make room for lower", "[rebalance]") {
  ClusterState s = fragmented();
  for (auto& i : s.snapshot.instances) {
    i.priority.band = i.app == "small" ? Band::Prod : Band::Nonprod;
    i.priority.level = 100;
  }
  RebalancePlan p = plan_rebalance(s, RebalanceOptions{}, 0);
  CHECK(p.fits.empty());
  for (const auto& m : p.moves) CHECK_FALSE(m.purpose.starts_with("make room"));
}

TEST_CASE("rebalance controller: never moves data, nor what just started", "[rebalance][controller]") {
  ControllerContext ctx = test_ctx();
  ctx.options.rebalance_budget = 100;
  ctx.options.periodic = true;
  ctx.options.rebalance_period_ms = 60'000;
  SECTION("instances with volumes on their node stay") {
    ClusterState s = half_used();
    for (auto& i : s.snapshot.instances) i.volumes.push_back(VolumeBinding{"data", i.node, "vg0", 1 << 20, 0});
    CHECK(rebalance_events(rebalance_controller(s, ctx).batch, "Migrated") == 0);
    // The command, asked by name, still may (its moves copy the data).
    CHECK_FALSE(plan_rebalance(s, RebalanceOptions{100, 20}, ctx.now_ms).moves.empty());
  }
  SECTION("instances moved and started within a period stay, so a user's migrate is not undone") {
    ClusterState s = half_used();
    for (auto& i : s.snapshot.instances) i.started_ms = ctx.now_ms - 30'000;
    // Placed there first, not moved: they may move.
    CHECK(rebalance_events(rebalance_controller(s, ctx).batch, "Migrated") > 0);
    for (auto& i : s.snapshot.instances) i.migrations = 1;
    CHECK(rebalance_events(rebalance_controller(s, ctx).batch, "Migrated") == 0);
    ctx.now_ms += 31'000;
    CHECK(rebalance_events(rebalance_controller(s, ctx).batch, "Migrated") > 0);
  }
  SECTION("only the controller loop runs it, not the run after another command") {
    ClusterState s = half_used();
    ControllerContext inline_run = ctx;
    inline_run.options.periodic = false;
    CHECK(rebalance_controller(s, inline_run).batch.empty());
    CHECK(rebalance_events(rebalance_controller(s, ctx).batch, "Migrated") > 0);
  }
  SECTION("a last run in the future does not stall it") {
    ClusterState s = half_used();
    s.settings[k_rebalance_setting] = nlohmann::json{{"last_run_ms", ctx.now_ms + 3'600'000}};
    CHECK(rebalance_events(rebalance_controller(s, ctx).batch, "Migrated") > 0);
  }
}

TEST_CASE("rebalance controller: one move a period keeps a required anti-affinity", "[rebalance][controller]") {
  // A role whose replicas may not share a node, a filler beside them, and a budget of
  // one move per period: over the periods no two replicas ever share a node.
  ClusterState s = fixture_cluster(4);
  s.snapshot.profile.strategy = "stack";
  s.snapshot.profile.w_spread = 0;
  Role w = fixture_role("w", 2, res(1000, 1));
  AffinityTerm apart;
  apart.target = AffinityTerm::Target::Instance;
  apart.match = {LabelRequirement{"gaia.io/role", "In", {"w"}}};
  apart.topology = "node";
  w.required_anti_affinity.push_back(apart);
  Role f = fixture_role("f", 2, res(1000, 1));
  add_record(s, fixture_app("web", {w, f}));
  pin(s, "web", "w", 0, "n1");
  pin(s, "web", "w", 1, "n2");
  pin(s, "web", "f", 0, "n2");
  pin(s, "web", "f", 1, "n3");
  ControllerContext ctx = test_ctx();
  ctx.options.rebalance_budget = 1;
  ctx.options.periodic = true;
  ClusterState now = s;
  for (int period = 0; period < 4; ++period) {
    ControllerResult r = rebalance_controller(now, ctx);
    now = apply_batch(now, r.batch);
    std::map<std::string, int> per_node;
    for (const auto& i : now.snapshot.instances)
      if (i.role == "w" && !i.node.empty()) CHECK(++per_node[i.node] == 1);
    ctx.now_ms += ctx.options.rebalance_period_ms;
  }
}

}  // namespace
}  // namespace gaia
