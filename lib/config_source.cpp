#include "lib/config_source.hpp"

namespace gaia {

std::optional<ConfigValue> ConfigSnapshot::get_label(const std::string& kind, const std::string& name,
                                                     const std::string& key) const {
  auto k = labels.find(kind);
  if (k == labels.end()) return std::nullopt;
  auto n = k->second.find(name);
  if (n == k->second.end()) return std::nullopt;
  auto v = n->second.find(key);
  if (v == n->second.end()) return std::nullopt;
  return v->second;
}

}  // namespace gaia
