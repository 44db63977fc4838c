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

#include "lib/clock.hpp"
#include "lib/store.hpp"

namespace gaia {

struct SqliteConnection;  // Defined in the .cpp: keeps <sqlite3.h> out of this header.

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
};

class SqliteStore final : public Store {
 public:
  // The schema version this gaia writes (PRAGMA user_version).
  static constexpr int kSchemaVersion = 2;

  // Opens or creates the store at `path`, creating missing parent directories and
  // migrating an older schema. Fails clearly when `path` is a directory, is not a
  // store, or was written by a newer gaia.
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
  StoreResult<std::vector<Event>> changes_since(int64_t from_revision, std::string_view prefix,
                                                size_t limit = 0) override;
  StoreResult<void> compact(int64_t revision) override;
  StoreResult<int64_t> grant(std::chrono::seconds ttl) override;
  StoreResult<void> keep_alive(int64_t lease) override;
  StoreResult<void> revoke(int64_t lease) override;

  // Runs PRAGMA integrity_check plus the store's own invariants (no key newer than the
  // store revision); StoreErrc::Corrupt with SQLite's findings when they fail.
  StoreResult<void> integrity_check();
  const std::filesystem::path& path() const { return m_path; }

 private:
  SqliteStore(std::unique_ptr<SqliteConnection> connection, std::filesystem::path path,
              SqliteStoreOptions options);

  // Runs `body` inside a transaction (BEGIN IMMEDIATE when `write`), retrying with
  // back-off while the database is busy. Defined in the .cpp, the only user.
  template <class F>
  auto in_transaction(bool write, F&& body) -> StoreResult<decltype(body())>;
  // Runs the read-only `body` once no lease is past its deadline, expiring leases
  // first when some are: expiry is lazy, checked on every access.
  template <class F>
  auto read_transaction(F&& body) -> StoreResult<decltype(body())>;
  int64_t now_ms() const;

  std::unique_ptr<SqliteConnection> m_connection;
  SqliteConnection& m_db;
  std::filesystem::path m_path;
  SqliteStoreOptions m_options;
  std::mutex m_mutex;  // One SQLite connection serves one transaction at a time.
};

}  // namespace gaia
