#include "store/sqlite_checkpointer.hpp"

#include <sqlite3.h>

#include <system_error>
#include <utility>

namespace gaia {

SqliteCheckpointer::SqliteCheckpointer(std::filesystem::path path, bool synchronous_full)
    : m_path(std::move(path)), m_synchronous_full(synchronous_full) {}

SqliteCheckpointer::~SqliteCheckpointer() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();
  // Never the last connection to close (the store's closes after it), so closing it
  // neither checkpoints nor removes the WAL.
  if (m_db) sqlite3_close_v2(m_db);
}

bool SqliteCheckpointer::connect() {
  std::lock_guard lock(m_mutex);
  if (m_db || m_broken) return m_db != nullptr;
  // Opened when the store opens, beside its own connection and before the store records
  // which file the path names: a connection opened later by path could find another
  // store renamed there, and would copy this store's WAL (same -wal name) into it. No
  // CREATE flag, so a file gone meanwhile is an error, not a new database.
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(m_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_busy_timeout(db, 1000);
    // Like the store's own connection: the checkpoint syncs as the commits do, and the
    // WAL file stays (the store's reserve of room relies on it, docs/store.md).
    int persist = 1;
    sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
    rc = sqlite3_exec(db, m_synchronous_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", nullptr,
                      nullptr, nullptr);
  }
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(db);
    m_broken = true;
    return false;
  }
  m_db = db;
  return true;
}

bool SqliteCheckpointer::request() noexcept {
  try {
    std::unique_lock lock(m_mutex);
    if (m_broken || !m_db) return false;
    if (!m_thread.joinable()) {
      try {
        m_thread = std::thread([this] { run(); });
      } catch (...) {
        // No thread (a process or memory limit): SQLite's own way, inline, still works.
        m_broken = true;
        return false;
      }
    }
    ++m_requested;
    lock.unlock();
    m_wake.notify_one();
    return true;
  } catch (...) {
    return false;
  }
}

void SqliteCheckpointer::run() {
  std::unique_lock lock(m_mutex);
  for (;;) {
    m_wake.wait(lock, [&] { return m_stop || m_requested > m_served; });
    if (m_stop) break;
    // Requests that came in while this one runs are served by it too: it copies every
    // frame committed when it starts.
    const uint64_t serving = m_requested;
    lock.unlock();
    // PASSIVE: copies what no reader still needs and never waits; a failure (a busy
    // file, a full disk) leaves the frames in the WAL, where every reader finds them,
    // for the next checkpoint.
    sqlite3_wal_checkpoint_v2(m_db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    lock.lock();
    ++m_runs;
    m_served = serving;
    m_idle.notify_all();
  }
  m_served = m_requested;
  m_idle.notify_all();
}

void SqliteCheckpointer::wait_idle() noexcept {
  std::unique_lock lock(m_mutex);
  const uint64_t target = m_requested;
  m_idle.wait(lock, [&] { return m_served >= target || m_broken; });
}

int64_t SqliteCheckpointer::runs() const {
  std::lock_guard lock(m_mutex);
  return m_runs;
}

}  // namespace gaia
