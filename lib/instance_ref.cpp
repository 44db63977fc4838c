#include "lib/instance_ref.hpp"

#include <fmt/format.h>

#include <vector>

namespace gaia {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

bool is_ordinal(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

bool all_nonempty(const std::vector<std::string_view>& parts) {
  for (auto p : parts)
    if (p.empty()) return false;
  return true;
}

}  // namespace

std::string instance_key_from_ref(std::string_view ref, const std::string& tenant) {
  std::string_view s = ref;
  if (s.ends_with(".gaia")) s.remove_suffix(5);
  if (s.find('/') != std::string_view::npos) {
    auto parts = split(s, '/');
    if (!all_nonempty(parts)) return std::string(ref);
    // app/role/ordinal (current tenant) or tenant/app/role/ordinal.
    if (parts.size() == 3 && is_ordinal(parts[2])) return fmt::format("{}.{}.{}.{}", parts[2], parts[1], parts[0], tenant);
    if (parts.size() == 4 && is_ordinal(parts[3]))
      return fmt::format("{}.{}.{}.{}", parts[3], parts[2], parts[1], parts[0]);
    return std::string(ref);
  }
  auto parts = split(s, '.');
  if (!all_nonempty(parts) || !is_ordinal(parts[0])) return std::string(ref);
  if (parts.size() == 3) return fmt::format("{}.{}", s, tenant);
  return std::string(s);
}

}  // namespace gaia
