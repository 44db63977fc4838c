#pragma once
// `gaia store check`: the records of a store that gaia cannot read back (docs/store.md,
// "Damaged records"). One such record makes every command that loads the cluster fail,
// `delete` included; moving it under quarantine/, where nothing looks, lets them all
// work again while the bytes are kept for inspection. Works on any Store.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/error.hpp"
#include "lib/store.hpp"

namespace gaia {

// Where quarantined records go: quarantine/<original key>@<its mod_revision>.
inline constexpr const char* k_quarantine_prefix = "quarantine/";

struct BadRecord {
  std::string key;
  std::string reason;        // Why it does not decode.
  int64_t mod_revision = 0;  // The version found bad; a quarantine moves only that one.
};

// Why gaia cannot read `kv` back as the record its key names, or nothing when it can
// (or when the key is none of gaia's: a newer gaia's, or someone else's). Pure.
std::optional<std::string> record_problem(const KeyValue& kv);

struct RecordScan {
  std::vector<BadRecord> bad;  // In key order.
  int64_t records = 0;         // Records read.
  int64_t revision = 0;        // The revision they were read at.
};

// Every record of the store that record_problem() finds bad, read at one revision in
// pages.
Result<RecordScan> find_bad_records(Store& store);

// Moves `bad` to quarantine/<key>@<mod_revision> in one transaction, only if the key
// still has the revision it was found bad at (a record rewritten meanwhile is left
// alone: false). The timeline sequence key (meta/event_seq) is rebuilt from the newest
// event instead of being left out, so new events never overwrite old ones. Returns the
// quarantine key.
Result<std::optional<std::string>> quarantine_record(Store& store, const BadRecord& bad);

}  // namespace gaia
