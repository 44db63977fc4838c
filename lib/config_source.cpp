#include "lib/config_source.hpp"

namespace gaia {

std::optional<ConfigValue> ConfigSnapshot::get_label(const std::string& kind, const std::string& name,
                                                     const std::string& key) const {
  if (auto k = labels.find(kind); k != labels.end())
    if (auto n = k->second.find(name); n != k->second.end())
      if (auto v = n->second.find(key); v != n->second.end()) return v->second;
  if (more_labels) return more_labels(kind, name, key);
  return std::nullopt;
}

}  // namespace gaia
