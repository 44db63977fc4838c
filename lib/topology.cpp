#include "lib/topology.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <fmt/format.h>

namespace gaia {
namespace {

constexpr unsigned __int128 kMappedMarker = static_cast<unsigned __int128>(0xffff) << 32;

// The 128-bit value of an IPv4-mapped IPv6 address (::ffff:a.b.c.d) for an IPv4 one.
unsigned __int128 mapped_v6_bits(const IpAddress& v4) { return kMappedMarker | (v4.bits >> 96); }

}  // namespace

std::string IpAddress::to_string() const {
  if (family == IpFamily::V4) {
    auto v = static_cast<uint32_t>(bits >> 96);
    return fmt::format("{}.{}.{}.{}", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
  }
  std::array<unsigned char, 16> bytes{};
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(bits >> (120 - 8 * i));
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, bytes.data(), text, sizeof text);
  return text;
}

bool IpPrefix::contains(const IpAddress& a) const {
  return a.family == address.family &&
         ((a.bits ^ address.bits) & prefix_bits::mask(length)) == 0;
}

std::string IpPrefix::to_string() const { return fmt::format("{}/{}", address.to_string(), length); }

std::expected<IpAddress, std::string> parse_address(std::string_view text) {
  if (text.empty())
    return std::unexpected(std::string(
        "empty address: expected an IPv4 address like 10.0.0.1 or an IPv6 address like "
        "2001:db8::1"));
  // inet_pton needs a terminated string; anything longer than the longest valid form
  // is invalid anyway.
  if (text.size() >= INET6_ADDRSTRLEN)
    return std::unexpected(fmt::format("'{}' is not an IP address: too long", text));
  char buffer[INET6_ADDRSTRLEN] = {};
  std::copy(text.begin(), text.end(), buffer);

  if (text.find(':') == std::string_view::npos) {
    std::array<unsigned char, 4> bytes{};
    if (inet_pton(AF_INET, buffer, bytes.data()) != 1)
      return std::unexpected(fmt::format(
          "'{}' is not a valid IPv4 address: expected four numbers 0-255 without leading "
          "zeros, separated by dots (e.g. 10.0.0.1)",
          text));
    unsigned __int128 bits = 0;
    for (unsigned char b : bytes) bits = (bits << 8) | b;
    return IpAddress{IpFamily::V4, bits << 96};
  }
  std::array<unsigned char, 16> bytes{};
  if (inet_pton(AF_INET6, buffer, bytes.data()) != 1)
    return std::unexpected(fmt::format(
        "'{}' is not a valid IPv6 address: expected up to eight groups of hex digits "
        "separated by colons, with at most one '::' (e.g. 2001:db8::1); zone suffixes "
        "like %eth0 are not accepted",
        text));
  unsigned __int128 bits = 0;
  for (unsigned char b : bytes) bits = (bits << 8) | b;
  if ((bits >> 32) == (kMappedMarker >> 32))  // ::ffff:a.b.c.d is an IPv4 address.
    return IpAddress{IpFamily::V4, (bits & 0xffffffffu) << 96};
  return IpAddress{IpFamily::V6, bits};
}

std::expected<IpPrefix, std::string> parse_cidr(std::string_view text) {
  size_t slash = text.find('/');
  std::string_view address_text = text.substr(0, slash);
  auto address = parse_address(address_text);
  if (!address) {
    if (slash == std::string_view::npos) return std::unexpected(address.error());
    return std::unexpected(fmt::format("'{}': {}", text, address.error()));
  }
  // Whether the prefix length counts IPv6 bits: true for IPv4-mapped addresses too,
  // since "::ffff:10.0.0.0/104" means the IPv4 /8.
  bool written_as_v6 = address_text.find(':') != std::string_view::npos;
  int max = written_as_v6 ? 128 : 32;
  int length = max;
  if (slash != std::string_view::npos) {
    std::string_view digits = text.substr(slash + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), length);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
      return std::unexpected(fmt::format("'{}': prefix length '{}' is not a number", text, digits));
    if (length < 0 || length > max)
      return std::unexpected(fmt::format("'{}': prefix length {} is out of range (0-{} for {})",
                                         text, length, max, written_as_v6 ? "IPv6" : "IPv4"));
  }
  IpPrefix prefix{*address, length};
  if (written_as_v6 && address->family == IpFamily::V4) {
    if (length >= 96)
      prefix.length = length - 96;
    else  // Wider than the mapped range; the host-bit check below rejects it.
      prefix.address = IpAddress{IpFamily::V6, mapped_v6_bits(*address)};
  }
  unsigned __int128 host_bits = prefix.address.bits & ~prefix_bits::mask(prefix.length);
  if (host_bits != 0) {
    IpPrefix network{{prefix.address.family, prefix.address.bits & prefix_bits::mask(prefix.length)},
                     prefix.length};
    return std::unexpected(fmt::format(
        "'{}': the address has bits set after the first {} (did you mean {}?)", text, length,
        network.to_string()));
  }
  return prefix;
}

bool loopback_cidr(std::string_view cidr) {
  auto p = parse_cidr(cidr);
  if (!p) return false;
  for (const char* loopback : {"127.0.0.0/8", "::1/128"}) {
    auto lo = parse_cidr(loopback);
    if (lo && p->length >= lo->length && lo->contains(p->address)) return true;
  }
  return false;
}

}  // namespace gaia
