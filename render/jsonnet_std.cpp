#include "render/jsonnet_std.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace gaia::render {

namespace {

// Integers of a double are exact below 2^53; beyond, the library's digit loop works on
// rounded values, which is not worth mirroring.
constexpr double k_exact = 9007199254740992.0;

// The library reads each flag and digit, and pads each character, one stack frame at a
// time: a width of about 250 exceeds libjsonnet's default 500 frames, and then it fails
// where a native would not. Codes beyond these bounds are the library's to render (or
// refuse); within them it stays far from the limit unless the template itself recurses
// hundreds of levels deep (docs/spec.md section 7).
constexpr long k_max_width = 64;
constexpr size_t k_max_code_chars = 4;  // Flags, or the digits of a width or precision.

struct Code {
  bool alt = false, zero = false, left = false, blank = false, plus = false;
  long fw = 0;
  std::optional<long> prec;
  char ctype = 0;  // d o x s %
  bool caps = false;
};

// Parses the code after a '%' as the library does (mapping key, flags, width, precision,
// length modifier, type); nothing for what it would refuse or what is not mirrored.
std::optional<Code> parse_code(std::string_view s, size_t& i) {
  Code c;
  if (i >= s.size() || s[i] == '(') return std::nullopt;  // Truncated, or a mapping key.
  for (const size_t flags = i;; ++i) {
    if (i >= s.size() || i - flags > k_max_code_chars) return std::nullopt;
    const char ch = s[i];
    if (ch == '#') c.alt = true;
    else if (ch == '0') c.zero = true;
    else if (ch == '-') c.left = true;
    else if (ch == ' ') c.blank = true;
    else if (ch == '+') c.plus = true;
    else break;
  }
  // Digits after the flags; the library asserts there is a character after each.
  auto number = [&](long& out) {
    if (i < s.size() && s[i] == '*') return false;
    out = 0;
    for (const size_t first = i;; ++i) {
      if (i >= s.size() || i - first > k_max_code_chars) return false;
      if (s[i] < '0' || s[i] > '9') return out <= k_max_width;
      out = out * 10 + (s[i] - '0');
    }
  };
  if (!number(c.fw)) return std::nullopt;
  if (i >= s.size()) return std::nullopt;
  if (s[i] == '.') {
    ++i;
    long p = 0;
    if (!number(p)) return std::nullopt;
    c.prec = p;
  }
  if (i >= s.size()) return std::nullopt;
  if (s[i] == 'h' || s[i] == 'l' || s[i] == 'L') ++i;
  if (i >= s.size()) return std::nullopt;
  switch (s[i]) {
    case 'd': case 'i': case 'u': c.ctype = 'd'; break;
    case 'o': c.ctype = 'o'; break;
    case 'x': c.ctype = 'x'; break;
    case 'X': c.ctype = 'x'; c.caps = true; break;
    case 's': c.ctype = 's'; break;
    case '%': c.ctype = '%'; break;
    default: return std::nullopt;  // e f g c (not mirrored) or an unknown type (an error).
  }
  ++i;
  return c;
}

void pad_left(std::string& s, long w, char with) {
  if (w > static_cast<long>(s.size())) s.insert(0, static_cast<size_t>(w) - s.size(), with);
}

// render_int of std.format: sign and magnitude, zero-padded to min_chars / min_digits.
std::string render_int(bool neg, double mag, long min_chars, long min_digits, bool blank, bool plus, int radix,
                       std::string_view zero_prefix) {
  std::string dec;
  if (mag == 0) {
    dec = "0";
  } else {
    auto m = static_cast<unsigned long long>(mag);
    while (m) {
      dec.insert(dec.begin(), static_cast<char>('0' + m % radix));
      m /= radix;
    }
    dec.insert(0, zero_prefix);
  }
  const long zp = min_chars - ((neg || blank || plus) ? 1 : 0);
  pad_left(dec, std::max(zp, min_digits), '0');
  return (neg ? "-" : plus ? "+" : blank ? " " : "") + dec;
}

std::string render_hex(double n, long min_chars, long min_digits, bool blank, bool plus, bool alt, bool caps) {
  const char* numerals = caps ? "0123456789ABCDEF" : "0123456789abcdef";
  auto m = static_cast<unsigned long long>(std::floor(std::fabs(n)));
  std::string hex;
  if (m == 0) hex = "0";
  while (m) {
    hex.insert(hex.begin(), numerals[m % 16]);
    m /= 16;
  }
  const bool neg = n < 0;
  const long zp = min_chars - ((neg || blank || plus) ? 1 : 0) - (alt ? 2 : 0);
  pad_left(hex, std::max(zp, min_digits), '0');
  return (neg ? "-" : plus ? "+" : blank ? " " : "") + std::string(alt ? (caps ? "0X" : "0x") : "") + hex;
}

// std.toString of a scalar, where the text is certain.
std::optional<std::string> to_string(const FormatValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return "null";
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  const double d = std::get<double>(v);
  // Whole numbers print without a fraction; any other is printed with 17 digits by the
  // library, which is not mirrored here.
  if (std::floor(d) != d || std::fabs(d) >= 1e15) return std::nullopt;
  return fmt::format("{:.0f}", d);
}

std::optional<std::string> format_code(const FormatValue& val, const Code& c) {
  const long zp = (c.zero && !c.left) ? c.fw : 0;
  const long iprec = c.prec.value_or(0);
  if (c.ctype == 's') return to_string(val);
  const double* d = std::get_if<double>(&val);
  if (!d || !(std::fabs(*d) < k_exact)) return std::nullopt;  // "Format required number", or huge.
  switch (c.ctype) {
    case 'd': return render_int(*d <= -1, std::floor(std::fabs(*d)), zp, iprec, c.blank, c.plus, 10, "");
    case 'o': return render_int(*d <= -1, std::floor(std::fabs(*d)), zp, iprec, c.blank, c.plus, 8, c.alt ? "0" : "");
    case 'x': return render_hex(std::floor(*d), zp, iprec, c.blank, c.plus, c.alt, c.caps);
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::vector<size_t>> jsonnet_sort_order(std::string_view keys_json) {
  nlohmann::json keys;
  try {
    keys = nlohmann::json::parse(keys_json);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // Text that is not valid UTF-8 (a lone surrogate), say.
  }
  if (!keys.is_array() || keys.empty()) return std::nullopt;
  const bool strings = keys.front().is_string();
  for (const auto& k : keys)
    if (strings ? !k.is_string() : !k.is_number()) return std::nullopt;
  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // UTF-8 in byte order is code point order, which is how Jsonnet compares strings.
  if (strings)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return keys[a].get_ref<const std::string&>() < keys[b].get_ref<const std::string&>();
    });
  else
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return keys[a].get<double>() < keys[b].get<double>(); });
  return order;
}

bool is_plain_ascii(std::string_view s) {
  for (unsigned char ch : s)
    if (ch == 0 || ch >= 0x80) return false;
  return true;
}

std::optional<std::string> jsonnet_format(std::string_view fmt, const std::vector<FormatValue>& vals) {
  if (!is_plain_ascii(fmt)) return std::nullopt;
  for (const auto& v : vals)
    if (auto* s = std::get_if<std::string>(&v); s && !is_plain_ascii(*s)) return std::nullopt;
  std::string out;
  out.reserve(fmt.size() + 16);
  size_t j = 0;  // The next value.
  for (size_t i = 0; i < fmt.size();) {
    if (fmt[i] != '%') {
      out += fmt[i++];
      continue;
    }
    ++i;
    auto code = parse_code(fmt, i);
    if (!code) return std::nullopt;
    std::string s;
    if (code->ctype == '%') {
      s = "%";  // Takes no value.
    } else {
      if (j >= vals.size()) return std::nullopt;  // "Not enough values to format".
      auto r = format_code(vals[j++], *code);
      if (!r) return std::nullopt;
      s = std::move(*r);
    }
    if (code->left) {
      if (code->fw > static_cast<long>(s.size())) s.append(static_cast<size_t>(code->fw) - s.size(), ' ');
    } else {
      pad_left(s, code->fw, ' ');
    }
    out += s;
  }
  if (j < vals.size()) return std::nullopt;  // "Too many values to format".
  return out;
}

std::optional<std::string> jsonnet_escape_string_json(std::string_view s) {
  if (!is_plain_ascii(s)) return std::nullopt;
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 32 || ch == 127) out += fmt::format("\\u{:04x}", static_cast<int>(ch));
        else out += ch;
    }
  }
  out += '"';
  return out;
}

// Shadows `std` for the files of a folded render. Inside, the library's functions reach
// each other through `std` bound to self, so std.mod (the `%` operator) and the
// std.manifestJson* family find these too. The shim itself calls the library as it is
// (`__gaia_istd`), not `self`: a file that derives its own `std` is not folded
// (render/import_scan.hpp allows `std` only by a plain field name). Values are checked to be plain before they
// reach a native, which takes no objects or arrays; the natives answer null for what they
// do not take, and the library's code then runs as it always did.
const char* const k_std_shim = R"(local __gaia_istd = std;
local __gaia_is(v, t) = __gaia_istd.primitiveEquals(__gaia_istd.type(v), t);
local std = __gaia_istd + {
  // The library's std.isString and the like compare std.type(v) with `==`, which is
  // std.equals, a function written in Jsonnet: about 8 us a call, and the library calls
  // them everywhere. The same answer from the two builtins.
  isString(v):: __gaia_is(v, 'string'),
  isNumber(v):: __gaia_is(v, 'number'),
  isBoolean(v):: __gaia_is(v, 'boolean'),
  isObject(v):: __gaia_is(v, 'object'),
  isArray(v):: __gaia_is(v, 'array'),
  isFunction(v):: __gaia_is(v, 'function'),
  toString(a):: if __gaia_is(a, 'string') then a else '' + a,
  // `a[i:j:k]` is std.slice, which the library builds one element (or character) at a
  // time, each step a new array or string: quadratic. Whole-number bounds and a positive
  // step take the natives (makeArray, join); anything else, every error included, the
  // library's way.
  slice(indexable, index, end, step)::
    local s = __gaia_istd;
    local whole(x) = x == null || (__gaia_is(x, 'number') && x >= 0 && s.primitiveEquals(s.floor(x), x));
    local str = __gaia_is(indexable, 'string');
    if (str || __gaia_is(indexable, 'array')) && whole(index) && whole(end) && whole(step) && step != 0 then
      local from = if index == null then 0 else index;
      local by = if step == null then 1 else step;
      local len = s.length(indexable);
      local lim = if end == null || end > len then len else end;
      local count = if from >= lim then 0 else s.floor((lim - from - 1) / by) + 1;
      // Strings too by index, not substr: in libjsonnet 0.18 a NUL character indexes to
      // '', so the library's slice drops it, and substr would not.
      local items = s.makeArray(count, function(i) indexable[from + i * by]);
      if str then s.join('', items) else items
    else super.slice(indexable, index, end, step),
  // A fold of `+` over the arrays, which copies the result so far at each step; the
  // native join makes it once. Only when every element is an array (join would skip a
  // null that `+` refuses).
  flattenArrays(arrs)::
    local s = __gaia_istd;
    if __gaia_is(arrs, 'array') && s.length(s.filter(function(a) !__gaia_is(a, 'array'), arrs)) == 0 then s.join([], arrs)
    else super.flattenArrays(arrs),
  // The library sorts by a quicksort and a merge written in Jsonnet, calling keyF again
  // at every comparison (about 100 us per element). When every key is ASCII text, or
  // every key a number, the native 'gaia_sort_order' sorts their printed list and gives
  // the order back; both sorts are stable, so equal keys keep their places. Anything else
  // (arrays as keys, mixed types: the library's error) the library's way.
  sort(arr, keyF=function(x) x)::
    local s = __gaia_istd;
    if !__gaia_is(arr, 'array') || s.length(arr) <= 1 then super.sort(arr, keyF)
    else
      local keys = s.makeArray(s.length(arr), function(i) keyF(arr[i]));
      local strings = s.length(s.filter(function(k) !__gaia_is(k, 'string'), keys)) == 0;
      local numbers = !strings && s.length(s.filter(function(k) !__gaia_is(k, 'number'), keys)) == 0;
      // Printed by the natives, not by a manifest: the library cannot print a NUL (its
      // escape indexes characters, and 0.18 indexes a NUL to ''); a key they do not take
      // (not ASCII) sends the whole sort the library's way.
      local printed = if strings then [s.native('gaia_escape_json')(k, s.length(k)) for k in keys]
                      else if numbers then ['' + k for k in keys] else [];
      local order =
        if (strings || numbers) && s.length(s.filter(function(p) !__gaia_is(p, 'string'), printed)) == 0
        then s.native('gaia_sort_order')('[' + s.join(',', printed) + ']') else null;
      if __gaia_is(order, 'array') then [arr[i] for i in order] else super.sort(arr, keyF),
  format(str, vals)::
    local s = __gaia_istd;
    local a = if __gaia_is(vals, 'array') then vals else [vals];
    local n = s.length(a);
    local v(i) = if i < n then a[i] else null;
    local plain(i) = i >= n || !(__gaia_is(a[i], 'object') || __gaia_is(a[i], 'array') || __gaia_is(a[i], 'function'));
    local len(x) = if __gaia_is(x, 'string') then s.length(x) else -1;
    local fast =
      if !__gaia_is(str, 'string') || __gaia_is(vals, 'object') || n > 6 ||
         !(plain(0) && plain(1) && plain(2) && plain(3) && plain(4) && plain(5)) then null
      else s.native('gaia_format')(str, s.length(str), n, v(0), len(v(0)), v(1), len(v(1)), v(2), len(v(2)),
                                   v(3), len(v(3)), v(4), len(v(4)), v(5), len(v(5)));
    if __gaia_is(fast, 'string') then fast else super.format(str, vals),
  escapeStringJson(str_)::
    local s = __gaia_istd;
    local fast = if __gaia_is(str_, 'string') then s.native('gaia_escape_json')(str_, s.length(str_)) else null;
    if __gaia_is(fast, 'string') then fast else super.escapeStringJson(str_),
  // The library joins each element's parts with std.deepJoin and slices its children,
  // both written in Jsonnet; this builds the same text with the native std.join. Any
  // element it does not expect (no tag, a tag that is not a string, a child that is
  // neither a string nor an element) makes the whole value go the library's way.
  // Nesting deeper than 16 goes the library's way too, which uses more stack per level.
  manifestXmlJsonml(value)::
    local s = __gaia_istd;
    local aux(v, depth) =
      if __gaia_is(v, 'string') then v
      else if depth > 16 || !__gaia_is(v, 'array') || s.length(v) == 0 || !__gaia_is(v[0], 'string') then null
      else
        local has_attrs = s.length(v) > 1 && __gaia_is(v[1], 'object');
        local attrs = if has_attrs then v[1] else {};
        local kids = [aux(v[i], depth + 1) for i in s.range(if has_attrs then 2 else 1, s.length(v) - 1)];
        if s.length(s.filter(function(k) !__gaia_is(k, 'string'), kids)) > 0 then null
        else s.join('', ['<', v[0]] + [' ' + k + '="' + s.toString(attrs[k]) + '"' for k in s.objectFields(attrs)]
                        + ['>'] + kids + ['</', v[0], '>']);
    local fast = if __gaia_is(value, 'array') then aux(value, 0) else null;
    if __gaia_is(fast, 'string') then fast else super.manifestXmlJsonml(value),
  // The library tells a value's type by comparing it with true, false and null through
  // std.equals (Jsonnet, three calls per value) and builds lists of lists to join; these
  // ask the type directly and join strings natively. The text is the library's, byte for
  // byte (odd forms included: an empty array is '[' + newline + newline + indent + ']').
  manifestJsonEx(value, indent, newline='\n', key_val_sep=': ')::
    local s = __gaia_istd;
    local aux(v, path, cindent) =
      if __gaia_is(v, 'boolean') then (if v then 'true' else 'false')
      else if __gaia_is(v, 'number') then '' + v
      else if __gaia_is(v, 'string') then std.escapeStringJson(v)
      else if __gaia_is(v, 'function') then error 'Tried to manifest function at ' + path
      else if __gaia_is(v, 'array') then
        local new_indent = cindent + indent;
        '[' + newline
        + s.join(',' + newline, [new_indent + aux(v[i], path + [i], new_indent) for i in s.range(0, s.length(v) - 1)])
        + newline + cindent + ']'
      else if __gaia_is(v, 'object') then
        '{' + newline
        + s.join(',' + newline, [cindent + indent + std.escapeStringJson(k) + key_val_sep + aux(v[k], path + [k], cindent + indent)
                                 for k in s.objectFields(v)])
        + newline + cindent + '}'
      else 'null';
    aux(value, [], ''),
  // The flags are read where the library reads them (quote_keys at each key of an
  // object, indent_array_in_object at each non-empty array in one), so a flag that is
  // never needed may be anything, as there. An unquoted key is written by the library
  // itself (its checks of which keys need quotes are long), as a one-key document.
  manifestYamlDoc(value, indent_array_in_object=false, quote_keys=true)::
    local s = __gaia_istd;
    local aux(v, path, cindent) =
      if __gaia_is(v, 'boolean') then (if v then 'true' else 'false')
      else if __gaia_is(v, 'number') then '' + v
      else if __gaia_is(v, 'string') then
        local len = s.length(v);
        if len == 0 then '""'
        else if s.primitiveEquals(v[len - 1], '\n') then
          local split = s.split(v, '\n');
          s.join('\n' + cindent + '  ', ['|'] + [split[i] for i in s.range(0, s.length(split) - 2)])
        else std.escapeStringJson(v)
      else if __gaia_is(v, 'function') then error 'Tried to manifest function at ' + path
      else if __gaia_is(v, 'array') then
        if s.length(v) == 0 then '[]'
        else s.join('\n' + cindent, [
          local e = v[i];
          local nested = __gaia_is(e, 'array') && s.length(e) > 0;
          local ni = if nested || (__gaia_is(e, 'object') && s.length(e) > 0) then cindent + '  ' else cindent;
          '-' + (if nested then '\n' + ni else ' ') + aux(e, path + [i], ni)
          for i in s.range(0, s.length(v) - 1)
        ])
      else if __gaia_is(v, 'object') then
        if s.length(v) == 0 then '{}'
        else s.join('\n' + cindent, [
          local e = v[k];
          local arr = __gaia_is(e, 'array') && s.length(e) > 0;
          local obj = __gaia_is(e, 'object') && s.length(e) > 0;
          local ni = if arr then (if indent_array_in_object then cindent + '  ' else cindent)
                     else if obj then cindent + '  ' else cindent;
          local key = if quote_keys then std.escapeStringJson(k)
                      else local one = super.manifestYamlDoc({ [k]: null }, false, false); s.substr(one, 0, s.length(one) - 6);
          key + ':' + (if arr || obj then '\n' + ni else ' ') + aux(e, path + [k], ni)
          for k in s.objectFields(v)
        ])
      else 'null';
    aux(value, [], ''),
};
)";

}  // namespace gaia::render
