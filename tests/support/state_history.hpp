#pragma once
// Random histories of a store, written as the commands write them (through
// State::commit), and a ClusterState as JSON to compare two in one CHECK: for the tests
// of the states kept between loads (the informer) and between processes (the state file).

#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>
#include <random>

#include "lib/codec.hpp"
#include "lib/state.hpp"

namespace gaia::test {

// Everything a ClusterState holds, as JSON, so two states compare in one CHECK with a
// readable difference.
inline nlohmann::json dump(const ClusterState& st) {
  nlohmann::json j;
  j["nodes"] = st.snapshot.nodes;
  j["tenants"] = st.snapshot.tenants;
  j["instances"] = st.snapshot.instances;
  j["roles"] = st.snapshot.roles;
  j["profile"] = st.snapshot.profile;
  j["apps"] = nlohmann::json::object();
  for (const auto& [k, a] : st.apps) j["apps"][k] = a;
  j["seq"] = st.seq;
  j["seq_revision"] = st.seq_revision;
  j["revision"] = st.revision;
  j["settings"] = st.settings;
  for (const auto& [n, h] : st.heartbeats) j["heartbeats"][n] = {h.at_ms, h.agent};
  return j;
}

inline AppRecord app(const std::string& name, int roles) {
  AppRecord a;
  a.tenant = "default";
  a.name = name;
  a.version = "1.0.0";
  for (int r = 0; r < roles; ++r) {
    Role role;
    role.name = fmt::format("r{}", r);
    role.replicas = r + 1;
    a.workload.roles.push_back(role);
  }
  return a;
}

inline Instance instance(const std::string& app_name, int ordinal, const std::string& node) {
  Instance i;
  i.tenant = "default";
  i.app = app_name;
  i.role = "r0";
  i.ordinal = ordinal;
  i.node = node;
  return i;
}

// One random change, made as the commands make them: through State::commit on the state
// the writer loaded.
inline void random_change(State& writer, std::mt19937& rng, int step) {
  auto base = writer.load();
  REQUIRE(base);
  Batch b;
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  switch (pick(9)) {
    case 0: {
      Node n;
      n.name = fmt::format("n{:02d}", pick(12));
      n.capacity.cpu_millis = 1000 * (1 + pick(8));
      b.put_nodes.push_back(n);
      break;
    }
    case 1:
      if (!base->snapshot.nodes.empty())
        b.delete_nodes.push_back(base->snapshot.nodes[pick(static_cast<int>(base->snapshot.nodes.size()))].name);
      break;
    case 2:
      b.put_apps.push_back(app(fmt::format("a{}", pick(5)), 1 + pick(3)));
      break;
    case 3:
      if (!base->apps.empty()) {
        // An observation: only the status moves.
        auto it = std::next(base->apps.begin(), pick(static_cast<int>(base->apps.size())));
        AppRecord a = it->second;
        a.status = a.status == "Ready" ? "Deploying" : "Ready";
        if (pick(2)) a.failed_roles["r0"] = fmt::format("exhausted retries at step {}", step);
        else a.failed_roles.clear();
        b.put_apps.push_back(a);
      }
      break;
    case 4:
      if (!base->apps.empty()) {
        auto it = std::next(base->apps.begin(), pick(static_cast<int>(base->apps.size())));
        b.delete_apps.emplace_back(it->second.tenant, it->second.name);
      }
      break;
    case 5:
      for (int k = 0; k < 1 + pick(6); ++k)
        b.put_instance(instance(fmt::format("a{}", pick(5)), pick(20), fmt::format("n{:02d}", pick(12))));
      break;
    case 6:
      // Up to three at once, so one refresh drops several from the kept list.
      for (int k = 0, n = 1 + pick(3); k < n && !base->snapshot.instances.empty(); ++k) {
        std::string key = base->snapshot.instances[pick(static_cast<int>(base->snapshot.instances.size()))].key();
        if (std::find(b.delete_instances.begin(), b.delete_instances.end(), key) == b.delete_instances.end())
          b.delete_instances.push_back(key);
      }
      break;
    case 7:
      b.put_settings[fmt::format("s{}", pick(3))] = nlohmann::json{{"v", step}};
      break;
    default: {
      Tenant t;
      t.name = fmt::format("t{}", pick(4));
      b.put_tenants.push_back(t);
      SchedulerProfile p;
      p.w_balance = pick(10);
      b.profile = p;
      break;
    }
  }
  b.event("Step", fmt::format("step {}", step));
  REQUIRE(writer.commit(*base, b, fmt::format("op-{}", step)).value());
  if (pick(4) == 0) REQUIRE(writer.write_heartbeats({fmt::format("n{:02d}", pick(12))}, "pid 1 on test"));
}

}  // namespace gaia::test
