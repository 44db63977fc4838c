#include "lib/priority.hpp"

#include <charconv>
#include <fmt/format.h>
#include <vector>

namespace gaia {

std::string_view band_name(Band b) {
  switch (b) {
    case Band::Sys: return "sys";
    case Band::Prod: return "prod";
    case Band::Nonprod: return "nonprod";
  }
  return "?";
}

std::string Priority::to_string() const {
  std::string out{band_name(band)};
  if (level != 100 || !preemptible) out += fmt::format(":{}", level);
  if (!preemptible) out += ":non-preemptible";
  return out;
}

std::expected<Priority, std::string> parse_priority(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string_view::npos ? text.size() - start : colon - start));
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  Priority p;
  if (parts[0] == "sys") p.band = Band::Sys;
  else if (parts[0] == "prod") p.band = Band::Prod;
  else if (parts[0] == "nonprod") p.band = Band::Nonprod;
  else
    return std::unexpected(fmt::format("unknown priority band '{}': expected sys, prod or nonprod", parts[0]));
  if (parts.size() > 3) return std::unexpected("too many ':' parts: expected BAND[:LEVEL[:non-preemptible]]");
  if (parts.size() >= 2) {
    int level = 0;
    auto [ptr, ec] = std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), level);
    if (ec != std::errc{} || ptr != parts[1].data() + parts[1].size() || level < 0 || level > 1000)
      return std::unexpected(fmt::format("bad priority level '{}': expected a whole number from 0 to 1000", parts[1]));
    p.level = level;
  }
  if (parts.size() == 3) {
    if (parts[2] != "non-preemptible")
      return std::unexpected(fmt::format("unknown priority option '{}': expected non-preemptible", parts[2]));
    if (p.band != Band::Nonprod)
      return std::unexpected("only nonprod work can be non-preemptible: sys and prod are never preempted by lower bands anyway");
    p.preemptible = false;
  }
  return p;
}

}  // namespace gaia
