// The SQLite store's care of its own file (docs/store.md): whether the path still names
// the file it opened, the reserve kept for a full disk, the integrity check, and online
// backup and restore.
#include <fcntl.h>
#include <cerrno>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <fmt/ranges.h>

#include "store/sqlite_detail.hpp"

namespace gaia {

using namespace sqlite_detail;

namespace {

// How often a read compares the path with the opened file; writes always do.
constexpr std::chrono::milliseconds k_file_check_interval{100};

// fsync of a file or a folder by path; false when it cannot be opened or synced.
bool sync_path(const std::filesystem::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

std::filesystem::path folder_of(const std::filesystem::path& p) {
  return p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
}

}  // namespace

std::optional<StoreError> SqliteStore::file_vanished(bool write) {
  if (m_gone) return m_gone;
  if (m_inode == 0) return std::nullopt;
  auto now = std::chrono::steady_clock::now();
  if (!write && now - m_checked_at < k_file_check_interval) return std::nullopt;
  m_checked_at = now;
  struct stat st{};
  std::string what;
  if (::stat(m_path.c_str(), &st) != 0) {
    // Only a file that is not there any more; a folder we may no longer search says
    // nothing about the file.
    if (errno != ENOENT && errno != ENOTDIR) return std::nullopt;
    what = "was deleted";
  } else if (static_cast<uint64_t>(st.st_dev) != m_device || static_cast<uint64_t>(st.st_ino) != m_inode) {
    what = "was replaced by another file";
  } else {
    return std::nullopt;
  }
  // For good: whatever this process wrote from now on would go to a file nobody opens.
  m_gone = StoreError{StoreErrc::Io,
                      fmt::format("store file '{}' {} while gaia had it open", m_path.string(), what),
                      "nothing more is read from or written to the old file; start the command again to use "
                      "what is at the path now (`gaia cluster create` makes a new store, `gaia store restore "
                      "FILE` brings back a backup)",
                      0};
  return m_gone;
}

StoreError SqliteStore::read_only_error() const {
  return StoreError{StoreErrc::Io,
                    fmt::format("store '{}' is read-only: you may read it but not write it", m_path.string()),
                    "writing commands need write permission on the file and its folder; reading commands "
                    "(get, describe, events, status) work as they are",
                    0};
}

std::filesystem::path SqliteStore::reserve_path() const { return m_path.string() + "-reserve"; }

bool SqliteStore::reserve_held() const {
  std::error_code ec;
  return m_options.reserve_bytes > 0 && std::filesystem::file_size(reserve_path(), ec) >= m_options.reserve_bytes &&
         !ec;
}

void SqliteStore::keep_reserve() {
  if (m_options.reserve_bytes == 0 || m_options.read_only || reserve_held()) return;
  // Made again only when the disk has room for twice as much, so the reserve never
  // takes the last room a user just freed.
  struct statvfs fs{};
  if (::statvfs(folder_of(m_path).c_str(), &fs) != 0) return;
  uint64_t available = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (available < 2 * m_options.reserve_bytes) return;
  // Allocated blocks (not a sparse file), written under another name and renamed, so
  // the reserve is either whole or absent.
  std::filesystem::path tmp = reserve_path().string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  bool ok = ::posix_fallocate(fd, 0, static_cast<off_t>(m_options.reserve_bytes)) == 0;
  ::close(fd);
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, reserve_path(), ec);
  if (!ok || ec) std::filesystem::remove(tmp, ec);
}

StoreResult<void> SqliteStore::integrity_check() {
  auto r = in_transaction(false, [&] {
    std::vector<std::string> problems;
    {
      Statement s(m_db, "PRAGMA integrity_check");
      while (s.step())
        if (s.text(0) != "ok") problems.push_back(s.text(0));
    }
    if (problems.empty()) {
      Statement s(m_db,
                  "SELECT key, create_revision, mod_revision, version FROM kv"
                  " WHERE mod_revision > (SELECT value FROM meta WHERE name = 'revision')"
                  " OR create_revision > mod_revision OR create_revision < 1 OR version < 1"
                  " LIMIT 10");
      while (s.step())
        problems.push_back(fmt::format("key '{}' has create_revision {}, mod_revision {}, "
                                       "version {}",
                                       s.text(0), s.integer(1), s.integer(2), s.integer(3)));
    }
    if (!problems.empty())
      throw_request(StoreErrc::Corrupt,
                    fmt::format("store '{}' failed its integrity check: {}", m_path.string(),
                                fmt::join(problems, "; ")),
                    "restore the store from a backup (`gaia store restore FILE`)");
    return true;
  });
  if (!r) return std::unexpected(r.error());
  return {};
}

StoreResult<void> SqliteStore::backup_to(const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  auto io_error = [&](std::string message, std::string hint = {}) {
    return std::unexpected(StoreError{StoreErrc::Io, std::move(message), std::move(hint), 0});
  };
  std::error_code ec;
  if (fs::exists(target, ec))
    return io_error(fmt::format("'{}' already exists", target.string()),
                    "a backup never overwrites a file: name a new one, or move the old one away");
  // Written under another name and renamed once synced, so a backup file is whole or
  // absent, never the first half of a copy interrupted by a crash.
  fs::path partial = target.string() + ".partial";
  fs::remove(partial, ec);
  {
    std::lock_guard lock(m_mutex);
    if (auto vanished = file_vanished(true)) return std::unexpected(std::move(*vanished));
    // VACUUM INTO reads the store in one read transaction (a snapshot: writers go on in
    // the WAL) and writes a compact copy in rollback-journal mode: one file.
    auto copied = retry_busy(m_path, m_options.busy_timeout, [&] {
      std::error_code ignored;
      fs::remove(partial, ignored);  // What a busy attempt left.
      Statement(m_db, "VACUUM INTO ?1").bind(1, partial.string()).run();
      return true;
    });
    if (!copied) {
      fs::remove(partial, ec);
      return io_error(fmt::format("cannot back up store '{}' to '{}': {}", m_path.string(), target.string(),
                                  copied.error().message),
                      copied.error().hint);
    }
  }
  if (!sync_path(partial)) {
    fs::remove(partial, ec);
    return io_error(fmt::format("cannot sync the backup '{}' to disk", partial.string()));
  }
  fs::rename(partial, target, ec);
  if (ec) {
    fs::remove(partial, ec);
    return io_error(fmt::format("cannot rename the backup to '{}': {}", target.string(), ec.message()));
  }
  sync_path(folder_of(target));
  return {};
}

StoreResult<RestoreSummary> SqliteStore::restore_from(const std::filesystem::path& source,
                                                       const std::filesystem::path& keep_aside) {
  // The source must be a whole gaia store of this schema: opened read-only (which
  // checks the schema) and checked before anything here changes.
  {
    SqliteStoreOptions check;
    check.create = false;
    check.read_only = true;
    check.clock = m_options.clock;
    auto src = SqliteStore::open(source, check);
    if (!src) return std::unexpected(src.error());
    if (auto ok = (*src)->integrity_check(); !ok) return std::unexpected(ok.error());
  }
  if (!keep_aside.empty())
    if (auto kept = backup_to(keep_aside); !kept) return std::unexpected(kept.error());
  auto attach = [&](bool on) {
    std::lock_guard lock(m_mutex);
    return retry_busy(m_path, m_options.busy_timeout, [&] {
      if (on) Statement(m_db, "ATTACH DATABASE ?1 AS restore_source").bind(1, source.string()).run();
      else exec(m_db, "DETACH DATABASE restore_source");
      return true;
    });
  };
  if (auto a = attach(true); !a) return std::unexpected(a.error());
  // A deferred transaction: BEGIN IMMEDIATE would lock every attached file for writing,
  // and a backup may be read-only. The first write takes the store's write lock; a
  // writer that came first makes it busy, and the whole body runs again.
  auto restored = in_transaction(false, [&] {
    if (m_options.read_only) throw RequestFailure{read_only_error()};
    RestoreSummary summary;
    int64_t before = read_meta(m_db, "revision");
    {
      Statement s(m_db, "SELECT value FROM restore_source.meta WHERE name = 'revision'");
      if (!s.step()) throw SqlFailure{SQLITE_CORRUPT, "the backup has no revision"};
      summary.backup_revision = s.integer(0);
    }
    // Two past both: a follower that saw revision R of the old content asks for the
    // changes from R + 1, which is then always before the compact revision, so it
    // reads afresh rather than taking "no changes" for an answer.
    summary.revision = std::max(before, summary.backup_revision) + 2;
    exec(m_db, "DELETE FROM main.kv");
    // Every key is stamped with the new revision: a compare made against a key of the
    // old content must fail even where the backup had the same mod_revision.
    Statement copy(m_db,
                   "INSERT INTO main.kv (key, value, create_revision, mod_revision, version, lease)"
                   " SELECT key, value, MIN(create_revision, ?1), ?1, version, 0 FROM restore_source.kv"
                   " WHERE lease = 0");
    copy.bind(1, summary.revision).run();
    summary.keys = sqlite3_changes(m_db.handle);
    exec(m_db, "DELETE FROM main.leases");
    exec(m_db, "DELETE FROM main.changes");
    write_meta(m_db, "revision", summary.revision);
    write_meta(m_db, "compact_revision", summary.revision);
    // A history begins again here: its hash too (Store::history_mark).
    exec(m_db, "UPDATE meta SET value = random() & 9223372036854775807 WHERE name = 'history_hash'");
    exec(m_db, "DELETE FROM meta WHERE name LIKE 'history\\_%:%' ESCAPE '\\'");
    return summary;
  });
  attach(false);
  return restored;
}

}  // namespace gaia
