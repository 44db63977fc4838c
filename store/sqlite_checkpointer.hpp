#pragma once
// Copies a store's write-ahead log into its database file on a thread of its own.
//
// SQLite checkpoints inside the commit that takes the WAL past 1,000 pages: that commit
// then also writes those pages into the database file and syncs it, while its caller
// waits. A submit onto a cluster of 50,000 instances writes about that much per commit,
// so every commit of the command paid for a checkpoint (tens of ms of fsync each, see
// docs/benchmarks.md "Round seven"). With a checkpointer the store's connection only
// appends to the WAL and signals; this thread's connection copies the frames (a PASSIVE
// checkpoint: it never waits for, nor blocks, a reader or a writer) while the command
// goes on computing. What it has not copied when the store closes, the closing
// connection's own checkpoint copies, as before.
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <thread>

// As <sqlite3.h> declares it (a typedef may be repeated), without including it here.
typedef struct sqlite3 sqlite3;

namespace gaia {

class SqliteCheckpointer {
 public:
  // The WAL size, in pages, from which a commit asks for a checkpoint: SQLite's own
  // default (wal_autocheckpoint).
  static constexpr int k_pages = 1000;
  // The WAL size from which the committing connection copies it itself (see
  // SqliteStore::on_wal_commit), so the WAL stays within this plus one commit.
  static constexpr int k_limit_pages = 2 * k_pages;

  SqliteCheckpointer(std::filesystem::path path, bool synchronous_full);
  // Lets a checkpoint in progress finish (the file is then consistent either way) and
  // stops; requests not started yet are left to the closing connection.
  ~SqliteCheckpointer();
  SqliteCheckpointer(const SqliteCheckpointer&) = delete;
  SqliteCheckpointer& operator=(const SqliteCheckpointer&) = delete;

  // Opens the checkpointer's connection; called once, as the store opens. False: the
  // store checkpoints inline.
  bool connect();
  // Asks for the WAL to be copied and returns at once. False when this cannot be done in
  // the background (the connection would not open, or no thread could start): the
  // caller then checkpoints inline, as SQLite would have.
  bool request() noexcept;
  // Blocks until every request made before the call has been served.
  void wait_idle() noexcept;
  // How many checkpoints ran so far.
  int64_t runs() const;

 private:
  void run();

  std::filesystem::path m_path;
  bool m_synchronous_full;
  sqlite3* m_db = nullptr;  // Opened by connect(); used by the thread only once it runs.
  mutable std::mutex m_mutex;
  std::condition_variable m_wake, m_idle;
  uint64_t m_requested = 0, m_served = 0;
  int64_t m_runs = 0;
  bool m_stop = false, m_broken = false;
  std::thread m_thread;
};

}  // namespace gaia
