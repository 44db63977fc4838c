#pragma once
// Content hashes (xxh3-128) for render caching and for the hash carried by rendered
// output. Not cryptographic: they detect change, not tampering.

#include <string>
#include <string_view>

namespace gaia {

class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  // Each part is length-prefixed so ("ab","c") and ("a","bc") hash differently.
  Hasher& add(std::string_view part);
  // 32 lowercase hex characters.
  std::string hex() const;

 private:
  void* m_state;
};

std::string content_hash(std::string_view data);

}  // namespace gaia
