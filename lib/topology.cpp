#include "lib/topology.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <span>
#include <type_traits>
#include <fmt/format.h>

namespace gaia {
namespace {

constexpr unsigned __int128 kMappedMarker = static_cast<unsigned __int128>(0xffff) << 32;

// The 128-bit value of an IPv4-mapped IPv6 address (::ffff:a.b.c.d) for an IPv4 one.
unsigned __int128 mapped_v6_bits(const IpAddress& v4) { return kMappedMarker | (v4.bits >> 96); }

}  // namespace

std::string IpAddress::to_string() const {
  if (family == IpFamily::V4) {
    auto v = static_cast<uint32_t>(bits >> 96);
    return fmt::format("{}.{}.{}.{}", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
  }
  std::array<unsigned char, 16> bytes{};
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(bits >> (120 - 8 * i));
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, bytes.data(), text, sizeof text);
  return text;
}

bool IpPrefix::contains(const IpAddress& a) const {
  return a.family == address.family &&
         ((a.bits ^ address.bits) & prefix_bits::mask(length)) == 0;
}

std::string IpPrefix::to_string() const { return fmt::format("{}/{}", address.to_string(), length); }

std::expected<IpAddress, std::string> parse_address(std::string_view text) {
  if (text.empty())
    return std::unexpected(std::string(
        "empty address: expected an IPv4 address like 10.0.0.1 or an IPv6 address like "
        "2001:db8::1"));
  // inet_pton needs a terminated string; anything longer than the longest valid form
  // is invalid anyway.
  if (text.size() >= INET6_ADDRSTRLEN)
    return std::unexpected(fmt::format("'{}' is not an IP address: too long", text));
  char buffer[INET6_ADDRSTRLEN] = {};
  std::copy(text.begin(), text.end(), buffer);

  if (text.find(':') == std::string_view::npos) {
    std::array<unsigned char, 4> bytes{};
    if (inet_pton(AF_INET, buffer, bytes.data()) != 1)
      return std::unexpected(fmt::format(
          "'{}' is not a valid IPv4 address: expected four numbers 0-255 without leading "
          "zeros, separated by dots (e.g. 10.0.0.1)",
          text));
    unsigned __int128 bits = 0;
    for (unsigned char b : bytes) bits = (bits << 8) | b;
    return IpAddress{IpFamily::V4, bits << 96};
  }
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(AF_INET6, buffer, bytes.data()) != 1)
    return std::unexpected(fmt::format(
        "'{}' is not a valid IPv6 address: expected up to eight groups of hex digits "
        "separated by colons, with at most one '::' (e.g. 2001:db8::1); zone suffixes "
        "like %eth0 are not accepted",
        text));
  unsigned __int128 bits = 0;
  for (unsigned char b : bytes) bits = (bits << 8) | b;
  if ((bits >> 32) == (kMappedMarker >> 32))  // ::ffff:a.b.c.d is an IPv4 address.
    return IpAddress{IpFamily::V4, (bits & 0xffffffffu) << 96};
  return IpAddress{IpFamily::V6, bits};
}

std::expected<IpPrefix, std::string> parse_cidr(std::string_view text) {
  size_t slash = text.find('/');
  std::string_view address_text = text.substr(0, slash);
  auto address = parse_address(address_text);
  if (!address) {
    if (slash == std::string_view::npos) return std::unexpected(address.error());
    return std::unexpected(fmt::format("'{}': {}", text, address.error()));
  }
  // Whether the prefix length counts IPv6 bits: true for IPv4-mapped addresses too,
  // since "::ffff:10.0.0.0/104" means the IPv4 /8.
  bool written_as_v6 = address_text.find(':') != std::string_view::npos;
  int max = written_as_v6 ? 128 : 32;
  int length = max;
  if (slash != std::string_view::npos) {
    std::string_view digits = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      return std::unexpected(fmt::format("'{}': prefix length '{}' is not a number", text, digits));
    if (length < 0 || length > max)
      return std::unexpected(fmt::format("'{}': prefix length {} is out of range (0-{} for {})",
                                         text, length, max, written_as_v6 ? "IPv6" : "IPv4"));
  }
  IpPrefix prefix{*address, length};
  if (written_as_v6 && address->family == IpFamily::V4) {
    if (length >= 96)
      prefix.length = length - 96;
    else  // Wider than the mapped range; the host-bit check below rejects it.
      prefix.address = IpAddress{IpFamily::V6, mapped_v6_bits(*address)};
  }
  unsigned __int128 host_bits = prefix.address.bits & ~prefix_bits::mask(prefix.length);
  if (host_bits != 0) {
    IpPrefix network{{prefix.address.family, prefix.address.bits & prefix_bits::mask(prefix.length)},
                     prefix.length};
    return std::unexpected(fmt::format(
        "'{}': the address has bits set after the first {} (did you mean {}?)", text, length,
        network.to_string()));
  }
  return prefix;
}

// The lookup index (detail::PrefixIndex).
//
// Each family has a multibit trie in the style of Poptrie (Asai and Ohara, SIGCOMM 2015),
// path-compressed. A direct table is indexed by the address's first `top_bits` bits;
// below it, each node covers the next 6 bits (fewer where the address ends, or where an
// IPv6 stride would cross bit 64). A node's 64 slots are held in two bitmaps:
// `children` marks the slots that lead to a deeper node, found at child_base plus the
// number of children before the slot; the other slots are leaves, each the longest
// prefix covering the slot (controlled prefix expansion with leaf pushing: a prefix
// ending inside the stride fills every slot it covers, and a slot leading deeper hands
// its prefix down as the deeper node's fallback). Equal neighbouring leaves are stored
// once: `runs` marks where a new one starts, and the leaf of slot s is
// leaves[leaf_base + (runs set up to s)]. A leaf is 8 bytes: the prefix's length and
// its trie node; its bits are the address's, masked.
//
// Path compression: a node starts where the prefixes below its parent's slot stop
// sharing bits, or where the shortest of them ends, whichever comes first, so an IPv6 /64
// or /128 far from its neighbours costs one or two nodes, not one per 6 bits. A node
// holds the bits every address reaching it must have (`key`, its first `depth` bits);
// an address that differs there left the compressed path, and its answer is the node's
// fallback, stored as the leaf just before the node's own (leaves[leaf_base]). So a
// lookup reads one table slot, one node per level (32 bytes for IPv4; one 64-byte line
// for IPv6, whose strides stay within one 64-bit word) and one leaf, with two popcounts
// per node.
namespace detail {

template <class Key>
constexpr int kIndexKeyBits = static_cast<int>(sizeof(Key) * 8);

template <class Key>
inline int index_common_bits(Key a, Key b) {
  if constexpr (sizeof(Key) == 4) {
    uint32_t x = a ^ b;
    return x ? __builtin_clz(x) : 32;
  } else {
    return prefix_bits::common_length(a, b, 128);
  }
}

// Where the lookup's popcounts must be fast: prefix_index_find is compiled twice, with
// and without the POPCNT instruction (which x86-64 CPUs have had since 2008 but the
// baseline ABI does not promise), and the loader picks one.
#if defined(__x86_64__) && !defined(__POPCNT__) && defined(__GNUC__) && !defined(__clang__)
#define GAIA_INDEX_CLONES __attribute__((target_clones("popcnt", "default")))
#else
#define GAIA_INDEX_CLONES
#endif

template <class Key>
class MultibitTrie {
 public:
  static constexpr int kBits = kIndexKeyBits<Key>;
  static constexpr int kStride = 6;
  static constexpr uint32_t kLeaf = 0x80000000u;  // In a direct slot: a leaf, not a node.

  // `items`: distinct prefixes of this family.
  explicit MultibitTrie(std::vector<PrefixIndexItem> items) { Builder(*this, std::move(items)).build(); }

  [[gnu::always_inline]] PrefixIndexItem find(Key address) const {
    const Leaf& leaf = walk(address);
    auto bits = static_cast<unsigned __int128>(address) << (128 - kBits);
    return PrefixIndexItem{bits & prefix_bits::mask(leaf.length), leaf.id, leaf.length};
  }

  size_t bytes() const {
    return m_direct.capacity() * sizeof(uint32_t) + m_nodes.capacity() * sizeof(Node) +
           m_leaves.capacity() * sizeof(Leaf);
  }

 private:
  struct Leaf {
    uint32_t id = 0;
    int32_t length = -1;  // -1: no prefix.
  };
  // IPv4: the node's first `depth` bits (`key`), compared by shifting; 32 bytes.
  struct Node32 {
    uint64_t children = 0;
    uint64_t runs = 0;
    uint32_t child_base = 0;
    uint32_t leaf_base = 0;  // The fallback; the slots' leaves follow.
    uint32_t key = 0;
    uint8_t shift = 0;  // The slot of `address` is (address >> shift) & mask.
    uint8_t mask = 0;
    uint8_t depth = 0;  // Bits before the node's stride: 1 or more.
  };
  // IPv6: the node's first `depth` bits and their mask, as 64-bit words, and the word its
  // stride lies in (strides do not cross bit 64): one 64-byte line.
  struct alignas(64) Node128 {
    uint64_t children = 0;
    uint64_t runs = 0;
    uint32_t child_base = 0;
    uint32_t leaf_base = 0;
    uint64_t key_high = 0, key_low = 0;
    uint64_t mask_high = 0, mask_low = 0;
    uint8_t shift = 0;  // Within the word.
    uint8_t mask = 0;
    uint8_t depth = 0;
    bool low = false;  // The stride is in the low word.
  };
  using Node = std::conditional_t<sizeof(Key) == 4, Node32, Node128>;

  static unsigned slot_of(Key address, int depth, int width) {
    return static_cast<unsigned>(address >> (kBits - depth - width)) & ((1u << width) - 1);
  }

  [[gnu::always_inline]] const Leaf& walk(Key address) const {
    const auto high = static_cast<uint64_t>(address >> (kBits > 64 ? 64 : 0));
    [[maybe_unused]] const auto low = static_cast<uint64_t>(address);
    uint32_t slot = m_direct[static_cast<size_t>(high >> (std::min(kBits, 64) - m_top_bits))];
    while (!(slot & kLeaf)) {
      const Node& n = m_nodes[slot];
      uint64_t bit;
      if constexpr (sizeof(Key) == 4) {
        if ((address ^ n.key) >> (kBits - n.depth)) return m_leaves[n.leaf_base];  // Left the path.
        bit = uint64_t{1} << ((address >> n.shift) & n.mask);
      } else {
        if (((high & n.mask_high) ^ n.key_high) | ((low & n.mask_low) ^ n.key_low)) return m_leaves[n.leaf_base];
        bit = uint64_t{1} << (((n.low ? low : high) >> n.shift) & n.mask);
      }
      if (n.children & bit) {
        slot = n.child_base + static_cast<uint32_t>(__builtin_popcountll(n.children & (bit - 1)));
        continue;
      }
      return m_leaves[n.leaf_base + static_cast<uint32_t>(__builtin_popcountll(n.runs & ((bit << 1) - 1)))];
    }
    return m_leaves[slot & ~kLeaf];
  }

  class Builder {
   public:
    Builder(MultibitTrie& t, std::vector<PrefixIndexItem> items) : t(t), m_items(std::move(items)) {
      auto less = [](const PrefixIndexItem& a, const PrefixIndexItem& b) {
        return a.key != b.key ? a.key < b.key : a.length < b.length;
      };
      if (!std::is_sorted(m_items.begin(), m_items.end(), less)) std::sort(m_items.begin(), m_items.end(), less);
      m_leaf_of.assign(m_items.size() + 1, kLeaf);
    }

    void build() {
      // 2^top_bits slots, about 4 per prefix: 16 bits (256 KiB) from 16,384 prefixes on.
      t.m_top_bits = std::clamp(static_cast<int>(std::bit_width(m_items.size())) + 2, 4, std::min(16, kBits));
      const size_t slots = size_t{1} << t.m_top_bits;
      std::vector<uint32_t> item(slots, kNone);
      std::vector<int> item_length(slots, -1);
      std::vector<uint32_t> deep;
      for (uint32_t id = 0; id < m_items.size(); ++id) {
        int length = m_items[id].length;
        if (length > t.m_top_bits) {
          deep.push_back(id);
          continue;
        }
        size_t first = slot_of(key(id), 0, t.m_top_bits);
        for (size_t s = first; s < first + (size_t{1} << (t.m_top_bits - length)); ++s)
          if (length > item_length[s]) {
            item_length[s] = length;
            item[s] = id;
          }
      }
      t.m_direct.resize(slots);
      for (size_t s = 0; s < slots; ++s) t.m_direct[s] = kLeaf | shared_leaf(item[s]);
      for (size_t begin = 0; begin < deep.size();) {
        unsigned s = slot_of(key(deep[begin]), 0, t.m_top_bits);
        size_t end = begin + 1;
        while (end < deep.size() && slot_of(key(deep[end]), 0, t.m_top_bits) == s) ++end;
        uint32_t node = add_nodes(1);
        fill(node, t.m_top_bits, std::span<const uint32_t>(deep).subspan(begin, end - begin), item[s]);
        t.m_direct[s] = node;
        begin = end;
      }
      t.m_nodes.shrink_to_fit();
      t.m_leaves.shrink_to_fit();
    }

   private:
    static constexpr uint32_t kNone = UINT32_MAX;  // No item.

    Key key(uint32_t id) const { return static_cast<Key>(m_items[id].key >> (128 - kBits)); }

    // A new leaf for item `id` (kNone: no prefix).
    uint32_t new_leaf(uint32_t id) {
      Leaf leaf;
      if (id != kNone) leaf = Leaf{m_items[id].id, m_items[id].length};
      auto index = static_cast<uint32_t>(t.m_leaves.size());
      if (index >= kLeaf) throw std::bad_alloc();  // Numbers must stay below the tag bit.
      t.m_leaves.push_back(leaf);
      return index;
    }
    // One leaf per item for the direct table.
    uint32_t shared_leaf(uint32_t id) {
      uint32_t& slot = m_leaf_of[id == kNone ? m_items.size() : id];
      if (slot == kLeaf) slot = new_leaf(id);
      return slot;
    }

    uint32_t add_nodes(size_t count) {
      auto first = static_cast<uint32_t>(t.m_nodes.size());
      if (t.m_nodes.size() + count >= kLeaf) throw std::bad_alloc();  // As for leaves.
      t.m_nodes.resize(t.m_nodes.size() + count);
      return first;
    }

    // Fills node `index` for `ids`: prefixes inside one region of `depth` bits, all
    // longer than `depth`, sorted; `fallback` is the longest prefix covering the region.
    void fill(uint32_t index, int depth, std::span<const uint32_t> ids, uint32_t fallback) {
      // Path compression: start where the prefixes stop sharing bits or the shortest ends.
      int shortest = kBits;
      for (uint32_t id : ids) shortest = std::min(shortest, m_items[id].length);
      const int d = std::min(index_common_bits(key(ids.front()), key(ids.back())), shortest - 1);
      // A stride ends at the address's end, and (for IPv6) at bit 64.
      const int width = std::min(kStride, (d < 64 ? std::min(kBits, 64) : kBits) - d);
      const int end = d + width;

      // The prefixes ending in this stride fill the slots they cover, the longest winning.
      std::array<uint32_t, 64> item;
      std::array<int, 64> item_length;
      item.fill(fallback);
      item_length.fill(-1);
      std::vector<uint32_t> deeper;
      for (uint32_t id : ids) {
        int length = m_items[id].length;
        if (length > end) {
          deeper.push_back(id);
          continue;
        }
        unsigned first = slot_of(key(id), d, width);
        for (unsigned s = first; s < first + (1u << (end - length)); ++s)
          if (length > item_length[s]) {
            item_length[s] = length;
            item[s] = id;
          }
      }
      // The longer ones go to child nodes, one per slot they fall in, in slot order.
      uint64_t children = 0;
      for (uint32_t id : deeper) children |= uint64_t{1} << slot_of(key(id), d, width);
      const uint32_t child_base = add_nodes(static_cast<size_t>(std::popcount(children)));
      const uint32_t leaf_base = new_leaf(fallback);
      uint64_t runs = 0;
      uint32_t last = kNone;
      bool any = false;
      for (unsigned s = 0; s < (1u << width); ++s) {
        if (children >> s & 1) continue;
        if (!any || item[s] != last) {
          runs |= uint64_t{1} << s;
          new_leaf(item[s]);
        }
        last = item[s];
        any = true;
      }
      Node& n = t.m_nodes[index];
      n.children = children;
      n.runs = runs;
      n.child_base = child_base;
      n.leaf_base = leaf_base;
      const Key mask = static_cast<Key>(~Key(0) << (kBits - d));
      if constexpr (sizeof(Key) == 4) {
        n.key = key(ids.front()) & mask;
        n.shift = static_cast<uint8_t>(kBits - end);
      } else {
        n.key_high = static_cast<uint64_t>((key(ids.front()) & mask) >> 64);
        n.key_low = static_cast<uint64_t>(key(ids.front()) & mask);
        n.mask_high = static_cast<uint64_t>(mask >> 64);
        n.mask_low = static_cast<uint64_t>(mask);
        n.low = d >= 64;
        n.shift = static_cast<uint8_t>((n.low ? 128 : 64) - end);
      }
      n.mask = static_cast<uint8_t>((1u << width) - 1);
      n.depth = static_cast<uint8_t>(d);
      uint32_t child = child_base;
      for (size_t begin = 0; begin < deeper.size(); ++child) {
        unsigned s = slot_of(key(deeper[begin]), d, width);
        size_t stop = begin + 1;
        while (stop < deeper.size() && slot_of(key(deeper[stop]), d, width) == s) ++stop;
        fill(child, end, std::span<const uint32_t>(deeper).subspan(begin, stop - begin), item[s]);
        begin = stop;
      }
    }

    MultibitTrie& t;
    std::vector<PrefixIndexItem> m_items;  // Sorted by key, then length.
    std::vector<uint32_t> m_leaf_of;       // Item (or kNone, last) -> its leaf in the direct table.
  };

  int m_top_bits = 4;
  std::vector<uint32_t> m_direct;  // kLeaf | leaf, or a node.
  std::vector<Node> m_nodes;
  std::vector<Leaf> m_leaves;
};

class PrefixIndex {
 public:
  PrefixIndex(std::vector<PrefixIndexItem> v4, std::vector<PrefixIndexItem> v6)
      : m_v4(std::move(v4)), m_v6(std::move(v6)) {}
  [[gnu::always_inline]] PrefixIndexItem find(const IpAddress& address) const {
    return address.family == IpFamily::V4 ? m_v4.find(static_cast<uint32_t>(address.bits >> 96))
                                          : m_v6.find(address.bits);
  }
  size_t bytes() const { return sizeof(*this) + m_v4.bytes() + m_v6.bytes(); }

 private:
  MultibitTrie<uint32_t> m_v4;
  MultibitTrie<unsigned __int128> m_v6;
};

std::shared_ptr<const PrefixIndex> build_prefix_index(std::vector<PrefixIndexItem> v4,
                                                      std::vector<PrefixIndexItem> v6) {
  return std::make_shared<const PrefixIndex>(std::move(v4), std::move(v6));
}

GAIA_INDEX_CLONES
PrefixIndexItem prefix_index_find(const PrefixIndex& index, const IpAddress& address) {
  return index.find(address);
}

size_t prefix_index_bytes(const PrefixIndex& index) { return index.bytes(); }

uint64_t prefix_index_threshold(size_t entries) { return 64 + entries / 2; }

#undef GAIA_INDEX_CLONES

}  // namespace detail

bool loopback_cidr(std::string_view cidr) {
  auto p = parse_cidr(cidr);
  if (!p) return false;
  for (const char* loopback : {"127.0.0.0/8", "::1/128"}) {
    auto lo = parse_cidr(loopback);
    if (lo && p->length >= lo->length && lo->contains(p->address)) return true;
  }
  return false;
}

}  // namespace gaia
