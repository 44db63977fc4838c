// The rollout controller and rolling updates through plan_submit: batches that keep
// min_available, waiting for each batch to run, stateful instances keeping volumes,
// in-place hash updates when only config revisions moved, idempotence.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <rapidcheck.h>

#include "tests/controllers/sim_fixture.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/rollout.hpp"
#include "controllers/submit.hpp"
#include "tests/controllers/cluster_builder.hpp"

namespace gaia {
namespace {

using test::applied;
using test::kGi;
using test::res;
using json = nlohmann::json;

ClusterState nodes(int n, int64_t cpu = 8000, int64_t mem_gi = 32) {
  ClusterState s;
  for (int k = 0; k < n; ++k) {
    Node node;
    node.name = fmt::format("n{}", k + 1);
    node.capacity = res(cpu, mem_gi);
    node.address = fmt::format("10.0.0.{}", k + 1);
    node.instance_subnet = fmt::format("10.0.{}.0/24", 128 + k);
    node.volume_groups.push_back(VolumeGroup{"disks", "hdd", 500 * kGi, 1000});
    s.snapshot.nodes.push_back(node);
  }
  return s;
}

AppToDeploy app(const std::string& hash, int replicas, int min_available, int64_t cpu = 500, bool stateful = false) {
  AppToDeploy a;
  a.record.tenant = "default";
  a.record.name = "web";
  a.record.version = "1.0.0";
  Role r;
  r.name = "web";
  r.replicas = replicas;
  r.min_available = min_available;
  r.resources = res(cpu, 1);
  if (stateful) r.volumes.push_back(Volume{"data", 10 * kGi, "hdd", 0, "/data"});
  a.record.workload.roles = {r};
  a.record.workload.hash = hash;
  return a;
}

size_t running(const ClusterState& s) {
  size_t n = 0;
  for (const auto& i : s.snapshot.instances)
    if (i.state == InstanceState::Running) ++n;
  return n;
}

size_t with_hash(const ClusterState& s, const std::string& h) {
  size_t n = 0;
  for (const auto& i : s.snapshot.instances)
    if (i.hash == h) ++n;
  return n;
}

bool batch_has_event(const Batch& b, const std::string& reason) {
  for (const auto& e : b.events)
    if (e.reason == reason) return true;
  return false;
}

ClusterState deployed(int replicas, int min_available, bool stateful = false, int node_count = 4) {
  auto s = nodes(node_count);
  auto out = plan_submit(s, {app("h1", replicas, min_available, 500, stateful)});
  auto after = applied(s, out.batch);
  REQUIRE(running(after) == static_cast<size_t>(replicas));
  return after;
}

// One rollout step then one scheduler step, as a reconcile pass runs them.
ClusterState step(const ClusterState& s, Batch* rollout_batch = nullptr) {
  auto r = rollout_controller(s, {});
  if (rollout_batch) *rollout_batch = r.batch;
  auto mid = applied(s, r.batch);
  auto placed = reschedule_pending(mid);
  return applied(mid, placed.batch);
}

}  // namespace

TEST_CASE("rollout: an update keeps the old instances, batches keep min_available", "[rollout]") {
  auto s = deployed(4, 2);
  auto update = plan_submit(s, {app("h2", 4, 2, 600)});
  REQUIRE(update.apps[0].action == "update");
  CHECK(update.apps[0].rolling.size() == 4);
  CHECK(update.apps[0].removed.empty());
  auto cur = applied(s, update.batch);
  CHECK(with_hash(cur, "h1") == 4);  // Nothing replaced yet.
  CHECK(cur.find_app("default", "web")->status == "Updating");

  // Batches of running - min_available = 2: two steps, min_available kept in between.
  auto plan = plan_rollout(cur);
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].replace.size() == 2);
  CHECK(plan[0].replace[0] == "3.web.web.default");  // Highest ordinals first.
  Batch first;
  auto mid = applied(cur, rollout_controller(cur, {}).batch);
  CHECK(running(mid) == 2);
  // While the new instances are not running, no further batch starts.
  CHECK(rollout_controller(mid, {}).batch.empty());
  CHECK(plan_rollout(mid)[0].waiting.find("waiting for 2") != std::string::npos);
  auto placed = applied(mid, reschedule_pending(mid).batch);
  CHECK(running(placed) == 4);
  auto done = step(placed, &first);
  CHECK(first.put_instances.size() == 2);
  CHECK(with_hash(done, "h2") == 4);
  CHECK(running(done) == 4);
  CHECK(done.find_app("default", "web")->status == "Ready");
  // Idempotent once rolled out.
  CHECK(rollout_controller(done, {}).batch.empty());
  for (const auto& i : done.snapshot.instances) CHECK(i.request.cpu_millis == 600);
}

TEST_CASE("rollout: reconcile rolls a changed app out completely and says so", "[rollout]") {
  auto s = deployed(3, 1);
  auto update = plan_submit(s, {app("h2", 3, 1, 700)});
  auto cur = applied(s, update.batch);
  auto r = test::settle_sim(cur, ControllerContext{});
  REQUIRE(r.converged);
  CHECK(with_hash(r.after, "h2") == 3);
  CHECK(running(r.after) == 3);
  CHECK(batch_has_event(r.batch, "Replaced"));
  CHECK(batch_has_event(r.batch, "RolledOut"));
  CHECK(r.after.find_app("default", "web")->status == "Ready");
  // A second reconcile is a no-op.
  CHECK(test::settle_sim(r.after, ControllerContext{}).batch.empty());
}

TEST_CASE("rollout: a replacement is bound under a new generation, never the old copy's", "[rollout]") {
  // Found with real processes: a replacement created afresh (generation 0) and bound
  // again on the same node got generation 1, the old copy's, so the process backend took
  // the old process for the new copy and the old render kept running.
  auto s = deployed(3, 1);
  std::map<std::string, int64_t> before;
  for (const auto& i : s.snapshot.instances) before[i.key()] = i.generation;
  auto update = plan_submit(s, {app("h2", 3, 1, 700)});
  auto r = test::settle_sim(applied(s, update.batch), ControllerContext{});
  REQUIRE(r.converged);
  for (const auto& i : r.after.snapshot.instances) {
    INFO(i.key());
    CHECK(i.hash == "h2");
    CHECK(i.generation > before.at(i.key()));
  }
}

TEST_CASE("rollout: a new version that cannot run stops the rollout after one batch", "[rollout]") {
  auto s = deployed(3, 2, false, 1);  // One node with 8 cpus: 3 x 500m.
  auto update = plan_submit(s, {app("h2", 3, 2, 9000)});  // Fits nowhere.
  auto cur = applied(s, update.batch);
  auto r = test::settle_sim(cur, ControllerContext{});
  CHECK(with_hash(r.after, "h2") == 1);
  CHECK(running(r.after) == 2);  // min_available kept.
  CHECK(test::settle_sim(r.after, ControllerContext{}).batch.empty());
}

TEST_CASE("rollout: outdated instances that do not run are replaced at once", "[rollout]") {
  auto s = deployed(3, 2);
  for (auto& i : s.snapshot.instances)
    if (i.ordinal < 2) {
      i.state = InstanceState::Pending;
      i.node.clear();
      i.address.clear();
    }
  auto cur = applied(s, plan_submit(s, {app("h2", 3, 2, 600)}).batch);
  auto plan = plan_rollout(cur);
  REQUIRE(plan.size() == 1);
  // Both pending ones; the running one waits for them (1 running is below min_available 2).
  CHECK(plan[0].replace.size() == 2);
  CHECK_FALSE(plan[0].waiting.empty());
  auto r = test::settle_sim(cur, ControllerContext{});
  CHECK(with_hash(r.after, "h2") == 3);
  CHECK(running(r.after) == 3);
}

TEST_CASE("rollout: stateful instances keep their volumes across the replacement", "[rollout]") {
  auto s = deployed(3, 1, true);
  std::map<std::string, std::string> volume_node;
  for (const auto& i : s.snapshot.instances) {
    REQUIRE(i.volumes.size() == 1);
    volume_node[i.key()] = i.volumes[0].node;
  }
  auto cur = applied(s, plan_submit(s, {app("h2", 3, 1, 600, true)}).batch);
  auto r = test::settle_sim(cur, ControllerContext{});
  REQUIRE(r.converged);
  for (const auto& i : r.after.snapshot.instances) {
    CHECK(i.hash == "h2");
    REQUIRE(i.volumes.size() == 1);
    CHECK(i.volumes[0].node == volume_node.at(i.key()));
    CHECK(i.node == volume_node.at(i.key()));
  }
}

TEST_CASE("rollout: an update that drops ordinals removes them and rolls the rest", "[rollout]") {
  auto s = deployed(4, 0);
  auto update = plan_submit(s, {app("h2", 2, 0, 600)});
  CHECK(update.apps[0].removed.size() == 2);
  CHECK(update.apps[0].rolling.size() == 2);
  auto r = test::settle_sim(applied(s, update.batch), ControllerContext{});
  REQUIRE(r.after.snapshot.instances.size() == 2);
  CHECK(with_hash(r.after, "h2") == 2);
}

TEST_CASE("rollout: when the roles render the same, instances take the new hash in place", "[rollout]") {
  auto s = deployed(2, 0);
  auto v1 = app("h1", 2, 0);
  auto v2 = app("h2", 2, 0);
  json roles = {{"web", {{"replicas", 2}}}};
  // Same roles in the document; only the hash differs (a config read's revision moved).
  for (auto* a : {&v1, &v2}) a->record.document = {{"spec", {{"roles", roles}}}};
  s.apps["default/web"].document = v1.record.document;
  CHECK(roles_unchanged(s.apps["default/web"], v2.record));
  auto update = plan_submit(s, {v2});
  CHECK(update.apps[0].rolling.empty());
  auto cur = applied(s, update.batch);
  CHECK(with_hash(cur, "h2") == 2);
  CHECK(running(cur) == 2);
  CHECK(rollout_controller(cur, {}).batch.empty());
  // A version change is never "the same roles".
  v2.record.version = "2.0.0";
  CHECK_FALSE(roles_unchanged(s.apps["default/web"], v2.record));
}

TEST_CASE("rollout: min_available holds at every step, whatever the sizes (property)", "[rollout][property]") {
  bool ok = rc::check("running never drops below min_available and the rollout completes", [] {
    int replicas = *rc::gen::inRange(1, 9);
    int min_available = *rc::gen::inRange(0, replicas);  // Below the replica count.
    auto s = nodes(3);
    auto first = plan_submit(s, {app("h1", replicas, min_available)});
    auto cur = applied(s, first.batch);
    RC_ASSERT(running(cur) == static_cast<size_t>(replicas));
    cur = applied(cur, plan_submit(cur, {app("h2", replicas, min_available, 600)}).batch);
    for (int k = 0; k < 2 * replicas + 2 && with_hash(cur, "h2") < static_cast<size_t>(replicas); ++k) {
      auto r = rollout_controller(cur, {});
      auto mid = applied(cur, r.batch);
      RC_ASSERT(running(mid) >= static_cast<size_t>(min_available));
      // The batch is never larger than what min_available allows (at least one).
      RC_ASSERT(r.batch.put_instances.size() <= static_cast<size_t>(std::max(1, replicas - min_available)));
      cur = applied(mid, reschedule_pending(mid).batch);
    }
    RC_ASSERT(with_hash(cur, "h2") == static_cast<size_t>(replicas));
    RC_ASSERT(running(cur) == static_cast<size_t>(replicas));
    RC_ASSERT(rollout_controller(cur, {}).batch.empty());
  });
  CHECK(ok);
}

}  // namespace gaia
