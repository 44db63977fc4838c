#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "lib/cluster_layout.hpp"

using namespace gaia;

TEST_CASE("layout: addresses from the lower half, /24 instance blocks from the upper", "[layout]") {
  auto a = AddressAllocator::create("10.0.0.0/16");
  REQUIRE(a.has_value());
  CHECK(a->host_capacity() == 32767);
  CHECK(a->block_capacity() == 128);
  CHECK(*a->next_address() == "10.0.0.1");
  CHECK(*a->next_address() == "10.0.0.2");
  CHECK(*a->next_instance_subnet() == "10.0.128.0/24");
  CHECK(*a->next_instance_subnet() == "10.0.129.0/24");
}

TEST_CASE("layout: IPv6 subnets get /64 instance blocks", "[layout]") {
  auto a = AddressAllocator::create("fd00::/48");
  REQUIRE(a.has_value());
  CHECK(*a->next_address() == "fd00::1");
  CHECK(*a->next_instance_subnet() == "fd00:0:0:8000::/64");
  CHECK(*a->next_instance_subnet() == "fd00:0:0:8001::/64");
}

TEST_CASE("layout: a subnet too small for instance blocks is refused with an example", "[layout]") {
  auto a = AddressAllocator::create("10.0.0.0/24");
  REQUIRE_FALSE(a.has_value());
  CHECK(a.error().find("/23 or shorter") != std::string::npos);
  CHECK_FALSE(AddressAllocator::create("10.0.0.1/16").has_value());  // Host bits set.
}

TEST_CASE("layout: the allocator skips what existing nodes hold and reports exhaustion", "[layout]") {
  Node n;
  n.address = "10.0.0.1";
  n.instance_subnet = "10.0.2.0/24";
  // A /22: hosts in 10.0.0.0/23, two instance blocks in 10.0.2.0/23.
  auto a = AddressAllocator::create("10.0.0.0/22", {n});
  REQUIRE(a.has_value());
  CHECK(*a->next_address() == "10.0.0.2");
  CHECK(*a->next_instance_subnet() == "10.0.3.0/24");
  auto full = a->next_instance_subnet();
  REQUIRE_FALSE(full.has_value());
  CHECK(full.error().find("no free /24") != std::string::npos);
}

TEST_CASE("layout: generated nodes split into contiguous racks and zones", "[layout]") {
  GenerateOptions o;
  o.count = 6;
  o.racks = 3;
  o.zones = 2;
  o.shape.labels["disk"] = "ssd";
  auto nodes = generate_nodes(o);
  REQUIRE(nodes.has_value());
  REQUIRE(nodes->size() == 6);
  std::vector<std::string> racks, zones;
  for (const auto& n : *nodes) {
    racks.push_back(n.rack);
    zones.push_back(n.zone);
    CHECK(n.labels.at("rack") == n.rack);
    CHECK(n.labels.at("zone") == n.zone);
    CHECK(n.labels.at("switch") == n.switch_);
    CHECK(n.labels.at("disk") == "ssd");
  }
  CHECK(racks == std::vector<std::string>{"r1", "r1", "r2", "r2", "r3", "r3"});
  CHECK(zones == std::vector<std::string>{"z1", "z1", "z1", "z1", "z2", "z2"});
  CHECK((*nodes)[0].name == "node-1");
  CHECK((*nodes)[5].address == "10.0.0.6");
  CHECK((*nodes)[5].instance_subnet == "10.0.133.0/24");
}

TEST_CASE("layout: adding nodes continues names and addresses", "[layout]") {
  GenerateOptions o;
  o.count = 3;
  auto first = generate_nodes(o);
  REQUIRE(first.has_value());
  o.count = 2;
  auto more = generate_nodes(o, *first);
  REQUIRE(more.has_value());
  CHECK((*more)[0].name == "node-4");
  CHECK((*more)[0].address == "10.0.0.4");
  CHECK((*more)[1].instance_subnet == "10.0.132.0/24");
}

TEST_CASE("layout: bad generation options are refused", "[layout]") {
  GenerateOptions o;
  o.count = 0;
  CHECK_FALSE(generate_nodes(o).has_value());
  o.count = 2;
  o.racks = 3;
  CHECK_FALSE(generate_nodes(o).has_value());
  o.racks = 0;
  o.count = 200;  // A /16 holds 128 instance blocks.
  auto r = generate_nodes(o);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().find("no free") != std::string::npos);
}

TEST_CASE("layout: topology from the table unless labels say otherwise", "[layout]") {
  TopologyTable t;
  t.insert(*parse_cidr("10.1.0.0/16"), TopologyEntry{"", "", "", "", "z1"});
  t.insert(*parse_cidr("10.1.2.0/24"), TopologyEntry{"", "", "s2", "r2", "z1"});
  Node n;
  n.address = "10.1.2.7";
  assign_topology(n, &t);
  CHECK(n.rack == "r2");
  CHECK(n.switch_ == "s2");
  CHECK(n.zone == "z1");
  CHECK(n.labels.at("rack") == "r2");
  Node m;
  m.address = "10.1.2.8";
  m.labels["rack"] = "r9";
  assign_topology(m, &t);
  CHECK(m.rack == "r9");
  CHECK(m.switch_ == "s2");
  Node outside;
  outside.address = "192.168.0.1";
  assign_topology(outside, &t);
  CHECK(outside.rack.empty());
  CHECK(outside.labels.empty());
}

TEST_CASE("layout: natural order sorts numbers by value", "[layout]") {
  std::vector<std::string> v = {"node-10", "node-2", "gpu-1", "node-1", "node-2a", "node-9"};
  std::sort(v.begin(), v.end(), natural_less);
  CHECK(v == std::vector<std::string>{"gpu-1", "node-1", "node-2", "node-2a", "node-9", "node-10"});
}
