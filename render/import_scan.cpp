#include "render/import_scan.hpp"

namespace gaia::render {

namespace {

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

class Scanner {
 public:
  Scanner(std::string_view text, bool allow_native) : m_s(text), m_allow_native(allow_native) {}

  std::optional<std::vector<ImportSite>> run() {
    std::vector<ImportSite> out;
    while (m_at < m_s.size()) {
      const char c = m_s[m_at];
      if (c == '/' && peek(1) == '/') {
        skip_line();
      } else if (c == '#') {
        skip_line();
      } else if (c == '/' && peek(1) == '*') {
        size_t end = m_s.find("*/", m_at + 2);
        if (end == std::string_view::npos) return std::nullopt;
        m_at = end + 2;
      } else if (c == '"' || c == '\'') {
        if (!quoted(c, nullptr)) return std::nullopt;
      } else if (c == '@' && (peek(1) == '"' || peek(1) == '\'')) {
        ++m_at;
        if (!verbatim(m_s[m_at], nullptr)) return std::nullopt;
      } else if (c == '|' && peek(1) == '|' && peek(2) == '|') {
        if (!text_block()) return std::nullopt;
      } else if (c == '(' || c == '[' || c == '{') {
        m_open.push_back(c);
        ++m_at;
      } else if (c == ')' || c == ']' || c == '}') {
        // Brackets must pair within the file: one that closed the parentheses the file
        // is folded into would make a file libjsonnet refuses valid.
        const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (m_open.empty() || m_open.back() != open) return std::nullopt;
        m_open.pop_back();
        ++m_at;
      } else if (ident_start(c)) {
        size_t start = m_at;
        while (m_at < m_s.size() && ident_char(m_s[m_at])) ++m_at;
        std::string_view word = m_s.substr(start, m_at - start);
        if (word == "importstr" || word == "importbin") return std::nullopt;
        if (word == "std" && !plain_std_field()) return std::nullopt;
        if (word == "import") {
          ImportSite site;
          site.begin = start;
          if (!import_path(site.path)) return std::nullopt;
          site.end = m_at;
          // libjsonnet takes the longest expression after `import` and refuses one
          // that is not a lone string ("computed imports are not allowed"): with
          // `import 'x' { ... }` or `import 'x'.f` the file is an error, which a
          // binding in its place would make valid. Only what ends the expression may
          // follow.
          if (!ends_expression()) return std::nullopt;
          out.push_back(std::move(site));
        }
      } else {
        ++m_at;
      }
    }
    if (!m_open.empty()) return std::nullopt;
    return out;
  }

 private:
  char peek(size_t ahead) const { return m_at + ahead < m_s.size() ? m_s[m_at + ahead] : '\0'; }

  void skip_line() {
    size_t end = m_s.find('\n', m_at);
    m_at = end == std::string_view::npos ? m_s.size() : end + 1;
  }

  // At an opening quote: past the closing one. `plain` (when given) says whether the
  // string had no escape, so its text is its value.
  bool quoted(char quote, bool* plain) {
    ++m_at;
    bool escaped = false;
    while (m_at < m_s.size()) {
      char c = m_s[m_at];
      if (c == '\\') {
        escaped = true;
        m_at += 2;
        continue;
      }
      ++m_at;
      if (c == quote) {
        if (plain) *plain = !escaped;
        return true;
      }
    }
    return false;
  }

  // At the quote after '@': past the closing one; a doubled quote stands for one.
  bool verbatim(char quote, bool* plain) {
    ++m_at;
    bool doubled = false;
    while (m_at < m_s.size()) {
      if (m_s[m_at] == quote) {
        if (peek(1) == quote) {
          doubled = true;
          m_at += 2;
          continue;
        }
        ++m_at;
        if (plain) *plain = !doubled;
        return true;
      }
      ++m_at;
    }
    return false;
  }

  // At `|||`: past the closing `|||`. The block's lines share the first line's leading
  // whitespace (empty lines aside); the first line without it must be whitespace and
  // `|||`. Anything else (a chomping `|||-`, a missing newline) gives up.
  bool text_block() {
    m_at += 3;
    while (m_at < m_s.size() && (m_s[m_at] == ' ' || m_s[m_at] == '\t' || m_s[m_at] == '\r')) ++m_at;
    if (m_at >= m_s.size() || m_s[m_at] != '\n') return false;
    ++m_at;
    // Leading empty lines do not set the indentation.
    while (m_at < m_s.size() && m_s[m_at] == '\n') ++m_at;
    size_t ws_end = m_at;
    while (ws_end < m_s.size() && (m_s[ws_end] == ' ' || m_s[ws_end] == '\t')) ++ws_end;
    std::string_view indent = m_s.substr(m_at, ws_end - m_at);
    if (indent.empty()) return false;
    for (;;) {
      if (m_at >= m_s.size()) return false;
      if (m_s[m_at] == '\n') {
        ++m_at;
        continue;
      }
      if (m_s.substr(m_at, indent.size()) == indent) {
        skip_line();
        continue;
      }
      size_t at = m_at;
      while (at < m_s.size() && (m_s[at] == ' ' || m_s[at] == '\t')) ++at;
      if (m_s.substr(at, 3) != "|||") return false;
      m_at = at + 3;
      return true;
    }
  }

  void skip_space() {
    while (m_at < m_s.size() && (m_s[m_at] == ' ' || m_s[m_at] == '\t' || m_s[m_at] == '\n' || m_s[m_at] == '\r'))
      ++m_at;
  }

  // After `std`: a field by name, but not thisFile (it names the file, which a folded
  // evaluation would change) nor trace (it prints the location). `std` aliased, indexed
  // by a computed name or with a comment before the dot gives up.
  bool plain_std_field() {
    size_t save = m_at;
    skip_space();
    if (m_at >= m_s.size() || m_s[m_at] != '.') return false;
    ++m_at;
    skip_space();
    size_t start = m_at;
    while (m_at < m_s.size() && ident_char(m_s[m_at])) ++m_at;
    std::string_view field = m_s.substr(start, m_at - start);
    m_at = save;
    // std.native: a folded evaluation has natives of its own, which templates must not
    // see; the built-in library calls gaia's.
    return !field.empty() && field != "thisFile" && field != "trace" && (m_allow_native || field != "native");
  }

  // Whether the next token ends the expression an import stands in: , ; ) ] } : then
  // else, or the end of the text. A comment there gives up.
  bool ends_expression() {
    size_t save = m_at;
    skip_space();
    bool ends = m_at >= m_s.size();
    if (!ends) {
      char c = m_s[m_at];
      if (c == ',' || c == ';' || c == ')' || c == ']' || c == '}') {
        ends = true;
      } else if (c == ':') {
        ends = true;
      } else if (ident_start(c)) {
        size_t end = m_at;
        while (end < m_s.size() && ident_char(m_s[end])) ++end;
        std::string_view word = m_s.substr(m_at, end - m_at);
        ends = word == "then" || word == "else";
      }
    }
    m_at = save;
    return ends;
  }

  // After the `import` keyword: whitespace, then a string literal whose text is its
  // value.
  bool import_path(std::string& path) {
    while (m_at < m_s.size() && (m_s[m_at] == ' ' || m_s[m_at] == '\t' || m_s[m_at] == '\n' || m_s[m_at] == '\r'))
      ++m_at;
    if (m_at >= m_s.size()) return false;
    size_t start = m_at;
    bool plain = false;
    if (m_s[m_at] == '"' || m_s[m_at] == '\'') {
      if (!quoted(m_s[m_at], &plain) || !plain) return false;
      path.assign(m_s.substr(start + 1, m_at - start - 2));
      return !path.empty();
    }
    if (m_s[m_at] == '@' && (peek(1) == '"' || peek(1) == '\'')) {
      ++m_at;
      if (!verbatim(m_s[m_at], &plain) || !plain) return false;
      path.assign(m_s.substr(start + 2, m_at - start - 3));
      return !path.empty();
    }
    return false;
  }

  std::string_view m_s;
  bool m_allow_native = false;
  size_t m_at = 0;
  std::vector<char> m_open;  // Brackets open in code.
};

}  // namespace

std::optional<std::vector<ImportSite>> scan_imports(std::string_view text, bool allow_native) {
  return Scanner(text, allow_native).run();
}

}  // namespace gaia::render
