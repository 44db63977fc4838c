#pragma once
// Priority bands SYS > PROD > NONPROD with levels inside a band (docs/spec.md section 9).
// A higher priority may preempt a strictly lower one.

#include <compare>
#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace gaia {

enum class Band : int { Nonprod = 0, Prod = 1, Sys = 2 };

struct Priority {
  Band band = Band::Prod;
  int level = 100;          // 0..1000 inside the band; 100 when not given.
  bool preemptible = true;  // Only NONPROD may be made non-preemptible ("nonprod:50:np").

  // Total order: band first, then level.
  int64_t rank() const { return static_cast<int64_t>(band) * 10000 + level; }
  auto operator<=>(const Priority& o) const { return rank() <=> o.rank(); }
  bool operator==(const Priority& o) const = default;

  // "prod", "prod:200", "nonprod:50:non-preemptible".
  std::string to_string() const;
};

// Parses "sys", "prod:200", "nonprod", "nonprod:10:non-preemptible". Errors say what
// was expected.
std::expected<Priority, std::string> parse_priority(std::string_view text);
std::string_view band_name(Band b);

}  // namespace gaia
