#include "lib/key_index.hpp"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

namespace gaia {

uint64_t KeyIndex::hash(std::string_view key) { return XXH3_64bits(key.data(), key.size()); }

KeyIndex::KeyIndex(std::vector<std::string_view> keys) : m_keys(std::move(keys)), m_next(m_keys.size(), -1) {
  if (m_keys.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() / 2))
    throw std::length_error("KeyIndex: too many keys");
  // At most half full, so a probe ends after a slot or two on average.
  size_t capacity = std::bit_ceil(std::max<size_t>(8, m_keys.size() * 2));
  m_slots.resize(capacity);
  m_mask = capacity - 1;
  // Backwards, so that each key's chain of positions runs forwards.
  for (size_t k = m_keys.size(); k-- > 0;) {
    uint64_t h = hash(m_keys[k]);
    auto tag = static_cast<uint32_t>(h >> 32);
    for (uint64_t s = h & m_mask;; s = (s + 1) & m_mask) {
      Slot& slot = m_slots[s];
      if (slot.pos < 0) {
        slot = {tag, static_cast<int32_t>(k)};
        break;
      }
      if (slot.tag == tag && m_keys[static_cast<size_t>(slot.pos)] == m_keys[k]) {
        m_next[k] = slot.pos;
        slot.pos = static_cast<int32_t>(k);
        break;
      }
    }
  }
}

int KeyIndex::first(std::string_view key) const {
  if (m_slots.empty()) return -1;
  uint64_t h = hash(key);
  auto tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t s = h & m_mask;; s = (s + 1) & m_mask) {
    const Slot& slot = m_slots[s];
    if (slot.pos < 0) return -1;
    if (slot.tag == tag && m_keys[static_cast<size_t>(slot.pos)] == key) return slot.pos;
  }
}

}  // namespace gaia
