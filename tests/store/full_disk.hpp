#pragma once
// A real full disk for tests: a small tmpfs mounted on a fresh folder, and a filler file
// that takes every free block of it. Mounting needs the privilege to mount (root, as on
// the development VM); without it ok() is false and why() says so, and the tests that
// need one skip with a warning rather than pretend.

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/temp_dir.hpp"

namespace gaia::testing {

class SmallDisk {
 public:
  explicit SmallDisk(size_t bytes) {
    m_mount = m_tmp.path() / "disk";
    std::filesystem::create_directories(m_mount);
    std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", m_mount.c_str(), "tmpfs", 0, options.c_str()) != 0) {
      m_why = std::string("cannot mount a tmpfs (") + std::strerror(errno) + "): not root?";
      return;
    }
    m_mounted = true;
  }
  ~SmallDisk() {
    if (m_mounted) ::umount2(m_mount.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool ok() const { return m_mounted; }
  const std::string& why() const { return m_why; }
  const std::filesystem::path& dir() const { return m_mount; }

  // Takes every free block with a filler file; returns the bytes it took.
  size_t fill() {
    int fd = ::open(filler().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd < 0) return 0;
    std::vector<char> chunk(4096, 'f');
    size_t taken = 0;
    for (;;) {
      ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;
      taken += static_cast<size_t>(n);
    }
    ::close(fd);
    return taken;
  }
  // Gives the filler's room back.
  void unfill() {
    std::error_code ec;
    std::filesystem::remove(filler(), ec);
  }

 private:
  std::filesystem::path filler() const { return m_mount / "filler"; }

  gaia::test::TempDir m_tmp{"gaia-disk"};
  std::filesystem::path m_mount;
  bool m_mounted = false;
  std::string m_why;
};

// Empties a SQLite store's write-ahead log into the file and truncates it to nothing,
// so a disk filled afterwards leaves no slack in the log: the next write needs new room.
inline bool truncate_wal(const std::filesystem::path& store) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK;
  // As gaia keeps them: the log and the shared memory stay (empty), so the next opener
  // needs no room to make them.
  int persist = 1;
  if (ok) sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);
  ok = ok && sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

}  // namespace gaia::testing
