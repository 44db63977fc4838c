// Topology lookup benchmark: radix-100k.
//
// Three tables of 100,000 distinct prefixes each, drawn from fixed seeds in the shapes a
// datacenter topology table has: IPv4 mostly /17-/28 subnets and /32 hosts inside 10/8,
// 172.16/12 and 192.168/16, a few short aggregates; IPv6 mostly /48-/64 subnets and /128
// hosts inside fd00::/8 and 2001:db8::/32. Shorter prefixes cover longer ones, so
// lookups see real nesting. Each value is a TopologyEntry (node, subnet, switch, rack,
// zone strings), as node_topology() stores.
//  - "mixed": 70% IPv4 and 30% IPv6, seed 20240613: the table of the earlier versions of
//    this case (the same prefixes and lookups), so its figures compare with theirs.
//  - "v4": IPv4 only, seed 20240614.
//  - "v6": IPv6 only, seed 20240615.
//
// Lookups: 1,000,000 addresses per table, 80% inside a random inserted prefix (random
// host bits) and 20% uniformly random inside the same families' ranges (some miss). They
// go through PrefixTree::longest_match (no copy). The table builds its lookup index
// lazily (lib/topology.hpp), so the first pass over the addresses starts on the trie
// and includes the build; that pass is reported on its own ("first_pass"), the build
// alone too ("index_build_ms", the one lookup that built it), and then 5 more passes
// give the steady figures: lookups/s over all of them, latency per batch of 10,000
// lookups divided by the batch size. lookup() (copies the entry, what controllers/
// submit.cpp does) and parse_address + longest_match from text are timed on 200,000.
//
// Baselines, in the same run, on the same addresses:
//  - the trie: the path-compressed binary trie that PrefixTree used for lookups before
//    it had the index, copied here (OldTrie) with the same TopologyEntry values;
//  - hash per length: the classic longest-prefix match with one hash map per prefix
//    length, probed from the longest length present down to the shortest;
//  - a linear scan over all prefixes, on 500 lookups.
// Every lookup's answer (the matched prefix) is checked against the trie's and the
// hash's; the linear scan checks all of them on its sample.
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
constexpr int k_steady_passes = 5;
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

// Baseline: the path-compressed binary trie PrefixTree walked for every lookup before
// it had its index (lib/topology.hpp at 12d85e2), insert and longest_match only.
template <class V>
class OldTrie {
 public:
  void insert(const IpPrefix& prefix, V value) {
    using namespace prefix_bits;
    const Bits key = prefix.address.bits & mask(prefix.length);
    const int length = prefix.length;
    uint32_t parent = kNone;
    int side = 0;
    auto slot = [&]() -> uint32_t& {
      return parent == kNone ? root(prefix.address.family) : m_nodes[parent].child[side];
    };
    for (;;) {
      uint32_t index = slot();
      if (index == kNone) {
        slot() = new_node(key, length, std::move(value));
        return;
      }
      const int node_length = m_nodes[index].length;
      const int common = common_length(m_nodes[index].key, key, std::min(node_length, length));
      if (common == node_length) {
        if (node_length == length) {
          m_nodes[index].value = std::move(value);
          return;
        }
        parent = index;
        side = bit(key, node_length);
        continue;
      }
      if (common == length) {
        uint32_t above = new_node(key, length, std::move(value));
        m_nodes[above].child[bit(m_nodes[index].key, length)] = index;
        slot() = above;
        return;
      }
      uint32_t leaf = new_node(key, length, std::move(value));
      uint32_t branch = new_node(key, common, std::nullopt);
      m_nodes[branch].child[bit(key, common)] = leaf;
      m_nodes[branch].child[bit(m_nodes[index].key, common)] = index;
      slot() = branch;
      return;
    }
  }
  // The matched prefix's length and value, {-1, null} for none.
  std::pair<int, const V*> longest_match(const IpAddress& address) const {
    using namespace prefix_bits;
    const int max = IpAddress::max_length(address.family);
    const Node* best = nullptr;
    for (uint32_t index = root(address.family); index != kNone;) {
      const Node& n = m_nodes[index];
      if (common_length(n.key, address.bits, n.length) < n.length) break;
      if (n.value) best = &n;
      if (n.length >= max) break;
      index = n.child[bit(address.bits, n.length)];
    }
    if (!best) return {-1, nullptr};
    return {best->length, &*best->value};
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    Bits key = 0;
    int length = 0;
    std::optional<V> value;
    uint32_t child[2] = {kNone, kNone};
  };
  uint32_t new_node(Bits key, int length, std::optional<V> value) {
    m_nodes.push_back(Node{key & prefix_bits::mask(length), length, std::move(value), {kNone, kNone}});
    return static_cast<uint32_t>(m_nodes.size() - 1);
  }
  uint32_t& root(IpFamily f) { return f == IpFamily::V4 ? m_root_v4 : m_root_v6; }
  uint32_t root(IpFamily f) const { return f == IpFamily::V4 ? m_root_v4 : m_root_v6; }
  std::vector<Node> m_nodes;
  uint32_t m_root_v4 = kNone;
  uint32_t m_root_v6 = kNone;
};

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

struct TableSpec {
  const char* name;
  uint64_t seed;
  double v4_share;  // Of the prefixes and of the random lookups.
};

double radix_per_s(size_t n, double ms) { return round3(static_cast<double>(n) * 1000.0 / ms); }

// Runs one table; its figures go to `out` under "<name>_".
void run_table(const TableSpec& spec, Figures& out) {
  Rng rng(spec.seed);
  const std::vector<Weighted> v4_lengths = {{3, 12, 16}, {45, 17, 24}, {32, 25, 28}, {20, 32, 32}};
  const std::vector<Weighted> v6_lengths = {{10, 32, 47}, {20, 48, 56}, {50, 57, 64}, {5, 65, 96}, {15, 128, 128}};
  auto draw_family = [&] {
    if (spec.v4_share >= 1.0) return IpFamily::V4;
    if (spec.v4_share <= 0.0) return IpFamily::V6;
    return rng.chance(spec.v4_share) ? IpFamily::V4 : IpFamily::V6;
  };

  // Distinct prefixes, in insertion order.
  std::vector<IpPrefix> prefixes;
  std::vector<TopologyEntry> values;
  {
    PrefixTree<char> seen;
    while (prefixes.size() < k_prefixes) {
      IpFamily f = draw_family();
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
      addrs.push_back(random_prefix(rng, draw_family(), -1).address);
    }
  }

  // The first pass: on the trie until the index is built, the build (timed on its own:
  // the one lookup that does it), then on the index.
  const uint64_t threshold = detail::prefix_index_threshold(tree.size());
  std::vector<int> tree_len(k_lookups, -1);
  size_t hits = 0;
  auto look = [&](size_t i) {
    if (auto m = tree.longest_match(addrs[i])) {
      tree_len[i] = m->prefix.length;
      ++hits;
    }
  };
  double index_build_ms = 0;
  double first_ms = time_ms([&] {
    for (size_t i = 0; i < k_lookups; ++i) {
      if (i + 1 == threshold)
        index_build_ms = time_ms([&] { look(i); });
      else
        look(i);
    }
  });
  size_t index_bytes = tree.index_bytes();
  if (index_bytes == 0) throw std::runtime_error("the table built no index in the first pass");

  // Steady passes, in batches.
  std::vector<double> per_lookup_us;
  size_t steady_disagree = 0;
  cpu_before = cpu_ms();
  Timer wall;
  for (int pass = 0; pass < k_steady_passes; ++pass)
    for (size_t start = 0; start < k_lookups; start += k_radix_batch) {
      size_t end = std::min(k_lookups, start + k_radix_batch);
      double ms = time_ms([&] {
        for (size_t i = start; i < end; ++i) {
          auto m = tree.longest_match(addrs[i]);
          steady_disagree += (m ? m->prefix.length : -1) != tree_len[i];
        }
      });
      per_lookup_us.push_back(ms * 1000.0 / static_cast<double>(end - start));
    }
  double steady_wall_ms = wall.elapsed_ms();
  double steady_cpu_ms = cpu_ms() - cpu_before;
  if (steady_disagree) throw std::runtime_error("the index disagrees with the first pass");

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
  if (copied == 0 || parsed_hits == 0) throw std::runtime_error("no lookup hit");

  // Baseline: the trie.
  OldTrie<TopologyEntry> trie;
  double trie_build_ms = time_ms([&] {
    for (size_t i = 0; i < prefixes.size(); ++i) trie.insert(prefixes[i], values[i]);
  });
  size_t trie_disagree = 0;
  cpu_before = cpu_ms();
  Timer trie_wall;
  for (size_t i = 0; i < k_lookups; ++i) trie_disagree += trie.longest_match(addrs[i]).first != tree_len[i];
  double trie_wall_ms = trie_wall.elapsed_ms();
  double trie_cpu_ms = cpu_ms() - cpu_before;
  if (trie_disagree) throw std::runtime_error(fmt::format("the table and the trie baseline disagree on {} lookups", trie_disagree));

  // Baseline: hash per length.
  HashLpm hash;
  double hash_build_ms = time_ms([&] {
    for (size_t i = 0; i < prefixes.size(); ++i) hash.insert(prefixes[i], i);
  });
  size_t hash_disagree = 0;
  cpu_before = cpu_ms();
  Timer hash_wall;
  for (size_t i = 0; i < k_lookups; ++i) hash_disagree += hash.longest(addrs[i]) != tree_len[i];
  double hash_wall_ms = hash_wall.elapsed_ms();
  double hash_cpu_ms = cpu_ms() - cpu_before;
  if (hash_disagree) throw std::runtime_error(fmt::format("the table and the hash baseline disagree on {} lookups", hash_disagree));

  // Linear scan on a sample, checking all.
  double linear_ms = time_ms([&] {
    for (size_t i = 0; i < k_linear_checks; ++i) {
      int best = -1;
      for (const auto& p : prefixes)
        if (p.length > best && p.contains(addrs[i])) best = p.length;
      if (best != tree_len[i]) throw std::runtime_error(fmt::format("the table disagrees with a linear scan on {}", addrs[i].to_string()));
    }
  });

  const std::string k = std::string(spec.name) + "_";
  out[k + "seed"] = spec.seed;
  out[k + "v4_prefixes"] = v4;
  out[k + "v6_prefixes"] = prefixes.size() - v4;
  out[k + "insert_ms"] = round3(percentile(build_ms, 50));
  out[k + "insert_cpu_ms"] = round3(build_cpu_ms);
  out[k + "hit_rate"] = round3(static_cast<double>(hits) / static_cast<double>(k_lookups));
  out[k + "first_pass_lookups_per_s"] = radix_per_s(k_lookups, first_ms);
  out[k + "index_after_lookups"] = threshold;
  out[k + "index_build_ms"] = round3(index_build_ms);
  out[k + "index_mib"] = round3(static_cast<double>(index_bytes) / 1048576.0);
  out[k + "lookups_per_s"] = radix_per_s(k_lookups * k_steady_passes, steady_wall_ms);
  out[k + "cpu_lookups_per_s"] = radix_per_s(k_lookups * k_steady_passes, steady_cpu_ms);
  out[k + "p50_us"] = round3(percentile(per_lookup_us, 50));
  out[k + "p99_us"] = round3(percentile(per_lookup_us, 99));
  out[k + "copying_lookups_per_s"] = radix_per_s(k_copy_lookups, copy_ms);
  out[k + "text_lookups_per_s"] = radix_per_s(k_copy_lookups, text_ms);
  out[k + "trie_baseline_build_ms"] = round3(trie_build_ms);
  out[k + "trie_baseline_lookups_per_s"] = radix_per_s(k_lookups, trie_wall_ms);
  out[k + "trie_baseline_cpu_lookups_per_s"] = radix_per_s(k_lookups, trie_cpu_ms);
  out[k + "hash_baseline_build_ms"] = round3(hash_build_ms);
  out[k + "hash_baseline_lookups_per_s"] = radix_per_s(k_lookups, hash_wall_ms);
  out[k + "hash_baseline_cpu_lookups_per_s"] = radix_per_s(k_lookups, hash_cpu_ms);
  out[k + "linear_lookups_per_s"] = radix_per_s(k_linear_checks, linear_ms);
}

Figures run_radix_100k() {
  Figures out;
  out["prefixes_per_table"] = k_prefixes;
  out["lookups_per_pass"] = k_lookups;
  out["latency_basis"] = fmt::format("steady passes, batches of {} longest_match calls, batch wall time / {}",
                                     k_radix_batch, k_radix_batch);
  out["baselines_agree"] = true;  // Any disagreement throws.
  out["linear_checks"] = k_linear_checks;
  for (const TableSpec& spec : {TableSpec{"mixed", k_radix_seed, 0.7}, TableSpec{"v4", k_radix_seed + 1, 1.0},
                                TableSpec{"v6", k_radix_seed + 2, 0.0}})
    run_table(spec, out);
  out["process_cpu_ms"] = round3(cpu_ms());  // Everything, generation and checks included.
  return out;
}

const Registration k_radix_100k{"radix-100k",
                                "longest-prefix match on 100,000 prefixes (mixed, IPv4 only, IPv6 only): insert time, "
                                "lookups on the index; trie and hash-per-length baselines",
                                &run_radix_100k};

}  // namespace
}  // namespace gaia::bench
