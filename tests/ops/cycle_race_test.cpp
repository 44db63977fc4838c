// A round of the controllers' cycle commits what it observed, then decides on the kept
// state in a second commit (ops/cycle.cpp). Another process may commit in between: the
// round must then not weigh that newer state against its older observation when it
// starts and stops copies. Reproduced with a store that lets "another process" commit
// right after the round's first commit.
#include <catch2/catch.hpp>

#include <functional>
#include <utility>

#include "ops/cycle.hpp"
#include "tests/ops/ops_fixture.hpp"
#include "tests/support/forwarding_store.hpp"

namespace gaia::test {
namespace {

// Runs `after_commit` once, right after the first transaction that succeeds.
class RacingStore final : public ForwardingStore {
 public:
  explicit RacingStore(Store& inner) : ForwardingStore(inner) {}
  StoreResult<TxnResult> txn(const Txn& t) override {
    auto r = inner().txn(t);
    if (r && r->succeeded && after_commit) std::exchange(after_commit, nullptr)();
    return r;
  }
  std::function<void()> after_commit;
};

// Runs `before_commit` once, right before the first transaction.
class EarlyRacingStore final : public ForwardingStore {
 public:
  explicit EarlyRacingStore(Store& inner) : ForwardingStore(inner) {}
  StoreResult<TxnResult> txn(const Txn& t) override {
    if (before_commit) std::exchange(before_commit, nullptr)();
    return inner().txn(t);
  }
  std::function<void()> before_commit;
};

const Instance& only_instance(const ClusterState& st, const std::string& app) {
  for (const auto& i : st.snapshot.instances)
    if (i.app == app) return i;
  FAIL("no instance of " << app);
  throw std::logic_error("unreachable");
}

StartSpec start_of(const Instance& i) {
  StartSpec s;
  s.instance = i;
  return s;
}

// `db` moved to `node` by another process: a new generation, its volume there.
Instance moved_to(const Instance& db, const std::string& node) {
  Instance moved = db;
  moved.node = node;
  moved.generation = db.generation + 1;
  moved.volumes = {VolumeBinding{"data", node, "vg0", 1 << 30, 0}};
  return moved;
}

// Two nodes; web and db placed, one instance each.
void deploy_web_and_db(OpsFixture& f) {
  f.add_nodes(2);
  auto deployed = f.state().update("op-deploy", [&](const ClusterState& st, Batch& b) -> Result<void> {
    b = plan_submit(st, {fixture_app("web", {fixture_role("fe", 1, res(100, 1))}),
                         fixture_app("db", {fixture_role("data", 1, res(100, 1))})})
            .batch;
    return {};
  });
  REQUIRE(deployed);
}

// Live copies of `key` as a fresh observer sees them: in all, and on `node`.
std::pair<int, int> live_copies(OpsFixture& f, const std::string& key, const std::string& node, int64_t now_ms) {
  SimBackend fresh(&f.store());
  auto obs = fresh.observe(now_ms);
  REQUIRE(obs);
  int live = 0, on_node = 0;
  for (const auto& c : obs->copies)
    if (c.instance == key && c.live()) {
      ++live;
      on_node += c.node == node;
    }
  return {live, on_node};
}

}  // namespace

TEST_CASE("cycle: a commit by another process between a round's two commits is observed before anything starts",
          "[ops][cycle]") {
  OpsFixture f;
  deploy_web_and_db(f);
  // db's instance holds a volume on its node: stateful, never two live copies.
  Instance db = only_instance(f.load(), "db");
  REQUIRE(db.state == InstanceState::Placed);
  const std::string first_node = db.node, second_node = db.node == "n1" ? "n2" : "n1";
  db.volumes = {VolumeBinding{"data", first_node, "vg0", 1 << 30, 0}};
  REQUIRE(f.state().update("op-volume", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_instances.push_back(db);
    return {};
  }));
  // web's copy runs already, so the round has news to commit first.
  const int64_t kT0 = to_millis(f.clock().now());
  SimBackend other(&f.store());
  REQUIRE(other.start({start_of(only_instance(f.load(), "web"))}, kT0));

  RacingStore racing(f.store());
  State mine(racing, f.clock());
  SimBackend sim(&racing);
  racing.after_commit = [&] {
    // Another process starts db's copy where it is bound, then moves db to the other
    // node (a new generation, its volume there): its copy on the first node still runs.
    REQUIRE(other.start({start_of(db)}, kT0));
    Instance moved = moved_to(db, second_node);
    REQUIRE(f.state().update("op-other", [&](const ClusterState&, Batch& b) -> Result<void> {
      b.put_instances.push_back(moved);
      return {};
    }));
  };

  ops::CycleOptions one_round;
  one_round.max_rounds = 1;
  auto r = ops::run_cycle(mine, sim, f.clock(), "op-cycle", one_round);
  REQUIRE(r);
  CHECK_FALSE(racing.after_commit);  // The other process did commit in between.

  // Never two live copies of db: the round saw the copy on the first node, stops it,
  // and starts nothing on the second until it is gone.
  auto [live, live_on_second] = live_copies(f, db.key(), second_node, kT0);
  CHECK(live <= 1);
  CHECK(live_on_second == 0);
  bool held = false;
  for (const auto& [key, why] : r->held)
    held |= key == db.key() && why.find("waiting for its copy on " + first_node) != std::string::npos;
  CHECK(held);
}

// Found by a review: a write that does not move the timeline's sequence (another
// process's runner starting a copy) between the round's observation and its first
// commit was in neither the observation nor any conflict, and the revision check let the
// controllers decide on that observation.
TEST_CASE("cycle: a copy another process starts between the observation and the round's commit is observed before "
          "anything starts",
          "[ops][cycle]") {
  OpsFixture f;
  deploy_web_and_db(f);
  // db is stateful (a volume on its node) and was moved to the other node since another
  // process's runner decided to start it where it was.
  Instance db = only_instance(f.load(), "db");
  REQUIRE(db.state == InstanceState::Placed);
  const std::string first_node = db.node, second_node = db.node == "n1" ? "n2" : "n1";
  db.volumes = {VolumeBinding{"data", first_node, "vg0", 1 << 30, 0}};
  Instance moved = moved_to(db, second_node);
  REQUIRE(f.state().update("op-move", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_instances.push_back(moved);
    return {};
  }));
  const int64_t kT0 = to_millis(f.clock().now());
  SimBackend other(&f.store());
  // web's copy runs already, so the round has news to commit first.
  REQUIRE(other.start({start_of(only_instance(f.load(), "web"))}, kT0));

  EarlyRacingStore racing(f.store());
  State mine(racing, f.clock());
  SimBackend sim(&racing);
  racing.before_commit = [&] {
    // That runner's start lands now, on the first node: a write to the backend's
    // records, not to the timeline, so the round's commit does not conflict with it.
    REQUIRE(other.start({start_of(db)}, kT0));
  };
  ops::CycleOptions one_round;
  one_round.max_rounds = 1;
  auto r = ops::run_cycle(mine, sim, f.clock(), "op-cycle", one_round);
  REQUIRE(r);
  CHECK_FALSE(racing.before_commit);  // The other runner did start it in between.

  // Never two live copies of db: the round saw the copy on the first node and started
  // nothing on the second while it runs.
  auto [live, live_on_second] = live_copies(f, db.key(), second_node, kT0);
  CHECK(live <= 1);
  CHECK(live_on_second == 0);
}

namespace {

// The sim backend, counting observations.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(Store* store) : m_sim(store) {}
  std::string_view name() const override { return "counting"; }
  bool synchronous() const override { return true; }
  bool wait(std::chrono::milliseconds timeout) override { return m_sim.wait(timeout); }
  BackendResult<Observation> observe(int64_t now_ms) override {
    ++observed;
    return m_sim.observe(now_ms);
  }
  BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& s, int64_t now_ms) override {
    return m_sim.start(s, now_ms);
  }
  BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& s, int64_t now_ms) override {
    return m_sim.stop(s, now_ms);
  }
  int observed = 0;

 private:
  SimBackend m_sim;
};

}  // namespace

// The other side of the checks above: with nobody else writing, a round observes once
// (a check that always failed would be safe, and would observe every round twice).
TEST_CASE("cycle: a round nobody writes beside observes once", "[ops][cycle]") {
  OpsFixture f;
  f.add_nodes(2);
  REQUIRE(f.state().update("op-deploy", [&](const ClusterState& st, Batch& b) -> Result<void> {
    b = plan_submit(st, {fixture_app("web", {fixture_role("fe", 2, res(100, 1))})}).batch;
    return {};
  }));
  const int64_t kT0 = to_millis(f.clock().now());
  // A copy runs already, so the round has news to commit first (the path with two commits).
  SimBackend other(&f.store());
  REQUIRE(other.start({start_of(only_instance(f.load(), "web"))}, kT0));
  CountingBackend backend(&f.store());
  ops::CycleOptions one_round;
  one_round.max_rounds = 1;
  auto r = ops::run_cycle(f.state(), backend, f.clock(), "op-cycle", one_round);
  REQUIRE(r);
  CHECK(backend.observed == 1);
}

}  // namespace gaia::test
