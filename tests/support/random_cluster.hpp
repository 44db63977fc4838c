#pragma once
// The cluster the randomized invariant tests drive (tests/controllers and tests/ops):
// a catalogue of apps with a prod dependency chain and competing nonprod work, a small
// cluster in three racks, and the invariants every state must satisfy.

#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "controllers/submit.hpp"
#include "store/sqlite_store.hpp"
#include "tests/temp_dir.hpp"

namespace gaia::test::random_cluster {

inline constexpr int64_t kGiB = 1024LL * 1024 * 1024;

inline Resources gib(int64_t cpu_millis, int64_t mem_gi) { return Resources{cpu_millis, mem_gi * kGiB, 0, 0}; }


using test::TempDir;

inline Priority prio(Band b, int level = 100) {
  Priority p;
  p.band = b;
  p.level = level;
  return p;
}

inline Role role(const std::string& name, int replicas, Resources r, Priority p, int min_available = 0) {
  Role x;
  x.name = name;
  x.replicas = replicas;
  x.resources = r;
  x.priority = p;
  x.min_available = min_available;
  x.backoff_ms = 10;
  return x;
}

inline void rehash(AppRecord& a, int generation) {
  std::string h = fmt::format("{}|{}|{}", a.name, a.version, generation);
  for (const auto& r : a.workload.roles)
    h += fmt::format("|{}:{}:{}:{}", r.name, r.replicas, r.resources.cpu_millis, r.resources.memory_bytes);
  a.workload.hash = fmt::format("{:016x}", std::hash<std::string>{}(h));
}

inline AppToDeploy app(const std::string& name, std::vector<Role> roles, std::vector<std::string> deps = {}) {
  AppToDeploy a;
  a.record.tenant = "default";
  a.record.name = name;
  a.record.version = "1.0.0";
  a.record.workload.app = name;
  a.record.workload.version = "1.0.0";
  a.record.workload.tenant = "default";
  a.record.workload.roles = std::move(roles);
  a.record.dependencies = std::move(deps);
  rehash(a.record, 0);
  return a;
}

// The apps the sequences draw from: a prod chain (db <- api <- web), prod and nonprod
// batch work that competes for the same nodes.
inline std::vector<AppToDeploy> catalogue() {
  return {
      app("db", {role("server", 3, gib(1000, 4), prio(Band::Prod, 300), 2)}),
      app("api", {role("server", 4, gib(500, 2), prio(Band::Prod, 200), 2)}, {"db"}),
      app("web", {role("frontend", 3, gib(250, 1), prio(Band::Prod)), role("worker", 2, gib(500, 1), prio(Band::Prod))},
          {"api"}),
      app("etl", {role("job", 6, gib(1000, 3), prio(Band::Nonprod, 50))}),
      app("train", {role("gpuless", 4, gib(2000, 6), prio(Band::Nonprod, 10))}),
  };
}

inline ClusterState base_cluster(int nodes) {
  ClusterState s;
  for (int i = 0; i < nodes; ++i) {
    Node n;
    n.name = fmt::format("n{:02d}", i);
    n.capacity = gib(4000, 16);
    n.address = fmt::format("10.0.0.{}", i + 1);
    n.instance_subnet = fmt::format("10.0.{}.0/24", 128 + i);
    n.labels["rack"] = n.rack = fmt::format("r{}", i % 3);
    s.snapshot.nodes.push_back(std::move(n));
  }
  return s;
}

// The test's own count of a role's wanted replicas (the scale override, else the
// spec's), named apart from gaia::desired_replicas, which argument-dependent lookup
// would otherwise also find when controllers/replicas.hpp is in the same translation unit.
inline int scaled_replicas(const AppRecord& a, const Role& r) {
  auto it = a.scale.find(r.name);
  return it != a.scale.end() ? it->second : r.replicas;
}

// Every invariant the issue names; returns what is violated, empty when all hold.
inline std::vector<std::string> violations(const ClusterState& st) {
  std::vector<std::string> out;
  std::map<std::string, const Node*> nodes;
  for (const auto& n : st.snapshot.nodes) nodes[n.name] = &n;
  std::map<std::string, Resources> prod_requests;
  std::map<std::string, int> per_role;
  for (const auto& i : st.snapshot.instances) {
    bool holds = !i.node.empty() && (i.state == InstanceState::Placed || i.state == InstanceState::Running);
    if (holds) {
      auto n = nodes.find(i.node);
      if (n == nodes.end()) out.push_back(fmt::format("{} is on unknown node {}", i.key(), i.node));
      else if (n->second->state == NodeState::Down) out.push_back(fmt::format("{} runs on down node {}", i.key(), i.node));
      if (i.priority.band != Band::Nonprod) {
        auto& r = prod_requests[i.node];
        r.cpu_millis += i.request.cpu_millis;
        r.memory_bytes += i.request.memory_bytes;
      }
    }
    if (i.state == InstanceState::Pending && i.pending_reason.empty())
      out.push_back(fmt::format("{} is pending without a reason", i.key()));
    if (i.state == InstanceState::Failed && i.failure.empty())
      out.push_back(fmt::format("{} failed without a reason", i.key()));
    per_role[i.tenant + "/" + i.app + "/" + i.role]++;
  }
  for (const auto& [name, r] : prod_requests) {
    const Node* n = nodes[name];
    if (!n) continue;
    if (r.cpu_millis > n->capacity.cpu_millis || r.memory_bytes > n->capacity.memory_bytes)
      out.push_back(fmt::format("prod requests on {} exceed its capacity ({}m cpu, {} GiB)", name, r.cpu_millis,
                                r.memory_bytes / kGiB));
  }
  for (const auto& [id, a] : st.apps)
    for (const auto& r : a.workload.roles) {
      int want = scaled_replicas(a, r);
      int have = per_role[a.tenant + "/" + a.name + "/" + r.name];
      if (want != have) out.push_back(fmt::format("{}/{} has {} instance(s), wants {}", a.name, r.name, have, want));
    }
  return out;
}


// A real SQLite store (in a test's temp dir) with the State facade and a manual clock.
struct StoreHarness {
  explicit StoreHarness(const std::filesystem::path& db) {
    SqliteStoreOptions o;
    o.synchronous_full = false;  // Durability is not under test here; speed is welcome.
    o.clock = clock;
    store = std::move(*SqliteStore::open(db, o));
    state = std::make_unique<State>(*store, *clock);
  }

  ClusterState commit(const std::function<void(const ClusterState&, Batch&)>& change) {
    auto st = state->update("op-test", [&](const ClusterState& s, Batch& b) -> Result<void> {
      change(s, b);
      return {};
    });
    REQUIRE(st);
    return *st;
  }

  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>();
  std::unique_ptr<SqliteStore> store;
  std::unique_ptr<State> state;
};

// One random change to the cluster, committed through `h`: a submit of a catalogue app
// with its dependencies (as resolve would), a scale, a node failing or recovering, a
// drain, a re-render, or time passing. Returns what it did; "" when the change drawn
// does not apply (nothing to scale yet, a drain of a down node).
inline std::string random_change(StoreHarness& h, std::mt19937& rng, const std::vector<AppToDeploy>& cat,
                                 int& generation) {
  auto pick = [&](size_t n) { return static_cast<size_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
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
      if (st->apps.empty()) return "";
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
      if (n.state == NodeState::Down) return "";
      n.state = NodeState::Cordoned;
      n.draining = true;
      what = "drain " + n.name;
      h.commit([&](const ClusterState&, Batch& b) { b.put_nodes.push_back(n); });
      break;
    }
    case 5: {  // A config change re-rendered an app: same roles, new workload hash.
      if (st->apps.empty()) return "";
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
  return what;
}

}  // namespace gaia::test::random_cluster
