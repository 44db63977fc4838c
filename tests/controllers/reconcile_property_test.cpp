// The controllers under long random sequences of what happens to a cluster: submits,
// scaling, nodes failing and recovering, drains, spec changes and usage spikes. After
// every step the state (committed to a real SQLite store through State, as the CLI does)
// must satisfy the invariants of DESIGN.md sections 6-7, and a second reconcile must
// find nothing to do. Seeds are fixed so a failure replays exactly; the failing seed and
// step are printed.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "controllers/app_health.hpp"
#include "controllers/lifecycle.hpp"
#include "controllers/reconcile.hpp"
#include "lib/codec.hpp"
#include "lib/state.hpp"
#include "controllers/submit.hpp"
#include "store/sqlite_store.hpp"
#include "tests/controllers/cluster_builder.hpp"
#include "tests/support/random_cluster.hpp"

namespace gaia {
namespace {

using test::kGi;
using test::res;
// Named one by one rather than with a using-directive: in a unity build the directive
// would also reach the files compiled after this one and add random_cluster's other
// helpers (app, role, prio...) to their overload sets.
using test::random_cluster::base_cluster;
using test::random_cluster::catalogue;
using test::random_cluster::random_change;
using test::random_cluster::StoreHarness;
using test::random_cluster::TempDir;
using test::random_cluster::violations;


// What a batch writes, in one comparable value.
nlohmann::json batch_json(const Batch& b) {
  nlohmann::json apps = nlohmann::json::array();
  for (const auto& a : b.put_apps) apps.push_back(a);
  return {{"nodes", b.put_nodes},         {"delete_nodes", b.delete_nodes},
          {"tenants", b.put_tenants},     {"apps", apps},
          {"delete_apps", b.delete_apps}, {"instances", b.put_instances},
          {"delete_instances", b.delete_instances}, {"settings", b.put_settings},
          {"events", b.events}};
}

// Observes `s` with some copies gone and some exited, and checks the statuses the
// observation sets (computed on the observed apps alone) against those of the whole
// state with the observation applied.
void check_observed_statuses(const ClusterState& s, int64_t now_ms) {
  Observation obs = healthy_observation(s, now_ms);
  for (size_t k = 0; k < obs.copies.size(); ++k) {
    if (k % 7 == 3) obs.copies[k].phase = CopyPhase::Exited, obs.copies[k].exit_code = 1;
    if (k % 11 == 5) obs.copies[k].node = "elsewhere";  // Its own copy is gone.
  }
  Batch b = observe_instances(s, obs, now_ms);
  Batch puts;
  puts.put_instances = b.put_instances;
  ClusterState after = apply_batch(s, puts);
  AppHealthIndex all(after);
  std::set<std::string> touched;
  for (const auto& i : b.put_instances) touched.insert(i.tenant + "/" + i.app);
  for (const auto& id : touched) {
    auto found = after.apps.find(id);
    if (found == after.apps.end()) continue;  // Instances of a deleted app: no status.
    const AppRecord& app = found->second;
    std::string status = app.status;
    for (const auto& a : b.put_apps)
      if (a.tenant + "/" + a.name == id) status = a.status;
    CHECK(status == all.status(app));
  }
}

struct Harness : StoreHarness {
  using StoreHarness::StoreHarness;

  ReconcileOutcome reconcile_once() {
    ReconcileOutcome out;
    commit([&](const ClusterState& s, Batch& b) {
      ControllerContext ctx{to_millis(clock->now()), {}};
      ctx.threads = 1;  // The reference: the controllers one after the other.
      out = reconcile(s, ctx);
      // On a state the caller keeps (copied only once something changes), the same
      // decisions, event for event; and on several threads, where the controllers after
      // one that changed something run again on its change.
      ControllerContext parallel = ctx;
      parallel.threads = 4;
      for (const auto& [kept, how] : {std::pair(reconcile_batch(s, ctx), "kept state"),
                                      std::pair(reconcile(s, parallel), "four threads"),
                                      std::pair(reconcile_batch(s, parallel), "kept state, four threads")}) {
        INFO(how);
        CHECK(batch_json(kept.batch) == batch_json(out.batch));
        CHECK(kept.active == out.active);
        CHECK(kept.passes == out.passes);
        CHECK(kept.wake_at_ms == out.wake_at_ms);
      }
      check_observed_statuses(s, ctx.now_ms);
      // App health counted for a few apps answers for them as counted for all.
      AppHealthIndex all(s);
      for (const auto& [id, app] : s.apps) {
        AppHealthIndex one(s, {id, "nobody/else"});
        CHECK(one.status(app) == all.status(app));
        CHECK(one.summary(app) == all.summary(app));
        CHECK(one.totals(app) == all.totals(app));
        CHECK(one.available(app) == all.available(app));
        CHECK(one.placed(app) == all.placed(app));
      }
      b = out.batch;
    });
    return out;
  }
};

void run_sequence(uint32_t seed, int steps) {
  TempDir dir;
  Harness h(dir.path() / "state.db");
  std::mt19937 rng(seed);
  auto cat = catalogue();
  auto base = base_cluster(8);
  h.commit([&](const ClusterState&, Batch& b) { b.put_nodes = base.snapshot.nodes; });
  int generation = 0;
  int64_t last_seq = 0;

  for (int step = 0; step < steps; ++step) {
    std::string what = random_change(h, rng, cat, generation);
    if (what.empty()) continue;
    INFO(fmt::format("seed {} step {}: {}", seed, step, what));
    auto first = h.reconcile_once();
    INFO(fmt::format("controllers active: {}", fmt::join(first.active, ", ")));
    CHECK(first.converged);
    auto after = h.state->load();
    REQUIRE(after);
    auto bad = violations(*after);
    CHECK(bad == std::vector<std::string>{});
    auto second = h.reconcile_once();
    INFO(fmt::format("second reconcile by: {}", fmt::join(second.active, ", ")));
    CHECK(second.batch.empty());
    // Events are strictly ordered: one sequence, no gaps, no repeats.
    auto events = h.state->events_after(last_seq);
    REQUIRE(events);
    for (const auto& e : *events) {
      CHECK(e.seq == last_seq + 1);
      last_seq = e.seq;
    }
    if (!bad.empty() || !second.batch.empty()) return;  // One failure tells the story.
  }
}

TEST_CASE("random sequences of cluster changes keep the controllers' invariants", "[reconcile][property]") {
  for (uint32_t seed = 1; seed <= 12; ++seed) run_sequence(seed, 60);
}

}  // namespace
}  // namespace gaia
