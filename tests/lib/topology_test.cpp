#include "lib/topology.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <tuple>

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

// The lookup index (lib/topology.hpp): lookups go to it once enough of them followed
// the last change, and to the trie before that. The tests below look up at least that
// many times, so both paths are checked, and check that the index was built.
namespace {

// Looks `address` up until the table has built its index.
void build_index(const TopologyTable& table) {
  for (uint64_t i = 0; i <= detail::prefix_index_threshold(table.size()) && table.index_bytes() == 0; ++i)
    (void)table.longest_match(IpAddress{});
}

// The prefix a linear scan finds for `a` among `prefixes` (the longest containing it).
template <class Model>
const IpPrefix* scan(const Model& prefixes, const IpAddress& a) {
  const IpPrefix* best = nullptr;
  for (const auto& [p, value] : prefixes)
    if (p.contains(a) && (!best || p.length > best->length)) best = &p;
  return best;
}

struct PrefixLess {
  bool operator()(const IpPrefix& a, const IpPrefix& b) const {
    if (a.address.family != b.address.family) return a.address.family < b.address.family;
    if (a.length != b.length) return a.length < b.length;
    return a.address.bits < b.address.bits;
  }
};

// A prefix from a narrow space, so prefixes nest and overlap: the top bits are drawn
// from a few patterns, the length is weighted to the edges (/0, /1, the family's
// longest, around the 6-bit strides and the 16-bit table), and IPv6 prefixes lie now
// and then inside ::ffff:0:0/96 or ::/96, where the IPv4-mapped and -compatible forms of
// IPv4 addresses are.
rc::Gen<IpPrefix> gen_prefix() {
  return rc::gen::exec([] {
    bool v6 = *rc::gen::arbitrary<bool>();
    IpFamily family = v6 ? IpFamily::V6 : IpFamily::V4;
    const int max = IpAddress::max_length(family);
    int length = *rc::gen::weightedOneOf<int>(
        {{1, rc::gen::element(0, 1, max, max - 1)},
         {1, rc::gen::element(15, 16, 17, 21, 22, 23, 27, 28, 29)},
         {3, rc::gen::inRange(0, max + 1)}});
    length = std::min(length, max);
    unsigned __int128 bits = static_cast<unsigned __int128>(*rc::gen::arbitrary<uint64_t>()) << 64 |
                             *rc::gen::arbitrary<uint64_t>();
    // Fix some of the top bits: 0-4 of the top 24 bits vary, in a few shapes.
    int fixed = *rc::gen::element(4, 12, 20, 24);
    unsigned __int128 top = static_cast<unsigned __int128>(*rc::gen::element(0x0au, 0xfdu, 0xa5u)) << 120;
    bits = (bits & ~prefix_bits::mask(fixed)) | (top & prefix_bits::mask(fixed));
    if (v6 && *rc::gen::weightedElement<bool>({{1, true}, {4, false}})) {
      bool mapped = *rc::gen::arbitrary<bool>();  // ::ffff:a.b.c.d/96+ or ::a.b.c.d/96+
      bits = (static_cast<unsigned __int128>(mapped ? 0xffffu : 0u) << 32) | (bits & 0xffffffffu);
      length = *rc::gen::inRange(mapped ? 96 : 80, 129);
    }
    if (family == IpFamily::V4) bits &= prefix_bits::mask(32);
    return IpPrefix{IpAddress{family, bits & prefix_bits::mask(length)}, length};
  });
}

}  // namespace

TEST_CASE("topology: the lookup index agrees with a linear scan through changes", "[topology]") {
  REQUIRE(rc::check("inserts, replacements, removes and lookups", [] {
    TopologyTable table;
    std::map<IpPrefix, std::string, PrefixLess> model;
    auto ops = *rc::gen::container<std::vector<std::tuple<int, IpPrefix, int>>>(
        rc::gen::tuple(rc::gen::weightedElement<int>({{6, 0}, {2, 1}, {1, 2}}), gen_prefix(), rc::gen::inRange(0, 3)));
    bool indexed = false;
    int counter = 0;
    auto check = [&](const IpAddress& a) {
      const IpPrefix* want = scan(model, a);
      auto got = table.longest_match(a);
      RC_ASSERT(got.has_value() == (want != nullptr));
      if (!want) return;
      RC_ASSERT(got->prefix == *want);
      RC_ASSERT(got->value->node == model.at(*want));
      RC_ASSERT(table.lookup(a)->node == model.at(*want));
    };
    // Addresses around the table's prefixes: their first and last addresses and those
    // just outside, the same in the other family, and random ones.
    auto probes = [&] {
      std::vector<IpAddress> out;
      for (const auto& [p, value] : model) {
        const int max = IpAddress::max_length(p.address.family);
        const unsigned __int128 unit = static_cast<unsigned __int128>(1) << (128 - max);
        unsigned __int128 last = p.address.bits | (~prefix_bits::mask(p.length) & prefix_bits::mask(max));
        for (unsigned __int128 b : {p.address.bits, last, p.address.bits - unit, last + unit}) {
          out.push_back(IpAddress{p.address.family, b});
          out.push_back(IpAddress{p.address.family == IpFamily::V4 ? IpFamily::V6 : IpFamily::V4, b});
        }
      }
      for (int i = 0; i < 8; ++i) out.push_back((*gen_prefix()).address);
      for (IpAddress& a : out)
        if (a.family == IpFamily::V4) a.bits &= prefix_bits::mask(32);  // A well-formed IPv4 address.
      return out;
    };
    for (const auto& [op, prefix, rounds] : ops) {
      if (op == 0 || op == 1) {  // Insert (op 1: an existing prefix when there is one: a replacement).
        IpPrefix p = prefix;
        if (op == 1 && !model.empty()) p = std::next(model.begin(), *rc::gen::inRange<size_t>(0, model.size()))->first;
        std::string name = std::to_string(++counter);
        RC_ASSERT(table.insert(p, entry(name)) == (model.count(p) == 0));
        model[p] = name;
      } else {  // Remove an existing prefix, or one that may be absent.
        IpPrefix p = prefix;
        if (!model.empty() && *rc::gen::arbitrary<bool>())
          p = std::next(model.begin(), *rc::gen::inRange<size_t>(0, model.size()))->first;
        RC_ASSERT(table.remove(p) == (model.erase(p) == 1));
      }
      RC_ASSERT(table.size() == model.size());
      // A few lookups (on the trie while the index is stale), then maybe enough to build
      // the index and some on it. A sample of the probes, to keep the run short.
      std::vector<IpAddress> addresses = probes();
      size_t step = addresses.size() / 48 + 1;
      for (size_t i = 0; i < std::min<size_t>(addresses.size(), 4); ++i) check(addresses[i]);
      for (int r = 0; r < rounds; ++r) {
        build_index(table);
        RC_ASSERT(table.index_bytes() > 0);
        indexed = true;
        for (size_t i = r; i < addresses.size(); i += step) check(addresses[i]);
      }
    }
    build_index(table);
    for (const IpAddress& a : probes()) check(a);
    // A copy builds its own index; a moved-to table keeps it.
    TopologyTable copy = table;
    build_index(copy);
    TopologyTable moved = std::move(copy);
    RC_ASSERT(copy.empty());
    for (const IpAddress& a : probes()) {
      const IpPrefix* want = scan(model, a);
      auto got = moved.longest_match(a);
      RC_ASSERT(got.has_value() == (want != nullptr));
      if (want) RC_ASSERT(got->prefix == *want);
    }
    RC_TAG(indexed ? "index built between changes" : "index built at the end only");
  }));
}

TEST_CASE("topology: the lookup index handles the edge cases", "[topology]") {
  TopologyTable table;
  for (const char* p : {"0.0.0.0/0", "::/0", "10.0.0.0/8", "10.1.2.3/32", "255.255.255.255/32", "10.1.2.0/31",
                        "::ffff:192.168.0.0/112", "2001:db8::/32", "2001:db8::1/128",
                        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "2001:db8:0:1::/64", "::/128", "::a01:203/128"})
    table.insert(cidr(p), entry(p));
  auto check_all = [&] {
    CHECK(node_for(table, "10.1.2.3") == "10.1.2.3/32");
    CHECK(node_for(table, "::ffff:10.1.2.3") == "10.1.2.3/32");  // Mapped: the IPv4 address.
    CHECK(node_for(table, "10.1.2.1") == "10.1.2.0/31");
    CHECK(node_for(table, "10.1.2.2") == "10.0.0.0/8");
    CHECK(node_for(table, "11.0.0.0") == "0.0.0.0/0");
    CHECK(node_for(table, "0.0.0.0") == "0.0.0.0/0");
    CHECK(node_for(table, "255.255.255.255") == "255.255.255.255/32");
    CHECK(node_for(table, "255.255.255.254") == "0.0.0.0/0");
    CHECK(node_for(table, "192.168.7.7") == "::ffff:192.168.0.0/112");
    CHECK(node_for(table, "::ffff:192.168.7.7") == "::ffff:192.168.0.0/112");
    CHECK(node_for(table, "2001:db8::1") == "2001:db8::1/128");
    CHECK(node_for(table, "2001:db8::2") == "2001:db8::/32");
    CHECK(node_for(table, "2001:db8:0:1:ffff:ffff:ffff:ffff") == "2001:db8:0:1::/64");
    CHECK(node_for(table, "2001:db9::") == "::/0");
    CHECK(node_for(table, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff") == "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128");
    CHECK(node_for(table, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe") == "::/0");
    CHECK(node_for(table, "::") == "::/128");
    CHECK(node_for(table, "::1") == "::/0");
    // ::10.1.2.3 (IPv4-compatible, deprecated) is an IPv6 address: not 10.1.2.3.
    CHECK(node_for(table, "::10.1.2.3") == "::a01:203/128");
  };
  check_all();  // On the trie.
  build_index(table);
  REQUIRE(table.index_bytes() > 0);
  check_all();  // On the index.
  auto m = table.longest_match(addr("2001:db8:0:1::5"));
  REQUIRE(m);
  CHECK(m->prefix.to_string() == "2001:db8:0:1::/64");
  CHECK(m->value->node == "2001:db8:0:1::/64");

  // Replacing a value keeps the index; removing drops it, and the next lookups are right.
  table.insert(cidr("10.0.0.0/8"), entry("replaced"));
  CHECK(table.index_bytes() > 0);
  CHECK(node_for(table, "10.9.9.9") == "replaced");
  table.insert(cidr("10.0.0.0/8"), entry("10.0.0.0/8"));
  CHECK(table.remove(cidr("0.0.0.0/0")));
  CHECK(table.index_bytes() == 0);
  CHECK(node_for(table, "11.0.0.0") == "-");
  table.remove(cidr("::/0"));
  build_index(table);
  REQUIRE(table.index_bytes() > 0);
  CHECK(node_for(table, "11.0.0.0") == "-");
  CHECK(node_for(table, "2001:db9::") == "-");
  CHECK(node_for(table, "10.1.2.3") == "10.1.2.3/32");

  // Only IPv6 prefixes: IPv4 lookups find nothing, also through the index.
  TopologyTable v6_only;
  v6_only.insert(cidr("::/0"), entry("v6-default"));
  build_index(v6_only);
  REQUIRE(v6_only.index_bytes() > 0);
  CHECK(node_for(v6_only, "10.0.0.1") == "-");
  CHECK(node_for(v6_only, "::ffff:10.0.0.1") == "-");
  CHECK(node_for(v6_only, "::1") == "v6-default");
}

TEST_CASE("topology: lookups from several threads share one index", "[topology]") {
  TopologyTable table;
  std::vector<std::pair<IpAddress, std::string>> expected;
  for (int i = 0; i < 4096; ++i) {
    std::string p = fmt::format("10.{}.{}.0/24", i / 256, i % 256);
    table.insert(cidr(p), entry(p));
    expected.emplace_back(addr(fmt::format("10.{}.{}.{}", i / 256, i % 256, i % 200)), p);
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 4; ++round)
        for (size_t i = t; i < expected.size(); i += 3) {
          auto m = table.longest_match(expected[i].first);
          if (!m || m->value->node != expected[i].second) ++wrong;
        }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
  CHECK(table.index_bytes() > 0);
}

TEST_CASE("topology: on large tables the index agrees with the trie", "[topology]") {
  // Tables the size of the benchmark's, which the property test above does not reach:
  // the full 16-bit first table, dense regions and long compressed paths. Each lookup is
  // made on the indexed table and on a fresh copy, which stays on its trie for that many
  // lookups (fewer than prefix_index_threshold); a linear scan checks a sample.
  std::mt19937_64 rng(20240613);
  auto bits128 = [&] { return static_cast<unsigned __int128>(rng()) << 64 | rng(); };
  for (IpFamily family : {IpFamily::V4, IpFamily::V6}) {
    const int max = IpAddress::max_length(family);
    TopologyTable table;
    std::vector<std::pair<IpPrefix, std::string>> prefixes;
    while (prefixes.size() < 20000) {
      // Inside one of two bases (a /8 and a /32, or /8 and /16 for IPv4), lengths spread
      // over the whole range with more of them at the usual subnet and host lengths.
      bool first_base = rng() % 2;
      int base = first_base ? 8 : (family == IpFamily::V4 ? 16 : 32);
      unsigned __int128 top = first_base ? static_cast<unsigned __int128>(0x0a) << 120
                                         : static_cast<unsigned __int128>(0x20010db8u) << 96;
      int length = rng() % 4 == 0 ? static_cast<int>(rng() % (max + 1))
                                  : (rng() % 3 == 0 ? max : max / 2 + static_cast<int>(rng() % (max / 4)));
      unsigned __int128 b = (top & prefix_bits::mask(base)) | (bits128() & ~prefix_bits::mask(base));
      IpPrefix p{IpAddress{family, b & prefix_bits::mask(length) & prefix_bits::mask(max)}, length};
      if (table.insert(p, entry(p.to_string()))) prefixes.emplace_back(p, p.to_string());
    }
    std::vector<IpAddress> addresses;
    for (int i = 0; i < 6000; ++i) {
      const IpPrefix& p = prefixes[rng() % prefixes.size()].first;
      unsigned __int128 host = i % 5 == 4 ? bits128() : bits128() & ~prefix_bits::mask(p.length);
      addresses.push_back(IpAddress{family, (p.address.bits | host) & prefix_bits::mask(max)});
    }
    build_index(table);
    REQUIRE(table.index_bytes() > 0);
    TopologyTable trie = table;
    REQUIRE(addresses.size() < detail::prefix_index_threshold(trie.size()));
    size_t disagree = 0, hits = 0;
    for (const IpAddress& a : addresses) {
      auto want = trie.longest_match(a);
      auto got = table.longest_match(a);
      hits += want.has_value();
      if (want.has_value() != got.has_value() || (want && (want->prefix != got->prefix || *want->value != *got->value)))
        ++disagree;
    }
    CHECK(trie.index_bytes() == 0);  // Still on its trie.
    CHECK(disagree == 0);
    CHECK(hits > addresses.size() / 2);
    for (size_t i = 0; i < addresses.size(); i += 30) {
      const IpPrefix* want = scan(prefixes, addresses[i]);
      auto got = table.longest_match(addresses[i]);
      REQUIRE(got.has_value() == (want != nullptr));
      if (want) CHECK(got->prefix == *want);
    }
  }
}
