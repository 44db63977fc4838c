#pragma once
// An index from string keys to positions in a vector the caller owns, built once and
// looked up many times: the controllers match every instance of the state with the
// copies a backend observed, by the instance's key, on every round of every command
// (50,000 lookups in a 50,000-copy observation). A std::unordered_map of string views
// spent most of that time in its chained nodes (one allocation and one cache miss per
// entry) and in a modulo by a prime; this table is one flat array probed linearly, with
// a 32-bit tag of each key's hash beside its position, so a lookup usually reads one
// slot and the one key it names.
//
// Several positions may share a key: first() is the lowest of them and next() leads to
// the following one, in order.

#include <cstdint>
#include <string_view>
#include <vector>

namespace gaia {

class KeyIndex {
 public:
  KeyIndex() = default;
  // Indexes `keys` (position k has key keys[k]). The views must outlive the index.
  explicit KeyIndex(std::vector<std::string_view> keys);

  // The lowest position whose key is `key`, or -1.
  int first(std::string_view key) const;
  // The next position after `k` with the same key, or -1.
  int next(int k) const { return m_next[static_cast<size_t>(k)]; }
  size_t size() const { return m_keys.size(); }

 private:
  struct Slot {
    uint32_t tag = 0;
    int32_t pos = -1;  // -1: empty.
  };
  static uint64_t hash(std::string_view key);

  std::vector<std::string_view> m_keys;
  std::vector<int32_t> m_next;
  std::vector<Slot> m_slots;  // A power of two in size, at most half full.
  uint64_t m_mask = 0;
};

}  // namespace gaia
