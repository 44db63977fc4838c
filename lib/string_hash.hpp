#pragma once
// A hash of strings that also takes string views, for unordered maps keyed by
// std::string that are looked up by a part of a larger string (an instance key's tail,
// a label read from a record): `find(view)` then needs no std::string, whose allocation
// cost more than the lookup in the scheduler's per-instance loops.
//
//   std::unordered_map<std::string, int, StringHash, std::equal_to<>> m;
//   m.find(std::string_view("..."));

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gaia {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  size_t operator()(const std::string& s) const { return std::hash<std::string_view>{}(s); }
  size_t operator()(const char* s) const { return std::hash<std::string_view>{}(s); }
};

// An unordered map from strings that string views can look up.
template <class V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

}  // namespace gaia
