#pragma once
// Semantic versions and ranges with exactly the semantics of npm's node-semver in its
// default mode (not loose, no includePrerelease): precedence as semver.org 2.0.0 says;
// ranges `>=1.2 <2`, `^1.2`, `~1.2.3`, `1.x`, `*`, `1.2 - 2.3`, exact, `||`; and a
// pre-release version only satisfies a range if some comparator in the same `||` set
// names a pre-release of the same major.minor.patch.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace gaia::semver {

struct Version {
  uint64_t major = 0, minor = 0, patch = 0;
  std::vector<std::string> prerelease;  // Dot-separated identifiers after '-'.
  std::vector<std::string> build;       // After '+'; ignored for precedence.

  // "1.2.3-rc.1+b5": build metadata included, so parse_version(to_string()) round-trips.
  std::string to_string() const;
};

// Strict parse of a full version ("1.2.3", "1.2.3-rc.1+b5"); a leading 'v' or '=' is
// accepted ("=1.2.3" is how an exact range is written; node-semver's parse() itself only
// takes the 'v'). Numbers above 2^53-1 and versions over 256 characters are errors, as in
// node-semver.
std::expected<Version, std::string> parse_version(std::string_view text);
// <0, 0, >0. Build metadata is ignored.
int compare(const Version& a, const Version& b);
inline bool operator<(const Version& a, const Version& b) { return compare(a, b) < 0; }
inline bool operator==(const Version& a, const Version& b) { return compare(a, b) == 0; }

struct Comparator {
  enum class Op { Lt, Le, Gt, Ge, Eq } op = Op::Ge;
  Version version;  // op Ge 0.0.0 with empty prerelease means "any".
  bool any = false;
  bool test(const Version& v) const;
  std::string to_string() const;
};

class Range {
 public:
  // Parses a range; the error says which part is malformed and what was expected.
  static std::expected<Range, std::string> parse(std::string_view text);
  bool satisfies(const Version& v) const;
  // The text the user wrote (trimmed).
  const std::string& text() const { return m_text; }
  // Normalised form, as node-semver's Range.range ("<2.0.0-0 >=1.2.0||...").
  std::string normalized() const;
  // The comparator sets, an OR of ANDs (e.g. to report conflicting ranges early). An
  // empty `||` alternative or "*" is a single comparator with `any` set.
  const std::vector<std::vector<Comparator>>& sets() const { return m_sets; }

 private:
  std::string m_text;
  std::vector<std::vector<Comparator>> m_sets;  // OR of ANDs.
};

// The highest of `candidates` satisfying `range`, or nullptr.
const Version* max_satisfying(const std::vector<Version>& candidates, const Range& range);

}  // namespace gaia::semver
