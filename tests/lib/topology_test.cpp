#include "lib/topology.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <map>
#include <random>

using namespace gaia;

namespace {

IpPrefix cidr(std::string_view text) {
  auto p = parse_cidr(text);
  if (!p) FAIL(p.error());
  return *p;
}

IpAddress addr(std::string_view text) {
  auto a = parse_address(text);
  if (!a) FAIL(a.error());
  return *a;
}

// The name of the entry the longest match finds for `address`, or "-" for none.
std::string node_for(const TopologyTable& table, std::string_view address) {
  auto hit = table.lookup(addr(address));
  return hit ? hit->node : "-";
}

TopologyEntry entry(std::string node) { return TopologyEntry{std::move(node), "", "", "", ""}; }

}  // namespace

TEST_CASE("topology: addresses and prefixes parse and print", "[topology]") {
  CHECK(addr("10.1.2.3").to_string() == "10.1.2.3");
  CHECK(addr("10.1.2.3").family == IpFamily::V4);
  CHECK(addr("2001:db8:0:0:0:0:0:1").to_string() == "2001:db8::1");
  CHECK(addr("::").to_string() == "::");
  CHECK(cidr("10.0.0.0/8").to_string() == "10.0.0.0/8");
  CHECK(cidr("2001:db8::/32").to_string() == "2001:db8::/32");
  CHECK(cidr("0.0.0.0/0").length == 0);
  // A bare address is a host prefix.
  CHECK(cidr("10.1.2.3") == IpPrefix{addr("10.1.2.3"), 32});
  CHECK(cidr("fe80::1").length == 128);
}

TEST_CASE("topology: loopback ranges are told from others", "[topology]") {
  CHECK(loopback_cidr("127.0.0.0/8"));
  CHECK(loopback_cidr("127.64.128.0/24"));
  CHECK(loopback_cidr("::1/128"));
  CHECK_FALSE(loopback_cidr("0.0.0.0/0"));      // Wider than loopback.
  CHECK_FALSE(loopback_cidr("10.0.128.0/24"));
  CHECK_FALSE(loopback_cidr("128.0.0.0/24"));
  CHECK_FALSE(loopback_cidr("::/0"));
  CHECK_FALSE(loopback_cidr("not a cidr"));
}

TEST_CASE("topology: invalid input is rejected with a clear message", "[topology]") {
  auto error = [](std::string_view text) {
    auto p = parse_cidr(text);
    REQUIRE_FALSE(p);
    return p.error();
  };
  CHECK(error("10.0.0.0/33") == "'10.0.0.0/33': prefix length 33 is out of range (0-32 for IPv4)");
  CHECK(error("2001:db8::/129") ==
        "'2001:db8::/129': prefix length 129 is out of range (0-128 for IPv6)");
  CHECK(error("10.0.0.0/") == "'10.0.0.0/': prefix length '' is not a number");
  CHECK(error("10.0.0.0/8x") == "'10.0.0.0/8x': prefix length '8x' is not a number");
  CHECK(error("10.0.0.0/-1") == "'10.0.0.0/-1': prefix length -1 is out of range (0-32 for IPv4)");
  CHECK(error("10.0.0.0/+8") == "'10.0.0.0/+8': prefix length '+8' is not a number");
  CHECK(error("10.0.0.1/8") ==
        "'10.0.0.1/8': the address has bits set after the first 8 (did you mean 10.0.0.0/8?)");
  CHECK_THAT(error("10.0.0.256/24"), Catch::Contains("'10.0.0.256' is not a valid IPv4 address"));
  CHECK_THAT(error("10.0.0/24"), Catch::Contains("is not a valid IPv4 address"));
  CHECK_THAT(error("010.0.0.0/8"), Catch::Contains("without leading zeros"));
  CHECK_THAT(error("2001:db8:::1/64"), Catch::Contains("is not a valid IPv6 address"));
  CHECK_THAT(error("fe80::1%eth0"), Catch::Contains("zone suffixes"));
  CHECK_THAT(error(""), Catch::Contains("empty address"));
  CHECK_FALSE(parse_address("10.0.0.1 "));
  CHECK_FALSE(parse_address(std::string(100, '1')));
}

TEST_CASE("topology: IPv4-mapped IPv6 addresses are IPv4", "[topology]") {
  CHECK(addr("::ffff:10.1.2.3") == addr("10.1.2.3"));
  CHECK(cidr("::ffff:10.0.0.0/104") == cidr("10.0.0.0/8"));
  CHECK(cidr("::ffff:0:0/96") == cidr("0.0.0.0/0"));
  // Shorter than /96, the ffff marker bits are host bits: that is not a mapped prefix.
  CHECK(parse_cidr("::ffff:0:0/80").error() ==
        "'::ffff:0:0/80': the address has bits set after the first 80 (did you mean ::/80?)");
  CHECK_FALSE(parse_cidr("::ffff:10.0.0.0/95"));
  CHECK(parse_cidr("::ffff:10.0.0.1/104").error() ==
        "'::ffff:10.0.0.1/104': the address has bits set after the first 104 (did you mean "
        "10.0.0.0/8?)");

  TopologyTable table;
  table.insert(cidr("10.0.0.0/8"), entry("v4"));
  table.insert(cidr("::/0"), entry("v6-default"));
  CHECK(node_for(table, "::ffff:10.9.9.9") == "v4");
  // IPv6 routes never answer for IPv4 addresses, not even the default one.
  CHECK(node_for(table, "11.0.0.1") == "-");
  CHECK(node_for(table, "2001:db8::1") == "v6-default");
}

TEST_CASE("topology: longest prefix wins", "[topology]") {
  TopologyTable table;
  CHECK(table.insert(cidr("10.0.0.0/8"), TopologyEntry{"", "10.0.0.0/8", "", "", "zone-a"}));
  CHECK(table.insert(cidr("10.1.0.0/16"), TopologyEntry{"", "10.1.0.0/16", "", "rack-1", "zone-a"}));
  CHECK(table.insert(cidr("10.1.2.0/24"), TopologyEntry{"n1", "10.1.2.0/24", "sw-1", "rack-1", "zone-a"}));
  CHECK(table.insert(cidr("10.1.2.7/32"), entry("host-7")));
  CHECK(table.insert(cidr("10.1.128.0/17"), entry("upper-half")));
  CHECK(table.size() == 5);

  CHECK(node_for(table, "10.1.2.3") == "n1");
  CHECK(table.lookup(addr("10.1.2.3"))->switch_ == "sw-1");
  CHECK(node_for(table, "10.1.2.7") == "host-7");
  CHECK(node_for(table, "10.1.200.1") == "upper-half");
  CHECK(table.lookup(addr("10.1.3.1"))->rack == "rack-1");
  CHECK(table.lookup(addr("10.2.0.1"))->zone == "zone-a");
  CHECK(table.lookup(addr("10.2.0.1"))->rack.empty());
  CHECK(node_for(table, "11.0.0.1") == "-");

  auto m = table.longest_match(addr("10.1.5.5"));
  REQUIRE(m);
  CHECK(m->prefix.to_string() == "10.1.0.0/16");

  SECTION("a default route catches everything else") {
    table.insert(cidr("0.0.0.0/0"), entry("default"));
    CHECK(node_for(table, "11.0.0.1") == "default");
    CHECK(node_for(table, "255.255.255.255") == "default");
    CHECK(node_for(table, "10.1.2.3") == "n1");
  }

  SECTION("inserting an existing prefix replaces its value") {
    CHECK_FALSE(table.insert(cidr("10.1.2.0/24"), entry("n2")));
    CHECK(table.size() == 5);
    CHECK(node_for(table, "10.1.2.3") == "n2");
  }

  SECTION("removing a prefix exposes the one around it") {
    CHECK(table.remove(cidr("10.1.2.0/24")));
    CHECK_FALSE(table.remove(cidr("10.1.2.0/24")));
    CHECK_FALSE(table.remove(cidr("10.1.2.0/25")));
    CHECK(table.size() == 4);
    CHECK(table.lookup(addr("10.1.2.3"))->subnet == "10.1.0.0/16");
    CHECK(node_for(table, "10.1.2.7") == "host-7");
    CHECK(table.remove(cidr("10.0.0.0/8")));
    CHECK(node_for(table, "10.2.0.1") == "-");
    CHECK(node_for(table, "10.1.2.7") == "host-7");
  }

  SECTION("find is exact; entries lists prefixes in order") {
    REQUIRE(table.find(cidr("10.1.0.0/16")));
    CHECK(table.find(cidr("10.1.0.0/16"))->rack == "rack-1");
    CHECK(table.find(cidr("10.0.0.0/15")) == nullptr);
    CHECK(table.find(cidr("10.1.2.0/23")) == nullptr);
    std::vector<std::string> listed;
    for (const auto& [prefix, value] : table.entries()) listed.push_back(prefix.to_string());
    CHECK(listed == std::vector<std::string>{"10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24",
                                             "10.1.2.7/32", "10.1.128.0/17"});
  }
}

TEST_CASE("topology: IPv6 host routes and nesting", "[topology]") {
  TopologyTable table;
  table.insert(cidr("2001:db8::/32"), entry("site"));
  table.insert(cidr("2001:db8:1::/48"), entry("pod"));
  table.insert(cidr("2001:db8:1::42/128"), entry("host"));
  table.insert(cidr("::/0"), entry("default"));
  CHECK(node_for(table, "2001:db8:1::42") == "host");
  CHECK(node_for(table, "2001:db8:1::43") == "pod");
  CHECK(node_for(table, "2001:db8:2::1") == "site");
  CHECK(node_for(table, "2001:db9::1") == "default");
  CHECK(node_for(table, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff") == "default");
  CHECK(table.size() == 4);
  CHECK(node_for(table, "10.0.0.1") == "-");
  CHECK(table.remove(cidr("::/0")));
  CHECK(node_for(table, "2001:db9::1") == "-");
}

TEST_CASE("topology: removing every entry leaves an empty tree that can be refilled",
          "[topology]") {
  TopologyTable table;
  std::vector<std::string> prefixes = {"10.0.0.0/8", "10.0.0.0/9", "10.128.0.0/9", "10.64.0.0/10",
                                       "192.168.0.0/16", "0.0.0.0/0", "10.0.0.1/32"};
  for (const auto& p : prefixes) table.insert(cidr(p), entry(p));
  for (const auto& p : prefixes) CHECK(table.remove(cidr(p)));
  CHECK(table.empty());
  CHECK(table.entries().empty());
  CHECK(node_for(table, "10.0.0.1") == "-");
  table.insert(cidr("10.0.0.0/8"), entry("again"));
  CHECK(node_for(table, "10.0.0.1") == "again");
}

namespace {

// Random prefixes drawn from a narrow space (the top bits mostly fixed), so that they
// nest and overlap often, which is where a trie can go wrong.
IpPrefix random_prefix(IpFamily family, uint64_t seed_bits, int length) {
  unsigned __int128 bits = static_cast<unsigned __int128>(seed_bits) << 64;
  if (family == IpFamily::V4) bits = static_cast<unsigned __int128>(seed_bits & 0xffffffffu) << 96;
  // Fix the top 4 bits (except for short prefixes, which then cover everything).
  bits = (bits & ~prefix_bits::mask(4)) | (static_cast<unsigned __int128>(0xa) << 124);
  return IpPrefix{IpAddress{family, bits & prefix_bits::mask(length)}, length};
}

}  // namespace

TEST_CASE("topology: longest match agrees with a linear scan", "[topology]") {
  REQUIRE(rc::check("random inserts and removes", [] {
    TopologyTable table;
    std::map<std::pair<int, std::string>, std::pair<IpPrefix, int>> model;  // key: family, text
    auto ops = *rc::gen::container<std::vector<std::tuple<bool, bool, uint64_t, int>>>(
        rc::gen::tuple(rc::gen::arbitrary<bool>(), rc::gen::weightedElement<bool>({{3, true}, {1, false}}),
                       rc::gen::arbitrary<uint64_t>(), rc::gen::inRange(0, 129)));
    int counter = 0;
    for (auto [v6, insert, seed, length] : ops) {
      IpFamily family = v6 ? IpFamily::V6 : IpFamily::V4;
      length = std::min(length, IpAddress::max_length(family));
      IpPrefix p = random_prefix(family, seed, length);
      auto key = std::make_pair(static_cast<int>(family), p.to_string());
      if (insert) {
        ++counter;
        bool added = table.insert(p, entry(std::to_string(counter)));
        RC_ASSERT(added == (model.count(key) == 0));
        model[key] = {p, counter};
      } else {
        bool removed = table.remove(p);
        RC_ASSERT(removed == (model.erase(key) == 1));
      }
      RC_ASSERT(table.size() == model.size());
    }
    // Probe the inserted prefixes' own addresses, their neighbours and random ones.
    std::vector<IpAddress> probes;
    for (const auto& [key, value] : model) {
      IpAddress a = value.first.address;
      probes.push_back(a);
      probes.push_back(IpAddress{a.family, a.bits - 1});
      probes.push_back(IpAddress{a.family, a.bits | ~prefix_bits::mask(value.first.length)});
    }
    for (uint64_t seed : *rc::gen::container<std::vector<uint64_t>>(rc::gen::arbitrary<uint64_t>()))
      for (IpFamily family : {IpFamily::V4, IpFamily::V6})
        probes.push_back(random_prefix(family, seed, IpAddress::max_length(family)).address);
    for (IpAddress& a : probes)
      if (a.family == IpFamily::V4) a.bits &= prefix_bits::mask(32);  // Keep v4 well-formed.
    for (const IpAddress& a : probes) {
      const std::pair<IpPrefix, int>* best = nullptr;
      for (const auto& [key, value] : model)
        if (value.first.contains(a) && (!best || value.first.length > best->first.length))
          best = &value;
      auto got = table.longest_match(a);
      RC_ASSERT(got.has_value() == (best != nullptr));
      if (best) {
        RC_ASSERT(got->prefix == best->first);
        RC_ASSERT(got->value->node == std::to_string(best->second));
      }
    }
    // entries() lists exactly the model, and find() sees each of them.
    RC_ASSERT(table.entries().size() == model.size());
    for (const auto& [key, value] : model) {
      const TopologyEntry* found = table.find(value.first);
      RC_ASSERT(found != nullptr);
      RC_ASSERT(found->node == std::to_string(value.second));
    }
  }));
}
