#include <catch2/catch.hpp>

#include <algorithm>

#include "controllers/node_ops.hpp"
#include "tests/controllers/cluster_builder.hpp"

using namespace gaia;

namespace {

// The shared constant, not a copy: in a unity build a second kGi here would make the name
// ambiguous in the files that use gaia::test.
using gaia::test::kGi;

Node make_node(const std::string& name, int64_t cpu, int64_t mem_gi, int index) {
  Node n;
  n.name = name;
  n.capacity = Resources{cpu * 1000, mem_gi * kGi, 0, 0};
  n.address = "10.0.0." + std::to_string(index);
  n.instance_subnet = "10.0." + std::to_string(128 + index) + ".0/24";
  return n;
}

// A state with one app "web" of `replicas` instances needing 4 cpu / 8Gi each, pending.
ClusterState with_pending_app(int replicas) {
  ClusterState s;
  Role r;
  r.name = "frontend";
  r.replicas = replicas;
  r.resources = Resources{4000, 8 * kGi, 0, 0};
  AppRecord a;
  a.tenant = "default";
  a.name = "web";
  a.version = "1.0.0";
  a.status = "Pending";
  a.workload.roles = {r};
  s.apps["default/web"] = a;
  s.snapshot.roles["default/web/frontend"] = r;
  for (int k = 0; k < replicas; ++k) {
    Instance i;
    i.tenant = "default";
    i.app = "web";
    i.role = "frontend";
    i.ordinal = k;
    i.request = r.resources;
    i.labels = {{"gaia.io/app", "web"}, {"gaia.io/role", "frontend"}};
    i.pending_reason = "0/0 nodes fit";
    s.snapshot.instances.push_back(i);
  }
  Tenant t;
  t.name = "default";
  s.snapshot.tenants.push_back(t);
  return s;
}

bool has_event(const Batch& b, const std::string& reason, const std::string& node = "") {
  return std::any_of(b.events.begin(), b.events.end(),
                     [&](const TimelineEvent& e) { return e.reason == reason && (node.empty() || e.node == node); });
}

}  // namespace

TEST_CASE("node ops: cluster create places pending instances and refuses to overwrite", "[node_ops]") {
  ClusterState s = with_pending_app(2);
  ClusterSpec spec;
  spec.name = "lab";
  spec.nodes = {make_node("n1", 8, 16, 1)};
  ensure_default_tenant(spec.tenants);
  auto out = decide_cluster_create(s, spec, false);
  REQUIRE(out.has_value());
  CHECK(has_event(out->batch, "ClusterCreated"));
  // The name is kept for `gaia map`'s title.
  CHECK(out->batch.put_settings.at(keys::k_cluster_name_setting) == "lab");
  CHECK(has_event(out->batch, "NodeAdded", "n1"));
  REQUIRE(out->placed.size() == 2);
  CHECK(out->placed[0].node == "n1");
  CHECK(out->batch.profile.has_value());

  ClusterState after = apply_batch(s, out->batch);
  auto again = decide_cluster_create(after, spec, false);
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error()[0].message.find("already exists") != std::string::npos);
  CHECK(again.error()[0].hint.find("--replace") != std::string::npos);

  // Replacing moves everything onto the new nodes.
  ClusterSpec bigger;
  bigger.nodes = {make_node("m1", 4, 8, 5), make_node("m2", 4, 8, 6)};
  auto replaced = decide_cluster_create(after, bigger, true);
  REQUIRE(replaced.has_value());
  CHECK(replaced->displaced.size() == 2);
  CHECK(replaced->batch.delete_nodes == std::vector<std::string>{"n1"});
  ClusterState final_state = apply_batch(after, replaced->batch);
  std::set<std::string> used;
  for (const auto& i : final_state.snapshot.instances) {
    CHECK(occupies_node(i));
    used.insert(i.node);
  }
  CHECK(used == std::set<std::string>{"m1", "m2"});
  CHECK(has_event(replaced->batch, "ClusterReplaced"));
  CHECK(has_event(replaced->batch, "Displaced"));
}

TEST_CASE("node ops: adding a node places what was pending", "[node_ops]") {
  ClusterState s = with_pending_app(3);
  s.snapshot.nodes = {make_node("n1", 4, 8, 1)};
  // One fits on n1; pretend it was placed there already.
  s.snapshot.instances[0].node = "n1";
  s.snapshot.instances[0].state = InstanceState::Running;
  auto dup = decide_node_add(s, {make_node("n1", 8, 16, 2)});
  REQUIRE_FALSE(dup.has_value());
  CHECK(dup.error()[0].message.find("already exists") != std::string::npos);
  auto clash = decide_node_add(s, {make_node("n2", 8, 16, 1)});
  REQUIRE_FALSE(clash.has_value());
  CHECK(clash.error().size() == 2);  // Address and instance subnet.
  auto out = decide_node_add(s, {make_node("n2", 8, 16, 2)});
  REQUIRE(out.has_value());
  CHECK(has_event(out->batch, "NodeAdded", "n2"));
  CHECK(out->placed.size() == 2);
  for (const auto& p : out->placed) CHECK(p.node == "n2");
  CHECK(out->still_pending.empty());
}

TEST_CASE("node ops: removing a busy node needs --force and requeues its instances", "[node_ops]") {
  ClusterState s = with_pending_app(1);
  s.snapshot.nodes = {make_node("n1", 8, 16, 1), make_node("n2", 8, 16, 2)};
  Instance& i = s.snapshot.instances[0];
  i.node = "n1";
  i.state = InstanceState::Running;
  i.address = "10.0.129.1";
  auto refused = decide_node_remove(s, {"n1"}, false);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error()[0].message.find("0.frontend.web.default") != std::string::npos);
  CHECK(refused.error()[0].hint.find("--force") != std::string::npos);
  auto unknown = decide_node_remove(s, {"n9"}, false);
  REQUIRE_FALSE(unknown.has_value());
  CHECK(unknown.error()[0].message == "no node named 'n9'");
  auto out = decide_node_remove(s, {"n1"}, true);
  REQUIRE(out.has_value());
  CHECK(out->displaced == std::vector<std::string>{"0.frontend.web.default"});
  CHECK(has_event(out->batch, "NodeRemoved", "n1"));
  CHECK(has_event(out->batch, "Displaced", "n1"));
  REQUIRE(out->placed.size() == 1);
  CHECK(out->placed[0].node == "n2");
  ClusterState after = apply_batch(s, out->batch);
  CHECK(after.find_node("n1") == nullptr);
  // n2 now runs the moved instance, so it is refused in turn.
  CHECK_FALSE(decide_node_remove(after, {"n2"}, false).has_value());
}

TEST_CASE("node ops: labels set, remove, need --overwrite, and move topology", "[node_ops]") {
  ClusterState s;
  s.snapshot.nodes = {make_node("n1", 8, 16, 1)};
  s.snapshot.nodes[0].labels = {{"disk", "hdd"}};
  auto edits = parse_label_edits({"disk=ssd", "rack=r7", "gone-"});
  REQUIRE(edits.has_value());
  auto refused = decide_node_label(s, {"n1"}, *edits, false);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error()[0].hint.find("--overwrite") != std::string::npos);
  auto out = decide_node_label(s, {"n1"}, *edits, true);
  REQUIRE(out.has_value());
  REQUIRE(out->batch.put_nodes.size() == 1);
  const Node& n = out->batch.put_nodes[0];
  CHECK(n.labels.at("disk") == "ssd");
  CHECK(n.rack == "r7");
  CHECK(has_event(out->batch, "NodeLabeled", "n1"));
  ClusterState after = apply_batch(s, out->batch);
  auto same = decide_node_label(after, {"n1"}, *edits, true);
  REQUIRE(same.has_value());
  CHECK_FALSE(same->changed);
  CHECK(same->batch.events.empty());
  auto removal = decide_node_label(after, {"n1"}, *parse_label_edits({"rack-"}), false);
  REQUIRE(removal.has_value());
  CHECK(removal->batch.put_nodes[0].rack.empty());
  CHECK(removal->batch.put_nodes[0].labels.count("rack") == 0);
}

TEST_CASE("node ops: label arguments are checked kubectl-style", "[node_ops]") {
  auto bad = parse_label_edits({"disk", "a=b", "a=c", "Bad Key=x", "k=v v"});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().size() == 4);
  CHECK_FALSE(parse_label_edits({}).has_value());
}

TEST_CASE("node ops: cordon keeps instances, uncordon retries pending ones", "[node_ops]") {
  ClusterState s = with_pending_app(1);
  s.snapshot.nodes = {make_node("n1", 8, 16, 1)};
  auto cordoned = decide_node_cordon(s, {"n1"}, true);
  REQUIRE(cordoned.has_value());
  CHECK(has_event(cordoned->batch, "NodeCordoned", "n1"));
  CHECK(cordoned->placed.empty());
  ClusterState after = apply_batch(s, cordoned->batch);
  CHECK(after.find_node("n1")->state == NodeState::Cordoned);
  auto twice = decide_node_cordon(after, {"n1"}, true);
  REQUIRE(twice.has_value());
  CHECK_FALSE(twice->changed);
  auto open = decide_node_cordon(after, {"n1"}, false);
  REQUIRE(open.has_value());
  CHECK(has_event(open->batch, "NodeUncordoned", "n1"));
  REQUIRE(open->placed.size() == 1);
  CHECK(open->placed[0].node == "n1");
}

TEST_CASE("node ops: a process cluster needs loopback subnets and keeps its backend while instances exist",
          "[node_ops]") {
  ClusterState s = with_pending_app(1);
  // Already a process cluster (its instances pending), so only the subnets are wrong.
  s.settings["backend"] = "process";
  ClusterSpec spec;
  spec.backend = "process";
  spec.nodes = {make_node("n1", 8, 16, 1), make_node("n2", 8, 16, 2)};
  ensure_default_tenant(spec.tenants);
  auto refused = decide_cluster_create(s, spec, false);
  REQUIRE_FALSE(refused.has_value());
  REQUIRE(refused.error().size() == 2);  // One error per node, all at once.
  CHECK(refused.error()[0].message == "node n1: instance subnet '10.0.129.0/24' is not a loopback range");
  CHECK(refused.error()[1].message == "node n2: instance subnet '10.0.130.0/24' is not a loopback range");

  spec.nodes[0].instance_subnet = "127.64.128.0/24";
  spec.nodes[1].instance_subnet = "127.64.129.0/24";
  auto out = decide_cluster_create(s, spec, false);
  REQUIRE(out.has_value());
  CHECK(out->batch.put_settings.at("backend") == "process");
  ClusterState after = apply_batch(s, out->batch);
  REQUIRE_FALSE(after.snapshot.instances.empty());

  // Switching the backend under running instances would orphan them: refused.
  ClusterSpec sim = spec;
  sim.backend = "sim";
  auto switched = decide_cluster_create(after, sim, true);
  REQUIRE_FALSE(switched.has_value());
  CHECK(switched.error()[0].message == "this cluster runs its 1 instance(s) on the process backend, not sim");
  // The same backend may be recreated.
  CHECK(decide_cluster_create(after, spec, true).has_value());
}
