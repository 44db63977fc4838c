#pragma once
// The sim backend's world (every simulated copy, keys sim/copies/<instance>) kept in a
// file for the next process on the same store, as the state is (lib/state_file.hpp,
// lib/kept_file.hpp for the checks against the store): a command on a cluster of 50,000
// copies otherwise decodes 12 MB of them before its controllers can observe.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <expected>

#include "lib/kept_file.hpp"
#include "lib/sim_backend.hpp"

namespace gaia {

using SimWorld = std::map<std::string, std::vector<SimCopy>>;

struct SimWorldFile {
  KeptFileHead head;  // The revision it was read at, with what the store showed there.
  SimWorld world;
};

std::string encode_sim_world(std::string_view store_id, KeptFileHead head, const SimWorld& world);
// The world; or, when `bytes` are not a world file of this format and layout for
// `store_id`, or are damaged anywhere, why not (for `-v`).
std::expected<SimWorldFile, std::string> decode_sim_world(std::string_view bytes, std::string_view store_id);
std::optional<KeptFileHead> peek_sim_world(std::string_view bytes);

}  // namespace gaia
