#pragma once
// The embedded Store: one SQLite file in WAL mode, shared safely by any number of
// threads and processes. Every write runs in a BEGIN IMMEDIATE transaction, so the
// read of a compare and the write that depends on it can never interleave with
// another writer's, and two processes never lose an update.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "lib/clock.hpp"
#include "lib/store.hpp"

// As <sqlite3.h> declares it (a typedef may be repeated), without including it here.
typedef struct sqlite3 sqlite3;

namespace gaia {

struct SqliteConnection;  // Defined in the .cpp: keeps <sqlite3.h> out of this header.
class SqliteCheckpointer;  // store/sqlite_checkpointer.hpp

struct SqliteStoreOptions {
  // Changes kept for changes_since(): after each commit, history older than the latest
  // `history_revisions` revisions is compacted away. 0 keeps everything.
  int64_t history_revisions = 10000;
  // How long a writer waits for others before failing with StoreErrc::Busy.
  std::chrono::milliseconds busy_timeout{10000};
  // FULL syncs the WAL on every commit, so a committed transaction survives a power
  // loss; NORMAL may lose the last commits on power loss (never on a process crash).
  // The state of record defaults to FULL; see docs/store.md for the measured cost.
  bool synchronous_full = true;
  // Used for lease deadlines; a SystemClock when null.
  std::shared_ptr<const Clock> clock;
  // Whether open() may make a new store when nothing is at the path. The CLI creates a
  // store only in `gaia cluster create`, so a mistyped path is an error, not an empty
  // cluster.
  bool create = true;
  // Opens the file for reading only (a store the user may read but not write): reads
  // work, leases past their deadline are not expired (that is a write), and every write
  // fails saying the store is read-only.
  bool read_only = false;
  // Room kept on the disk for deletes (docs/store.md "A full disk"): a file of this many
  // bytes beside the store (<path>-reserve), made on open when the disk has room for
  // twice as much. When the disk is full, a transaction that removes at least as much as
  // it adds releases it and commits without keeping history. 0: no reserve.
  uint64_t reserve_bytes = 0;
  // Where the WAL is copied into the database file once it holds 1,000 pages: on a
  // thread of the store's own (store/sqlite_checkpointer.hpp), so the commit that
  // crossed the mark does not wait for it; false leaves it to SQLite, inside that commit.
  bool background_checkpoint = true;
};

// What SqliteStore::restore_from did.
struct RestoreSummary {
  int64_t keys = 0;             // Keys restored.
  int64_t backup_revision = 0;  // The revision the backup was taken at.
  int64_t revision = 0;         // The store's revision afterwards (above every earlier one).
};

class SqliteStore final : public Store {
 public:
  // The schema version this gaia writes (PRAGMA user_version).
  static constexpr int kSchemaVersion = 2;

  // Opens the store at `path`, or creates it (and missing parent directories) when
  // options.create allows, migrating an older schema. Fails clearly when `path` is
  // missing and may not be created, is a directory, is not a store, or was written by a
  // newer gaia; read-only, also when its schema is older (upgrading is a write).
  static StoreResult<std::unique_ptr<SqliteStore>> open(const std::filesystem::path& path,
                                                        SqliteStoreOptions options = {});
  ~SqliteStore() override;
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // A read at the current revision (or 0) reads the live table; a read at an older
  // revision R rebuilds the range from the change history, which records each key's
  // state before every change, so it needs every revision after R to be retained.
  StoreResult<RangeResponse> read(const RangeRequest& request) override;
  StoreResult<int64_t> revision() override;
  StoreResult<TxnResult> txn(const Txn& txn) override;
  StoreResult<std::vector<Event>> changes_at(int64_t revision, size_t limit) override;
  StoreResult<std::string> identity() override;
  StoreResult<std::optional<HistoryMark>> history_mark(int64_t revision = 0) override;
  StoreResult<bool> history_chained(int64_t after, int64_t upto) override;
  StoreResult<std::vector<Event>> changes_since(int64_t from_revision, std::string_view prefix,
                                                size_t limit = 0) override;
  StoreResult<std::vector<Event>> changes_since_skipping(int64_t from_revision, std::string_view skipped) override;
  StoreResult<void> compact(int64_t revision) override;
  StoreResult<int64_t> grant(std::chrono::seconds ttl) override;
  StoreResult<void> keep_alive(int64_t lease) override;
  StoreResult<void> revoke(int64_t lease) override;

  // Runs PRAGMA integrity_check plus the store's own invariants (no key newer than the
  // store revision); StoreErrc::Corrupt with SQLite's findings when they fail.
  StoreResult<void> integrity_check();
  const std::filesystem::path& path() const { return m_path; }
  bool read_only() const { return m_options.read_only; }

  // Writes a consistent copy of the whole store as of one moment to `target`, which must
  // not exist, while other connections keep reading and writing (VACUUM INTO, one read
  // transaction). The copy is synced to disk before this returns.
  StoreResult<void> backup_to(const std::filesystem::path& target);
  // Replaces every key with those of the store in `source` (a backup_to() copy), in one
  // transaction: readers see the old keys or the new ones, never a mix. Keys attached to
  // leases (a leader's) are not restored, and every lease is ended, since they belong to
  // processes of another moment. The revision moves past both stores' revisions and the
  // history is discarded, so a follower of the old content reads afresh instead of
  // missing the change, and no compare made against the old content can succeed.
  // `keep_aside`, when given, receives a backup_to() copy of the content being replaced,
  // made once the source has passed its checks.
  StoreResult<RestoreSummary> restore_from(const std::filesystem::path& source,
                                           const std::filesystem::path& keep_aside = {});

  // Waits until the background checkpoints asked for so far are done, and tells how
  // many ran (0 when none was asked for, or they are not in the background).
  int64_t wait_for_checkpoints();

  // The reserve file (SqliteStoreOptions::reserve_bytes) and whether it is there now.
  std::filesystem::path reserve_path() const;
  bool reserve_held() const;

 private:
  SqliteStore(std::unique_ptr<SqliteConnection> connection, std::filesystem::path path,
              SqliteStoreOptions options);

  // Runs `body` inside a transaction (BEGIN IMMEDIATE when `write`), retrying with
  // back-off while the database is busy; `sql_code`, when given, receives SQLite's
  // primary result code of a failure. Defined in store/sqlite_detail.hpp.
  template <class F>
  auto in_transaction(bool write, F&& body, int* sql_code = nullptr) -> StoreResult<decltype(body())>;
  // Runs the read-only `body` once no lease is past its deadline, expiring leases
  // first when some are: expiry is lazy, checked on every access.
  template <class F>
  auto read_transaction(F&& body) -> StoreResult<decltype(body())>;
  int64_t now_ms() const;
  // The error of a store whose file was deleted or replaced since it was opened (a
  // long-running command must stop rather than write into a file nobody will read);
  // nothing when the path still names the opened file. Writes always look; reads at
  // most every 100 ms. Called with m_mutex held.
  std::optional<StoreError> file_vanished(bool write);
  StoreError read_only_error() const;
  // Makes the reserve file when it is missing and the disk has room (sqlite_admin.cpp).
  void keep_reserve();
  // Whether `txn` removes at least as many bytes of keys and values as it adds.
  StoreResult<bool> frees_space(const Txn& txn);
  // The transaction body: compares, then the deletes and puts at one new revision.
  // `lean`: the history is discarded first and this revision logs no previous values,
  // so the commit needs no more room than the keys it writes (the full-disk path).
  TxnResult apply_txn(const Txn& txn, int64_t now, bool lean);

  // SQLite calls this after each commit of the store's connection (sqlite3_wal_hook).
  static int on_wal_commit(void* store, sqlite3* db, const char* name, int pages);

  std::unique_ptr<SqliteConnection> m_connection;
  SqliteConnection& m_db;
  // Declared after the connection, so it stops before the connection closes.
  std::unique_ptr<SqliteCheckpointer> m_checkpointer;
  std::filesystem::path m_path;
  SqliteStoreOptions m_options;
  std::mutex m_mutex;  // One SQLite connection serves one transaction at a time.
  // The file opened (device and inode), and when it was last compared with the path.
  uint64_t m_device = 0, m_inode = 0;
  std::chrono::steady_clock::time_point m_checked_at{};
  std::optional<StoreError> m_gone;  // Set once the file is found deleted or replaced.
};

}  // namespace gaia
