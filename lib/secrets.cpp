#include "lib/secrets.hpp"

#include <algorithm>

namespace gaia {

namespace {

using json = nlohmann::json;

constexpr std::string_view k_convention = "secrets";

// Values are compared as users see them: strings as they are, others as JSON.
std::string shown(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Whether `key` is `parent` or lies under it ("web.session_secret.v2" under "web.session_secret").
bool at_or_under(std::string_view key, std::string_view parent) {
  return key == parent || (key.size() > parent.size() && key.starts_with(parent) && key[parent.size()] == '.');
}

std::vector<std::string> split_dots(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    out.emplace_back(path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

// The member at a dotted path under `root`, or nullptr.
const json* lookup(const json& root, std::string_view dotted) {
  const json* cur = &root;
  for (const auto& part : split_dots(dotted)) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(part);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

json* lookup(json& root, std::string_view dotted) {
  return const_cast<json*>(lookup(static_cast<const json&>(root), dotted));
}

}  // namespace

SecretKeys::SecretKeys(const std::vector<std::string>& keys) {
  for (const auto& k : keys) add(k);
}

void SecretKeys::add(const std::string& key) {
  if (!key.empty()) m_keys.insert(key);
}

void SecretKeys::add(const SecretKeys& other) { m_keys.insert(other.m_keys.begin(), other.m_keys.end()); }

bool SecretKeys::secret(std::string_view key) const {
  if (at_or_under(key, k_convention)) return true;
  return std::any_of(m_keys.begin(), m_keys.end(), [&](const std::string& k) { return at_or_under(key, k); });
}

bool SecretKeys::touches(std::string_view key) const {
  if (secret(key)) return true;
  return std::any_of(m_keys.begin(), m_keys.end(), [&](const std::string& k) { return at_or_under(k, key); });
}

json SecretKeys::mask(std::string_view key, const json& value) const {
  if (value.is_null()) return value;
  if (secret(key)) return k_secret_mask;
  if (!value.is_object()) return value;
  json out = value;
  for (const auto& k : m_keys) {
    if (!at_or_under(k, key) || k == key) continue;
    if (json* member = lookup(out, std::string_view(k).substr(key.size() + 1)); member && !member->is_null())
      *member = k_secret_mask;
  }
  return out;
}

std::string SecretKeys::text(std::string_view key, const json& value) const { return shown(mask(key, value)); }

json SecretKeys::mask_read(std::string_view kind, std::string_view key, const json& value) const {
  return kind == "config" ? mask(key, value) : value;
}

std::string SecretKeys::read_text(std::string_view kind, std::string_view key, const json& value) const {
  return shown(mask_read(kind, key, value));
}

SecretValues::SecretValues(std::vector<std::string> values) {
  for (auto& v : values) add(json(std::move(v)));
}

void SecretValues::add(const json& value) {
  if (value.is_null()) return;
  if (value.is_object() || value.is_array())
    for (const auto& member : value) add(member);
  std::string text = shown(value);
  if (text.empty() || std::find(m_values.begin(), m_values.end(), text) != m_values.end()) return;
  // Longest first: where one secret contains another, the longer one is hidden whole.
  auto at = std::find_if(m_values.begin(), m_values.end(), [&](const std::string& v) { return v.size() < text.size(); });
  m_values.insert(at, std::move(text));
}

bool SecretValues::reveals(const json& value) const {
  if (value.is_null() || m_values.empty()) return false;
  std::string text = shown(value);
  for (const auto& s : m_values) {
    if (text == s) return true;
    if (s.size() >= 4 && text.find(s) != std::string::npos) return true;
  }
  return false;
}

std::string SecretValues::mask_text(const std::string& text) const {
  if (m_values.empty()) return text;
  if (std::find(m_values.begin(), m_values.end(), text) != m_values.end()) return k_secret_mask;
  // One pass, longest match first at each position, so the mask itself is never
  // searched again (a secret "secr" must not eat into "<secret>").
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    auto hit = std::find_if(m_values.begin(), m_values.end(), [&](const std::string& s) {
      return s.size() >= 4 && text.compare(pos, s.size(), s) == 0;
    });
    if (hit == m_values.end()) {
      out += text[pos++];
      continue;
    }
    out += k_secret_mask;
    pos += hit->size();
  }
  return out;
}

json SecretValues::mask_json(const json& value) const {
  if (value.is_object() || value.is_array()) {
    json out = value;
    for (auto& member : out) member = mask_json(member);
    return out;
  }
  if (!reveals(value)) return value;
  return value.is_string() ? json(mask_text(value.get<std::string>())) : json(k_secret_mask);
}

SecretValues secret_values_of(const std::string& app, const SecretKeys& keys, const std::vector<const json*>& documents) {
  SecretValues out;
  std::string prefix = app + ".";
  for (const json* doc : documents) {
    if (!doc || !doc->is_object()) continue;
    if (auto reads = doc->find("reads"); reads != doc->end() && reads->is_array())
      for (const auto& r : *reads) {
        if (!r.is_object() || r.value("kind", "") != "config" || !r.contains("value")) continue;
        std::string key = r.value("key", "");
        if (keys.secret(key)) {
          out.add(r["value"]);
          continue;
        }
        // A parent key read the whole object: only its secret members are secret.
        for (const auto& k : keys.listed())
          if (at_or_under(k, key) && k != key)
            if (const json* member = lookup(r["value"], std::string_view(k).substr(key.size() + 1))) out.add(*member);
      }
    if (auto config = doc->find("config"); config != doc->end())
      for (const auto& k : keys.listed())
        if (k.starts_with(prefix))
          if (const json* v = lookup(*config, std::string_view(k).substr(prefix.size()))) out.add(*v);
  }
  return out;
}

std::vector<std::string> secret_values(const std::string& app, const std::vector<std::string>& keys,
                                       const std::vector<const json*>& documents) {
  auto values = secret_values_of(app, SecretKeys(keys), documents).values();
  std::sort(values.begin(), values.end());
  return values;
}

bool reveals_secret(const json& value, const std::vector<std::string>& secrets) {
  return SecretValues(secrets).reveals(value);
}

}  // namespace gaia
