#include "lib/hash.hpp"

#include <cstdint>
#include <fmt/format.h>
#include <xxhash.h>

namespace gaia {

Hasher::Hasher() : m_state(XXH3_createState()) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(m_state)); }
Hasher::~Hasher() { XXH3_freeState(static_cast<XXH3_state_t*>(m_state)); }

Hasher& Hasher::add(std::string_view part) {
  uint64_t len = part.size();
  XXH3_128bits_update(static_cast<XXH3_state_t*>(m_state), &len, sizeof len);
  XXH3_128bits_update(static_cast<XXH3_state_t*>(m_state), part.data(), part.size());
  return *this;
}

std::string Hasher::hex() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(m_state));
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string content_hash(std::string_view data) {
  Hasher h;
  h.add(data);
  return h.hex();
}

}  // namespace gaia
