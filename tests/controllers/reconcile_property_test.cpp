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

#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"
#include "lib/sqlite_store.hpp"
#include "tests/controllers/cluster_builder.hpp"
#include "tests/support/random_cluster.hpp"

namespace gaia {
namespace {

using test::kGi;
using test::res;
using namespace test::random_cluster;


struct Harness : StoreHarness {
  using StoreHarness::StoreHarness;

  ReconcileOutcome reconcile_once() {
    ReconcileOutcome out;
    commit([&](const ClusterState& s, Batch& b) {
      out = reconcile(s, ControllerContext{to_millis(clock->now()), {}});
      b = out.batch;
    });
    return out;
  }
};

void run_sequence(uint32_t seed, int steps) {
  TempDir dir;
  Harness h(dir.path() / "state.db");
  std::mt19937 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  auto cat = catalogue();
  auto base = base_cluster(8);
  h.commit([&](const ClusterState&, Batch& b) { b.put_nodes = base.snapshot.nodes; });
  int generation = 0;
  int64_t last_seq = 0;

  for (int step = 0; step < steps; ++step) {
    auto st = h.state->load();
    REQUIRE(st);
    std::string what;
    switch (pick(7)) {
      case 0: {  // Submit one app of the catalogue with its dependencies (as resolve would).
        auto& a = cat[pick(cat.size())];
        std::vector<AppToDeploy> chain;
        std::function<void(const std::string&)> add = [&](const std::string& name) {
          for (auto& c : cat)
            if (c.record.name == name) {
              for (const auto& d : c.record.dependencies) add(d);
              bool seen = false;
              for (auto& x : chain) seen |= x.record.name == name;
              if (!seen) chain.push_back(c);
            }
        };
        add(a.record.name);
        what = "submit " + a.record.name;
        h.commit([&](const ClusterState& s, Batch& b) { b = plan_submit(s, chain).batch; });
        break;
      }
      case 1: {  // Scale a running app's role.
        if (st->apps.empty()) continue;
        auto it = std::next(st->apps.begin(), static_cast<long>(pick(st->apps.size())));
        AppRecord rec = it->second;
        const Role& r = rec.workload.roles[pick(rec.workload.roles.size())];
        int n = static_cast<int>(pick(7));
        rec.scale[r.name] = n;
        what = fmt::format("scale {}/{} to {}", rec.name, r.name, n);
        h.commit([&](const ClusterState&, Batch& b) { b.put_apps.push_back(rec); });
        break;
      }
      case 2: {  // A node fails.
        Node n = st->snapshot.nodes[pick(st->snapshot.nodes.size())];
        n.state = NodeState::Down;
        n.draining = false;
        what = "fail " + n.name;
        h.commit([&](const ClusterState&, Batch& b) { b.put_nodes.push_back(n); });
        break;
      }
      case 3: {  // A node recovers (or is uncordoned after a drain).
        Node n = st->snapshot.nodes[pick(st->snapshot.nodes.size())];
        n.state = NodeState::Ready;
        n.draining = false;
        what = "recover " + n.name;
        h.commit([&](const ClusterState&, Batch& b) { b.put_nodes.push_back(n); });
        break;
      }
      case 4: {  // Drain a node.
        Node n = st->snapshot.nodes[pick(st->snapshot.nodes.size())];
        if (n.state == NodeState::Down) continue;
        n.state = NodeState::Cordoned;
        n.draining = true;
        what = "drain " + n.name;
        h.commit([&](const ClusterState&, Batch& b) { b.put_nodes.push_back(n); });
        break;
      }
      case 5: {  // A config change re-rendered an app: same roles, new workload hash.
        if (st->apps.empty()) continue;
        auto it = std::next(st->apps.begin(), static_cast<long>(pick(st->apps.size())));
        AppRecord rec = it->second;
        rehash(rec, ++generation);
        what = "re-render " + rec.name;
        h.commit([&](const ClusterState&, Batch& b) { b.put_apps.push_back(rec); });
        break;
      }
      case 6: {  // Time passes (timers such as restart back-off and reclamation fire).
        h.clock->advance(std::chrono::milliseconds(static_cast<int64_t>(pick(120'000))));
        what = "time passes";
        break;
      }
    }
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
