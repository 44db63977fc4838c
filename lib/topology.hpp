#pragma once
// Network topology lookup (docs/cluster-file.md): a table from CIDR prefixes (node
// subnets, instance subnets, switch and rack ranges) to where they are, answering
// "which node, switch, rack and zone does this address belong to?" by longest-prefix
// match. The table is a path-compressed binary trie (Patricia tree), one for IPv4 and
// one for IPv6, which holds the entries and takes every change. Lookups go to a
// read-only index built from the trie (detail::PrefixIndex, lib/topology.cpp: per
// family a direct table on the first 16 bits, then path-compressed multibit nodes of 6
// bits; about 32 bytes per IPv4 prefix and 100 per IPv6 prefix on the tables of
// bench/bench_radix.cpp). A lookup there reads 4-5 cache lines, where the trie reads
// one node per branching bit (17 on those tables). The index is rebuilt lazily, not
// updated: a change that adds or removes a prefix drops it, lookups then walk the trie,
// and the one that brings those walks to 64 + half the number of prefixes builds it
// (detail::prefix_index_threshold). On those tables a build costs what n/7 to n/4
// trie lookups cost, so a table filled once and then looked up gets the index early,
// and a build that a change throws away adds at most about half to the trie walks
// before it; inserts and lookups that alternate (the overlap checks in spec/ and
// controllers/) never build one. All operations are iterative. longest_match and
// lookup are const and may run on several threads at once: one of them builds the
// index and publishes it atomically.
//
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are IPv4 addresses written in IPv6
// notation: parse_address() returns them as IPv4, and parse_cidr() turns a mapped
// prefix of length 96 or more (::ffff:10.0.0.0/104) into the IPv4 prefix it denotes
// (10.0.0.0/8). So an instance reporting its address in either form finds the same
// entry. A mapped prefix shorter than /96 is rejected (its ffff marker would be host
// bits). IPv6 prefixes, even ::/0, never match IPv4 addresses: a v6 default route
// should not silently claim the v4 network.

#include <atomic>
#include <cstdint>
#include <exception>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gaia {

enum class IpFamily { V4, V6 };

struct IpAddress {
  IpFamily family = IpFamily::V4;
  // The address bits, most significant first, left-aligned: an IPv4 address occupies
  // the top 32 bits and the rest are zero. Left alignment lets both families share
  // the trie code, which walks bits from the top.
  unsigned __int128 bits = 0;

  static constexpr int max_length(IpFamily f) { return f == IpFamily::V4 ? 32 : 128; }
  // "10.1.2.3", "2001:db8::1" (RFC 5952 form, as inet_ntop writes it).
  std::string to_string() const;
  bool operator==(const IpAddress&) const = default;
};

struct IpPrefix {
  IpAddress address;  // Host bits (after `length`) are zero.
  int length = 0;

  // Whether `a` lies inside this prefix (always false across families).
  bool contains(const IpAddress& a) const;
  // "10.0.0.0/8".
  std::string to_string() const;
  bool operator==(const IpPrefix&) const = default;
};

// "10.1.2.3", "2001:db8::1", "::ffff:10.1.2.3" (returned as IPv4). Errors name the
// input and what was expected.
std::expected<IpAddress, std::string> parse_address(std::string_view text);
// "10.0.0.0/8", "2001:db8::/32"; a bare address is a host prefix (/32 or /128). Host
// bits must be zero ("10.0.0.1/8" is rejected with a hint naming 10.0.0.0/8), since a
// set host bit in a topology table is almost always a typo.
std::expected<IpPrefix, std::string> parse_cidr(std::string_view text);

// Whether every address of `cidr` is loopback (inside 127.0.0.0/8, or ::1/128). Linux
// routes all of 127.0.0.0/8 to lo, so any such address can be bound as it is.
bool loopback_cidr(std::string_view cidr);

struct TopologyEntry {
  std::string node;
  std::string subnet;
  std::string switch_;
  std::string rack;
  std::string zone;
  bool operator==(const TopologyEntry&) const = default;
};

namespace detail {

// The lookup index of a PrefixTree (lib/topology.cpp), built from its prefixes and
// never changed.
class PrefixIndex;
struct PrefixIndexItem {
  unsigned __int128 key = 0;  // Left-aligned, host bits zero.
  uint32_t id = 0;            // The PrefixTree node holding the prefix's value.
  int length = 0;             // -1: no prefix.
};
// Builds the index over each family's prefixes. Throws std::bad_alloc.
std::shared_ptr<const PrefixIndex> build_prefix_index(std::vector<PrefixIndexItem> v4,
                                                      std::vector<PrefixIndexItem> v6);
// The longest prefix containing `address` (length -1 when none does).
PrefixIndexItem prefix_index_find(const PrefixIndex& index, const IpAddress& address);
// The heap memory the index takes, in bytes.
size_t prefix_index_bytes(const PrefixIndex& index);
// How many trie lookups since the last change make building the index worth it for a
// table of `entries` prefixes: two to four times what a build costs, counted in trie
// lookups (entries / 7 to entries / 4 in bench/bench_radix.cpp).
uint64_t prefix_index_threshold(size_t entries);

}  // namespace detail

template <class V>
class PrefixTree {
 public:
  PrefixTree() = default;
  // A copy holds the same entries and builds its own index when it needs one.
  PrefixTree(const PrefixTree& other)
      : m_nodes(other.m_nodes), m_free(other.m_free), m_root_v4(other.m_root_v4), m_root_v6(other.m_root_v6),
        m_size(other.m_size) {}
  PrefixTree(PrefixTree&& other) noexcept { *this = std::move(other); }
  PrefixTree& operator=(const PrefixTree& other) {
    if (this != &other) *this = PrefixTree(other);
    return *this;
  }
  // The moved-from tree is empty.
  PrefixTree& operator=(PrefixTree&& other) noexcept;

  struct Match {
    IpPrefix prefix;
    const V* value;  // Owned by the tree; valid until the next insert or remove.
  };

  // Adds or replaces the value for `prefix`. Returns true when the prefix is new.
  bool insert(const IpPrefix& prefix, V value);
  // Removes `prefix` (exactly that prefix, not the ones inside it). Returns whether it
  // was present.
  bool remove(const IpPrefix& prefix);
  // The value stored for exactly `prefix`, if any.
  const V* find(const IpPrefix& prefix) const;
  // The most specific prefix containing `address`, if any.
  std::optional<Match> longest_match(const IpAddress& address) const;
  std::optional<V> lookup(const IpAddress& address) const {
    auto m = longest_match(address);
    if (!m) return std::nullopt;
    return *m->value;
  }
  size_t size() const { return m_size; }
  bool empty() const { return m_size == 0; }
  // The memory the lookup index takes, in bytes: 0 while there is none (see above).
  size_t index_bytes() const {
    const detail::PrefixIndex* index = m_index.load(std::memory_order_acquire);
    return index ? detail::prefix_index_bytes(*index) : 0;
  }
  // Every entry, IPv4 first, each family in address order with a prefix before the
  // prefixes inside it.
  std::vector<std::pair<IpPrefix, V>> entries() const;

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  struct Node {
    unsigned __int128 key = 0;  // Masked to `length` bits.
    int length = 0;
    std::optional<V> value;  // Empty for the branch nodes that path compression adds.
    uint32_t child[2] = {kNone, kNone};
  };

  uint32_t new_node(unsigned __int128 key, int length, std::optional<V> value);
  void free_node(uint32_t index);
  std::optional<Match> trie_longest_match(const IpAddress& address) const;
  // Counts a lookup that walked the trie and builds the index when enough have.
  void note_trie_lookup() const;
  // After a change that adds or removes a prefix.
  void drop_index();
  uint32_t& root(IpFamily f) { return f == IpFamily::V4 ? m_root_v4 : m_root_v6; }
  uint32_t root(IpFamily f) const { return f == IpFamily::V4 ? m_root_v4 : m_root_v6; }

  // Nodes live in one vector, linked by index, so the tree is compact, copyable, and
  // destroyed without recursion; freed slots are reused.
  std::vector<Node> m_nodes;
  std::vector<uint32_t> m_free;
  uint32_t m_root_v4 = kNone;
  uint32_t m_root_v6 = kNone;
  size_t m_size = 0;
  // The index: m_index_owner keeps it alive, m_index publishes it to lookups (null while
  // there is none). Lookups without an index count themselves in m_trie_lookups; the
  // one that wins m_index_building builds it. Only that lookup writes m_index_owner.
  mutable std::shared_ptr<const detail::PrefixIndex> m_index_owner;
  mutable std::atomic<const detail::PrefixIndex*> m_index{nullptr};
  mutable std::atomic<uint64_t> m_trie_lookups{0};
  mutable std::atomic<bool> m_index_building{false};
};

using TopologyTable = PrefixTree<TopologyEntry>;

namespace prefix_bits {

inline unsigned __int128 mask(int length) {
  if (length <= 0) return 0;
  if (length >= 128) return ~static_cast<unsigned __int128>(0);
  return ~static_cast<unsigned __int128>(0) << (128 - length);
}
// Bit `index` counted from the most significant (0).
inline int bit(unsigned __int128 key, int index) { return static_cast<int>((key >> (127 - index)) & 1); }
// Number of leading bits `a` and `b` share, at most `limit`.
inline int common_length(unsigned __int128 a, unsigned __int128 b, int limit) {
  unsigned __int128 x = a ^ b;
  auto high = static_cast<uint64_t>(x >> 64);
  auto low = static_cast<uint64_t>(x);
  int n = high ? __builtin_clzll(high) : (low ? 64 + __builtin_clzll(low) : 128);
  return n < limit ? n : limit;
}

}  // namespace prefix_bits

template <class V>
uint32_t PrefixTree<V>::new_node(unsigned __int128 key, int length, std::optional<V> value) {
  Node node{key & prefix_bits::mask(length), length, std::move(value), {kNone, kNone}};
  if (!m_free.empty()) {
    uint32_t index = m_free.back();
    m_free.pop_back();
    m_nodes[index] = std::move(node);
    return index;
  }
  m_nodes.push_back(std::move(node));
  return static_cast<uint32_t>(m_nodes.size() - 1);
}

template <class V>
void PrefixTree<V>::free_node(uint32_t index) {
  m_nodes[index] = Node{};
  m_free.push_back(index);
}

template <class V>
bool PrefixTree<V>::insert(const IpPrefix& prefix, V value) {
  using namespace prefix_bits;
  const unsigned __int128 key = prefix.address.bits & mask(prefix.length);
  const int length = prefix.length;
  // `link` is the parent's child slot (or the root) that leads to `index`. Slots are
  // re-resolved after new_node(), which may reallocate m_nodes.
  uint32_t parent = kNone;
  int side = 0;
  auto slot = [&]() -> uint32_t& {
    return parent == kNone ? root(prefix.address.family) : m_nodes[parent].child[side];
  };
  for (;;) {
    uint32_t index = slot();
    if (index == kNone) {
      drop_index();
      uint32_t leaf = new_node(key, length, std::move(value));
      slot() = leaf;
      ++m_size;
      return true;
    }
    const int node_length = m_nodes[index].length;
    const int common = common_length(m_nodes[index].key, key, std::min(node_length, length));
    if (common == node_length) {
      if (node_length == length) {  // Same prefix: set or replace its value.
        bool added = !m_nodes[index].value.has_value();
        if (added) drop_index();  // Replacing a value keeps the index: it names nodes.
        m_nodes[index].value = std::move(value);
        m_size += added;
        return added;
      }
      parent = index;  // The node's prefix contains ours: descend.
      side = bit(key, node_length);
      continue;
    }
    drop_index();
    if (common == length) {
      // Our prefix contains the node's: it becomes the node's parent.
      uint32_t above = new_node(key, length, std::move(value));
      m_nodes[above].child[bit(m_nodes[index].key, length)] = index;
      slot() = above;
      ++m_size;
      return true;
    }
    // The two diverge after `common` bits: a branch node there holds both.
    uint32_t leaf = new_node(key, length, std::move(value));
    uint32_t branch = new_node(key, common, std::nullopt);
    m_nodes[branch].child[bit(key, common)] = leaf;
    m_nodes[branch].child[bit(m_nodes[index].key, common)] = index;
    slot() = branch;
    ++m_size;
    return true;
  }
}

template <class V>
const V* PrefixTree<V>::find(const IpPrefix& prefix) const {
  using namespace prefix_bits;
  const unsigned __int128 key = prefix.address.bits & mask(prefix.length);
  for (uint32_t index = root(prefix.address.family); index != kNone;) {
    const Node& n = m_nodes[index];
    if (n.length > prefix.length || common_length(n.key, key, n.length) < n.length) return nullptr;
    if (n.length == prefix.length) return n.value ? &*n.value : nullptr;
    index = n.child[bit(key, n.length)];
  }
  return nullptr;
}

template <class V>
PrefixTree<V>& PrefixTree<V>::operator=(PrefixTree&& other) noexcept {
  if (this == &other) return *this;
  m_nodes = std::move(other.m_nodes);
  m_free = std::move(other.m_free);
  m_root_v4 = std::exchange(other.m_root_v4, kNone);
  m_root_v6 = std::exchange(other.m_root_v6, kNone);
  m_size = std::exchange(other.m_size, 0);
  m_index_owner = std::move(other.m_index_owner);
  m_index.store(m_index_owner.get(), std::memory_order_relaxed);
  m_trie_lookups.store(other.m_trie_lookups.load(std::memory_order_relaxed), std::memory_order_relaxed);
  m_index_building.store(m_index_owner != nullptr, std::memory_order_relaxed);
  other.m_nodes.clear();
  other.m_free.clear();
  other.drop_index();
  return *this;
}

template <class V>
void PrefixTree<V>::drop_index() {
  m_index.store(nullptr, std::memory_order_relaxed);
  m_index_owner.reset();
  m_trie_lookups.store(0, std::memory_order_relaxed);
  m_index_building.store(false, std::memory_order_relaxed);
}

template <class V>
std::optional<typename PrefixTree<V>::Match> PrefixTree<V>::longest_match(
    const IpAddress& address) const {
  if (const detail::PrefixIndex* index = m_index.load(std::memory_order_acquire)) {
    const detail::PrefixIndexItem hit = detail::prefix_index_find(*index, address);
    if (hit.length < 0) return std::nullopt;
    return Match{IpPrefix{IpAddress{address.family, hit.key}, hit.length}, &*m_nodes[hit.id].value};
  }
  auto match = trie_longest_match(address);
  note_trie_lookup();
  return match;
}

template <class V>
void PrefixTree<V>::note_trie_lookup() const {
  uint64_t count = m_trie_lookups.fetch_add(1, std::memory_order_relaxed) + 1;
  if (count < detail::prefix_index_threshold(m_size)) return;
  if (m_index_building.exchange(true, std::memory_order_acquire)) return;  // Built or being built.
  try {
    std::vector<detail::PrefixIndexItem> items[2];
    std::vector<uint32_t> stack;
    for (int f = 0; f < 2; ++f) {
      // Pre-order, child 0 first: the prefixes come out sorted by address, then length.
      if (uint32_t r = root(f == 0 ? IpFamily::V4 : IpFamily::V6); r != kNone) stack.push_back(r);
      while (!stack.empty()) {
        uint32_t i = stack.back();
        stack.pop_back();
        const Node& n = m_nodes[i];
        if (n.value) items[f].push_back(detail::PrefixIndexItem{n.key, i, n.length});
        if (n.child[1] != kNone) stack.push_back(n.child[1]);
        if (n.child[0] != kNone) stack.push_back(n.child[0]);
      }
    }
    m_index_owner = detail::build_prefix_index(std::move(items[0]), std::move(items[1]));
  } catch (const std::exception&) {  // Out of memory: lookups stay on the trie until the next change.
    return;
  }
  m_index.store(m_index_owner.get(), std::memory_order_release);
}

template <class V>
std::optional<typename PrefixTree<V>::Match> PrefixTree<V>::trie_longest_match(
    const IpAddress& address) const {
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
  if (!best) return std::nullopt;
  return Match{IpPrefix{IpAddress{address.family, best->key}, best->length}, &*best->value};
}

template <class V>
bool PrefixTree<V>::remove(const IpPrefix& prefix) {
  using namespace prefix_bits;
  const unsigned __int128 key = prefix.address.bits & mask(prefix.length);
  // The chain of child slots from the root to the node, so the node and a branch
  // parent it leaves with one child can be unlinked without parent pointers.
  std::vector<uint32_t*> path;
  uint32_t* link = &root(prefix.address.family);
  while (*link != kNone) {
    Node& n = m_nodes[*link];
    if (n.length > prefix.length || common_length(n.key, key, n.length) < n.length) return false;
    if (n.length == prefix.length) break;
    path.push_back(link);
    link = &n.child[bit(key, n.length)];
  }
  if (*link == kNone || !m_nodes[*link].value) return false;
  drop_index();
  m_nodes[*link].value.reset();
  --m_size;
  // Path compression: a node without a value needs two children to be worth keeping.
  // Removing a leaf may leave its parent a valueless branch with one child, so check
  // one level up as well (no further: that parent's parent keeps its child count).
  for (int round = 0; round < 2 && *link != kNone; ++round) {
    Node& n = m_nodes[*link];
    if (n.value) break;
    uint32_t only = n.child[0] != kNone ? n.child[0] : n.child[1];
    if (n.child[0] != kNone && n.child[1] != kNone) break;
    uint32_t gone = *link;
    *link = only;
    free_node(gone);
    if (path.empty()) break;
    link = path.back();
    path.pop_back();
  }
  return true;
}

template <class V>
std::vector<std::pair<IpPrefix, V>> PrefixTree<V>::entries() const {
  std::vector<std::pair<IpPrefix, V>> out;
  out.reserve(m_size);
  for (IpFamily family : {IpFamily::V4, IpFamily::V6}) {
    // Pre-order walk with an explicit stack, pushing child 1 first so child 0 (the
    // lower addresses) comes out first.
    std::vector<uint32_t> stack;
    if (root(family) != kNone) stack.push_back(root(family));
    while (!stack.empty()) {
      const Node& n = m_nodes[stack.back()];
      stack.pop_back();
      if (n.value) out.emplace_back(IpPrefix{IpAddress{family, n.key}, n.length}, *n.value);
      if (n.child[1] != kNone) stack.push_back(n.child[1]);
      if (n.child[0] != kNone) stack.push_back(n.child[0]);
    }
  }
  return out;
}

}  // namespace gaia
