// The lifecycle's matching of instances with observed copies (controllers/lifecycle.cpp)
// takes one of two paths: an observation in key order (the sim backend's) is walked in
// place, any other gets a hash table. Both must decide the same, whatever the mix of
// states, duplicate copies, stale generations and copies of instances that are gone;
// and the start gates built for a few instances must answer for them as the gates of
// the whole state do.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <tuple>

#include "controllers/lifecycle.hpp"
#include "lib/codec.hpp"
#include "tests/controllers/runtime_fixture.hpp"

namespace gaia {
namespace {

using test::kT0;
using test::res;

// web (role fe, stateless) and db (role data, with a volume), api depends on web.
ClusterState random_state() {
  test::ClusterBuilder b;
  for (int n = 0; n < 3; ++n) b.node(fmt::format("n{}", n), 64000, 256);
  b.role("default", "web", "fe", res(100, 1));
  b.role("default", "db", "data", res(100, 1));
  b.role("default", "api", "be", res(100, 1));
  const char* apps[][2] = {{"web", "fe"}, {"db", "data"}, {"api", "be"}};
  for (const auto& [app, role] : apps) {
    int count = *rc::gen::inRange(0, 12);
    for (int k = 0; k < count; ++k) {
      int node = *rc::gen::inRange(-1, 3);
      b.instance("default", app, role, k, node < 0 ? "" : fmt::format("n{}", node));
    }
  }
  ClusterState s = test::runtime_state(b);
  if (auto it = s.apps.find("default/api"); it != s.apps.end()) it->second.dependencies = {"web"};
  for (auto& i : s.snapshot.instances) {
    i.generation = *rc::gen::inRange(1, 4);
    if (i.app == "db") i.volumes.push_back(VolumeBinding{"data", i.node, "local", 1 << 20, 0});
    if (i.node.empty()) {
      i.state = InstanceState::Pending;
      continue;
    }
    i.state = *rc::gen::element(InstanceState::Placed, InstanceState::Running, InstanceState::Terminating,
                                InstanceState::Failed);
    i.started_ms = kT0 - 1000;
  }
  std::sort(s.snapshot.instances.begin(), s.snapshot.instances.end(),
            [](const Instance& a, const Instance& b) { return a.key() < b.key(); });
  return s;
}

// Up to two copies per instance, some on other nodes or of other generations, and
// copies of instances that do not exist.
std::vector<ObservedCopy> random_copies(const ClusterState& s) {
  std::vector<ObservedCopy> out;
  auto add = [&](const std::string& key, const std::string& node, int64_t generation) {
    ObservedCopy c;
    c.instance = key;
    c.node = node;
    c.generation = generation;
    c.phase = *rc::gen::element(CopyPhase::Starting, CopyPhase::Running, CopyPhase::Exited, CopyPhase::Failed);
    c.exit_code = c.phase == CopyPhase::Exited ? *rc::gen::inRange(0, 2) : 0;
    c.started_ms = kT0 - 500;
    out.push_back(c);
  };
  for (const auto& i : s.snapshot.instances) {
    int copies = *rc::gen::inRange(0, 3);
    for (int k = 0; k < copies; ++k) {
      bool current = *rc::gen::arbitrary<bool>();
      add(i.key(), current && !i.node.empty() ? i.node : fmt::format("n{}", *rc::gen::inRange(0, 3)),
          current ? i.generation : *rc::gen::inRange(0, 4));
    }
  }
  int orphans = *rc::gen::inRange(0, 4);
  for (int k = 0; k < orphans; ++k) add(fmt::format("{}.gone.old.default", k), "n0", 1);
  return out;
}

std::string describe(const Batch& b) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& i : b.put_instances) j.push_back(i);
  for (const auto& e : b.events) j.push_back({e.reason, e.instance, e.message});
  for (const auto& a : b.put_apps) j.push_back({a.tenant, a.name, a.status});
  return j.dump();
}

using StopRow = std::tuple<std::string, std::string, int64_t, std::string, bool>;

std::vector<StopRow> stops_of(const Actuation& a) {
  std::vector<StopRow> out;
  for (const auto& s : a.stops) out.emplace_back(s.instance, s.node, s.generation, s.reason, s.evict);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("lifecycle: an observation in key order and the same copies in another order decide alike (property)",
          "[lifecycle][property]") {
  bool ok = rc::check("both matching paths agree", [] {
    ClusterState s = random_state();
    std::vector<ObservedCopy> copies = random_copies(s);
    Observation shuffled, sorted;
    shuffled.copies = copies;
    std::mt19937 rng(*rc::gen::arbitrary<uint32_t>());
    std::shuffle(shuffled.copies.begin(), shuffled.copies.end(), rng);
    // The copies of one instance keep their relative order: the last current copy of
    // an instance is the one that counts, on both paths.
    sorted.copies = shuffled.copies;
    std::stable_sort(sorted.copies.begin(), sorted.copies.end(),
                     [](const ObservedCopy& a, const ObservedCopy& b) { return a.instance < b.instance; });

    RC_ASSERT(describe(observe_instances(s, sorted, kT0)) == describe(observe_instances(s, shuffled, kT0)));
    Actuation a = plan_actuation(s, sorted), b = plan_actuation(s, shuffled);
    RC_ASSERT(a.held == b.held);
    RC_ASSERT(a.starts.size() == b.starts.size());
    for (size_t k = 0; k < a.starts.size(); ++k) RC_ASSERT(a.starts[k].instance.key() == b.starts[k].instance.key());
    RC_ASSERT(stops_of(a) == stops_of(b));
  });
  CHECK(ok);
}

TEST_CASE("lifecycle: lookups behind the walk of a key-ordered observation still find their copies", "[lifecycle]") {
  // The state's instances out of key order (a state built by hand): the walk of the
  // observation must search backwards as well as forwards.
  test::ClusterBuilder b;
  b.node("n1", 64000, 256);
  b.role("default", "web", "fe", res(100, 1));
  for (int k = 0; k < 30; ++k) b.instance("default", "web", "fe", k, "n1");
  ClusterState s = test::runtime_state(b);
  Observation obs;
  for (auto& i : s.snapshot.instances) {
    i.state = InstanceState::Placed;
    i.generation = 1;
    ObservedCopy c;
    c.instance = i.key();
    c.node = "n1";
    c.generation = 1;
    c.phase = CopyPhase::Running;
    obs.copies.push_back(c);
  }
  std::sort(obs.copies.begin(), obs.copies.end(),
            [](const ObservedCopy& x, const ObservedCopy& y) { return x.instance < y.instance; });
  std::reverse(s.snapshot.instances.begin(), s.snapshot.instances.end());
  Batch seen = observe_instances(s, obs, kT0);
  CHECK(seen.put_instances.size() == 30);  // Every one found running.
  CHECK(test::count_events(seen, "Started") == 30);
  Actuation a = plan_actuation(s, obs);
  CHECK(a.starts.empty());  // Every one has its copy.
  CHECK(a.stops.empty());
}

TEST_CASE("lifecycle: start gates built for a few instances answer as those of the whole state (property)",
          "[lifecycle][property]") {
  bool ok = rc::check("gates agree", [] {
    ClusterState s = random_state();
    std::vector<const Instance*> some;
    for (const auto& i : s.snapshot.instances)
      if (*rc::gen::arbitrary<bool>()) some.push_back(&i);
    StartGates all(s), few(s, some);
    for (const Instance* i : some) RC_ASSERT(few.reason(*i) == all.reason(*i));
  });
  CHECK(ok);
}

}  // namespace gaia
