#include "spec/condition.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <vector>

#include "spec/suggest.hpp"

namespace gaia::spec {

namespace {

using nlohmann::json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool key_char(char c, bool first) {
  bool alpha = std::isalpha(static_cast<unsigned char>(c)) || c == '_';
  return first ? alpha : alpha || std::isdigit(static_cast<unsigned char>(c)) || c == '-';
}

// "a.b_c.d-e": segments of [A-Za-z_][A-Za-z0-9_-]*, as config.jsonnet field names are
// usually written.
std::string key_problem(std::string_view key) {
  if (key.empty()) return "the parameter name is missing";
  size_t start = 0;
  while (true) {
    size_t dot = key.find('.', start);
    std::string_view seg = key.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (seg.empty()) return fmt::format("'{}' has an empty part between dots", key);
    for (size_t i = 0; i < seg.size(); ++i)
      if (!key_char(seg[i], i == 0))
        return fmt::format("'{}' is not a parameter path: '{}' is not allowed there", key, seg[i]);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return {};
}

// A value after == or !=: true, false, a number, a quoted string, or a bare word (a
// string).
std::expected<json, std::string> parse_value(std::string_view text) {
  if (text.empty()) return std::unexpected("the value to compare with is missing");
  if (text == "true") return json(true);
  if (text == "false") return json(false);
  if (text.front() == '\'' || text.front() == '"') {
    if (text.size() < 2 || text.back() != text.front())
      return std::unexpected(fmt::format("{} has no closing quote", text));
    std::string inner(text.substr(1, text.size() - 2));
    if (inner.find(text.front()) != std::string::npos)
      return std::unexpected(fmt::format("{} has a quote inside the quotes", text));
    return json(inner);
  }
  char c = text.front();
  if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
    std::string s(text[0] == '+' ? text.substr(1) : text);
    int64_t i = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), i);
    if (ec == std::errc() && p == s.data() + s.size()) return json(i);
    double d = 0;
    auto [p2, ec2] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec2 == std::errc() && p2 == s.data() + s.size()) return json(d);
    return std::unexpected(fmt::format("'{}' is not a number; quote it to compare with a string", text));
  }
  for (char ch : text)
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '=' || ch == '!')
      return std::unexpected(fmt::format("'{}' is not one value; quote a string with spaces", text));
  return json(std::string(text));
}

std::string shown(const json& v) { return v.dump(); }

}  // namespace

std::expected<Condition, std::string> parse_condition(std::string_view text) {
  Condition c;
  c.text = std::string(trim(text));
  std::string_view t = trim(text);
  if (t.empty()) return std::unexpected("the condition is empty");
  size_t eq = t.find("==");
  size_t ne = t.find("!=");
  if (eq != std::string_view::npos || ne != std::string_view::npos) {
    bool equal = eq != std::string_view::npos && (ne == std::string_view::npos || eq < ne);
    size_t at = equal ? eq : ne;
    c.op = equal ? Condition::Op::Equal : Condition::Op::NotEqual;
    c.key = std::string(trim(t.substr(0, at)));
    auto value = parse_value(trim(t.substr(at + 2)));
    if (!value) return std::unexpected(value.error());
    c.value = std::move(*value);
  } else if (t.front() == '!') {
    c.op = Condition::Op::IsFalse;
    c.key = std::string(trim(t.substr(1)));
  } else {
    c.key = std::string(t);
  }
  if (std::string problem = key_problem(c.key); !problem.empty()) return std::unexpected(problem);
  return c;
}

std::expected<bool, std::string> evaluate_condition(const Condition& c, const json& config, std::string* hint) {
  const json* at = &config;
  std::string path;
  size_t start = 0;
  while (true) {
    size_t dot = c.key.find('.', start);
    std::string seg = c.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    std::string parent = path.empty() ? "config.jsonnet" : path;
    if (!at->is_object()) {
      if (hint) *hint = fmt::format("{} is {}, not an object of parameters", parent, shown(*at));
      return std::unexpected(fmt::format("'{}' is not a parameter of the app's config", c.key));
    }
    auto it = at->find(seg);
    if (it == at->end()) {
      std::vector<std::string> keys;
      for (auto k = at->begin(); k != at->end(); ++k) keys.push_back(k.key());
      if (hint) {
        std::string list = keys.empty() ? fmt::format("{} has no parameters", parent)
                                        : fmt::format("parameters of {}: {}", parent, join_limited(keys));
        auto best = did_you_mean(seg, keys);
        *hint = best ? fmt::format("did you mean '{}'? {}", path.empty() ? *best : path + "." + *best, list) : list;
      }
      return std::unexpected(fmt::format("'{}' is not a parameter of the app's config", c.key));
    }
    path = path.empty() ? seg : path + "." + seg;
    at = &*it;
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  switch (c.op) {
    case Condition::Op::IsTrue:
    case Condition::Op::IsFalse:
      if (!at->is_boolean()) {
        if (hint)
          *hint = fmt::format("compare it: when: \"{} == {}\"", c.key, at->is_string() ? at->get<std::string>() : shown(*at));
        return std::unexpected(fmt::format("{} is {}, not true or false", c.key, shown(*at)));
      }
      return at->get<bool>() == (c.op == Condition::Op::IsTrue);
    case Condition::Op::Equal:
    case Condition::Op::NotEqual: {
      // 3 and 3.0 are one number; otherwise types must agree.
      bool same = (at->is_number() && c.value.is_number()) ? at->get<double>() == c.value.get<double>() : *at == c.value;
      return same == (c.op == Condition::Op::Equal);
    }
  }
  return false;
}

std::string condition_value_text(const Condition& c, const json& config) {
  const json* at = &config;
  size_t start = 0;
  while (at->is_object()) {
    size_t dot = c.key.find('.', start);
    auto it = at->find(c.key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (it == at->end()) return fmt::format("{} is not set", c.key);
    at = &*it;
    if (dot == std::string::npos) return fmt::format("{} is {}", c.key, shown(*at));
    start = dot + 1;
  }
  return fmt::format("{} is not set", c.key);
}

}  // namespace gaia::spec
