#include "lib/labels.hpp"

#include <nlohmann/json.hpp>

namespace gaia {

Labels::Labels(Map map) {
  if (!map.empty()) m_map = std::make_shared<Map>(std::move(map));
}

const Labels::Map& Labels::empty_map() {
  static const Map empty;
  return empty;
}

Labels::Map& Labels::own() {
  if (!m_map) m_map = std::make_shared<Map>();
  // The one holder may change it in place; a shared map is copied first, so the other
  // holders keep what they had.
  else if (m_map.use_count() > 1) m_map = std::make_shared<Map>(*m_map);
  return *m_map;
}

void Labels::set(std::string key, std::string value) { own().insert_or_assign(std::move(key), std::move(value)); }

Labels::size_type Labels::erase(const std::string& key) {
  if (!contains(key)) return 0;
  Map& m = own();
  m.erase(key);
  if (m.empty()) m_map.reset();
  return 1;
}

void to_json(nlohmann::json& j, const Labels& labels) { j = labels.map(); }

void from_json(const nlohmann::json& j, Labels& labels) { labels = Labels(j.get<Labels::Map>()); }

Labels LabelPool::get(const Pairs& pairs) {
  auto build = [&] {
    Labels::Map m;
    for (const auto& [k, v] : pairs) m.insert_or_assign(std::string(k), std::string(v));
    return Labels(std::move(m));
  };
  if (pairs.empty()) return Labels();
  // Names and values cannot hold a NUL in records gaia decodes this way (printable
  // ASCII only, lib/instance_scan.hpp), so NUL separates them unambiguously.
  m_key.clear();
  for (const auto& [k, v] : pairs) {
    m_key.append(k);
    m_key.push_back('\0');
    m_key.append(v);
    m_key.push_back('\0');
  }
  if (auto it = m_pool.find(std::string_view(m_key)); it != m_pool.end()) return it->second;
  Labels labels = build();
  if (m_pool.size() < k_max_entries) m_pool.emplace(m_key, labels);
  return labels;
}

}  // namespace gaia
