#pragma once
// Label selectors as users type them after `-l`, kubectl style:
//   app=hdfs            equality ("==" too)
//   tier!=batch         inequality (matches objects without the key as well)
//   gpu-model           the key exists
//   !gpu-model          the key does not exist
//   zone in (z1,z2)     set membership; "notin" for the opposite
// Requirements are separated by commas (outside parentheses) and must all hold. The
// result uses the workload's LabelRequirement, so selectors typed on the command line
// and selectors written in specs are one thing.

#include <expected>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lib/workload.hpp"

namespace gaia {

struct SelectorError {
  size_t column = 0;  // 1-based position in the selector text.
  std::string message;
  std::string hint;
};

// Parses a selector. An empty (or all-blank) text is the empty selector, matching all.
std::expected<std::vector<LabelRequirement>, SelectorError> parse_selector(std::string_view text);

// Whether `labels` satisfy every requirement.
bool selector_matches(const std::vector<LabelRequirement>& selector, const std::map<std::string, std::string>& labels);

// The selector written back in the syntax parse_selector reads ("a=b,c in (d,e)").
std::string format_selector(const std::vector<LabelRequirement>& selector);

// Whether `key` is a valid label key: an optional DNS-style prefix and '/', then a name
// of letters, digits, '-', '_' and '.', starting and ending alphanumeric, at most 63
// characters. Returns the problem, or "" when valid.
std::string label_key_problem(std::string_view key);
// Same rule for values, which may also be empty.
std::string label_value_problem(std::string_view value);

}  // namespace gaia
