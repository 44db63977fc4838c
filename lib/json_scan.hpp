#pragma once
// The scanner behind the fast record decoders (lib/instance_scan.hpp, the sim
// backend's copies): strict JSON of the shape gaia writes, nothing else.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace gaia {

// A cursor over one JSON record for the fast decoders of the records a load reads by
// the ten thousand (lib/instance_scan.hpp). Every reader returns false when the text is
// not of the shape the fast path follows; the record is then decoded the slow way
// (nlohmann), which gives the same result or the same error.
class JsonScanner {
 public:
  explicit JsonScanner(std::string_view text) : m_text(text) {}

  void skip_space() {
    while (m_pos < m_text.size() &&
           (m_text[m_pos] == ' ' || m_text[m_pos] == '\t' || m_text[m_pos] == '\n' || m_text[m_pos] == '\r'))
      ++m_pos;
  }

  bool eat(char c) {
    skip_space();
    if (m_pos >= m_text.size() || m_text[m_pos] != c) return false;
    ++m_pos;
    return true;
  }

  // Whether the next token is `c`, without taking it.
  bool next_is(char c) {
    skip_space();
    return m_pos < m_text.size() && m_text[m_pos] == c;
  }

  bool at_end() {
    skip_space();
    return m_pos == m_text.size();
  }

  // A string of printable ASCII without escapes, as gaia writes names: anything else
  // (an escape, a control character that JSON forbids, UTF-8 that must be validated)
  // goes the slow way.
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    size_t start = m_pos;
    while (m_pos < m_text.size()) {
      auto c = static_cast<unsigned char>(m_text[m_pos]);
      if (c == '"') {
        out = m_text.substr(start, m_pos - start);
        ++m_pos;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;
      ++m_pos;
    }
    return false;
  }

  bool string(std::string& out) {
    std::string_view v;
    if (!string(v)) return false;
    out.assign(v);
    return true;
  }

  // An integer within [lo, hi]. A fraction or an exponent (which nlohmann converts) and
  // anything out of range (which it would wrap) go the slow way.
  bool integer(int64_t& out, int64_t lo = std::numeric_limits<int64_t>::min(),
               int64_t hi = std::numeric_limits<int64_t>::max()) {
    skip_space();
    size_t start = m_pos;
    if (m_pos < m_text.size() && m_text[m_pos] == '-') ++m_pos;
    size_t digits = m_pos;
    while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9') ++m_pos;
    if (m_pos == digits) return false;
    // JSON allows no leading zeros ("01"); nlohmann rejects them.
    if (m_text[digits] == '0' && m_pos - digits > 1) return false;
    if (m_pos < m_text.size() && (m_text[m_pos] == '.' || m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) return false;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(m_text.data() + start, m_text.data() + m_pos, v);
    if (ec != std::errc() || end != m_text.data() + m_pos || v < lo || v > hi) return false;
    out = v;
    return true;
  }

  bool integer(int& out) {
    int64_t v = 0;
    if (!integer(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max())) return false;
    out = static_cast<int>(v);
    return true;
  }

  bool boolean(bool& out) {
    skip_space();
    if (m_text.substr(m_pos, 4) == "true") {
      m_pos += 4;
      out = true;
      return true;
    }
    if (m_text.substr(m_pos, 5) == "false") {
      m_pos += 5;
      out = false;
      return true;
    }
    return false;
  }

  // An object: `member(key)` reads each member's value (false: not followed).
  template <class Member>
  bool object(Member&& member) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    for (;;) {
      std::string_view key;
      if (!string(key) || !eat(':') || !member(key)) return false;
      if (eat('}')) return true;
      if (!eat(',')) return false;
    }
  }

  // Any one value, read past without keeping it: strings as string() takes them,
  // numbers by JSON's own grammar (nlohmann rejects "01", "1.", ".5"), the three
  // literals, and objects and arrays up to a depth past which the slow way goes on.
  bool skip_value(int depth = 0) {
    if (depth > 64) return false;
    skip_space();
    if (m_pos >= m_text.size()) return false;
    char c = m_text[m_pos];
    if (c == '"') {
      std::string_view ignored;
      return string(ignored);
    }
    if (c == '{') return object([&](std::string_view) { return skip_value(depth + 1); });
    if (c == '[') return array([&] { return skip_value(depth + 1); });
    for (std::string_view literal : {"true", "false", "null"})
      if (m_text.substr(m_pos, literal.size()) == literal) {
        m_pos += literal.size();
        return true;
      }
    return number();
  }

  template <class Element>
  bool array(Element&& element) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    for (;;) {
      if (!element()) return false;
      if (eat(']')) return true;
      if (!eat(',')) return false;
    }
  }

 private:
  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number() {
    auto digit = [&] { return m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9'; };
    auto digits = [&] {
      size_t start = m_pos;
      while (digit()) ++m_pos;
      return m_pos > start;
    };
    const size_t start = m_pos;
    if (m_pos < m_text.size() && m_text[m_pos] == '-') ++m_pos;
    if (m_pos < m_text.size() && m_text[m_pos] == '0') ++m_pos;
    else if (!digits()) return false;
    if (m_pos < m_text.size() && m_text[m_pos] == '.') {
      ++m_pos;
      if (!digits()) return false;
    }
    if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
      ++m_pos;
      if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-')) ++m_pos;
      if (!digits()) return false;
    }
    // A number runs into nothing but a separator, a bracket or space ("01" and "1x" fail).
    if (m_pos < m_text.size() && std::string_view(",]} \t\n\r").find(m_text[m_pos]) == std::string_view::npos)
      return false;
    // nlohmann refuses a number beyond a double's range ("1e999"); one that underflows
    // goes the slow way too, which reads it as 0.
    double value = 0;
    auto [end, ec] = std::from_chars(m_text.data() + start, m_text.data() + m_pos, value);
    return ec == std::errc() && end == m_text.data() + m_pos && std::isfinite(value);
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

}  // namespace gaia
