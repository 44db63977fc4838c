#pragma once
// The state a command read, kept in a file for the next command (StateOptions::
// state_file; docs/store.md, "The state kept between commands").
//
// A command that loads a large cluster spends most of its reading in decoding: 50,000
// instance records are 26 MB of JSON, 5,000 nodes 2 MB. The file holds the instances
// and nodes already decoded, in a binary form that reads back in a fraction of that
// time, beside every other record of the state as the store held it (apps, settings...),
// which a load replays through the same code as a read of the store. The next command starts from it and applies only
// the store's changes since its revision.
//
// The file is only ever a shortcut. It names the store it was read from and the revision
// it was read at, with the store's history hash there and a fingerprint of the changes
// at that revision (lib/kept_file.hpp): a store re-created, restored from a backup, or a
// copy of it gone its own way has another history, and the file is not used. So is a
// file of another format, of another build's layout, or damaged (a checksum covers it
// all): the command then reads the store as it would without one.

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cluster.hpp"
#include "lib/kept_file.hpp"
#include "lib/store.hpp"

namespace gaia {

struct StateFileContents {
  // The revision it was read at, with what the store showed there (lib/kept_file.hpp),
  // which a reader checks against the store's before it trusts the file.
  KeptFileHead head;
  // Every record of the state but the nodes and instances, as the store held them, in
  // key order.
  std::vector<KeyValue> records;
  // The nodes, decoded, in key order.
  std::vector<Node> nodes;
  // The instances, decoded, in key order; the instances of a role share their labels.
  std::vector<Instance> instances;
};

// The file's bytes for the store `store_id` (its address, as the user named it): the
// contents as StateFileContents lists them, given by reference so the kept state is not
// copied to be written.
std::string encode_state_file(std::string_view store_id, const KeptFileHead& head,
                              std::span<const KeyValue* const> records, std::span<const Node> nodes,
                              std::span<const Instance> instances);
// The revision and fingerprint the file names, from its head alone (nothing when it is
// not a state file of this format); decode_state_file still checks the whole.
std::optional<KeptFileHead> peek_state_file(std::string_view bytes);
// The contents; or, when `bytes` are not a state file of this format and layout for
// `store_id`, or are damaged anywhere, why not (for `-v`). With `records_ready`, the
// records are handed to it as soon as they are decoded (and are then not in the
// result), so a reader lays them into its state while the instances still decode; the
// file's checksum has been checked by then, but its order not yet, and a file refused
// later is refused whole.
std::expected<StateFileContents, std::string> decode_state_file(
    std::string_view bytes, std::string_view store_id,
    const std::function<void(std::vector<KeyValue>&&)>& records_ready = {});

}  // namespace gaia
