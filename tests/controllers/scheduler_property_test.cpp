#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <algorithm>
#include <map>
#include <set>

#include "controllers/explain.hpp"
#include "controllers/scheduler.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;
using namespace gaia::test;

namespace {

void build_random_cluster(ClusterBuilder& b) {
  int nodes = *rc::gen::inRange(1, 7);
  for (int i = 0; i < nodes; ++i) {
    Node& n = b.node(fmt::format("n{}", i), *rc::gen::inRange(1, 9) * 1000, *rc::gen::inRange(1, 17),
                     {{"disk", *rc::gen::element<std::string>("hdd", "ssd")},
                      {"zone", fmt::format("z{}", *rc::gen::inRange(0, 2))},
                      {"rack", fmt::format("r{}", *rc::gen::inRange(0, 3))}});
    n.port_min = 20000;
    n.port_max = 20000 + *rc::gen::inRange(0, 4);
    if (*rc::gen::arbitrary<bool>())
      n.volume_groups = {VolumeGroup{"vg", "ssd", *rc::gen::inRange(1, 200) * kGi, *rc::gen::inRange(0, 5000)}};
    if (*rc::gen::inRange(0, 5) == 0) n.state = NodeState::Cordoned;
  }
  Tenant t{"t1", {}, {}};
  if (*rc::gen::arbitrary<bool>()) t.quota.cpu_millis = *rc::gen::inRange(1, 40) * 1000;
  if (*rc::gen::arbitrary<bool>()) t.quota.instances = *rc::gen::inRange(1, 20);
  b.s.tenants.push_back(t);
  b.s.profile.strategy = *rc::gen::element<std::string>("spread", "stack");
  // Half the clusters declare their classes: ssd on the nodes, and a claim pool "gold",
  // sometimes sized, sometimes reachable from one zone only.
  if (*rc::gen::arbitrary<bool>()) {
    StorageClass gold{"gold", StorageKind::Claim, "", -1, {}};
    // Mostly sized, and small enough that the pool runs out in one schedule() call.
    if (*rc::gen::inRange(0, 4) != 0) gold.capacity_bytes = *rc::gen::inRange(1, 150) * kGi;
    if (*rc::gen::arbitrary<bool>()) gold.node_selector = {{"zone", fmt::format("z{}", *rc::gen::inRange(0, 2))}};
    b.s.storage_classes = {StorageClass{"ssd", StorageKind::Local, "", -1, {}}, gold};
  }
}

void add_random_roles(ClusterBuilder& b, const std::string& app, bool nonprod_only) {
  int roles = *rc::gen::inRange(1, 5);
  for (int r = 0; r < roles; ++r) {
    Priority p{nonprod_only ? Band::Nonprod : *rc::gen::element(Band::Nonprod, Band::Prod, Band::Sys),
               *rc::gen::inRange(0, 3) * 100};
    std::string name = fmt::format("r{}", r);
    Role& role = b.role("t1", app, name, res(*rc::gen::inRange(1, 16) * 250, *rc::gen::inRange(1, 9)), p);
    if (*rc::gen::inRange(0, 3) == 0) role.node_selector = {{"disk", "ssd"}};
    if (*rc::gen::inRange(0, 3) == 0) {
      AffinityTerm anti;
      anti.target = AffinityTerm::Target::Instance;
      anti.match = {{"gaia.io/role", "In", {name}}, {"gaia.io/app", "In", {app}}};
      anti.topology = *rc::gen::element<std::string>("node", "rack");
      role.required_anti_affinity = {anti};
    }
    if (*rc::gen::inRange(0, 3) == 0) role.ports.push_back(Port{"fixed", 80, "TCP"});
    if (*rc::gen::inRange(0, 3) == 0) role.ports.push_back(Port{"dyn", 0, "TCP"});
    if (*rc::gen::inRange(0, 4) == 0)
      role.volumes = {Volume{"data", *rc::gen::inRange(1, 60) * kGi, "ssd", *rc::gen::inRange(0, 2000), "/d"}};
    if (!b.s.storage_classes.empty() && *rc::gen::arbitrary<bool>())
      role.volumes.push_back(Volume{"pool", *rc::gen::inRange(1, 80) * kGi, "gold", 0, "/pool"});
    if (*rc::gen::inRange(0, 4) == 0) role.near = app + "/r0";
    int replicas = *rc::gen::inRange(1, 6);
    for (int i = 0; i < replicas; ++i) b.instance("t1", app, name, i);
  }
}

// Requests, host ports and volume groups per node never exceed what the node has; claim
// pools never hold more than their capacity, and claim volumes are only on nodes that
// can attach their class.
void check_capacity(const Snapshot& s) {
  std::map<std::string, Resources> used;
  std::map<std::string, std::set<int>> ports;
  std::map<std::pair<std::string, std::string>, int64_t> vg_used;
  std::map<std::string, int64_t> pool_used;
  for (const auto& i : s.instances) {
    for (const auto& v : i.volumes) {
      if (!claim_binding(v)) {
        vg_used[{v.node, v.group}] += v.size_bytes;
        continue;
      }
      pool_used[v.group] += v.size_bytes;
      const StorageClass* c = find_storage_class(s, v.group);
      RC_ASSERT(c != nullptr);
      RC_ASSERT(c->kind == StorageKind::Claim);
      if (i.node.empty()) continue;
      for (const auto& n : s.nodes)
        if (n.name == i.node) RC_ASSERT(can_attach_class(n, *c));
    }
    if (i.node.empty() || i.state == InstanceState::Pending) continue;
    used[i.node].cpu_millis += i.request.cpu_millis;
    used[i.node].memory_bytes += i.request.memory_bytes;
    for (const auto& [name, port] : i.ports) RC_ASSERT(ports[i.node].insert(port).second);
  }
  for (const auto& n : s.nodes) {
    RC_ASSERT(used[n.name].cpu_millis <= n.capacity.cpu_millis);
    RC_ASSERT(used[n.name].memory_bytes <= n.capacity.memory_bytes);
    for (const auto& vg : n.volume_groups) RC_ASSERT((vg_used[{n.name, vg.name}] <= vg.size_bytes));
  }
  for (const auto& c : s.storage_classes)
    if (c.kind == StorageKind::Claim && c.capacity_bytes >= 0) RC_ASSERT(pool_used[c.name] <= c.capacity_bytes);
}

// Every placed instance has exactly one binding for each volume of its role.
void check_volumes_bound(const Snapshot& s) {
  for (const auto& i : s.instances) {
    if (i.node.empty()) continue;
    const Role& role = s.roles.at(fmt::format("{}/{}/{}", i.tenant, i.app, i.role));
    RC_ASSERT(i.volumes.size() == role.volumes.size());
    for (const auto& v : role.volumes)
      RC_ASSERT(std::count_if(i.volumes.begin(), i.volumes.end(),
                              [&](const VolumeBinding& b) { return b.volume == v.name; }) == 1);
  }
}

void place_one(Snapshot& s, const Placement& p) {
  Instance* i = find_instance(s, p.instance);
  i->node = p.node;
  i->state = InstanceState::Placed;
  i->ports = p.ports;
  i->volumes.insert(i->volumes.end(), p.volumes.begin(), p.volumes.end());
}

}  // namespace

TEST_CASE("property: no node over capacity and every placement passes all filters", "[scheduler]") {
  bool ok = rc::check("placements are feasible", [] {
    ClusterBuilder b;
    build_random_cluster(b);
    add_random_roles(b, "app", false);
    Decision d = schedule(b.s, b.pending());
    RC_ASSERT(d.preemptions.empty());  // Nothing lower-priority occupies a node.
    RC_ASSERT(d.placements.size() + d.unschedulable.size() == b.pending().size());
    // Replay the placements one by one: each must pass every filter, judged by the
    // explanation code path against the cluster as it was at that moment.
    Snapshot s = b.s;
    for (const auto& p : d.placements) {
      auto e = explain(s, p.instance, p.node);
      RC_ASSERT(e.has_value());
      RC_ASSERT(e->nodes.size() == 1u);
      if (!e->nodes[0].feasible) RC_FAIL(fmt::format("{} on {}: {}", p.instance, p.node, e->nodes[0].failures.at(0).message));
      place_one(s, p);
    }
    check_capacity(s);
    check_volumes_bound(s);
    // Unschedulable instances really fit nowhere in the final state (the scheduler did
    // not give up early), unless preemption was their only hope.
    for (const auto& u : d.unschedulable) {
      auto e = explain(s, u.instance);
      RC_ASSERT(e.has_value());
      RC_ASSERT(e->fitting == 0);
    }
  });
  REQUIRE(ok);
}

TEST_CASE("property: preemption keeps nodes within capacity", "[preemption]") {
  bool ok = rc::check("preemption is feasible", [] {
    ClusterBuilder b;
    build_random_cluster(b);
    add_random_roles(b, "batch", true);
    apply_decision(b.s, schedule(b.s, b.pending()));
    check_capacity(b.s);
    add_random_roles(b, "shop", false);
    Decision d = schedule(b.s, b.pending());
    for (const auto& p : d.preemptions) {
      const Instance* victim = find_instance(b.s, p.victim);
      const Instance* preemptor = find_instance(b.s, p.preemptor);
      RC_ASSERT(victim->priority < preemptor->priority);
      RC_ASSERT(victim->priority.preemptible);
      RC_ASSERT(victim->node == p.node);
    }
    apply_decision(b.s, d);
    check_capacity(b.s);
    check_volumes_bound(b.s);
  });
  REQUIRE(ok);
}
