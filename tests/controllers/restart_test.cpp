#include <catch2/catch.hpp>

#include "controllers/lifecycle.hpp"
#include "tests/controllers/runtime_fixture.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

const std::string kKey = "0.frontend.web.default";

// Two instances of web/frontend on n1 (retry_times 2, backoff 1s), both running.
ClusterState web(int retry_times = 2, int backoff_ms = 1000) {
  ClusterBuilder b;
  b.node("n1", 8000, 16);
  auto& r = b.role("default", "web", "frontend", res(1000, 1));
  r.retry_times = retry_times;
  r.backoff_ms = backoff_ms;
  b.instance("default", "web", "frontend", 0, "n1").started_ms = kT0;
  b.instance("default", "web", "frontend", 1, "n1").started_ms = kT0;
  return runtime_state(b);
}

// The backend reports the copy of `key` failed (exit code 1, or lost when `internal`),
// as the runner would pass it to observe_instances.
ClusterState with_failure(const ClusterState& s, const std::string& key, bool internal = false) {
  Observation obs = healthy_observation(s, kT0);
  bool found = false;
  for (auto& c : obs.copies)
    if (c.instance == key) {
      found = true;
      c.phase = CopyPhase::Failed;
      c.exit_code = internal ? 0 : 1;
      c.reason = internal ? "its supervisor died" : "exit code 1";
      c.internal = internal;
    }
  REQUIRE(found);
  return apply_batch(s, observe_instances(s, obs, kT0));
}

}  // namespace

TEST_CASE("restart back-off doubles per restart up to the cap", "[runtime][restart]") {
  Role r;
  r.backoff_ms = 1000;
  ControllerOptions o;
  o.max_backoff_ms = 5000;
  CHECK(restart_backoff_ms(r, 0, false, o) == 1000);
  CHECK(restart_backoff_ms(r, 1, false, o) == 2000);
  CHECK(restart_backoff_ms(r, 2, false, o) == 4000);
  CHECK(restart_backoff_ms(r, 3, false, o) == 5000);
  CHECK(restart_backoff_ms(r, 1000, false, o) == 5000);
  CHECK(restart_backoff_ms(r, 3, true, o) == 1000);  // Internal: no growth.
  r.backoff_ms = 0;
  CHECK(restart_backoff_ms(r, 3, false, o) == 0);
}

TEST_CASE("restart waits for the back-off, then requeues the instance", "[runtime][restart]") {
  auto s = with_failure(web(), kKey);
  ClusterState waiting;
  auto r = run_idempotent(&restart_failed, s, at(kT0), &waiting);
  CHECK(r.wake_at_ms == kT0 + 1000);
  CHECK(inst(waiting, kKey).restart_at_ms == kT0 + 1000);
  CHECK(inst(waiting, kKey).state == InstanceState::Failed);
  REQUIRE(find_event(r.batch, "BackOff"));
  CHECK_THAT(find_event(r.batch, "BackOff")->message, Catch::Contains("restarting in 1s (restart 1 of 2)"));
  // The app is no longer ready while the instance is down: the observation of the
  // failure said so (observe_instances), and waiting keeps it.
  CHECK(s.apps.at("default/web").status == "Degraded");
  CHECK(waiting.apps.at("default/web").status == "Degraded");

  CHECK(restart_failed(waiting, at(kT0 + 999)).batch.empty());
  ClusterState restarted;
  auto due = run_idempotent(&restart_failed, waiting, at(kT0 + 1000), &restarted);
  const auto& i = inst(restarted, kKey);
  CHECK(i.state == InstanceState::Pending);
  CHECK(i.restarts == 1);
  CHECK(i.restart_at_ms == 0);
  CHECK(i.node.empty());
  CHECK(i.failure == "exit code 1");  // Kept as the last failure.
  CHECK_THAT(find_event(due.batch, "Restarted")->message, Catch::Contains("after 1s back-off (restart 1 of 2)"));
}

TEST_CASE("restart back-off grows with each restart", "[runtime][restart]") {
  auto s = web(5, 1000);
  s.find_instance(kKey)->restarts = 2;
  s = with_failure(s, kKey);
  auto r = restart_failed(s, at(kT0));
  CHECK(r.wake_at_ms == kT0 + 4000);
}

TEST_CASE("restart with the scheduler brings the instance back and the app ready", "[runtime][restart]") {
  auto s = with_failure(web(), kKey);
  auto first = test::settle_sim(s, at(kT0), runtime_controllers());
  REQUIRE(first.converged);
  CHECK(first.wake_at_ms == kT0 + 1000);
  auto second = test::settle_sim(first.after, at(kT0 + 1000), runtime_controllers());
  REQUIRE(second.converged);
  const auto& i = inst(second.after, kKey);
  CHECK(i.state == InstanceState::Running);
  CHECK(i.node == "n1");
  CHECK(i.restarts == 1);
  CHECK(i.started_ms == kT0 + 1000);
  CHECK(second.after.apps.at("default/web").status == "Ready");
  CHECK(find_event(second.batch, "Restarted"));
  CHECK(find_event(second.batch, "Scheduled"));
  CHECK(test::settle_sim(second.after, at(kT0 + 1000), runtime_controllers()).batch.empty());
}

TEST_CASE("exhausting retry_times marks the role failed with the reason", "[runtime][restart]") {
  auto s = web(2);
  s.find_instance(kKey)->restarts = 2;
  s = with_failure(s, kKey);
  ClusterState after;
  auto r = run_idempotent(&restart_failed, s, at(kT0), &after);
  const auto& app = after.apps.at("default/web");
  REQUIRE(app.failed_roles.count("frontend"));
  CHECK_THAT(app.failed_roles.at("frontend"), Catch::Contains("failed after 2 restart(s) (retry_times 2): exit code 1"));
  CHECK(app.status == "Failed");
  const auto* e = find_event(r.batch, "Failed");
  REQUIRE(e);
  CHECK(e->type == "Warning");
  CHECK(e->role == "frontend");
  CHECK(inst(after, kKey).state == InstanceState::Failed);
  CHECK(count_events(r.batch, "Restarted") == 0);
  // The scheduler keeps the Failed status (it does not flip it back to Pending).
  auto more = test::settle_sim(after, at(kT0 + 100'000), runtime_controllers());
  CHECK(more.after.apps.at("default/web").status == "Failed");
  CHECK(inst(more.after, kKey).state == InstanceState::Failed);

  // Another instance of the failed role failing is not restarted either.
  auto other = with_failure(after, "1.frontend.web.default");
  CHECK(restart_failed(other, at(kT0 + 1)).batch.empty());
}

TEST_CASE("retry_times 0 means no restart", "[runtime][restart]") {
  auto s = with_failure(web(0), kKey);
  auto r = restart_failed(s, at(kT0));
  CHECK(find_event(r.batch, "Failed"));
  CHECK(count_events(r.batch, "BackOff") == 0);
}

TEST_CASE("internal failures do not spend retry_times", "[runtime][restart]") {
  auto s = web(2);
  s.find_instance(kKey)->restarts = 2;  // Out of user retries.
  s = with_failure(s, kKey, /*internal=*/true);
  CHECK(inst(s, kKey).internal_failure);
  auto first = test::settle_sim(s, at(kT0), runtime_controllers());
  CHECK(first.after.apps.at("default/web").failed_roles.empty());
  CHECK(first.wake_at_ms == kT0 + 1000);  // backoff_ms, not grown by the 2 restarts.
  auto second = test::settle_sim(first.after, at(kT0 + 1000), runtime_controllers());
  const auto& i = inst(second.after, kKey);
  CHECK(i.state == InstanceState::Running);
  CHECK(i.restarts == 2);
  CHECK_FALSE(i.internal_failure);
  CHECK_THAT(find_event(second.batch, "Restarted")->message, Catch::Contains("internal failure"));
}

TEST_CASE("zero back-off restarts at once", "[runtime][restart]") {
  auto s = with_failure(web(3, 0), kKey);
  ClusterState after;
  auto r = run_idempotent(&restart_failed, s, at(kT0), &after);
  CHECK(inst(after, kKey).state == InstanceState::Pending);
  CHECK(count_events(r.batch, "BackOff") == 0);
  CHECK(count_events(r.batch, "Restarted") == 1);
}

