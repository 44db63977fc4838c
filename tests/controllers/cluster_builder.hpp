#pragma once
// Builds scheduler scenarios in code: nodes, roles, instances, and applying a decision
// back onto a snapshot the way the controllers will.

#include <fmt/format.h>

#include <map>
#include <string>
#include <vector>

#include "controllers/scheduler.hpp"
#include "lib/cluster.hpp"

namespace gaia::test {

inline constexpr int64_t kGi = 1024LL * 1024 * 1024;

inline Resources res(int64_t cpu_millis, int64_t mem_gi, int64_t gpu = 0) {
  return Resources{cpu_millis, mem_gi * kGi, gpu, 0};
}

class ClusterBuilder {
 public:
  Node& node(const std::string& name, int64_t cpu_millis, int64_t mem_gi, std::map<std::string, std::string> labels = {}) {
    Node n;
    n.name = name;
    n.capacity = res(cpu_millis, mem_gi);
    n.labels = std::move(labels);
    n.address = fmt::format("10.0.0.{}", s.nodes.size() + 1);
    s.nodes.push_back(std::move(n));
    return s.nodes.back();
  }

  Role& role(const std::string& tenant, const std::string& app, const std::string& name, Resources r,
             Priority p = Priority{}) {
    Role& role = s.roles[fmt::format("{}/{}/{}", tenant, app, name)];
    role.name = name;
    role.resources = r;
    role.priority = p;
    return role;
  }

  // An instance of an existing role; pending when `node` is empty, else running there.
  Instance& instance(const std::string& tenant, const std::string& app, const std::string& role, int ordinal,
                     const std::string& node = "") {
    const Role& r = s.roles.at(fmt::format("{}/{}/{}", tenant, app, role));
    Instance in;
    in.tenant = tenant;
    in.app = app;
    in.role = role;
    in.ordinal = ordinal;
    in.request = r.resources;
    in.priority = r.priority;
    in.labels = {{"gaia.io/app", app}, {"gaia.io/role", role}};
    for (const auto& [k, v] : r.labels) in.labels.set(k, v);
    in.node = node;
    in.state = node.empty() ? InstanceState::Pending : InstanceState::Running;
    s.instances.push_back(std::move(in));
    return s.instances.back();
  }

  std::vector<std::string> pending() const {
    std::vector<std::string> out;
    for (const auto& i : s.instances)
      if (i.state == InstanceState::Pending) out.push_back(i.key());
    return out;
  }

  Snapshot s;
};

inline const Placement* find_placement(const Decision& d, const std::string& key) {
  for (const auto& p : d.placements)
    if (p.instance == key) return &p;
  return nullptr;
}

inline const Unschedulable* find_unschedulable(const Decision& d, const std::string& key) {
  for (const auto& u : d.unschedulable)
    if (u.instance == key) return &u;
  return nullptr;
}

inline Instance* find_instance(Snapshot& s, const std::string& key) {
  for (auto& i : s.instances)
    if (i.key() == key) return &i;
  return nullptr;
}

// What the controllers do with a decision: evict victims back to pending, bind
// placements.
inline void apply_decision(Snapshot& s, const Decision& d) {
  for (const auto& p : d.preemptions) {
    Instance* v = find_instance(s, p.victim);
    v->node.clear();
    v->ports.clear();
    v->state = InstanceState::Pending;
  }
  for (const auto& p : d.placements) {
    Instance* i = find_instance(s, p.instance);
    i->node = p.node;
    i->state = InstanceState::Placed;
    i->ports = p.ports;
    i->volumes.insert(i->volumes.end(), p.volumes.begin(), p.volumes.end());
  }
}

// Canonical text of a decision, for determinism checks.
inline std::string decision_text(const Decision& d) {
  std::string out;
  for (const auto& p : d.placements) {
    out += fmt::format("place {} {} {:.6f}", p.instance, p.node, p.score);
    for (const auto& [k, v] : p.ports) out += fmt::format(" {}={}", k, v);
    for (const auto& v : p.volumes) out += fmt::format(" {}@{}", v.volume, v.group);
    out += "\n";
  }
  for (const auto& p : d.preemptions) out += fmt::format("evict {} {} {}\n", p.victim, p.node, p.preemptor);
  for (const auto& u : d.unschedulable) out += fmt::format("pending {} {}\n", u.instance, u.reason);
  return out;
}

}  // namespace gaia::test
