#include "spec/semver.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <optional>

// Ranges are parsed by replaying node-semver's own pipeline (build stripping, hyphen
// replacement, comparator whitespace trimming, caret/tilde/x-range/star rewriting, then
// strict comparator parsing) with hand-written matchers in place of its regular
// expressions. Following the pipeline step by step, rather than writing a cleaner
// grammar, is what makes odd inputs ("*1.2.3", "=1.2.3 - 2", "~> 1.2") behave exactly as
// they do under npm, which is the promise the header makes.

namespace gaia::semver {
namespace {

constexpr uint64_t kMaxSafeInteger = 9007199254740991ULL;  // Number.MAX_SAFE_INTEGER
constexpr size_t kMaxLength = 256;                          // node-semver MAX_LENGTH
constexpr size_t kMaxSafeBuildLength = kMaxLength - 6;

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ident_char(char c) { return is_digit(c) || is_letter(c) || c == '-'; }
bool is_version_start(char c) { return is_digit(c) || c == 'x' || c == 'X' || c == '*'; }
bool is_version_prefix(char c) { return c == 'v' || c == '=' || is_ws(c); }

// Character at `i`, or '\0' past the end (JavaScript's `undefined`, which matches no class).
char at(std::string_view s, size_t i) { return i < s.size() ? s[i] : '\0'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ws(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ws(s.back())) s.remove_suffix(1);
  return s;
}

// JavaScript `s.replace(/\s+/g, ' ')`.
std::string collapse_ws(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    if (is_ws(s[i])) {
      out += ' ';
      while (i < s.size() && is_ws(s[i])) ++i;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// JavaScript `s.split(/\s+/)`: leading or trailing whitespace yields empty tokens.
std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < s.size();) {
    if (is_ws(s[i])) {
      while (i < s.size() && is_ws(s[i])) ++i;
      out.emplace_back();
    } else {
      out.back() += s[i++];
    }
  }
  return out;
}

std::vector<std::string> split_on(std::string_view s, std::string_view sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t hit = s.find(sep, start);
    out.emplace_back(s.substr(start, hit == std::string_view::npos ? s.size() - start : hit - start));
    if (hit == std::string_view::npos) return out;
    start = hit + sep.size();
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

// Adds one to a decimal digit string; arbitrary length so oversized numbers still reach
// the strict parser, which reports them.
std::string increment(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return digits;
    }
    digits[i] = '0';
  }
  return "1" + digits;
}

// ---- Strict versions --------------------------------------------------------------

std::string core_string(const Version& v) {
  std::string out = fmt::format("{}.{}.{}", v.major, v.minor, v.patch);
  if (!v.prerelease.empty()) out += "-" + join(v.prerelease, ".");
  return out;
}

bool all_digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_digit); }

std::expected<uint64_t, std::string> parse_component(std::string_view digits, std::string_view name,
                                                     std::string_view text) {
  if (!all_digits(digits))
    return std::unexpected(fmt::format(
        "\"{}\" is not a valid version: expected MAJOR.MINOR.PATCH with an optional -prerelease and "
        "+build (e.g. 1.2.3, 2.0.0-rc.1)",
        text));
  if (digits.size() > 1 && digits[0] == '0')
    return std::unexpected(
        fmt::format("\"{}\" is not a valid version: {} version \"{}\" has a leading zero", text, name, digits));
  uint64_t value = 0;
  for (char c : digits) {
    value = value * 10 + static_cast<uint64_t>(c - '0');
    if (value > kMaxSafeInteger)
      return std::unexpected(fmt::format("\"{}\" is not a valid version: {} version {} is larger than {}", text,
                                         name, digits, kMaxSafeInteger));
  }
  return value;
}

// node-semver's FULL regex (`v?MAJOR.MINOR.PATCH(-pre)?(+build)?`) plus its range checks.
std::expected<Version, std::string> parse_strict(std::string_view text) {
  if (text.size() > kMaxLength)
    return std::unexpected(fmt::format("version \"{}...\" is longer than {} characters", text.substr(0, 20),
                                       kMaxLength));
  std::string_view s = text;
  if (!s.empty() && s[0] == 'v') s.remove_prefix(1);
  size_t core_end = s.find_first_of("-+");
  std::string_view core = s.substr(0, core_end);
  auto nums = split_on(core, ".");
  if (nums.size() != 3)
    return std::unexpected(fmt::format(
        "\"{}\" is not a valid version: expected MAJOR.MINOR.PATCH with an optional -prerelease and "
        "+build (e.g. 1.2.3, 2.0.0-rc.1)",
        text));
  Version v;
  static constexpr std::string_view kNames[] = {"major", "minor", "patch"};
  uint64_t* fields[] = {&v.major, &v.minor, &v.patch};
  for (size_t i = 0; i < 3; ++i) {
    auto n = parse_component(nums[i], kNames[i], text);
    if (!n) return std::unexpected(n.error());
    *fields[i] = *n;
  }
  if (core_end == std::string_view::npos) return v;
  std::string_view rest = s.substr(core_end);
  auto check_ids = [&](std::string_view part, bool pre, std::vector<std::string>& out)
      -> std::optional<std::string> {
    for (auto& id : split_on(part, ".")) {
      if (id.empty() || !std::all_of(id.begin(), id.end(), is_ident_char))
        return fmt::format(
            "\"{}\" is not a valid version: {} identifier \"{}\" must be non-empty and use only "
            "letters, digits and '-'",
            text, pre ? "pre-release" : "build", id);
      if (pre && all_digits(id) && id.size() > 1 && id[0] == '0')
        return fmt::format("\"{}\" is not a valid version: numeric pre-release identifier \"{}\" has a leading zero",
                           text, id);
      out.push_back(id);
    }
    return std::nullopt;
  };
  if (rest[0] == '-') {
    size_t plus = rest.find('+');
    if (auto err = check_ids(rest.substr(1, plus == std::string_view::npos ? plus : plus - 1), true, v.prerelease))
      return std::unexpected(*err);
    rest = plus == std::string_view::npos ? std::string_view{} : rest.substr(plus);
  }
  if (!rest.empty()) {
    if (auto err = check_ids(rest.substr(1), false, v.build)) return std::unexpected(*err);
  }
  return v;
}

// Pre-release identifiers compare as node-semver's compareIdentifiers: numeric ones
// numerically (as JavaScript numbers, so beyond 2^53 precision is lost just as in npm)
// and below alphanumeric ones, which compare by code unit.
int compare_identifiers(const std::string& a, const std::string& b) {
  bool anum = all_digits(a), bnum = all_digits(b);
  if (anum && bnum) {
    double x = std::strtod(a.c_str(), nullptr), y = std::strtod(b.c_str(), nullptr);
    return x == y ? 0 : (x < y ? -1 : 1);
  }
  if (anum) return -1;
  if (bnum) return 1;
  return a == b ? 0 : (a < b ? -1 : 1);
}

// ---- Matchers for node-semver's XRANGEPLAIN, GTLT and friends ----------------------

struct XPlain {
  std::string text;  // The whole match including the `[v=\s]*` prefix.
  std::string major, minor, patch, pre;
  bool has_minor = false, has_patch = false;
};

bool is_x(const std::string& id, bool present = true) {
  return !present || id.empty() || id == "x" || id == "X" || id == "*";
}

// One XRANGEIDENTIFIER (`0|[1-9]\d*|x|X|\*`) at pos; returns its end or pos.
size_t xid_end(std::string_view s, size_t pos) {
  char c = at(s, pos);
  if (c == '0' || c == 'x' || c == 'X' || c == '*') return pos + 1;
  if (!is_digit(c)) return pos;
  size_t end = pos + 1;
  while (is_digit(at(s, end))) ++end;
  return end;
}

bool valid_pre_id(std::string_view id) {
  if (id.empty()) return false;
  if (!all_digits(id)) return true;
  return id.size() == 1 || id[0] != '0';
}

// Matches XRANGEPLAIN at pos. Only used where the match is anchored on both sides, so a
// greedy scan gives the same answer as the backtracking regex.
std::optional<std::pair<XPlain, size_t>> match_xrange_plain(std::string_view s, size_t pos) {
  XPlain x;
  size_t start = pos;
  while (is_version_prefix(at(s, pos))) ++pos;
  size_t e = xid_end(s, pos);
  if (e == pos) return std::nullopt;
  x.major = std::string(s.substr(pos, e - pos));
  pos = e;
  if (at(s, pos) == '.' && (e = xid_end(s, pos + 1)) != pos + 1) {
    x.has_minor = true;
    x.minor = std::string(s.substr(pos + 1, e - pos - 1));
    pos = e;
    if (at(s, pos) == '.' && (e = xid_end(s, pos + 1)) != pos + 1) {
      x.has_patch = true;
      x.patch = std::string(s.substr(pos + 1, e - pos - 1));
      pos = e;
      if (at(s, pos) == '-') {
        size_t p = pos + 1, id_start = p;
        while (is_ident_char(at(s, p))) ++p;
        if (valid_pre_id(s.substr(id_start, p - id_start))) {
          while (at(s, p) == '.') {
            size_t q = p + 1;
            while (is_ident_char(at(s, q))) ++q;
            if (!valid_pre_id(s.substr(p + 1, q - p - 1))) break;
            p = q;
          }
          x.pre = std::string(s.substr(pos + 1, p - pos - 1));
          pos = p;
        }
      }
      if (at(s, pos) == '+' && is_ident_char(at(s, pos + 1))) {
        size_t p = pos + 1;
        while (is_ident_char(at(s, p))) ++p;
        while (at(s, p) == '.' && is_ident_char(at(s, p + 1))) {
          ++p;
          while (is_ident_char(at(s, p))) ++p;
        }
        pos = p;
      }
    }
  }
  x.text = std::string(s.substr(start, pos - start));
  return std::pair{x, pos};
}

std::optional<XPlain> match_xrange_plain_exact(std::string_view s, size_t pos) {
  auto m = match_xrange_plain(s, pos);
  if (!m || m->second != s.size()) return std::nullopt;
  return m->first;
}

// GTLT: `((?:<|>)?=?)`.
std::string match_gtlt(std::string_view s, size_t& pos) {
  std::string op;
  if (at(s, pos) == '<' || at(s, pos) == '>') op += s[pos++];
  if (at(s, pos) == '=') op += s[pos++];
  return op;
}

// Global BUILD strip: every `+id(.id)*` is removed (first only when `global` is false).
std::string strip_build(std::string_view s, bool global) {
  std::string out;
  size_t i = 0;
  bool done = false;
  while (i < s.size()) {
    if (!done && s[i] == '+' && is_ident_char(at(s, i + 1))) {
      size_t p = i + 1;
      while (is_ident_char(at(s, p))) ++p;
      while (at(s, p) == '.' && is_ident_char(at(s, p + 1))) {
        ++p;
        while (is_ident_char(at(s, p))) ++p;
      }
      i = p;
      done = !global;
      continue;
    }
    out += s[i++];
  }
  return out;
}

// ---- Port of node-semver's internal/trim-comparator-whitespace.js ------------------

size_t digits_end(std::string_view r, size_t start, size_t limit) {
  if (!is_digit(at(r, start))) return start;
  size_t end = start + 1;
  while (is_digit(at(r, end))) ++end;
  return std::min(start + limit, end);
}
size_t version_number_end(std::string_view r, size_t start, bool loose) {
  if (!loose && at(r, start) == '0') return start + 1;
  return digits_end(r, start, loose ? kMaxLength : kMaxLength + 1);
}
size_t pre_identifier_end(std::string_view r, size_t start, bool loose) {
  size_t d = digits_end(r, start, kMaxLength);
  if (is_letter(at(r, d)) || at(r, d) == '-') {
    size_t end = d + 1, limit = end + kMaxSafeBuildLength;
    while (end < limit && is_ident_char(at(r, end))) ++end;
    return end;
  }
  return version_number_end(r, start, loose);
}
size_t prerelease_end(std::string_view r, size_t start, bool loose) {
  bool hyphen = at(r, start) == '-';
  if (!loose && !hyphen) return start;
  size_t id_start = start + (hyphen ? 1 : 0);
  size_t end = pre_identifier_end(r, id_start, loose);
  if (end == id_start) {
    if (!loose || !hyphen) return start;
    end = pre_identifier_end(r, start, loose);
  }
  while (at(r, end) == '.') {
    size_t next = pre_identifier_end(r, end + 1, loose);
    if (next == end + 1) break;
    end = next;
  }
  return end;
}
size_t build_identifier_end(std::string_view r, size_t start) {
  size_t end = start;
  while (end - start < kMaxSafeBuildLength && is_ident_char(at(r, end))) ++end;
  return end;
}
size_t build_end(std::string_view r, size_t start) {
  if (at(r, start) != '+') return start;
  size_t end = build_identifier_end(r, start + 1);
  if (end == start + 1) return start;
  while (at(r, end) == '.') {
    size_t next = build_identifier_end(r, end + 1);
    if (next == end + 1) break;
    end = next;
  }
  return end;
}
size_t loose_full_version_end(std::string_view r, size_t start) {
  size_t end = start;
  for (int component = 0; component < 3; ++component) {
    size_t next = version_number_end(r, end, true);
    if (next == end) return start;
    end = next;
    if (component < 2) {
      if (at(r, end) != '.') return start;
      ++end;
    }
  }
  return build_end(r, prerelease_end(r, end, true));
}
size_t partial_component_end(std::string_view r, size_t start) {
  if (is_digit(at(r, start))) return version_number_end(r, start, false);
  return is_version_start(at(r, start)) ? start + 1 : start;
}
size_t partial_version_end(std::string_view r, size_t start) {
  size_t end = partial_component_end(r, start);
  for (int component = 0; component < 2; ++component) {
    if (at(r, end) != '.') return end;
    size_t next = partial_component_end(r, end + 1);
    if (next == end + 1) return end;
    end = next;
  }
  return build_end(r, prerelease_end(r, end, false));
}
size_t version_end(std::string_view r, size_t start) {
  size_t full = loose_full_version_end(r, start);
  return full != start ? full : partial_version_end(r, start);
}

// Turns "> 1.2.3" into ">1.2.3" exactly where node-semver's COMPARATORTRIM would.
std::string trim_comparator_whitespace(std::string_view r) {
  std::string result;
  size_t copy_from = 0, cursor = 0;
  while (cursor < r.size()) {
    size_t match_start = cursor;
    if (r[cursor] == '<' || r[cursor] == '>') {
      ++cursor;
    } else if (!is_version_prefix(r[cursor]) && !is_version_start(r[cursor])) {
      ++cursor;
      continue;
    }
    while (cursor < r.size() && is_version_prefix(r[cursor])) ++cursor;
    if (!is_version_start(at(r, cursor))) continue;
    size_t pos = match_start;
    if (is_ws(at(r, pos))) ++pos;
    if (at(r, pos) == '<' || at(r, pos) == '>') ++pos;
    if (at(r, pos) == '=') ++pos;
    if (is_ws(at(r, pos))) {
      result += r.substr(copy_from, pos - copy_from);
      copy_from = pos + 1;
    }
    cursor = version_end(r, cursor);
  }
  result += r.substr(std::min(copy_from, r.size()));
  return result;
}

// TILDETRIM / CARETTRIM: `(\s*)~>?\s+` -> `$1~` and `(\s*)\^\s+` -> `$1^`.
std::string trim_after(std::string_view r, char mark) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    if (r[i] == mark) {
      size_t j = i + 1;
      if (mark == '~' && at(r, j) == '>') ++j;
      size_t k = j;
      while (is_ws(at(r, k))) ++k;
      if (k > j) {
        out += mark;
        i = k;
        continue;
      }
    }
    out += r[i++];
  }
  return out;
}

// ---- Rewrites of partial ranges into primitive comparators -------------------------

std::string hyphen_replace(const XPlain& f, const XPlain& t) {
  std::string from, to;
  if (is_x(f.major)) from = "";
  else if (is_x(f.minor, f.has_minor)) from = fmt::format(">={}.0.0", f.major);
  else if (is_x(f.patch, f.has_patch)) from = fmt::format(">={}.{}.0", f.major, f.minor);
  else from = ">=" + f.text;
  if (is_x(t.major)) to = "";
  else if (is_x(t.minor, t.has_minor)) to = fmt::format("<{}.0.0-0", increment(t.major));
  else if (is_x(t.patch, t.has_patch)) to = fmt::format("<{}.{}.0-0", t.major, increment(t.minor));
  else if (!t.pre.empty()) to = fmt::format("<={}.{}.{}-{}", t.major, t.minor, t.patch, t.pre);
  else to = "<=" + t.text;
  return std::string(trim(from + " " + to));
}

// HYPHENRANGE: `^\s*(XRANGEPLAIN)\s+-\s+(XRANGEPLAIN)\s*$`.
std::optional<std::string> try_hyphen(std::string_view r) {
  size_t pos = 0;
  while (is_ws(at(r, pos))) ++pos;
  auto f = match_xrange_plain(r, pos);
  if (!f) return std::nullopt;
  pos = f->second;
  if (!is_ws(at(r, pos))) return std::nullopt;
  while (is_ws(at(r, pos))) ++pos;
  if (at(r, pos) != '-') return std::nullopt;
  ++pos;
  if (!is_ws(at(r, pos))) return std::nullopt;
  while (is_ws(at(r, pos))) ++pos;
  auto t = match_xrange_plain(r, pos);
  if (!t) return std::nullopt;
  pos = t->second;
  while (is_ws(at(r, pos))) ++pos;
  if (pos != r.size()) return std::nullopt;
  return hyphen_replace(f->first, t->first);
}

std::string replace_caret(const std::string& comp) {
  if (at(comp, 0) != '^') return comp;
  auto x = match_xrange_plain_exact(comp, 1);
  if (!x) return comp;
  const auto& M = x->major;
  const auto& m = x->minor;
  const auto& p = x->patch;
  if (is_x(M)) return "";
  if (is_x(m, x->has_minor)) return fmt::format(">={}.0.0 <{}.0.0-0", M, increment(M));
  if (is_x(p, x->has_patch)) {
    if (M == "0") return fmt::format(">={}.{}.0 <{}.{}.0-0", M, m, M, increment(m));
    return fmt::format(">={}.{}.0 <{}.0.0-0", M, m, increment(M));
  }
  std::string low = x->pre.empty() ? fmt::format(">={}.{}.{}", M, m, p)
                                   : fmt::format(">={}.{}.{}-{}", M, m, p, x->pre);
  if (M == "0") {
    if (m == "0") return fmt::format("{} <{}.{}.{}-0", low, M, m, increment(p));
    return fmt::format("{} <{}.{}.0-0", low, M, increment(m));
  }
  return fmt::format("{} <{}.0.0-0", low, increment(M));
}

std::string replace_tilde(const std::string& comp) {
  if (at(comp, 0) != '~') return comp;
  size_t pos = at(comp, 1) == '>' ? 2 : 1;
  auto x = match_xrange_plain_exact(comp, pos);
  if (!x) return comp;
  const auto& M = x->major;
  const auto& m = x->minor;
  const auto& p = x->patch;
  if (is_x(M)) return "";
  if (is_x(m, x->has_minor)) return fmt::format(">={}.0.0 <{}.0.0-0", M, increment(M));
  if (is_x(p, x->has_patch)) return fmt::format(">={}.{}.0 <{}.{}.0-0", M, m, M, increment(m));
  if (!x->pre.empty()) return fmt::format(">={}.{}.{}-{} <{}.{}.0-0", M, m, p, x->pre, M, increment(m));
  return fmt::format(">={}.{}.{} <{}.{}.0-0", M, m, p, M, increment(m));
}

std::string replace_xrange(const std::string& raw) {
  std::string comp(trim(raw));
  size_t pos = 0;
  std::string gtlt = match_gtlt(comp, pos);
  auto x = match_xrange_plain_exact(comp, pos);
  if (!x) return comp;
  std::string M = x->major, m = x->minor, p = x->patch;
  bool xM = is_x(M), xm = xM || is_x(m, x->has_minor), xp = xm || is_x(p, x->has_patch);
  // invalidXRangeOrder: "x.1" or "1.x.2" are left alone and fail later.
  if ((is_x(M) && !is_x(m, x->has_minor)) || (is_x(m, x->has_minor) && x->has_patch && !is_x(p)))
    return comp;
  if (gtlt == "=" && xp) gtlt = "";
  if (xM) return (gtlt == ">" || gtlt == "<") ? "<0.0.0-0" : "*";
  if (!gtlt.empty() && xp) {
    if (xm) m = "0";
    p = "0";
    if (gtlt == ">") {
      gtlt = ">=";
      if (xm) {
        M = increment(M);
        m = "0";
      } else {
        m = increment(m);
      }
      p = "0";
    } else if (gtlt == "<=") {
      gtlt = "<";
      if (xm) M = increment(M);
      else m = increment(m);
    }
    std::string pr = gtlt == "<" ? "-0" : "";
    return fmt::format("{}{}.{}.{}{}", gtlt, M, m, p, pr);
  }
  if (xm) return fmt::format(">={}.0.0 <{}.0.0-0", M, increment(M));
  if (xp) return fmt::format(">={}.{}.0 <{}.{}.0-0", M, m, M, increment(m));
  return comp;
}

// STAR: removes the first `(<|>)?=?\s*\*`.
std::string replace_stars(const std::string& raw) {
  std::string comp(trim(raw));
  for (size_t i = 0; i < comp.size(); ++i) {
    size_t j = i;
    if (comp[j] == '<' || comp[j] == '>') ++j;
    if (at(comp, j) == '=') ++j;
    while (is_ws(at(comp, j))) ++j;
    if (at(comp, j) == '*') return comp.substr(0, i) + comp.substr(j + 1);
  }
  return comp;
}

template <class F>
std::string map_tokens(const std::vector<std::string>& tokens, F f) {
  std::vector<std::string> out;
  for (const auto& t : tokens) out.push_back(f(t));
  return join(out, " ");
}

std::string rewrite_comparator(const std::string& piece) {
  std::string comp = strip_build(piece, false);
  comp = map_tokens(split_ws(trim(comp)), replace_caret);
  comp = map_tokens(split_ws(trim(comp)), replace_tilde);
  comp = map_tokens(split_ws(comp), replace_xrange);
  return replace_stars(comp);
}

std::expected<Comparator, std::string> make_comparator(std::string_view text) {
  std::string comp = collapse_ws(trim(text));
  Comparator c;
  if (comp.empty()) {
    c.any = true;
    return c;
  }
  size_t pos = 0;
  std::string op = match_gtlt(comp, pos);
  while (is_ws(at(comp, pos))) ++pos;
  std::string_view rest = std::string_view(comp).substr(pos);
  auto v = parse_strict(rest);
  if (!v) {
    // An out-of-range number or an over-long version gets the specific reason; any
    // other failure means the text is not a comparator at all.
    const std::string& reason = v.error();
    if (reason.find("larger than") != std::string::npos || reason.find("longer than") != std::string::npos)
      return std::unexpected(reason);
    return std::unexpected(fmt::format("\"{}\" is not a valid comparator", comp));
  }
  c.version = std::move(*v);
  c.version.build.clear();
  if (op == "<") c.op = Comparator::Op::Lt;
  else if (op == "<=") c.op = Comparator::Op::Le;
  else if (op == ">") c.op = Comparator::Op::Gt;
  else if (op == ">=") c.op = Comparator::Op::Ge;
  else c.op = Comparator::Op::Eq;
  return c;
}

bool is_null_set(const Comparator& c) { return c.to_string() == "<0.0.0-0"; }

// node-semver's Range.parseRange for one `||` alternative.
std::vector<Comparator> parse_set(std::string r, std::vector<std::string>& errors) {
  r = strip_build(r, true);
  if (auto h = try_hyphen(r)) r = *h;
  r = trim_comparator_whitespace(r);
  r = trim_after(r, '~');
  r = trim_after(r, '^');
  std::vector<std::string> rewritten;
  for (const auto& piece : split_on(r, " ")) rewritten.push_back(rewrite_comparator(piece));
  // All comparators are built first, so every malformed one is reported even when an
  // earlier one makes the set unsatisfiable.
  std::vector<Comparator> comparators;
  bool failed = false;
  for (auto& token : split_ws(join(rewritten, " "))) {
    std::string t(trim(token));
    if (t == ">=0.0.0") t.clear();  // GTE0: ">=0.0.0" means any version.
    auto c = make_comparator(t);
    if (!c) {
      errors.push_back(c.error());
      failed = true;
    } else {
      comparators.push_back(std::move(*c));
    }
  }
  if (failed) return {};
  std::vector<Comparator> set;
  bool has_any = false;
  for (auto& c : comparators) {
    if (is_null_set(c)) return {c};
    std::string value = c.to_string();
    bool dup = std::any_of(set.begin(), set.end(), [&](const Comparator& o) { return o.to_string() == value; });
    if (!dup) {
      has_any = has_any || c.any;
      set.push_back(std::move(c));
    }
  }
  if (has_any && set.size() > 1)
    std::erase_if(set, [](const Comparator& c) { return c.any; });
  return set;
}

bool test_set(const std::vector<Comparator>& set, const Version& v) {
  for (const auto& c : set)
    if (!c.test(v)) return false;
  if (v.prerelease.empty()) return true;
  for (const auto& c : set) {
    if (c.any || c.version.prerelease.empty()) continue;
    if (c.version.major == v.major && c.version.minor == v.minor && c.version.patch == v.patch) return true;
  }
  return false;
}

}  // namespace

std::string Version::to_string() const {
  std::string out = core_string(*this);
  if (!build.empty()) out += "+" + join(build, ".");
  return out;
}

std::expected<Version, std::string> parse_version(std::string_view text) {
  std::string_view s = trim(text);
  if (s.empty()) return std::unexpected("empty version: expected MAJOR.MINOR.PATCH (e.g. 1.2.3)");
  // A single leading '=' is accepted because "=1.2.3" is how an exact range is written.
  if (s[0] == '=') s.remove_prefix(1);
  return parse_strict(s);
}

int compare(const Version& a, const Version& b) {
  if (a.major != b.major) return a.major < b.major ? -1 : 1;
  if (a.minor != b.minor) return a.minor < b.minor ? -1 : 1;
  if (a.patch != b.patch) return a.patch < b.patch ? -1 : 1;
  if (a.prerelease.empty() || b.prerelease.empty()) {
    // A version without a pre-release ranks above one with.
    return a.prerelease.empty() == b.prerelease.empty() ? 0 : (a.prerelease.empty() ? 1 : -1);
  }
  for (size_t i = 0;; ++i) {
    if (i == a.prerelease.size() && i == b.prerelease.size()) return 0;
    if (i == b.prerelease.size()) return 1;
    if (i == a.prerelease.size()) return -1;
    if (a.prerelease[i] == b.prerelease[i]) continue;
    // As in node-semver, the first differing identifier decides, even when it compares
    // equal numerically (only possible beyond 2^53).
    return compare_identifiers(a.prerelease[i], b.prerelease[i]);
  }
}

bool Comparator::test(const Version& v) const {
  if (any) return true;
  int c = compare(v, version);
  switch (op) {
    case Op::Lt: return c < 0;
    case Op::Le: return c <= 0;
    case Op::Gt: return c > 0;
    case Op::Ge: return c >= 0;
    case Op::Eq: return c == 0;
  }
  return false;
}

std::string Comparator::to_string() const {
  if (any) return "";
  std::string_view op_text;
  switch (op) {
    case Op::Lt: op_text = "<"; break;
    case Op::Le: op_text = "<="; break;
    case Op::Gt: op_text = ">"; break;
    case Op::Ge: op_text = ">="; break;
    case Op::Eq: op_text = ""; break;
  }
  return std::string(op_text) + core_string(version);
}

std::expected<Range, std::string> Range::parse(std::string_view text) {
  Range range;
  range.m_text = std::string(trim(text));
  std::string raw = collapse_ws(range.m_text);
  std::vector<std::string> errors;
  for (const auto& part : split_on(raw, "||")) {
    auto set = parse_set(std::string(trim(part)), errors);
    if (!set.empty()) range.m_sets.push_back(std::move(set));
  }
  if (!errors.empty())
    return std::unexpected(fmt::format(
        "invalid version range \"{}\": {}; expected comparators such as 1.2.3, >=1.2 <2, ^1.2.3, ~1.2, 1.x, "
        "1.2 - 2.3 or *, joined by spaces or ||",
        range.m_text, join(errors, ", ")));
  auto& sets = range.m_sets;
  if (sets.size() > 1) {
    // Unsatisfiable alternatives drop out unless nothing else is left, and an
    // alternative that matches anything swallows the rest, as in node-semver.
    auto first = sets.front();
    std::erase_if(sets, [](const auto& s) { return is_null_set(s.front()); });
    if (sets.empty()) {
      sets.push_back(std::move(first));
    } else if (sets.size() > 1) {
      for (const auto& s : sets) {
        if (s.size() == 1 && s.front().any) {
          auto only = s;
          sets = {std::move(only)};
          break;
        }
      }
    }
  }
  return range;
}

bool Range::satisfies(const Version& v) const {
  return std::any_of(m_sets.begin(), m_sets.end(), [&](const auto& set) { return test_set(set, v); });
}

std::string Range::normalized() const {
  std::vector<std::string> sets;
  for (const auto& set : m_sets) {
    std::vector<std::string> comps;
    for (const auto& c : set) comps.push_back(c.to_string());
    sets.push_back(join(comps, " "));
  }
  return join(sets, "||");
}

const Version* max_satisfying(const std::vector<Version>& candidates, const Range& range) {
  const Version* best = nullptr;
  for (const auto& v : candidates) {
    if (range.satisfies(v) && (best == nullptr || compare(*best, v) < 0)) best = &v;
  }
  return best;
}

}  // namespace gaia::semver
