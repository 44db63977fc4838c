#include "lib/selector.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace gaia {

namespace {

bool is_alnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }
bool is_name_char(char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; }
// Characters a key token may hold while scanning; validity is checked afterwards so the
// error can say what is wrong with the whole key rather than stop at one character.
bool is_key_char(char c) { return is_name_char(c) || c == '/'; }
bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string name_problem(std::string_view s, std::string_view what) {
  if (s.empty()) return fmt::format("the {} is empty", what);
  if (s.size() > 63) return fmt::format("the {} is {} characters long: at most 63 are allowed", what, s.size());
  for (char c : s)
    if (!is_name_char(c))
      return fmt::format("the {} holds '{}': only letters, digits, '-', '_' and '.' are allowed", what, c);
  if (!is_alnum(s.front()) || !is_alnum(s.back()))
    return fmt::format("the {} must start and end with a letter or digit", what);
  return "";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : m_text(text) {}

  std::expected<std::vector<LabelRequirement>, SelectorError> run() {
    std::vector<LabelRequirement> out;
    skip_space();
    if (at_end()) return out;
    for (;;) {
      auto r = requirement();
      if (!r) return std::unexpected(r.error());
      out.push_back(std::move(*r));
      skip_space();
      if (at_end()) return out;
      if (peek() != ',')
        return error(fmt::format("expected ',' or the end of the selector, found '{}'", peek()),
                     "separate requirements with commas: app=hdfs,role=datanode");
      ++m_pos;
      skip_space();
      if (at_end()) return error("expected a requirement after ','", "remove the trailing comma");
    }
  }

 private:
  bool at_end() const { return m_pos >= m_text.size(); }
  char peek() const { return at_end() ? '\0' : m_text[m_pos]; }
  void skip_space() {
    while (!at_end() && is_space(m_text[m_pos])) ++m_pos;
  }
  bool starts_with(std::string_view s) const { return m_text.substr(m_pos).starts_with(s); }

  std::unexpected<SelectorError> error(std::string message, std::string hint = "", size_t at = SIZE_MAX) const {
    return std::unexpected(SelectorError{(at == SIZE_MAX ? m_pos : at) + 1, std::move(message), std::move(hint)});
  }

  std::expected<std::string, SelectorError> key() {
    size_t start = m_pos;
    while (!at_end() && is_key_char(peek())) ++m_pos;
    std::string k(m_text.substr(start, m_pos - start));
    if (k.empty())
      return error(at_end() ? "expected a label key, found the end of the selector"
                            : fmt::format("expected a label key, found '{}'", peek()),
                   "a requirement looks like key=value, key!=value, key, !key or key in (a,b)");
    if (std::string p = label_key_problem(k); !p.empty()) return error(fmt::format("bad label key '{}': {}", k, p), "", start);
    return k;
  }

  std::expected<std::string, SelectorError> value() {
    skip_space();
    size_t start = m_pos;
    while (!at_end() && is_name_char(peek())) ++m_pos;
    std::string v(m_text.substr(start, m_pos - start));
    if (!at_end() && !is_space(peek()) && peek() != ',' && peek() != ')')
      return error(fmt::format("unexpected '{}' in a label value", peek()),
                   "values hold letters, digits, '-', '_' and '.'");
    if (std::string p = label_value_problem(v); !p.empty())
      return error(fmt::format("bad label value '{}': {}", v, p), "", start);
    return v;
  }

  // Whether the next word is `word` as a whole word (followed by a space or '(').
  bool word(std::string_view w) const {
    if (!starts_with(w)) return false;
    size_t after = m_pos + w.size();
    return after >= m_text.size() || is_space(m_text[after]) || m_text[after] == '(';
  }

  std::expected<LabelRequirement, SelectorError> requirement() {
    LabelRequirement r;
    if (peek() == '!') {
      ++m_pos;
      skip_space();
      auto k = key();
      if (!k) return std::unexpected(k.error());
      r.key = *k;
      r.op = "DoesNotExist";
      return r;
    }
    auto k = key();
    if (!k) return std::unexpected(k.error());
    r.key = *k;
    skip_space();
    if (at_end() || peek() == ',') {
      r.op = "Exists";
      return r;
    }
    if (starts_with("!=")) {
      m_pos += 2;
      r.op = "NotIn";
    } else if (starts_with("==")) {
      m_pos += 2;
      r.op = "In";
    } else if (starts_with("=")) {
      m_pos += 1;
      r.op = "In";
    } else if (word("in") || word("notin")) {
      r.op = word("in") ? "In" : "NotIn";
      m_pos += r.op == "In" ? 2 : 5;
      skip_space();
      if (peek() != '(')
        return error(fmt::format("expected '(' after '{}'", r.op == "In" ? "in" : "notin"),
                     fmt::format("write the values in parentheses: {} {} (a,b)", r.key, r.op == "In" ? "in" : "notin"));
      ++m_pos;
      for (;;) {
        auto v = value();
        if (!v) return std::unexpected(v.error());
        r.values.push_back(*v);
        skip_space();
        if (peek() == ',') {
          ++m_pos;
          continue;
        }
        if (peek() == ')') {
          ++m_pos;
          break;
        }
        return error(at_end() ? "expected ')' to close the value list, found the end of the selector"
                              : fmt::format("expected ',' or ')' in the value list, found '{}'", peek()),
                     "close the list: key in (a,b)");
      }
      return r;
    } else {
      return error(fmt::format("expected '=', '!=', 'in', 'notin', ',' or the end after the key '{}', found '{}'",
                               r.key, peek()),
                   "a requirement looks like key=value, key!=value, key, !key or key in (a,b)");
    }
    auto v = value();
    if (!v) return std::unexpected(v.error());
    r.values.push_back(*v);
    return r;
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

}  // namespace

std::string label_key_problem(std::string_view key) {
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string_view::npos) {
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) return "the prefix before '/' is empty";
    if (prefix.size() > 253) return "the prefix before '/' is longer than 253 characters";
    for (char c : prefix)
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
            c == '.'))
        return fmt::format("the prefix '{}' holds '{}': a prefix is a DNS name (a-z, 0-9, '-', '.')", prefix, c);
    if (name.find('/') != std::string_view::npos) return "a key holds at most one '/'";
  }
  return name_problem(name, "key name");
}

std::string label_value_problem(std::string_view value) {
  if (value.empty()) return "";
  return name_problem(value, "value");
}

std::expected<std::vector<LabelRequirement>, SelectorError> parse_selector(std::string_view text) {
  return Parser(text).run();
}

bool selector_matches(const std::vector<LabelRequirement>& selector, const std::map<std::string, std::string>& labels) {
  for (const auto& r : selector) {
    auto it = labels.find(r.key);
    bool has = it != labels.end();
    bool in = has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    bool ok = r.op == "In" ? in : r.op == "NotIn" ? !in : r.op == "Exists" ? has : r.op == "DoesNotExist" ? !has : false;
    if (!ok) return false;
  }
  return true;
}

std::string format_selector(const std::vector<LabelRequirement>& selector) {
  std::vector<std::string> parts;
  for (const auto& r : selector) {
    if (r.op == "Exists") parts.push_back(r.key);
    else if (r.op == "DoesNotExist") parts.push_back("!" + r.key);
    else if (r.values.size() == 1) parts.push_back(fmt::format("{}{}{}", r.key, r.op == "In" ? "=" : "!=", r.values[0]));
    else parts.push_back(fmt::format("{} {} ({})", r.key, r.op == "In" ? "in" : "notin", fmt::join(r.values, ",")));
  }
  return fmt::format("{}", fmt::join(parts, ","));
}

}  // namespace gaia
