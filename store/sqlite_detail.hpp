#pragma once
// The SQLite store's internals, shared by its two source files (sqlite_store.cpp: the
// Store calls; sqlite_admin.cpp: backup, restore, the space reserve and the file checks).
// Included only by store/sqlite_*.cpp, so <sqlite3.h> stays out of every other file.

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "store/sqlite_store.hpp"

namespace gaia {

// One SQLite connection and its prepared statements, reused across calls: preparing a
// statement costs more than running most of the store's queries.
struct SqliteConnection {
  sqlite3* handle = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> idle;  // Prepared and not in use.

  explicit SqliteConnection(sqlite3* h) : handle(h) {}
  ~SqliteConnection() {
    for (auto& [sql, stmt] : idle) sqlite3_finalize(stmt);
    sqlite3_close_v2(handle);
  }
};

namespace sqlite_detail {


// Every SQLite call can fail, and threading a result through each of the dozens of
// calls in a transaction body would bury the logic. Inside this file, failures are
// thrown as these two types; in_transaction() catches them at the edge, rolls back and
// turns them into StoreErrors, so no exception ever leaves the SqliteStore API.
struct SqlFailure {
  int code;             // SQLite extended result code.
  std::string message;  // What was being done, and SQLite's message at the time.
};
struct RequestFailure {
  StoreError error;  // A user-visible failure detected inside a transaction.
};

[[noreturn]] inline void throw_sql(sqlite3* db, int rc, std::string_view what) {
  throw SqlFailure{rc, fmt::format("{}: {}", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc))};
}

[[noreturn]] inline void throw_request(StoreErrc code, std::string message, std::string hint = {},
                                int64_t compact_revision = 0) {
  throw RequestFailure{StoreError{code, std::move(message), std::move(hint), compact_revision}};
}

inline void exec(sqlite3* db, std::string_view sql) {
  std::string text(sql);
  int rc = sqlite3_exec(db, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw_sql(db, rc, fmt::format("running '{}'", text.substr(0, 40)));
}

inline void rollback_quietly(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

inline void exec(SqliteConnection& db, std::string_view sql) { exec(db.handle, sql); }
inline void rollback_quietly(SqliteConnection& db) { rollback_quietly(db.handle); }

inline bool is_busy(int code) {
  int primary = code & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

// A prepared statement borrowed from the connection's cache for one use. Taking it out
// of the cache while in use means a nested use of the same SQL prepares its own copy.
class Statement {
 public:
  Statement(SqliteConnection& db, std::string_view sql) : m_db(db), m_sql(sql) {
    if (auto it = m_db.idle.find(m_sql); it != m_db.idle.end()) {
      m_stmt = it->second;
      m_db.idle.erase(it);
      return;
    }
    int rc = sqlite3_prepare_v3(db.handle, m_sql.data(), static_cast<int>(m_sql.size()),
                                SQLITE_PREPARE_PERSISTENT, &m_stmt, nullptr);
    if (rc != SQLITE_OK) throw_sql(db.handle, rc, "preparing a statement");
  }
  ~Statement() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
    if (!m_db.idle.emplace(std::move(m_sql), m_stmt).second) sqlite3_finalize(m_stmt);
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, std::string_view text) {
    check(sqlite3_bind_text(m_stmt, index, text.data(), static_cast<int>(text.size()),
                            SQLITE_TRANSIENT));
    return *this;
  }
  Statement& bind(int index, int64_t value) {
    check(sqlite3_bind_int64(m_stmt, index, value));
    return *this;
  }
  // True when a row is available, false when the statement is done.
  bool step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_sql(m_db.handle, rc, "executing a statement");
  }
  void run() {
    while (step()) {
    }
  }
  int64_t integer(int column) const { return sqlite3_column_int64(m_stmt, column); }
  sqlite3_stmt* handle() const { return m_stmt; }
  std::string text(int column) const {
    auto* p = reinterpret_cast<const char*>(sqlite3_column_text(m_stmt, column));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(m_stmt, column)))
             : std::string();
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw_sql(m_db.handle, rc, "binding a parameter");
  }
  SqliteConnection& m_db;
  std::string m_sql;
  sqlite3_stmt* m_stmt = nullptr;
};

inline int64_t read_meta(SqliteConnection& db, std::string_view name) {
  Statement s(db, "SELECT value FROM meta WHERE name = ?1");
  s.bind(1, name);
  if (!s.step()) throw SqlFailure{SQLITE_CORRUPT, fmt::format("meta entry '{}' is missing", name)};
  return s.integer(0);
}

inline void write_meta(SqliteConnection& db, std::string_view name, int64_t value) {
  Statement s(db, "UPDATE meta SET value = ?2 WHERE name = ?1");
  s.bind(1, name).bind(2, value).run();
}

inline StoreError to_store_error(const SqlFailure& f, const std::filesystem::path& path,
                          std::chrono::milliseconds busy_timeout) {
  int primary = f.code & 0xff;
  if (is_busy(f.code))
    return StoreError{StoreErrc::Busy,
                      fmt::format("store '{}' stayed locked by other writers for more than {} ms",
                                  path.string(), busy_timeout.count()),
                      "another gaia process may be stuck holding it; retry, or raise the "
                      "store's busy timeout",
                      0};
  if (primary == SQLITE_FULL)
    return StoreError{StoreErrc::Io,
                      fmt::format("store '{}': the disk is full ({})", path.string(), f.message),
                      "free some space on its disk; meanwhile `gaia delete` and `gaia events --retention N` "
                      "still work, on the store's reserve "
                      "(docs/store.md, \"A full disk\")",
                      0};
  // A read-only connection to a WAL store whose -shm file is missing, in a folder it
  // may not create files in.
  if (f.code == SQLITE_READONLY_CANTINIT || f.code == SQLITE_READONLY_RECOVERY ||
      f.code == SQLITE_READONLY_DIRECTORY)
    return StoreError{StoreErrc::Io,
                      fmt::format("store '{}' cannot be read without write permission on its folder: SQLite "
                                  "needs its -wal and -shm files, which are not there ({})",
                                  path.string(), f.message),
                      "let someone who may write the store run any gaia command on it once (gaia keeps "
                      "those files from then on), or give write permission on the folder",
                      0};
  if (primary == SQLITE_READONLY)
    return StoreError{StoreErrc::Io,
                      fmt::format("store '{}' is read-only: {}", path.string(), f.message),
                      "writing needs write permission on the file and its folder; reading commands "
                      "(get, describe, events, status) work as they are",
                      0};
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
    return StoreError{StoreErrc::Corrupt,
                      fmt::format("'{}' is not a usable gaia store ({})", path.string(), f.message),
                      "move the file aside (keep it for inspection) and point gaia at a new "
                      "store path",
                      0};
  return StoreError{StoreErrc::Io, fmt::format("store '{}': {}", path.string(), f.message), "", 0};
}

// Runs `attempt` until it succeeds, fails for a reason other than a busy database, or
// `timeout` has passed. SQLite's own busy handler already waits inside most calls; this
// covers the cases it does not (a lock upgrade refused at once, WAL recovery after a
// crash), backing off exponentially with jitter so retrying writers do not move in step.
// `sql_code`, when given, receives SQLite's primary result code of a failure.
template <class F>
auto retry_busy(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                F&& attempt, int* sql_code = nullptr) -> StoreResult<decltype(attempt())> {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto backoff = std::chrono::microseconds(500);
  std::minstd_rand jitter(std::random_device{}());
  for (;;) {
    try {
      return attempt();
    } catch (const RequestFailure& f) {
      return std::unexpected(f.error);
    } catch (const SqlFailure& f) {
      if (sql_code) *sql_code = f.code & 0xff;
      if (!is_busy(f.code) || std::chrono::steady_clock::now() >= deadline)
        return std::unexpected(to_store_error(f, path, timeout));
    }
    auto wait = backoff + std::chrono::microseconds(jitter() % (backoff.count() + 1));
    std::this_thread::sleep_for(wait);
    backoff = std::min(backoff * 2, std::chrono::microseconds(100'000));
  }
}

}  // namespace sqlite_detail

template <class F>
auto SqliteStore::in_transaction(bool write, F&& body, int* sql_code) -> StoreResult<decltype(body())> {
  std::lock_guard lock(m_mutex);
  if (write && m_options.read_only) return std::unexpected(read_only_error());
  if (auto vanished = file_vanished(write)) return std::unexpected(std::move(*vanished));
  return sqlite_detail::retry_busy(m_path, m_options.busy_timeout, [&] {
    using sqlite_detail::Statement;
    Statement(m_db, write ? "BEGIN IMMEDIATE" : "BEGIN").run();
    try {
      auto result = body();
      Statement(m_db, "COMMIT").run();
      return result;
    } catch (...) {
      sqlite_detail::rollback_quietly(m_db);
      throw;
    }
  }, sql_code);
}

}  // namespace gaia
