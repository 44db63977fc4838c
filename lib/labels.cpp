#include "lib/labels.hpp"

#include <nlohmann/json.hpp>

#include <atomic>

namespace gaia {

Labels::Labels(Map map) {
  if (!map.empty()) m_map = std::make_shared<Map>(std::move(map));
}

const Labels::Map& Labels::empty_map() {
  static const Map empty;
  return empty;
}

bool Labels::sole() const {
  if (m_map.use_count() != 1) return false;
  // use_count() is a relaxed read. Another holder that read the map and then let go
  // released its count; this fence makes its reads happen before our writes, as a
  // shared_ptr's own destructor would order them.
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

Labels::Map& Labels::own() {
  if (!m_map) m_map = std::make_shared<Map>();
  // The one holder may change it in place; a shared map is copied first, so the other
  // holders keep what they had.
  else if (!sole()) m_map = std::make_shared<Map>(*m_map);
  return *m_map;
}

void Labels::set(std::string key, std::string value) { own().insert_or_assign(std::move(key), std::move(value)); }

Labels::size_type Labels::erase(const std::string& key) {
  if (!contains(key)) return 0;
  // The map stays, empty or not: only the holders' counts free it.
  own().erase(key);
  return 1;
}

void Labels::clear() {
  if (!m_map) return;
  // The one holder empties its map in place; a shared one is let go (the others keep it).
  if (sole()) m_map->clear();
  else m_map.reset();
}

void to_json(nlohmann::json& j, const Labels& labels) { j = labels.map(); }

void from_json(const nlohmann::json& j, Labels& labels) { labels = Labels(j.get<Labels::Map>()); }

Labels LabelPool::adopt(const Labels& labels) {
  if (labels.empty()) return labels;
  // A NUL (possible in labels the JSON fallback decoded) would make two sets one key.
  for (const auto& [k, v] : labels.map())
    if (k.find('\0') != std::string::npos || v.find('\0') != std::string::npos) return labels;
  // The same key get() builds for the same labels read in name order, as gaia writes them.
  m_key.clear();
  for (const auto& [k, v] : labels.map()) {
    m_key.append(k);
    m_key.push_back('\0');
    m_key.append(v);
    m_key.push_back('\0');
  }
  if (auto it = m_pool.find(std::string_view(m_key)); it != m_pool.end()) return it->second;
  if (m_pool.size() < k_max_entries) m_pool.emplace(m_key, labels);
  return labels;
}

Labels LabelPool::get(const Pairs& pairs) {
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
  Labels::Map m;
  for (const auto& [k, v] : pairs) m.insert_or_assign(std::string(k), std::string(v));
  Labels labels(std::move(m));
  if (m_pool.size() < k_max_entries) m_pool.emplace(m_key, labels);
  return labels;
}

}  // namespace gaia
