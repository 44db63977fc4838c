#include "render/yaml_emit.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <fmt/format.h>

namespace gaia::render {

namespace {

using nlohmann::json;

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// Words that YAML 1.1 (go-yaml, PyYAML) or 1.2 (yaml-cpp) resolve to null or a boolean.
// Compared case-insensitively, which quotes a few harmless spellings too ("yEs").
bool is_reserved_word(std::string_view s) {
  static constexpr std::array<std::string_view, 10> words = {
      "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n"};
  for (std::string_view w : words) {
    if (w.size() != s.size()) continue;
    bool same = true;
    for (size_t i = 0; i < s.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(s[i])) == w[i];
    if (same) return true;
  }
  return false;
}

// A string that starts with a digit and uses only characters that occur in YAML ints,
// floats (including 1.1's sexagesimal "1:20" and "1_000"), hex/octal/binary literals and
// timestamps might be read as one of those, so it is quoted. Strings such as "8Gi" or
// "500m" contain other letters and stay plain.
bool may_be_number_or_time(std::string_view s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    bool ok = std::isxdigit(static_cast<unsigned char>(c)) || c == 'x' || c == 'X' || c == 'o' ||
              c == 'O' || c == '_' || c == '.' || c == ':' || c == '+' || c == '-' || c == 't' ||
              c == 'T' || c == 'z' || c == 'Z' || c == ' ';
    if (!ok) return false;
  }
  return true;
}

// The UTF-8 encodings of characters YAML 1.1 treats as line breaks (NEL, LS, PS) or as a
// byte order mark; written raw they would change the value when read back.
bool special_unicode_at(std::string_view s, size_t i, size_t* length) {
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  if (at(0) == 0xC2 && at(1) == 0x85) return *length = 2, true;
  if (at(0) == 0xE2 && at(1) == 0x80 && (at(2) == 0xA8 || at(2) == 0xA9)) return *length = 3, true;
  if (at(0) == 0xEF && at(1) == 0xBB && at(2) == 0xBF) return *length = 3, true;
  return false;
}

std::string double_quoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\u{:04X}", c);
    else if (special_unicode_at(s, i, &len)) {
      if (len == 2) out += "\\u0085";
      else if (static_cast<unsigned char>(s[i]) == 0xEF) out += "\\uFEFF";
      else out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += len - 1;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  return out;
}

// Multi-line text reads best as a literal block ("|"). Only text whose block form is
// unambiguous qualifies: the first line must not start with whitespace (the reader
// guesses the indentation from it), no line may end in whitespace (editors strip it),
// and at most one trailing newline (the "|" and "|-" chomping modes cover 1 and 0).
bool literal_block_safe(std::string_view s) {
  if (s.find('\n') == std::string_view::npos) return false;
  if (s.front() == ' ' || s.front() == '\t' || s.front() == '\n') return false;
  if (s.size() >= 2 && s[s.size() - 1] == '\n' && s[s.size() - 2] == '\n') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    if (c == '\n') {
      if (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) return false;
      continue;
    }
    if (c < 0x20 || c == 0x7f || special_unicode_at(s, i, &len)) return false;
  }
  return s.back() != ' ';
}

std::string literal_block(std::string_view s, int indent) {
  bool trailing_newline = s.back() == '\n';
  std::string_view body = trailing_newline ? s.substr(0, s.size() - 1) : s;
  std::string out = trailing_newline ? "|" : "|-";
  size_t start = 0;
  while (true) {
    size_t end = body.find('\n', start);
    std::string_view line = body.substr(start, end == std::string_view::npos ? body.size() - start : end - start);
    out += '\n';
    if (!line.empty()) out += std::string(indent, ' ') + std::string(line);
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

std::string string_scalar(std::string_view s, int indent, bool allow_block) {
  if (yaml_plain_safe(s)) return std::string(s);
  if (allow_block && literal_block_safe(s)) return literal_block(s, indent);
  return double_quoted(s);
}

std::string number_scalar(const json& v) {
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isnan(d)) return ".nan";
    if (std::isinf(d)) return d > 0 ? ".inf" : "-.inf";
  }
  return v.dump();
}

// A scalar, or an empty collection in flow form. `indent` is the indentation of the
// content of a literal block, should the value become one.
std::string scalar(const json& v, int indent) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case json::value_t::string: return string_scalar(v.get_ref<const std::string&>(), indent, true);
    case json::value_t::object: return "{}";
    case json::value_t::array: return "[]";
    case json::value_t::binary: return double_quoted("<binary>");
    default: return number_scalar(v);
  }
}

bool is_block(const json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

void emit_map(std::string& out, const json& obj, int indent, bool first_inline);
void emit_seq(std::string& out, const json& arr, int indent, bool first_inline);

// After "key:" has been written: the value on the same line, or nested below. Lists
// under a key are not indented further (the style `kubectl get -o yaml` prints).
void emit_after_key(std::string& out, const json& v, int indent) {
  if (v.is_object() && !v.empty()) {
    out += '\n';
    emit_map(out, v, indent + 2, false);
  } else if (v.is_array() && !v.empty()) {
    out += '\n';
    emit_seq(out, v, indent, false);
  } else {
    out += ' ';
    out += scalar(v, indent + 2);
    out += '\n';
  }
}

void emit_map(std::string& out, const json& obj, int indent, bool first_inline) {
  bool first = true;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!(first && first_inline)) out += std::string(indent, ' ');
    first = false;
    out += string_scalar(it.key(), indent, false);
    out += ':';
    emit_after_key(out, it.value(), indent);
  }
}

void emit_seq(std::string& out, const json& arr, int indent, bool first_inline) {
  bool first = true;
  for (const json& item : arr) {
    if (!(first && first_inline)) out += std::string(indent, ' ');
    first = false;
    out += '-';
    if (is_block(item)) {
      out += ' ';
      if (item.is_object()) emit_map(out, item, indent + 2, true);
      else emit_seq(out, item, indent + 2, true);
    } else {
      out += ' ';
      out += scalar(item, indent + 2);
      out += '\n';
    }
  }
}

}  // namespace

bool yaml_plain_safe(std::string_view s) {
  if (s.empty()) return false;
  char first = s.front();
  if (!is_alnum(first) && first != '_' && first != '/') return false;
  if (s.back() == ' ' || s.back() == ':') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = is_alnum(c) || c == '_' || c == '.' || c == '/' || c == '-' || c == ':' || c == '@' ||
              c == '+' || c == '=' || c == ' ';
    if (!ok) return false;
    // ": " starts a mapping value; two spaces are kept but read badly in a diff.
    if (c == ' ' && (s[i - 1] == ':' || s[i - 1] == ' ')) return false;
  }
  return !is_reserved_word(s) && !may_be_number_or_time(s);
}

std::string emit_yaml(const json& value) {
  std::string out;
  if (value.is_object() && !value.empty()) emit_map(out, value, 0, false);
  else if (value.is_array() && !value.empty()) emit_seq(out, value, 0, false);
  else out = scalar(value, 2) + "\n";
  return out;
}

std::string emit_yaml_documents(const std::vector<json>& documents) {
  std::string out;
  for (size_t i = 0; i < documents.size(); ++i) {
    if (i > 0) out += "---\n";
    out += emit_yaml(documents[i]);
  }
  return out;
}

}  // namespace gaia::render
