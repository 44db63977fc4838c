#pragma once
// Store: the control plane's state of record (docs/store.md).
//
// The model is etcd's, so an embedded SQLite file and an etcd cluster both fit behind
// it. Keys are strings whose '/'-separated segments act as prefixes ("apps/default/hdfs",
// "instances/default/hdfs/datanode/0", "nodes/n1", "events/00000000000000000042");
// values are strings (JSON text). The store has one revision, raised by one for each
// committed transaction that changes at least one key; every key carries the revision
// that created it, the revision that last changed it, and how many times it has been
// written since it was created. Writers use optimistic concurrency: read a key, then
// commit a transaction that only applies if the key's mod_revision is still the one
// they read.
//
// Prefixes are plain string prefixes, as in etcd: "apps/default/hdfs" also matches
// "apps/default/hdfs2". Callers that mean one object's subtree end the prefix with '/'.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"

namespace gaia {

enum class StoreErrc {
  Io,               // The backing file or server could not be read or written.
  Corrupt,          // The backing file is not a store, or failed an integrity check.
  SchemaTooNew,     // The store was written by a newer gaia.
  Busy,             // Other writers held the store for longer than the configured timeout.
  Compacted,        // The requested history has been discarded (see compact_revision).
  FutureRevision,   // A revision after the current one was asked for.
  LeaseNotFound,    // The lease expired, was revoked, or never existed.
  InvalidArgument,  // The request itself is malformed (empty key, duplicate keys...).
  Timeout,          // The server did not answer in time; a write may or may not have been
                    // applied, so read it back before repeating it.
  Unavailable,      // No member of the cluster could be reached, or none could serve (no
                    // leader); nothing was applied.
  TooLarge,         // The request exceeds the server's limits (--max-request-bytes,
                    // --max-txn-ops); nothing was applied.
  Unauthenticated,  // The server refused the credentials, the token, or the permission.
};

// A stable, machine-readable name for a code ("unavailable", "too-large"), shown in
// JSON output and used by callers that decide whether to retry.
std::string_view to_string(StoreErrc code);
// Whether a failure with `code` may pass by itself (a restarting or overloaded server),
// so a long-running loop waits and tries again rather than giving up.
bool is_transient(StoreErrc code);
// Whether every one of `ds` is such a store failure (by its Diagnostic::code).
bool is_transient(const Diagnostics& ds);

struct StoreError {
  StoreErrc code = StoreErrc::Io;
  std::string message;
  std::string hint;  // What the user can do about it; may be empty.
  // For StoreErrc::Compacted: the oldest revision whose changes are still available.
  int64_t compact_revision = 0;

  // "message (hint: ...)".
  std::string to_string() const;
  // For the CLI, which reports every failure as a Diagnostic.
  Diagnostic to_diagnostic() const;
};

template <class T>
using StoreResult = std::expected<T, StoreError>;

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;  // Revision of the put that created the key.
  int64_t mod_revision = 0;     // Revision of the latest put (or of the delete, in events).
  int64_t version = 0;          // Number of puts since creation; 1 right after creation.
  int64_t lease = 0;            // Lease the key is attached to; 0 for none.

  bool operator==(const KeyValue&) const = default;
};

// Holds when the key's current mod_revision equals `mod_revision`; 0 means "the key
// must not exist", which makes create-only writes.
struct Compare {
  std::string key;
  int64_t mod_revision = 0;
};

struct Put {
  std::string key;
  std::string value;
  int64_t lease = 0;  // Attach the key to this lease; 0 detaches it from any lease.
};

struct Delete {
  std::string key;
  bool prefix = false;  // Delete every key starting with `key`.
};

// An atomic test-and-set. If every compare holds, all deletes and puts are applied at
// one new revision; otherwise nothing is written. A key may appear in at most one put,
// and no put may touch a key a delete of the same transaction removes (as in etcd).
struct Txn {
  std::vector<Compare> compares;
  std::vector<Put> puts;
  std::vector<Delete> deletes;
};

struct TxnResult {
  bool succeeded = false;
  // The revision the transaction was committed at; when it failed, or changed no key,
  // the store's current revision.
  int64_t revision = 0;
};

enum class EventType { Put, Delete };

// One change to one key. For puts, kv is the key as written; for deletes, kv holds the
// key and, in mod_revision, the revision of the delete.
struct Event {
  EventType type = EventType::Put;
  KeyValue kv;

  int64_t revision() const { return kv.mod_revision; }
  bool operator==(const Event&) const = default;
};

// What one transaction may hold on a store that bounds it (etcd: --max-txn-ops, which
// bounds compares and operations separately, and --max-request-bytes); 0: no bound.
struct TxnLimits {
  size_t max_ops = 0;
  size_t max_bytes = 0;
  bool bounded() const { return max_ops > 0 || max_bytes > 0; }
};

// The size of `txn` as a server counts it against TxnLimits::max_bytes (keys, values
// and a little per operation).
size_t txn_request_bytes(const Txn& txn);
// Whether `txn` fits `limits`.
bool txn_fits(const Txn& txn, const TxnLimits& limits);

// One read of a key range at one revision (etcd's RangeRequest).
//   key:       the first key (inclusive).
//   range_end: the end (exclusive); empty means the single key `key`; "\0" means every
//              key >= `key`. RangeRequest::prefix() builds the range of a prefix.
//   revision:  read the keys as they were at this revision; 0 means the current one.
//              Fails with StoreErrc::Compacted when that revision's state is no longer
//              kept, StoreErrc::FutureRevision when it is after the current one.
//   limit:     at most this many keys (0: all); `more` tells whether some were left out.
//   keys_only: values are left empty.
//   count_only: no keys are returned, only `count`.
struct RangeRequest {
  std::string key;
  std::string range_end;
  int64_t revision = 0;
  size_t limit = 0;
  bool keys_only = false;
  bool count_only = false;

  // Every key starting with `prefix` (all keys when it is empty).
  static RangeRequest prefix(std::string_view prefix, int64_t revision = 0, size_t limit = 0);
  // Keys in [from, to).
  static RangeRequest interval(std::string_view from, std::string_view to, int64_t revision = 0,
                               size_t limit = 0);
  // Whether `k` falls inside this request's range.
  bool contains(std::string_view k) const;
};

struct RangeResponse {
  std::vector<KeyValue> kvs;  // Sorted by key (byte order).
  int64_t revision = 0;       // The revision the range was read at (the header revision).
  bool more = false;          // Keys past `limit` exist in the range.
  int64_t count = 0;          // Keys in the whole range, regardless of `limit`.
};

// The exclusive end of the range of keys starting with `prefix`: the prefix with its last
// byte below 0xff incremented and what follows dropped. An empty prefix, or one of only
// 0xff bytes, has no such key: then "\0", which means "to the end".
std::string prefix_range_end(std::string_view prefix);

// A stream of changes to the keys under one prefix, from a start revision on; made by
// Store::watch. It delivers every change once, in revision order, and never splits a
// revision. One Watch is used by one thread at a time.
class Watch {
 public:
  virtual ~Watch() = default;
  // Waits up to `timeout` for changes and returns those that arrived (oldest first), or
  // an empty vector when none came in time. Fails with StoreErrc::Compacted when the
  // start revision's history is gone (the caller re-reads with a range and watches again
  // from that range's revision), or with the store's error when it cannot be reached; a
  // watch that failed once keeps failing, so the caller makes a new one.
  virtual StoreResult<std::vector<Event>> next(std::chrono::milliseconds timeout) = 0;
  // The revision the watch has reached: every change up to it has been returned.
  virtual int64_t revision() const = 0;
};

// A store's history up to a revision, as a hash chained over its changes: two stores
// whose histories differ anywhere up to that revision have different hashes (but for
// xxh3's collisions), however alike their keys are now.
struct HistoryMark {
  int64_t revision = 0;
  uint64_t hash = 0;
};

// The chain's next link: the hash after one revision's changes, from the hash `before`
// it, with the changes added in the order changes_since lists them.
class HistoryChain {
 public:
  HistoryChain(uint64_t before, int64_t revision);
  ~HistoryChain();
  HistoryChain(const HistoryChain&) = delete;
  HistoryChain& operator=(const HistoryChain&) = delete;
  void add(EventType type, const KeyValue& kv);
  uint64_t digest() const;

 private:
  void* m_state;
};

// The hash `hash` chained over `changes` (in changes_since's order, whole revisions):
// what a store's history hash became through them. A pure function, for a reader that
// checks the changes it read are the store's own history (lib/kept_file.hpp).
uint64_t chain_history(uint64_t hash, std::span<const Event> changes);

// One Store object may be shared between threads; several objects (in one or many
// processes) may open the same backing store at once.
class Store {
 public:
  virtual ~Store() = default;

  // The one read: a range at one revision (see RangeRequest). Readers that need several
  // ranges to agree read the first at revision 0 and the others at the revision it
  // returned.
  virtual StoreResult<RangeResponse> read(const RangeRequest& request) = 0;
  // How many keys a reader of a large range asks for per request (pages read at one
  // revision); 0 when one request of any size is fine, as for a local file. A server
  // that builds each answer in memory (etcd) prefers pages.
  virtual size_t read_page_size() const { return 0; }
  virtual StoreResult<int64_t> revision() = 0;
  virtual StoreResult<TxnResult> txn(const Txn& txn) = 0;
  // The bounds of one transaction here. A caller whose change does not fit commits it
  // through a journal (lib/journal.hpp) instead of failing.
  virtual TxnLimits txn_limits() const { return {}; }

  // Changes with revision >= from_revision to keys starting with `prefix`, ordered by
  // revision (and, inside a revision, deletes before puts in request order). This is
  // the poll form of a watch: a follower remembers the last revision it saw, R, and asks
  // for R + 1. `limit` bounds the number of events, except that a revision is never
  // split, so a follower always sees whole transactions. Fails with
  // StoreErrc::Compacted when from_revision is older than the retained history; the
  // follower then re-reads with range() and resumes from the revision() it read.
  virtual StoreResult<std::vector<Event>> changes_since(int64_t from_revision,
                                                        std::string_view prefix,
                                                        size_t limit = 0) = 0;
  // The first `limit` and the last `limit` changes made at `revision` (all of them when
  // it made no more than 2 x `limit`, or `limit` is 0), in the order changes_since lists
  // them; fails as changes_since does for a compacted revision. For a look at one
  // revision that must stay cheap however large its commit was (a state file's
  // fingerprint, lib/kept_file.hpp). The default reads the whole revision.
  virtual StoreResult<std::vector<Event>> changes_at(int64_t revision, size_t limit);
  // changes_since(from_revision, ""), without the changes of keys under `skipped` (not
  // empty): for a reader that needs none of those, such as the kept files, which hold no
  // timeline events while events are most of the changes a submit makes. The default
  // reads every change and drops those; SQLite leaves them out of its query.
  virtual StoreResult<std::vector<Event>> changes_since_skipping(int64_t from_revision, std::string_view skipped);
  // What tells this store apart from every other, including one re-created at the same
  // address: a random number a SQLite store gets when first opened for writing. Empty
  // when the store has none, as etcd (whose cluster id is the same for a cluster made
  // again with the same flags): then nothing is kept for it between processes
  // (lib/kept_file.hpp).
  virtual StoreResult<std::string> identity() { return std::string(); }
  // Where the store's history stands: its revision, and a hash chained over every
  // change the store made up to it (HistoryChain), read together; a SQLite store keeps
  // it in its meta table, updated by every commit. With `revision`, where it stood at
  // that revision, while it is among the last few (k_history_kept). Nothing when the
  // store keeps no such hash, as etcd (then nothing is kept for it between processes:
  // lib/kept_file.hpp), or no longer knows it for that revision.
  static constexpr int64_t k_history_kept = 64;
  virtual StoreResult<std::optional<HistoryMark>> history_mark(int64_t revision = 0) {
    (void)revision;
    return std::optional<HistoryMark>();
  }
  // Whether every commit after revision `after` up to `upto` chained the history hash
  // on, as far as the ring of the last k_history_kept shows (each left its hash there): a
  // gaia that does not chain (an older build writing the same store) leaves a gap. False
  // when the store keeps no such ring, or `after` is out of it.
  virtual StoreResult<bool> history_chained(int64_t after, int64_t upto) {
    (void)after;
    (void)upto;
    return false;
  }
  // Follows changes to keys starting with `prefix` from `from_revision` on (the next
  // revision after a read's, to miss nothing). The default polls changes_since() every
  // 100 ms (SQLite, the in-memory store); etcd streams its own watch.
  virtual StoreResult<std::unique_ptr<Watch>> watch(std::string_view prefix, int64_t from_revision);
  // Discards history older than `revision` (changes_since(revision) keeps working).
  virtual StoreResult<void> compact(int64_t revision) = 0;

  // Leases: keys attached to a lease vanish (as a delete at a new revision) once it
  // expires, which happens `ttl` after the grant or the latest keep_alive. Controllers
  // hold leadership this way. Granting and renewing do not change the revision.
  virtual StoreResult<int64_t> grant(std::chrono::seconds ttl) = 0;
  virtual StoreResult<void> keep_alive(int64_t lease) = 0;
  // Ends the lease now, deleting its keys.
  virtual StoreResult<void> revoke(int64_t lease) = 0;

  // Convenience wrappers over read(): one key, and the keys starting with `prefix`
  // (sorted by key, at most `limit` unless 0), at the current revision.
  StoreResult<std::optional<KeyValue>> get(std::string_view key);
  StoreResult<std::vector<KeyValue>> range(std::string_view prefix, size_t limit = 0);
  // Convenience wrappers over txn(); they return the revision of the change.
  StoreResult<int64_t> put(std::string_view key, std::string_view value, int64_t lease = 0);
  StoreResult<int64_t> del(std::string_view key);
  StoreResult<int64_t> del_prefix(std::string_view prefix);
};

// Returns the problem with a transaction that no backend should run (empty keys, a key
// put twice, a put under a delete), or nothing. Backends call it before doing any I/O.
std::optional<StoreError> validate_txn(const Txn& txn);

}  // namespace gaia
