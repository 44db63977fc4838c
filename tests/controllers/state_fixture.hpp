#pragma once
// ClusterStates for the controller tests (replicas, migration, rebalance): nodes with
// addresses, subnets and a volume group; apps deployed through plan_submit exactly as
// `gaia submit` deploys them; and instances pinned to chosen nodes when a test needs
// a precise layout.

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "controllers/reconcile.hpp"
#include "controllers/replicas.hpp"
#include "tests/controllers/sim_fixture.hpp"
#include "controllers/submit.hpp"
#include "tests/controllers/cluster_builder.hpp"

namespace gaia::test {

inline Node fixture_node(const std::string& name, int index, int64_t cpu_millis, int64_t mem_gi,
                         const std::string& rack = "") {
  Node n;
  n.name = name;
  n.capacity = res(cpu_millis, mem_gi);
  n.address = fmt::format("10.0.0.{}", index + 1);
  n.instance_subnet = fmt::format("10.0.{}.0/24", 128 + index);
  n.volume_groups.push_back(VolumeGroup{"vg0", "hdd", 1024 * kGi, 0});
  n.rack = rack;
  if (!rack.empty()) n.labels["rack"] = rack;
  return n;
}

inline Role fixture_role(const std::string& name, int replicas, Resources r) {
  Role role;
  role.name = name;
  role.replicas = replicas;
  role.resources = r;
  return role;
}

inline AppToDeploy fixture_app(const std::string& name, std::vector<Role> roles, std::vector<std::string> deps = {},
                               const std::string& tenant = "default") {
  AppToDeploy a;
  a.record.tenant = tenant;
  a.record.name = name;
  a.record.version = "1.0.0";
  a.record.workload.app = name;
  a.record.workload.version = "1.0.0";
  a.record.workload.tenant = tenant;
  a.record.workload.roles = std::move(roles);
  a.record.workload.hash = fmt::format("{:016x}", std::hash<std::string>{}(name));
  a.record.dependencies = std::move(deps);
  return a;
}

// `count` nodes n1..nN of the same size.
inline ClusterState fixture_cluster(int count, int64_t cpu_millis = 4000, int64_t mem_gi = 16) {
  ClusterState s;
  for (int k = 0; k < count; ++k) s.snapshot.nodes.push_back(fixture_node(fmt::format("n{}", k + 1), k, cpu_millis, mem_gi));
  return s;
}

// The state after submitting `apps` and the backend starting what was placed.
inline ClusterState deploy(const ClusterState& s, std::vector<AppToDeploy> apps) {
  return settle_sim(plan_submit(s, apps).after, ControllerContext{1'700'000'000'000, {}}).after;
}

// Puts an app's record in the state without instances, so a test can pin them.
inline void add_record(ClusterState& s, const AppToDeploy& a) {
  s.apps[a.record.tenant + "/" + a.record.name] = a.record;
  for (const auto& r : a.record.workload.roles) s.snapshot.roles[a.record.tenant + "/" + a.record.name + "/" + r.name] = r;
}

// A running instance of an added record's role, pinned to `node` with the next free
// address there.
inline Instance& pin(ClusterState& s, const std::string& app, const std::string& role, int ordinal,
                     const std::string& node, const std::string& tenant = "default") {
  const AppRecord& rec = s.apps.at(tenant + "/" + app);
  const Role* r = nullptr;
  for (const auto& x : rec.workload.roles)
    if (x.name == role) r = &x;
  REQUIRE(r);
  Instance i = new_instance(tenant, app, rec.version, *r, ordinal);
  i.hash = rec.workload.hash;
  i.node = node;
  i.state = InstanceState::Running;
  i.address = allocate_address(*s.find_node(node), s.snapshot.instances);
  for (const auto& v : r->volumes) i.volumes.push_back(VolumeBinding{v.name, node, "vg0", v.size_bytes, v.iops});
  s.snapshot.instances.push_back(std::move(i));
  return s.snapshot.instances.back();
}

// A fixed instant for tests that need a "now": the one test_ctx() runs at.
inline constexpr int64_t kNow = 1'700'000'000'000;

inline ControllerContext test_ctx() { return ControllerContext{1'700'000'000'000, {}}; }

// The state after the default controllers converge.
inline ClusterState settle(const ClusterState& s) {
  auto out = settle_sim(s, test_ctx());
  REQUIRE(out.converged);
  return out.after;
}

// Reconciling twice: the second run does nothing. (The first may still do work other
// controllers own, e.g. the sim usage model filling in usage of pinned instances.)
inline void check_idempotent(const ClusterState& s) {
  auto first = settle_sim(s, test_ctx());
  REQUIRE(first.converged);
  auto again = settle_sim(first.after, test_ctx());
  std::string active;
  for (const auto& a : again.active) active += a + " ";
  INFO("second reconcile: controllers " << active << "; " << again.batch.events.size() << " event(s), first: "
                                        << (again.batch.events.empty() ? "" : again.batch.events.front().reason + " " +
                                                                                  again.batch.events.front().message));
  CHECK(again.batch.empty());
}

inline int count_if_state(const ClusterState& s, const std::function<bool(const Instance&)>& f) {
  int n = 0;
  for (const auto& i : s.snapshot.instances)
    if (f(i)) ++n;
  return n;
}

// `gaia scale db/db --replicas to [--delete-volumes]` as decided on `s`.
inline ScalePlan scale_db(const ClusterState& s, int to, bool delete_volumes = false) {
  const AppRecord& app = s.apps.at("default/db");
  return plan_scale(s, app, app.workload.roles.front(), to, delete_volumes);
}

inline int events_with(const Batch& b, const std::string& reason) {
  int n = 0;
  for (const auto& e : b.events)
    if (e.reason == reason) ++n;
  return n;
}

}  // namespace gaia::test
