#pragma once
// "Did you mean ...?" suggestions for misspelt field and app names.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gaia::spec {

// Edit distance: insertions, deletions, substitutions and swaps of adjacent characters
// each cost 1.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a plausible typo: at most
// max(1, len/3) edits away (ties go to the earlier candidate).
std::optional<std::string> did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

// "a, b, c" or, past `limit` entries, "a, b, c, ... (N more)".
std::string join_limited(const std::vector<std::string>& items, size_t limit = 20);

}  // namespace gaia::spec
