#pragma once
// The records a commit writes by the thousand (instances and timeline events), encoded
// straight into a string: byte for byte what nlohmann::json(x).dump() gives, without
// building the JSON document first (a map node per field, a string copy per value).
// Encoding them was a fifth of a commit of 600 placements. Text with any byte outside
// ASCII goes the slow way, so UTF-8 is checked (and refused) exactly as before.

#include <string>

#include "lib/cluster.hpp"
#include "lib/state.hpp"

namespace gaia {

std::string encode_instance(const Instance& i);
std::string encode_event(const TimelineEvent& e);

}  // namespace gaia
