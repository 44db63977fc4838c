// Topology lookup benchmark: radix-100k.
//
// 100,000 distinct prefixes, 70% IPv4 and 30% IPv6, drawn from a fixed seed in the
// shapes a datacenter topology table has: IPv4 mostly /17-/28 subnets and /32 hosts
// inside 10/8, 172.16/12 and 192.168/16, a few short aggregates; IPv6 mostly /48-/64
// subnets and /128 hosts inside fd00::/8 and 2001:db8::/32. Shorter prefixes cover
// longer ones, so lookups see real nesting. Each value is a TopologyEntry (node, subnet,
// switch, rack, zone strings), as node_topology() stores.
//
// Lookups: 1,000,000 addresses, 80% inside a random inserted prefix (random host bits)
// and 20% uniformly random inside the same families' ranges (some miss). They go through
// PrefixTree::longest_match (no copy); lookup() (copies the entry, what
// controllers/submit.cpp does) and parse_address + longest_match from text are timed on
// a share of them; so is a PrefixTree<uint32_t> holding indices into a side table
// (smaller nodes), to show what the node size costs. Latency is per batch of 10,000 lookups divided by the batch size.
//
// Baseline: the classic hash-per-length longest-prefix match written here: one hash
// map per prefix length, probed from the longest length present down to the shortest.
// Its answer (matched prefix) is checked against the tree's for every lookup, and a
// linear scan over all prefixes checks both on a sample.
#include <fmt/format.h>

#include <array>
#include <stdexcept>
#include <unordered_map>

#include "bench/bench_util.hpp"
#include "lib/topology.hpp"

namespace gaia::bench {
namespace {

using Bits = unsigned __int128;

constexpr uint64_t k_radix_seed = 20240613;
constexpr size_t k_prefixes = 100000;
constexpr size_t k_lookups = 1000000;
constexpr size_t k_radix_batch = 10000;
constexpr size_t k_copy_lookups = 200000;
constexpr size_t k_linear_checks = 500;
constexpr int k_builds = 3;

Bits random_bits(Rng& rng) { return (static_cast<Bits>(rng.next()) << 64) | rng.next(); }

struct Weighted {
  int weight;
  int lo, hi;  // Length range, inclusive.
};

int draw_length(Rng& rng, const std::vector<Weighted>& table) {
  int total = 0;
  for (const auto& w : table) total += w.weight;
  auto pick = static_cast<int>(rng.below(static_cast<uint64_t>(total)));
  for (const auto& w : table) {
    if (pick < w.weight) return w.lo + static_cast<int>(rng.below(static_cast<uint64_t>(w.hi - w.lo + 1)));
    pick -= w.weight;
  }
  return table.back().lo;
}

// A random prefix (or with `length` < 0 a random address's bits) inside one of the
// family's base ranges.
IpPrefix random_prefix(Rng& rng, IpFamily family, int length) {
  struct Base {
    Bits bits;
    int length;
  };
  static const std::array<Base, 3> v4 = {Base{static_cast<Bits>(0x0A000000u) << 96, 8},
                                         Base{static_cast<Bits>(0xAC100000u) << 96, 12},
                                         Base{static_cast<Bits>(0xC0A80000u) << 96, 16}};
  static const std::array<Base, 2> v6 = {Base{static_cast<Bits>(0xFD00) << 112, 8},
                                         Base{static_cast<Bits>(0x20010DB8u) << 96, 32}};
  const Base& base = family == IpFamily::V4 ? v4[rng.below(10) < 7 ? 0 : 1 + rng.below(2)] : v6[rng.below(2)];
  int max = IpAddress::max_length(family);
  Bits host_mask = ~prefix_bits::mask(base.length) & prefix_bits::mask(max);
  Bits bits = base.bits | (random_bits(rng) & host_mask);
  int len = length < 0 ? max : std::max(length, base.length);
  return IpPrefix{IpAddress{family, bits & prefix_bits::mask(len)}, len};
}

TopologyEntry entry_for(size_t i) {
  size_t node = i % 16384;
  return TopologyEntry{fmt::format("n{:05d}", node), fmt::format("subnet-{}", i), fmt::format("sw{:03d}", node / 40),
                       fmt::format("r{:03d}", node / 40), fmt::format("z{}", (node / 40) % 3)};
}

// The baseline: exact-match hash maps, one per prefix length and family.
class HashLpm {
 public:
  void insert(const IpPrefix& p, size_t value) {
    auto& t = table(p.address.family);
    if (t[p.length].emplace(p.address.bits, value).second) {
      auto& lens = lengths(p.address.family);
      if (std::find(lens.begin(), lens.end(), p.length) == lens.end()) {
        lens.push_back(p.length);
        std::sort(lens.rbegin(), lens.rend());
      }
    }
  }
  // Length of the longest matching prefix, -1 for none.
  int longest(const IpAddress& a) const {
    const auto& t = table(a.family);
    for (int len : lengths(a.family))
      if (t[len].count(a.bits & prefix_bits::mask(len))) return len;
    return -1;
  }

 private:
  struct Hash {
    size_t operator()(Bits b) const {
      uint64_t x = static_cast<uint64_t>(b >> 64) * 0x9e3779b97f4a7c15ULL ^ static_cast<uint64_t>(b);
      x ^= x >> 29;
      return x * 0xbf58476d1ce4e5b9ULL;
    }
  };
  using Table = std::array<std::unordered_map<Bits, size_t, Hash>, 129>;
  Table& table(IpFamily f) { return f == IpFamily::V4 ? m_v4 : m_v6; }
  const Table& table(IpFamily f) const { return f == IpFamily::V4 ? m_v4 : m_v6; }
  std::vector<int>& lengths(IpFamily f) { return f == IpFamily::V4 ? m_len_v4 : m_len_v6; }
  const std::vector<int>& lengths(IpFamily f) const { return f == IpFamily::V4 ? m_len_v4 : m_len_v6; }
  Table m_v4, m_v6;
  std::vector<int> m_len_v4, m_len_v6;  // Lengths present, longest first.
};

Figures run_radix_100k() {
  Rng rng(k_radix_seed);
  const std::vector<Weighted> v4_lengths = {{3, 12, 16}, {45, 17, 24}, {32, 25, 28}, {20, 32, 32}};
  const std::vector<Weighted> v6_lengths = {{10, 32, 47}, {20, 48, 56}, {50, 57, 64}, {5, 65, 96}, {15, 128, 128}};

  // Distinct prefixes, in insertion order.
  std::vector<IpPrefix> prefixes;
  std::vector<TopologyEntry> values;
  {
    PrefixTree<char> seen;
    while (prefixes.size() < k_prefixes) {
      IpFamily f = rng.chance(0.7) ? IpFamily::V4 : IpFamily::V6;
      IpPrefix p = random_prefix(rng, f, draw_length(rng, f == IpFamily::V4 ? v4_lengths : v6_lengths));
      if (!seen.insert(p, 0)) continue;
      prefixes.push_back(p);
      values.push_back(entry_for(prefixes.size() - 1));
    }
  }
  size_t v4 = std::count_if(prefixes.begin(), prefixes.end(), [](const IpPrefix& p) { return p.address.family == IpFamily::V4; });

  // Build the table k_builds times; the last one is kept for lookups.
  std::vector<double> build_ms;
  TopologyTable tree;
  double cpu_before = cpu_ms();
  for (int b = 0; b < k_builds; ++b) {
    TopologyTable t;
    build_ms.push_back(time_ms([&] {
      for (size_t i = 0; i < prefixes.size(); ++i) t.insert(prefixes[i], values[i]);
    }));
    if (t.size() != k_prefixes) throw std::runtime_error(fmt::format("tree holds {} prefixes", t.size()));
    tree = std::move(t);
  }
  double build_cpu_ms = (cpu_ms() - cpu_before) / k_builds;

  // Lookup addresses.
  std::vector<IpAddress> addrs;
  addrs.reserve(k_lookups);
  for (size_t i = 0; i < k_lookups; ++i) {
    if (rng.chance(0.8)) {
      const IpPrefix& p = prefixes[rng.below(prefixes.size())];
      int max = IpAddress::max_length(p.address.family);
      Bits host = random_bits(rng) & ~prefix_bits::mask(p.length) & prefix_bits::mask(max);
      addrs.push_back(IpAddress{p.address.family, p.address.bits | host});
    } else {
      IpFamily f = rng.chance(0.7) ? IpFamily::V4 : IpFamily::V6;
      addrs.push_back(random_prefix(rng, f, -1).address);
    }
  }

  // Tree lookups in batches.
  std::vector<int> tree_len(k_lookups, -1);
  std::vector<double> per_lookup_us;
  size_t hits = 0;
  cpu_before = cpu_ms();
  Timer wall;
  for (size_t start = 0; start < k_lookups; start += k_radix_batch) {
    size_t end = std::min(k_lookups, start + k_radix_batch);
    double ms = time_ms([&] {
      for (size_t i = start; i < end; ++i)
        if (auto m = tree.longest_match(addrs[i])) {
          tree_len[i] = m->prefix.length;
          ++hits;
        }
    });
    per_lookup_us.push_back(ms * 1000.0 / static_cast<double>(end - start));
  }
  double lookup_wall_ms = wall.elapsed_ms();
  double lookup_cpu_ms = cpu_ms() - cpu_before;

  // lookup(): copies the entry out.
  size_t copied = 0;
  double copy_ms = time_ms([&] {
    for (size_t i = 0; i < k_copy_lookups; ++i)
      if (auto e = tree.lookup(addrs[i])) copied += e->node.size();
  });
  // From text, as an instance's address arrives.
  std::vector<std::string> texts;
  texts.reserve(k_copy_lookups);
  for (size_t i = 0; i < k_copy_lookups; ++i) texts.push_back(addrs[i].to_string());
  size_t parsed_hits = 0;
  double text_ms = time_ms([&] {
    for (const auto& t : texts) {
      auto a = parse_address(t);
      if (!a) throw std::runtime_error("unparsable generated address " + t);
      if (tree.longest_match(*a)) ++parsed_hits;
    }
  });

  // The same tree holding a 4-byte index into a side table instead of the entry: tree
  // nodes shrink from ~200 to ~48 bytes, so the walk touches far fewer cache lines.
  PrefixTree<uint32_t> compact;
  double compact_build_ms = time_ms([&] {
    for (size_t i = 0; i < prefixes.size(); ++i) compact.insert(prefixes[i], static_cast<uint32_t>(i));
  });
  size_t compact_disagree = 0;
  cpu_before = cpu_ms();
  Timer compact_wall;
  for (size_t i = 0; i < k_lookups; ++i) {
    auto m = compact.longest_match(addrs[i]);
    if ((m ? m->prefix.length : -1) != tree_len[i]) ++compact_disagree;
  }
  double compact_wall_ms = compact_wall.elapsed_ms();
  double compact_cpu_ms = cpu_ms() - cpu_before;
  if (compact_disagree) throw std::runtime_error("the index-valued tree disagrees with the entry-valued one");

  // Baseline: hash per length.
  HashLpm hash;
  double hash_build_ms = time_ms([&] {
    for (size_t i = 0; i < prefixes.size(); ++i) hash.insert(prefixes[i], i);
  });
  size_t disagree = 0;
  cpu_before = cpu_ms();
  Timer hash_wall;
  for (size_t i = 0; i < k_lookups; ++i)
    if (hash.longest(addrs[i]) != tree_len[i]) ++disagree;
  double hash_wall_ms = hash_wall.elapsed_ms();
  double hash_cpu_ms = cpu_ms() - cpu_before;
  if (disagree) throw std::runtime_error(fmt::format("tree and hash baseline disagree on {} lookups", disagree));

  // Linear scan on a sample, checking both.
  double linear_ms = time_ms([&] {
    for (size_t i = 0; i < k_linear_checks; ++i) {
      int best = -1;
      for (const auto& p : prefixes)
        if (p.length > best && p.contains(addrs[i])) best = p.length;
      if (best != tree_len[i]) throw std::runtime_error(fmt::format("tree disagrees with a linear scan on {}", addrs[i].to_string()));
    }
  });

  Figures out;
  out["prefixes"] = prefixes.size();
  out["v4_prefixes"] = v4;
  out["v6_prefixes"] = prefixes.size() - v4;
  out["seed"] = k_radix_seed;
  out["insert_ms"] = round3(percentile(build_ms, 50));
  out["insert_cpu_ms"] = round3(build_cpu_ms);
  out["inserts_per_s"] = round3(static_cast<double>(k_prefixes) * 1000.0 / percentile(build_ms, 50));
  out["lookups"] = k_lookups;
  out["hit_rate"] = round3(static_cast<double>(hits) / static_cast<double>(k_lookups));
  out["lookups_per_s"] = round3(static_cast<double>(k_lookups) * 1000.0 / lookup_wall_ms);
  out["cpu_lookups_per_s"] = round3(static_cast<double>(k_lookups) * 1000.0 / lookup_cpu_ms);
  out["latency_basis"] = fmt::format("batches of {} longest_match calls, batch wall time / {}", k_radix_batch, k_radix_batch);
  out["p50_us"] = round3(percentile(per_lookup_us, 50));
  out["p99_us"] = round3(percentile(per_lookup_us, 99));
  out["copying_lookups_per_s"] = round3(static_cast<double>(k_copy_lookups) * 1000.0 / copy_ms);
  out["text_lookups_per_s"] = round3(static_cast<double>(k_copy_lookups) * 1000.0 / text_ms);
  out["index_valued_build_ms"] = round3(compact_build_ms);
  out["index_valued_lookups_per_s"] = round3(static_cast<double>(k_lookups) * 1000.0 / compact_wall_ms);
  out["index_valued_cpu_lookups_per_s"] = round3(static_cast<double>(k_lookups) * 1000.0 / compact_cpu_ms);
  out["hash_baseline_build_ms"] = round3(hash_build_ms);
  out["hash_baseline_lookups_per_s"] = round3(static_cast<double>(k_lookups) * 1000.0 / hash_wall_ms);
  out["hash_baseline_cpu_lookups_per_s"] = round3(static_cast<double>(k_lookups) * 1000.0 / hash_cpu_ms);
  out["hash_baseline_agrees"] = true;
  out["linear_checks"] = k_linear_checks;
  out["linear_lookups_per_s"] = round3(static_cast<double>(k_linear_checks) * 1000.0 / linear_ms);
  out["process_cpu_ms"] = round3(cpu_ms());  // Everything, generation and checks included.
  if (copied == 0 || parsed_hits == 0) throw std::runtime_error("no lookup hit");
  return out;
}

const Registration k_radix_100k{"radix-100k",
                                "longest-prefix match on 100,000 mixed IPv4/IPv6 prefixes: insert time, 1,000,000 "
                                "lookups; hash-per-length baseline",
                                &run_radix_100k};

}  // namespace
}  // namespace gaia::bench
