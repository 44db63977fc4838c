#include "render/json_fields.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "spec/suggest.hpp"

namespace gaia::render::detail {

using nlohmann::json;

std::string json_type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "an object";
    case json::value_t::binary: return "binary data";
    case json::value_t::discarded: return "nothing";
    default: return "a number";
  }
}

std::string json_compact(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string json_preview(const json& v, size_t max) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > max) s = s.substr(0, max - 3) + "...";
  return s;
}

std::string did_you_mean_hint(std::string_view word, const std::vector<std::string>& known,
                              std::string_view what) {
  std::string hint;
  if (auto best = spec::did_you_mean(word, known)) hint = fmt::format("did you mean '{}'? ", *best);
  hint += fmt::format("{}: {}", what, spec::join_limited(known));
  return hint;
}

namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// The "name" part of a qualified name, also the rule for label values.
bool is_label_name(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  if (!is_alnum(s.front()) || !is_alnum(s.back())) return false;
  for (char c : s)
    if (!is_alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

// RFC 1123 subdomain: dot-separated DNS labels, at most 253 characters.
bool is_dns_subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view part = s.substr(start, dot == std::string_view::npos ? s.size() - start : dot - start);
    if (!spec::is_dns_label(part)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace

bool is_label_key(std::string_view s) {
  size_t slash = s.find('/');
  if (slash == std::string_view::npos) return is_label_name(s);
  return is_dns_subdomain(s.substr(0, slash)) && is_label_name(s.substr(slash + 1));
}

bool is_label_value(std::string_view s) { return s.empty() || is_label_name(s); }

bool is_env_name(std::string_view s) {
  if (s.empty()) return false;
  auto ok = [](char c, bool first) {
    return is_alnum(c) ? (first ? !(c >= '0' && c <= '9') : true) : (c == '-' || c == '.' || c == '_');
  };
  for (size_t i = 0; i < s.size(); ++i)
    if (!ok(s[i], i == 0)) return false;
  return true;
}

std::expected<int64_t, std::string> parse_duration_ms(std::string_view text) {
  auto bad = [&] {
    return std::unexpected(
        fmt::format("'{}' is not a duration: expected a whole number with a unit ms, s, m or h, such as "
                    "500ms, 1s or 2m",
                    text));
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad();
  int64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc{}) return std::unexpected(fmt::format("duration '{}' is too long", text));
  std::string_view unit = text.substr(digits);
  int64_t scale = 0;
  if (unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  else return bad();
  // A week bounds every duration gaia takes and keeps the product far from overflow.
  if (n > 7 * 24 * 3'600'000LL / scale) return std::unexpected(fmt::format("duration '{}' is longer than a week", text));
  return n * scale;
}

std::expected<std::string, std::string> canonical_cidr(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos)
    return std::unexpected(fmt::format("'{}' is not a CIDR: expected ADDRESS/PREFIX such as 10.1.0.0/16 or fd00::/8", text));
  std::string addr{text.substr(0, slash)};
  std::string_view prefix_text = text.substr(slash + 1);
  bool v6 = addr.find(':') != std::string::npos;
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(v6 ? AF_INET6 : AF_INET, addr.c_str(), bytes.data()) != 1)
    return std::unexpected(fmt::format("'{}' is not a valid IPv{} address", addr, v6 ? 6 : 4));
  int max_prefix = v6 ? 128 : 32;
  int prefix = -1;
  auto [ptr, ec] = std::from_chars(prefix_text.data(), prefix_text.data() + prefix_text.size(), prefix);
  if (prefix_text.empty() || ec != std::errc{} || ptr != prefix_text.data() + prefix_text.size() || prefix < 0 ||
      prefix > max_prefix)
    return std::unexpected(fmt::format("prefix length '{}' must be a whole number from 0 to {}", prefix_text, max_prefix));
  std::array<unsigned char, 16> network = bytes;
  int nbytes = v6 ? 16 : 4;
  for (int i = 0; i < nbytes; ++i) {
    int keep = std::clamp(prefix - i * 8, 0, 8);
    network[i] &= static_cast<unsigned char>(keep == 0 ? 0 : (0xFF << (8 - keep)) & 0xFF);
  }
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(v6 ? AF_INET6 : AF_INET, network.data(), buf, sizeof buf);
  std::string canonical = fmt::format("{}/{}", buf, prefix);
  if (std::memcmp(network.data(), bytes.data(), nbytes) != 0)
    return std::unexpected(fmt::format("'{}' has host bits set after the /{} prefix (did you mean {}?)", text, prefix,
                                       canonical));
  return canonical;
}

std::string main_jsonnet_path(const spec::AppSpec& spec) {
  namespace fs = std::filesystem;
  if (!spec.yaml_file.empty()) return (fs::path(spec.yaml_file).parent_path() / "main.jsonnet").string();
  if (!spec.dir.empty()) return (spec.dir / "main.jsonnet").string();
  return "main.jsonnet";
}

}  // namespace gaia::render::detail
