// The runner (ops/cycle.hpp) against a backend that misbehaves on purpose
// (tests/support/fake_backend.hpp): copies start late, some fail to start, some are lost
// while running, stops take time. Random sequences of cluster changes (submits,
// scaling, node failures and drains, re-renders, time passing) are committed to a real
// SQLite store; after each, cycles run until the cluster settles. Then the invariants of
// the controllers must hold, what runs must match the store, no stateful instance may
// ever have had two live copies, and batch jobs finish. Seeds are fixed.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "store/sqlite_store.hpp"
#include "ops/cycle.hpp"
#include "tests/support/fake_backend.hpp"
#include "tests/support/random_cluster.hpp"

namespace gaia {
namespace {

using namespace test::random_cluster;

using Harness = StoreHarness;

// What runs must match what the store says, once settled.
std::vector<std::string> mismatches(const ClusterState& st, const test::FakeBackend& fake) {
  std::vector<std::string> out;
  for (const auto& i : st.snapshot.instances) {
    if (i.state != InstanceState::Running) continue;
    bool found = false;
    for (const auto& c : fake.copies())
      found |= c.seen.instance == i.key() && c.seen.node == i.node && c.seen.generation == i.generation && c.seen.live();
    if (!found) out.push_back(fmt::format("{} is Running in the store but has no live copy on {}", i.key(), i.node));
  }
  for (const auto& c : fake.copies()) {
    if (!c.seen.live()) continue;
    const Instance* i = st.find_instance(c.seen.instance);
    if (!i || i->node != c.seen.node || i->generation != c.seen.generation)
      out.push_back(fmt::format("a copy of {} runs on {} that the store does not place there", c.seen.instance, c.seen.node));
  }
  return out;
}

std::vector<AppToDeploy> catalogue_with_jobs() {
  auto cat = catalogue();
  for (auto& a : cat)
    if (a.record.name == "etl") {
      a.record.workload.roles[0].kind = "batch";
      rehash(a.record, 0);
    }
  return cat;
}

struct Totals {
  int succeeded = 0, restarted = 0, lost = 0, failed_starts = 0;
};

void run_sequence(uint32_t seed, int steps, Totals& totals) {
  TempDir dir;
  Harness h(dir.path() / "state.db");
  test::FakeBackendOptions fo;
  fo.seed = seed;
  fo.start_delay = 2;
  fo.stop_delay = 1;
  fo.fail_start = 0.05;
  fo.lose = 0.02;
  fo.batch_runs_for = 3;
  test::FakeBackend fake(fo);
  std::mt19937 rng(seed);
  auto cat = catalogue_with_jobs();
  auto base = base_cluster(8);
  h.commit([&](const ClusterState&, Batch& b) { b.put_nodes = base.snapshot.nodes; });
  int generation = 0;
  ops::CycleOptions options;
  options.controller.max_backoff_ms = 100;

  for (int step = 0; step < steps; ++step) {
    std::string what = random_change(h, rng, cat, generation);
    if (what.empty()) continue;
    INFO(fmt::format("seed {} step {}: {}", seed, step, what));
    // Cycles with the backend misbehaving; then cycles until it settles, with the chaos
    // off (a lost copy or a failed start is repaired by a later cycle).
    for (int k = 0; k < 4; ++k) {
      auto r = ops::run_cycle(*h.state, fake, *h.clock, "op-cycle", options);
      REQUIRE(r);
      h.clock->advance(std::chrono::milliseconds(50));
    }
    test::FakeBackendOptions calm = fo;
    calm.fail_start = 0;
    calm.lose = 0;
    fake.set_options(calm);
    bool settled = false;
    for (int k = 0; k < 200 && !settled; ++k) {
      auto r = ops::run_cycle(*h.state, fake, *h.clock, "op-cycle", options);
      REQUIRE(r);
      REQUIRE(r->errors.empty());
      settled = r->converged && fake.quiet();
      h.clock->advance(std::chrono::milliseconds(60));
    }
    fake.set_options(fo);
    CHECK(settled);
    auto after = h.state->load();
    REQUIRE(after);
    auto bad = violations(*after);
    CHECK(bad == std::vector<std::string>{});
    auto mismatch = settled ? mismatches(*after, fake) : std::vector<std::string>{};
    CHECK(mismatch == std::vector<std::string>{});
    CHECK(fake.violations == std::vector<std::string>{});
    if (!bad.empty() || !mismatch.empty() || !fake.violations.empty() || !settled) return;
  }
  auto events = h.state->events_after(0);
  REQUIRE(events);
  for (const auto& e : *events) {
    totals.succeeded += e.reason == "Completed";
    totals.restarted += e.reason == "Restarted";
    totals.lost += e.reason == "Lost";
  }
  totals.failed_starts += fake.failed;
}

TEST_CASE("the runner keeps the invariants against a backend that starts late, fails and loses copies",
          "[ops][cycle][property]") {
  Totals totals;
  for (uint32_t seed = 1; seed <= 6; ++seed) run_sequence(seed, 30, totals);
  // The misbehaviour really happened, and jobs really finished.
  CHECK(totals.succeeded > 0);
  CHECK(totals.failed_starts > 0);
  CHECK(totals.lost > 0);
  CHECK(totals.restarted > 0);
}

}  // namespace
}  // namespace gaia
