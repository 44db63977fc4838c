#include "lib/quantity.hpp"

#include <array>
#include <boost/multiprecision/cpp_int.hpp>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <optional>

// Quantities are evaluated exactly: the written number becomes an integer mantissa and a
// power of ten, the suffix an integer multiplier, and the product is computed with
// arbitrary precision before being checked against int64. Doing it in floating point
// would make "0.1" cores 99 or 100 millicores depending on rounding, and would silently
// accept values that overflow.

namespace gaia {
namespace {

using BigInt = boost::multiprecision::cpp_int;

constexpr std::string_view kBytesExpected =
    "expected a number with an optional suffix Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E (e.g. 512Mi, 8Gi, 1e9)";
constexpr std::string_view kCpuExpected =
    "expected cores (e.g. 2, 0.5, 1e3) or millicores with the suffix m (e.g. 500m)";
constexpr std::string_view kCountExpected = "expected a whole number (e.g. 0, 1, 2)";

// Written exponents are capped at this magnitude and texts at kMaxLength characters, so
// "1e999999999" stays cheap to evaluate; no representable value is affected.
constexpr int64_t kExponentLimit = 4000;
constexpr size_t kMaxLength = 128;

struct Number {
  BigInt mantissa;   // All written digits, without the decimal point.
  int64_t exp10 = 0; // Power of ten applied to the mantissa.
  std::string_view suffix;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool digit(char c) { return c >= '0' && c <= '9'; }

// Parses `digits[.digits][(e|E)[+-]digits]suffix`. An 'e' or 'E' only starts an
// exponent when digits follow, so "1E" is one exa and "1e3" is a thousand.
std::optional<Number> parse_number(std::string_view s) {
  Number n;
  size_t i = 0;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && digit(s[i])) {
    n.mantissa = n.mantissa * 10 + (s[i++] - '0');
    ++int_digits;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i])) {
      n.mantissa = n.mantissa * 10 + (s[i++] - '0');
      ++frac_digits;
    }
  }
  if (int_digits + frac_digits == 0) return std::nullopt;
  n.exp10 = -static_cast<int64_t>(frac_digits);
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    bool negative = false;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) negative = s[j++] == '-';
    if (j < s.size() && digit(s[j])) {
      int64_t exponent = 0;
      while (j < s.size() && digit(s[j])) {
        exponent = std::min<int64_t>(exponent * 10 + (s[j++] - '0'), kExponentLimit);
      }
      n.exp10 += negative ? -exponent : exponent;
      i = j;
    }
  }
  n.suffix = s.substr(i);
  return n;
}

// value = mantissa * multiplier * 10^exp10, rounded up when `round_up`, else required
// to be whole, and at most INT64_MAX.
enum class Outcome { Ok, NotWhole, Overflow };
struct Scaled {
  Outcome outcome = Outcome::Ok;
  int64_t value = 0;
};

Scaled scale(const Number& n, const BigInt& multiplier, bool round_up) {
  const BigInt max = std::numeric_limits<int64_t>::max();
  if (n.mantissa == 0) return {};
  BigInt numerator = n.mantissa * multiplier;
  BigInt value;
  int64_t e = n.exp10;
  if (e >= 0) {
    // A non-zero mantissa times 10^40 is already beyond int64.
    if (e >= 40) return {Outcome::Overflow};
    value = numerator * boost::multiprecision::pow(BigInt(10), static_cast<unsigned>(e));
  } else {
    BigInt denominator = boost::multiprecision::pow(BigInt(10), static_cast<unsigned>(-e));
    value = numerator / denominator;
    if (value * denominator != numerator) {
      if (!round_up) return {Outcome::NotWhole};
      value += 1;
    }
  }
  if (value > max) return {Outcome::Overflow};
  return {Outcome::Ok, static_cast<int64_t>(value)};
}

std::string quoted(std::string_view text) { return fmt::format("\"{}\"", text); }

struct Suffix {
  std::string_view name;
  int power;  // Of 1024 when binary, of 1000 otherwise.
  bool binary;
};
constexpr std::array<Suffix, 14> kByteSuffixes = {{{"", 0, false},
                                                   {"k", 1, false},
                                                   {"K", 1, false},
                                                   {"M", 2, false},
                                                   {"G", 3, false},
                                                   {"T", 4, false},
                                                   {"P", 5, false},
                                                   {"E", 6, false},
                                                   {"Ki", 1, true},
                                                   {"Mi", 2, true},
                                                   {"Gi", 3, true},
                                                   {"Ti", 4, true},
                                                   {"Pi", 5, true},
                                                   {"Ei", 6, true}}};

BigInt suffix_multiplier(const Suffix& s) {
  return boost::multiprecision::pow(BigInt(s.binary ? 1024 : 1000), static_cast<unsigned>(s.power));
}

// A suggestion for a misspelt byte suffix ("GB", "gb", "g", "KiB", "m"), or "".
std::string byte_suffix_hint(std::string_view number, std::string_view suffix) {
  std::string base(suffix);
  if (base.size() >= 2 && (base.back() == 'B' || base.back() == 'b')) base.pop_back();
  if (base.empty()) return "";
  if (base == "m")
    return fmt::format("the suffix m would mean thousandths of a byte; did you mean {}Mi or {}M?", number, number);
  char letter = static_cast<char>(std::toupper(static_cast<unsigned char>(base[0])));
  if (std::string_view("KMGTPE").find(letter) == std::string_view::npos) return "";
  std::string decimal = letter == 'K' ? "k" : std::string(1, letter);
  std::string binary = std::string(1, letter) + "i";
  if (base.size() == 2 && (base[1] == 'i' || base[1] == 'I')) return fmt::format("did you mean {}{}?", number, binary);
  if (base.size() != 1) return "";
  return fmt::format("did you mean {}{} or {}{}?", number, decimal, number, binary);
}

std::string_view number_part(std::string_view text, std::string_view suffix) {
  return text.substr(0, text.size() - suffix.size());
}

std::string common_errors(std::string_view text, std::string_view what, std::string_view expected) {
  if (text.empty()) return fmt::format("empty {}: {}", what, expected);
  if (text.size() > kMaxLength)
    return fmt::format("{} \"{}...\" is longer than {} characters: {}", what, text.substr(0, 16), kMaxLength, expected);
  if (text[0] == '-') return fmt::format("{} is negative: {} must not be negative; {}", quoted(text), what, expected);
  return "";
}

}  // namespace

std::expected<int64_t, std::string> parse_bytes(std::string_view raw) {
  std::string_view text = trim(raw);
  if (auto err = common_errors(text, "byte quantity", kBytesExpected); !err.empty()) return std::unexpected(err);
  auto n = parse_number(text);
  if (!n) return std::unexpected(fmt::format("{} is not a quantity: {}", quoted(text), kBytesExpected));
  const Suffix* suffix = nullptr;
  for (const auto& s : kByteSuffixes)
    if (s.name == n->suffix) suffix = &s;
  if (suffix == nullptr) {
    std::string hint = byte_suffix_hint(number_part(text, n->suffix), n->suffix);
    return std::unexpected(fmt::format("{} is not a quantity: {}{}", quoted(text), kBytesExpected,
                                       hint.empty() ? "" : "; " + hint));
  }
  auto scaled = scale(*n, suffix_multiplier(*suffix), /*round_up=*/true);
  if (scaled.outcome == Outcome::Overflow)
    return std::unexpected(fmt::format("{} is too large: the most that can be expressed is {} bytes (about 8Ei)",
                                       quoted(text), std::numeric_limits<int64_t>::max()));
  return scaled.value;
}

std::expected<int64_t, std::string> parse_cpu(std::string_view raw) {
  std::string_view text = trim(raw);
  if (auto err = common_errors(text, "cpu quantity", kCpuExpected); !err.empty()) return std::unexpected(err);
  auto n = parse_number(text);
  if (!n) return std::unexpected(fmt::format("{} is not a cpu quantity: {}", quoted(text), kCpuExpected));
  BigInt multiplier;
  if (n->suffix.empty()) {
    multiplier = 1000;
  } else if (n->suffix == "m") {
    multiplier = 1;
  } else {
    bool memory_suffix = !byte_suffix_hint("1", n->suffix).empty();
    for (const auto& s : kByteSuffixes) memory_suffix = memory_suffix || s.name == n->suffix;
    return std::unexpected(fmt::format("{} is not a cpu quantity: {}{}", quoted(text), kCpuExpected,
                                       memory_suffix ? fmt::format("; \"{}\" is a memory suffix, not a cpu one",
                                                                   n->suffix)
                                                     : ""));
  }
  auto scaled = scale(*n, multiplier, /*round_up=*/false);
  if (scaled.outcome == Outcome::NotWhole)
    return std::unexpected(fmt::format(
        "{} is not a whole number of millicores: cpu is allocated in steps of 0.001 cores (1m)", quoted(text)));
  if (scaled.outcome == Outcome::Overflow)
    return std::unexpected(fmt::format("{} is too large: the most that can be expressed is {}m", quoted(text),
                                       std::numeric_limits<int64_t>::max()));
  return scaled.value;
}

std::expected<int64_t, std::string> parse_count(std::string_view raw) {
  std::string_view text = trim(raw);
  if (auto err = common_errors(text, "count", kCountExpected); !err.empty()) return std::unexpected(err);
  auto n = parse_number(text);
  if (!n || !n->suffix.empty())
    return std::unexpected(fmt::format("{} is not a count: {}", quoted(text), kCountExpected));
  auto scaled = scale(*n, 1, /*round_up=*/false);
  if (scaled.outcome == Outcome::NotWhole)
    return std::unexpected(fmt::format("{} is not a whole number: {}", quoted(text), kCountExpected));
  if (scaled.outcome == Outcome::Overflow)
    return std::unexpected(fmt::format("{} is too large: the most that can be expressed is {}", quoted(text),
                                       std::numeric_limits<int64_t>::max()));
  return scaled.value;
}

std::string format_cpu(int64_t millicores) {
  if (millicores % 1000 == 0) return fmt::format("{}", millicores / 1000);
  return fmt::format("{}m", millicores);
}

std::string format_bytes(int64_t bytes) {
  static constexpr std::string_view kNames[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes != 0) {
    for (int power = 6; power >= 1; --power) {
      int64_t unit = int64_t{1} << (10 * power);
      if (bytes % unit == 0) return fmt::format("{}{}", bytes / unit, kNames[power - 1]);
    }
  }
  return fmt::format("{}", bytes);
}

std::string format_bytes_short(int64_t bytes) {
  static constexpr std::string_view kNames[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes < 1024 && bytes > -1024) return fmt::format("{}", bytes);
  double value = static_cast<double>(bytes);
  int power = 0;
  while (power < 6 && std::abs(value) >= 1024.0) {
    value /= 1024.0;
    ++power;
  }
  // Rounding to one decimal can reach 1024 ("1023.96Mi"); show that as the next unit.
  double rounded = std::round(value * 10.0) / 10.0;
  if (std::abs(rounded) >= 1024.0 && power < 6) {
    rounded /= 1024.0;
    ++power;
  }
  if (rounded == std::trunc(rounded)) return fmt::format("{}{}", static_cast<int64_t>(rounded), kNames[power]);
  return fmt::format("{:.1f}{}", rounded, kNames[power]);
}

}  // namespace gaia
