// Versions and ranges as app.yaml and `--running` files write them ("1.2.3-rc.1",
// "^1.2 || >=3 <4", "1.x", "1.2 - 2.3"). An accepted version prints and reads back as
// itself; an accepted range's normalised form reads back and agrees with the range on
// every version the input names and a fixed ladder around them.

#include <fmt/format.h>

#include <vector>

#include "fuzz/check.hpp"
#include "spec/semver.hpp"

namespace {

using namespace gaia::semver;

// Versions to test ranges against: a fixed ladder, plus the versions written in the
// range itself and their neighbours, where the edge cases of a comparator are.
std::vector<Version> probes(const Range& range) {
  std::vector<Version> out;
  for (const char* v : {"0.0.0", "0.0.1", "0.1.0", "1.0.0-0", "1.0.0-rc.1", "1.0.0", "1.2.3", "1.9.9", "2.0.0-alpha",
                        "2.0.0", "3.4.5", "10.0.0", "9007199254740991.0.0"}) {
    out.push_back(*parse_version(v));
  }
  for (const auto& set : range.sets()) {
    for (const Comparator& c : set) {
      if (c.any) continue;
      Version v = c.version;
      out.push_back(v);
      Version up = v;
      up.prerelease.clear();
      if (up.patch < 9007199254740991ull) ++up.patch;
      out.push_back(up);
      if (v.patch > 0) {
        Version down = v;
        down.prerelease.clear();
        --down.patch;
        out.push_back(down);
      }
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);

  if (auto v = parse_version(text)) {
    const std::string printed = v->to_string();
    auto again = parse_version(printed);
    GAIA_FUZZ_CHECK(again.has_value(), fmt::format("version {:?} printed as {:?} does not parse", text, printed));
    GAIA_FUZZ_CHECK(compare(*v, *again) == 0 && again->to_string() == printed,
                    fmt::format("version {:?} does not round-trip through {:?}", text, printed));
  } else {
    GAIA_FUZZ_CHECK(!v.error().empty(), "parse_version rejected without a message");
  }

  auto range = Range::parse(text);
  if (!range) {
    GAIA_FUZZ_CHECK(!range.error().empty(), "Range::parse rejected without a message");
    return 0;
  }
  const std::string normalized = range->normalized();
  auto again = Range::parse(normalized);
  GAIA_FUZZ_CHECK(again.has_value(),
                  fmt::format("range {:?} normalises to {:?}, which does not parse: {}", text, normalized,
                              again ? "" : again.error()));
  for (const Version& v : probes(*range)) {
    GAIA_FUZZ_CHECK(range->satisfies(v) == again->satisfies(v),
                    fmt::format("range {:?} and its normal form {:?} disagree on {}", text, normalized, v.to_string()));
  }
  std::vector<Version> candidates = probes(*range);
  if (const Version* best = max_satisfying(candidates, *range)) {
    GAIA_FUZZ_CHECK(range->satisfies(*best), fmt::format("max_satisfying of {:?} gave {}, which does not satisfy it",
                                                         text, best->to_string()));
    for (const Version& v : candidates)
      GAIA_FUZZ_CHECK(!(range->satisfies(v) && compare(*best, v) < 0),
                      fmt::format("max_satisfying of {:?} gave {}, but {} is higher and satisfies it", text,
                                  best->to_string(), v.to_string()));
  }
  return 0;
}
