// The controller runner on a real store: a run commits what the controllers decide
// under the workspace's operation id and converges (a second run does nothing), a
// command's own change is followed by the inline run, and following stops when the
// cluster is done or the time is up, reporting through the callbacks only.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "controllers/submit.hpp"
#include "lib/sim_backend.hpp"
#include "ops/cycle.hpp"
#include "ops/runner.hpp"
#include "tests/ops/ops_fixture.hpp"
#include "tests/support/forwarding_store.hpp"

namespace gaia::test {

namespace {

// Commits apps decided by plan_submit, as a submit would, without running anything else.
void deploy_records(OpsFixture& f, std::vector<AppToDeploy> apps) {
  auto r = f.state().update("op-deploy", [&](const ClusterState& st, Batch& b) -> Result<void> {
    b = plan_submit(st, apps).batch;
    return {};
  });
  REQUIRE(r);
}

}  // namespace

TEST_CASE("runner: run_controllers places what waited for capacity and then converges", "[ops][runner]") {
  OpsFixture f;
  // No nodes yet: the instances stay pending.
  deploy_records(f, {fixture_app("svc", {fixture_role("main", 3, res(1000, 1))})});
  REQUIRE(running_of(f.load(), "svc") == 0);
  f.put_nodes(2);

  auto first = ops::run_controllers(f.ws("op-run"));
  REQUIRE(first);
  CHECK(running_of(*first->state, "svc") == 3);
  CHECK_FALSE(first->outcome.batch.empty());
  // Every event the run committed carries the workspace's operation id.
  auto events = f.state().events_after(0);
  REQUIRE(events);
  size_t by_run = 0;
  for (const auto& e : *events) by_run += e.op == "op-run";
  CHECK(by_run == first->outcome.batch.events.size());

  // Converged: a second run decides nothing and writes nothing.
  int64_t before = f.revision();
  auto second = ops::run_controllers(f.ws("op-again"));
  REQUIRE(second);
  CHECK(second->outcome.batch.empty());
  CHECK(f.revision() == before);
}

TEST_CASE("runner: commit_and_reconcile commits the command's change, then runs the controllers", "[ops][runner]") {
  OpsFixture f;
  f.add_nodes(2);
  std::vector<AppToDeploy> apps{fixture_app("svc", {fixture_role("main", 2, res(1000, 1))})};
  int decisions = 0;
  auto done = ops::commit_and_reconcile(f.ws("op-cmd"), [&](const ClusterState& st, Batch& b) -> Result<void> {
    ++decisions;
    b = plan_submit(st, apps).batch;
    return {};
  });
  REQUIRE(done);
  CHECK(decisions == 1);
  CHECK(done->controllers.state->find_app("default", "svc"));
  CHECK(running_of(*done->controllers.state, "svc") == 2);

  // A refused decision writes nothing and runs nothing.
  int64_t before = f.revision();
  auto refused = ops::commit_and_reconcile(f.ws(), [](const ClusterState&, Batch&) -> Result<void> {
    return fail(Diagnostic{{}, "", "refused", ""});
  });
  REQUIRE_FALSE(refused);
  CHECK(refused.error().front().message == "refused");
  CHECK(f.revision() == before);
}

TEST_CASE("runner: follow_controllers stops when done, or at the timeout with the callbacks called", "[ops][runner]") {
  OpsFixture f;
  f.add_nodes(1, 2000, 4);
  // Two instances of 1.5 CPU: one fits on the 2-CPU node, the other never does.
  deploy_records(f, {fixture_app("big", {fixture_role("main", 2, res(1500, 1))})});

  int runs = 0, waits = 0;
  ops::FollowOptions options;
  options.timeout = std::chrono::milliseconds(10'000);
  options.on_run = [&](const Batch&) { ++runs; };
  options.on_wait = [&](const ClusterState&) { ++waits; };
  auto one = ops::follow_controllers(
      f.ws(), [](const ClusterState& st) { return running_of(st, "big") >= 1; }, options);
  REQUIRE(one);
  CHECK(one->done);
  CHECK(one->runs == 1);
  CHECK(runs == 1);
  CHECK(waits == 0);

  options.timeout = std::chrono::milliseconds(300);
  auto all = ops::follow_controllers(
      f.ws(), [](const ClusterState& st) { return running_of(st, "big") == 2; }, options);
  REQUIRE(all);
  CHECK_FALSE(all->done);
  CHECK(all->runs >= 2);
  CHECK(running_of(all->state, "big") == 1);
  CHECK(waits == all->runs);
}

TEST_CASE("runner: the -vv line of a run goes through the workspace's log", "[ops][runner]") {
  OpsFixture f;
  f.add_nodes(1);
  std::vector<std::pair<int, std::string>> lines;
  ops::Workspace ws = f.ws();
  ws.log = [&](int level, const std::string& line) { lines.emplace_back(level, line); };
  REQUIRE(ops::run_controllers(ws));
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].first == 2);
  CHECK(lines[0].second.starts_with("controllers: "));
  CHECK(lines[0].second.find(" pass(es), ") != std::string::npos);
}

}  // namespace gaia::test

namespace gaia::test {

namespace {

// The sim backend, recording what the runner asks remove_unused, and removing `leftovers`.
class CleaningBackend final : public Backend {
 public:
  CleaningBackend() = default;
  std::string_view name() const override { return "cleaning"; }
  bool synchronous() const override { return true; }
  bool wait(std::chrono::milliseconds timeout) override { return m_sim.wait(timeout); }
  BackendResult<Observation> observe(int64_t now_ms) override { return m_sim.observe(now_ms); }
  BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& s, int64_t now_ms) override {
    return m_sim.start(s, now_ms);
  }
  BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& s, int64_t now_ms) override {
    return m_sim.stop(s, now_ms);
  }
  BackendResult<std::vector<std::string>> remove_unused(
      const ClusterState& cycle_state, const std::function<std::optional<ClusterState>()>& current) override {
    ++calls;
    auto now = current();
    if (now) current_apps = now->apps.size();
    if (fail) return std::unexpected(BackendError{BackendErrc::Rejected, "services is forbidden"});
    return std::exchange(leftovers, {});
  }

  int calls = 0;
  size_t current_apps = 0;
  bool fail = false;
  std::vector<std::string> leftovers;

 private:
  SimBackend m_sim;
};

std::vector<TimelineEvent> events_named(OpsFixture& f, const std::string& reason) {
  auto events = f.state().events_after(0);
  REQUIRE(events);
  std::vector<TimelineEvent> out;
  for (const auto& e : *events)
    if (e.reason == reason) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("runner: a converged cycle asks the backend to remove what deleted apps left, and says so",
          "[ops][runner]") {
  OpsFixture f;
  f.add_nodes(2);
  deploy_records(f, {fixture_app("svc", {fixture_role("main", 2, res(1000, 1))})});
  CleaningBackend backend;
  backend.leftovers = {"Service old-web", "ConfigMap old-config"};

  auto r = ops::run_cycle(f.state(), backend, f.clock(), "op-clean");
  REQUIRE(r);
  CHECK(r->converged);
  CHECK(backend.calls == 1);
  // It decided on the store as it is: svc's record is there.
  CHECK(backend.current_apps == 1);
  auto cleaned = events_named(f, "BackendCleanup");
  REQUIRE(cleaned.size() == 1);
  CHECK(cleaned[0].message.find("Service old-web, ConfigMap old-config") != std::string::npos);
  CHECK(cleaned[0].op == "op-clean");

  // Nothing left to remove: nothing written.
  int64_t before = f.revision();
  REQUIRE(ops::run_cycle(f.state(), backend, f.clock(), "op-again"));
  CHECK(f.revision() == before);

  // A refusal is a warning, not a failed cycle.
  backend.fail = true;
  auto refused = ops::run_cycle(f.state(), backend, f.clock(), "op-refused");
  REQUIRE(refused);
  CHECK(refused->errors.size() == 1);
  auto warnings = events_named(f, "BackendError");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].message.find("services is forbidden") != std::string::npos);

  // A what-if plan never removes anything.
  int calls = backend.calls;
  backend.fail = false;
  backend.leftovers = {"Service x"};
  ops::settle(f.load(), backend, 0);
  CHECK(backend.calls == calls);
}

namespace {

// Counts the keys each prefix's reads returned: what a load read in full, and what it
// only refreshed from the store's changes.
class CountingStore final : public ForwardingStore {
 public:
  explicit CountingStore(Store& inner) : ForwardingStore(inner) {}
  size_t keys_read(std::string_view prefix) const {
    std::lock_guard lock(m_mutex);
    auto it = m_keys.find(std::string(prefix));
    return it == m_keys.end() ? 0 : it->second;
  }
  void clear() {
    std::lock_guard lock(m_mutex);
    m_keys.clear();
  }
  StoreResult<RangeResponse> read(const RangeRequest& r) override {
    auto out = inner().read(r);
    if (out) {
      std::lock_guard lock(m_mutex);
      for (const auto& kv : out->kvs) ++m_keys[kv.key.substr(0, kv.key.find('/') + 1)];
    }
    return out;
  }

 private:
  mutable std::mutex m_mutex;
  std::map<std::string, size_t> m_keys;
};

std::vector<std::string> copies_seen(SimBackend& sim, int64_t now_ms) {
  auto obs = sim.observe(now_ms);
  REQUIRE(obs);
  std::vector<std::string> out;
  for (const auto& c : obs->copies)
    out.push_back(fmt::format("{}@{}#{} {}", c.instance, c.node, c.generation, copy_phase_name(c.phase)));
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> instances_seen(const ClusterState& st) {
  std::vector<std::string> out;
  for (const auto& i : st.snapshot.instances)
    out.push_back(fmt::format("{}@{} {}", i.key(), i.node, instance_state_name(i.state)));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("runner: ReadAhead reads the state and the copies on other threads, and what is written meanwhile is seen",
          "[ops][runner]") {
  OpsFixture f;
  f.add_nodes(3);
  deploy_records(f, {fixture_app("svc", {fixture_role("main", 6, res(500, 1))})});
  REQUIRE(ops::run_controllers(f.ws("op-start")));  // The copies run on the sim.

  // A command's session: a State that follows changes and a backend of its own, both
  // reading through the counting store.
  CountingStore counting(f.store());
  StateOptions follow;
  follow.follow_changes = true;
  State state(counting, f.clock(), follow);
  SimBackend sim(&counting);
  ops::Workspace ws{counting, state, f.clock(), "op-read-ahead", {}, {}};
  ws.backend = &sim;
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    counting.clear();
    std::vector<AppToDeploy> more{fixture_app(fmt::format("more{}", round), {fixture_role("main", 2, res(500, 1))})};
    {
      ops::ReadAhead read_ahead(ws);
      // Another writer commits while the reads may be under way: before, during or after
      // them, the command's own load must see it.
      deploy_records(f, more);
      REQUIRE(ops::run_controllers(f.ws("op-other")));
    }
    // Everything was read ahead once; what came after is only refreshed from the changes
    // (a second full read would read every instance again).
    size_t read_ahead_instances = counting.keys_read("instances/");
    size_t read_ahead_copies = counting.keys_read("sim/");
    auto mine = state.load();
    REQUIRE(mine);
    auto fresh = f.state().load();
    REQUIRE(fresh);
    CHECK(instances_seen(*mine) == instances_seen(*fresh));
    CHECK(instances_of(*mine, fmt::format("more{}", round)) == 2);
    SimBackend other(&f.store());
    CHECK(copies_seen(sim, 0) == copies_seen(other, 0));
    CHECK(counting.keys_read("instances/") == read_ahead_instances);
    CHECK(counting.keys_read("sim/") == read_ahead_copies);
    if (round == 0) {
      // The first session read: everything, once.
      CHECK(read_ahead_instances >= 6);
      CHECK(read_ahead_copies >= 6);
    } else {
      // Later ones only refresh what the session keeps.
      CHECK(read_ahead_instances == 0);
      CHECK(read_ahead_copies == 0);
    }
  }

  // A State that does not follow changes keeps nothing, so it reads nothing ahead.
  State plain(counting, f.clock());
  counting.clear();
  ops::Workspace plain_ws{counting, plain, f.clock(), "op-plain", {}, {}};
  { ops::ReadAhead read_ahead(plain_ws); }
  CHECK(counting.keys_read("instances/") == 0);
}

}  // namespace gaia::test
