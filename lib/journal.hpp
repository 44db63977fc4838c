#pragma once
// Commits larger than one transaction of a bounded store (etcd takes 128 operations and
// 1.5 MiB per transaction by default; a submit of a few hundred instances writes more),
// kept atomic for everyone who reads through gaia (docs/store.md, "Commits larger than
// one transaction"):
//
//  1. the change is written, in chunks that each fit, under journal/<id>/<k>, where no
//     reader looks;
//  2. one transaction holds the caller's compares and the puts of the compared keys
//     (the State's sequence key), and creates meta/journal = {id, chunks}: this is the
//     commit point, and from here on the change happens completely;
//  3. the chunks are applied, one transaction each, each guarded by meta/journal still
//     being the one created in 2, so a late or repeated application never overwrites a
//     newer change;
//  4. meta/journal and the chunks are deleted.
//
// Whoever finds meta/journal first rolls it forward: State::load before it reads (so no
// command ever decides on half a change) and writers, whose compares fail on the moved
// sequence key and who then load. A writer killed after step 2 therefore loses nothing;
// one killed before it leaves only unreferenced journal chunks, which change nothing.

#include <cstddef>
#include <optional>
#include <string>

#include "lib/store.hpp"

namespace gaia {

inline constexpr const char* k_journal_key = "meta/journal";
inline constexpr const char* k_journal_prefix = "journal/";

// Commits `txn` through the journal, chunks sized for `limits`. Returns false when the
// compares did not hold (nothing applied). A put larger than one transaction can carry
// is refused (InvalidArgument) before anything is written. `stop_after_chunks` is for
// tests: return after applying that many chunks, as a writer killed there would.
StoreResult<bool> commit_journaled(Store& store, const Txn& txn, const TxnLimits& limits, const std::string& id,
                                   std::optional<size_t> stop_after_chunks = std::nullopt,
                                   int64_t* point_revision = nullptr);

// Finishes an interrupted journaled commit. Returns whether there was one.
StoreResult<bool> roll_forward(Store& store);

// Commits `txn` in one transaction when it fits the store's limits, else through the
// journal; the answer of Store::txn either way. `revision`, when given, gets the
// revision a one-transaction commit was made at (0 for a journaled one, which spans
// several). `compared_revision`, when given, gets the revision the keys `txn` compares
// (and puts) were written at: the commit's for one transaction, the commit point's for
// a journaled one, which writes those keys and no later chunk does.
StoreResult<bool> commit_any_size(Store& store, const Txn& txn, const std::string& id, int64_t* revision = nullptr,
                                  int64_t* compared_revision = nullptr);

}  // namespace gaia
