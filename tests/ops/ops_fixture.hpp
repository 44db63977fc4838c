#pragma once
// A workspace for the workflow tests: a temporary SQLite store with the State facade, a
// manual clock, nodes committed the way `gaia node add` commits them, and small app
// specs written next to it. Everything ops/ needs, and nothing of the CLI.

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "controllers/node_ops.hpp"
#include "lib/sim_backend.hpp"
#include "store/sqlite_store.hpp"
#include "lib/state.hpp"
#include "ops/center_changes.hpp"
#include "ops/workspace.hpp"
#include "tests/controllers/state_fixture.hpp"
#include "tests/temp_dir.hpp"

namespace gaia::test {

// The repository's examples folder (read in place: workflows only read specs).
inline std::filesystem::path ops_examples_dir() { return std::filesystem::path(GAIA_SOURCE_DIR) / "examples"; }

// A node big enough for the examples' volumes (kafka asks for 4Ti of hdd at 500 iops,
// zookeeper for an ssd).
inline Node ops_node(int index, int64_t cpu_millis, int64_t mem_gi) {
  Node n = fixture_node(fmt::format("n{}", index + 1), index, cpu_millis, mem_gi);
  n.volume_groups = {VolumeGroup{"vg0", "hdd", 64 * 1024 * kGi, 100000},
                     VolumeGroup{"vg1", "ssd", 4 * 1024 * kGi, 100000}};
  return n;
}

class OpsFixture {
 public:
  OpsFixture() {
    auto store = SqliteStore::open(m_dir.path() / "gaia.db");
    REQUIRE(store);
    m_store = std::move(*store);
    m_state = std::make_unique<State>(*m_store, m_clock);
    m_backend = std::make_unique<SimBackend>(m_store.get());
  }

  // The workspace every workflow takes. No render cache: each test renders for real.
  ops::Workspace ws(const std::string& op = "op-test") const {
    ops::Workspace w{*m_store, *m_state, m_clock, op, {}, {}};
    w.backend = m_backend.get();
    return w;
  }

  const TempDir& dir() const { return m_dir; }
  Store& store() { return *m_store; }
  State& state() { return *m_state; }
  ManualClock& clock() { return m_clock; }
  std::filesystem::path store_path() const { return m_dir.path() / "gaia.db"; }

  ClusterState load() {
    auto st = m_state->load();
    REQUIRE(st);
    return *st;
  }

  int64_t revision() {
    auto r = m_store->revision();
    REQUIRE(r);
    return *r;
  }

  // `count` nodes n1..nN (through decide_node_add, as `gaia node add` does).
  void add_nodes(int count, int64_t cpu_millis = 16000, int64_t mem_gi = 64) {
    auto r = m_state->update("op-nodes", [&](const ClusterState& st, Batch& b) -> Result<void> {
      std::vector<Node> nodes;
      for (int k = 0; k < count; ++k) {
        int index = static_cast<int>(st.snapshot.nodes.size()) + k;
        nodes.push_back(ops_node(index, cpu_millis, mem_gi));
      }
      auto o = decide_node_add(st, nodes);
      if (!o) return fail(o.error());
      b = o->batch;
      return {};
    });
    REQUIRE(r);
  }

  // Nodes written as they are, without retrying what is pending (so the next controller
  // run is what places it).
  void put_nodes(int count, int64_t cpu_millis = 16000, int64_t mem_gi = 64) {
    auto r = m_state->update("op-nodes", [&](const ClusterState& st, Batch& b) -> Result<void> {
      for (int k = 0; k < count; ++k) {
        int index = static_cast<int>(st.snapshot.nodes.size()) + k;
        b.put_nodes.push_back(ops_node(index, cpu_millis, mem_gi));
      }
      return {};
    });
    REQUIRE(r);
  }

  // A one-role app `name` in dir()/`rel` whose replica count is the config key
  // `<name>.replicas` (default 1) and whose output `size` is that count, so a config
  // change re-renders it and changes what its dependents import. `deps_yaml` is added
  // to app.yaml (a dependencies: block); a dependent's env shows the imported size.
  std::filesystem::path write_app(const std::string& rel, const std::string& name, const std::string& deps_yaml = "",
                                  const std::string& dep_alias = "") const {
    m_dir.write(rel + "/app.yaml", fmt::format("name: {}\nversion: 1.0.0\noutputs: [size]\n{}", name, deps_yaml));
    m_dir.write(rel + "/config.jsonnet",
                fmt::format("local gaia = import 'gaia.libsonnet';\n"
                            "{{ replicas: gaia.config('{}.replicas', 1) }}\n",
                            name));
    std::string env = dep_alias.empty() ? "{}" : fmt::format("{{ UPSTREAM: std.toString(deps.{}.size) }}", dep_alias);
    m_dir.write(rel + "/main.jsonnet",
                fmt::format("function(config, deps, app)\n"
                            "  assert std.isNumber(config.replicas) : 'replicas must be a number';\n"
                            "  {{\n"
                            "    roles: {{ main: {{ image: 'busybox:1', replicas: config.replicas,\n"
                            "                      resources: {{ cpu: '100m', memory: '64Mi' }}, env: {} }} }},\n"
                            "    outputs: {{ size: config.replicas }},\n"
                            "  }}\n",
                            env));
    return m_dir.path() / rel;
  }

 private:
  TempDir m_dir;
  ManualClock m_clock;
  std::unique_ptr<SqliteStore> m_store;
  std::unique_ptr<State> m_state;
  std::unique_ptr<SimBackend> m_backend;
};

// Instances of `app` (tenant default) in `state`, and how many of them run.
inline size_t instances_of(const ClusterState& state, const std::string& app) {
  size_t n = 0;
  for (const auto& i : state.snapshot.instances)
    if (i.app == app) ++n;
  return n;
}

inline size_t running_of(const ClusterState& state, const std::string& app) {
  size_t n = 0;
  for (const auto& i : state.snapshot.instances)
    if (i.app == app && i.state == InstanceState::Running) ++n;
  return n;
}

inline bool has_event(const std::vector<TimelineEvent>& events, const std::string& reason) {
  for (const auto& e : events)
    if (e.reason == reason) return true;
  return false;
}

// The change that sets the global config `key` to `value`, decided on the stored centers.
inline ops::CenterChange set_global(OpsFixture& f, const std::string& key, const nlohmann::json& value) {
  auto centers = StoreConfigSource::load(f.store());
  REQUIRE(centers);
  return ops::config_change(std::string(k_global_scope), {ConfigEdit{key, value}}, *centers);
}

}  // namespace gaia::test
