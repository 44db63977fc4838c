#include "process/logs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <thread>

#include "process/copy_files.hpp"

namespace gaia::process {

namespace fs = std::filesystem;

namespace {

fs::path rotated(const fs::path& path, int i) {
  fs::path p = path;
  p += fmt::format(".{}", i);
  return p;
}

// The last `n` lines of one file, read backwards in blocks so a large log costs only
// what is shown.
std::vector<std::string> last_lines_of(const fs::path& path, size_t n) {
  std::vector<std::string> out;
  if (n == 0) return out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return out;
  }
  constexpr off_t k_block = 64 * 1024;
  off_t pos = st.st_size;
  std::string buf;
  auto complete_lines = [&] {
    size_t newlines = static_cast<size_t>(std::count(buf.begin(), buf.end(), '\n'));
    if (!buf.empty() && buf.back() == '\n') --newlines;
    return newlines;  // Lines that are known to be whole at their start.
  };
  while (pos > 0 && complete_lines() < n) {
    off_t len = std::min(pos, k_block);
    pos -= len;
    std::string block(static_cast<size_t>(len), '\0');
    ssize_t got = ::pread(fd, block.data(), block.size(), pos);
    if (got <= 0) break;
    block.resize(static_cast<size_t>(got));
    buf.insert(0, block);
  }
  ::close(fd);
  size_t start = 0;
  if (pos > 0) start = buf.find('\n') + 1;  // The first line was cut by the block boundary.
  while (start < buf.size()) {
    size_t end = buf.find('\n', start);
    if (end == std::string::npos) end = buf.size();
    out.push_back(buf.substr(start, end - start));
    start = end + 1;
  }
  if (out.size() > n) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(n));
  return out;
}

}  // namespace

LogWriter::LogWriter(fs::path path, uint64_t max_bytes, int keep)
    : m_path(std::move(path)), m_max_bytes(std::max<uint64_t>(max_bytes, 1)), m_keep(std::max(keep, 0)) {}

LogWriter::~LogWriter() {
  if (m_fd >= 0) ::close(m_fd);
}

std::expected<void, std::string> LogWriter::open() {
  m_fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (m_fd < 0) return std::unexpected(fmt::format("cannot open {}: {}", m_path.string(), std::strerror(errno)));
  struct stat st {};
  m_size = ::fstat(m_fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return {};
}

void LogWriter::append(std::string_view data) {
  while (!data.empty() && m_fd >= 0) {
    ssize_t n = ::write(m_fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    m_size += static_cast<uint64_t>(n);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void LogWriter::rotate() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  if (m_keep > 0) {
    for (int i = m_keep - 1; i >= 1; --i) ::rename(rotated(m_path, i).c_str(), rotated(m_path, i + 1).c_str());
    ::rename(m_path.c_str(), rotated(m_path, 1).c_str());
  }
  m_fd = ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  m_size = 0;
}

void LogWriter::write(std::string_view data) {
  while (!data.empty()) {
    uint64_t room = m_size < m_max_bytes ? m_max_bytes - m_size : 0;
    if (data.size() <= room) {
      append(data);
      return;
    }
    // It does not fit: write the whole lines that do, then start a new file.
    size_t cut = data.substr(0, room).rfind('\n');
    if (cut != std::string_view::npos) {
      append(data.substr(0, cut + 1));
      data.remove_prefix(cut + 1);
    } else if (m_size == 0) {
      // One line longer than the whole bound: it is cut where the file is full.
      append(data.substr(0, room));
      data.remove_prefix(room);
    }
    rotate();
  }
}

std::vector<std::string> tail_lines(const fs::path& log_path, size_t n, int keep) {
  std::vector<std::string> out = last_lines_of(log_path, n);
  for (int i = 1; i <= keep && out.size() < n; ++i) {
    std::vector<std::string> older = last_lines_of(rotated(log_path, i), n - out.size());
    out.insert(out.begin(), older.begin(), older.end());
  }
  return out;
}

LogFollower::LogFollower(fs::path instance_dir, From from) : m_instance_dir(std::move(instance_dir)) {
  auto copies = list_copies(m_instance_dir);
  if (copies.empty()) return;
  m_copy_dir = copies.front().dir;
  open_current(from == From::End);
}

LogFollower::~LogFollower() { close_current(); }

bool LogFollower::open_current(bool at_end) {
  close_current();
  m_fd = ::open((m_copy_dir / k_log_file).c_str(), O_RDONLY | O_CLOEXEC);
  if (m_fd < 0) return false;
  struct stat st {};
  ::fstat(m_fd, &st);
  m_dev = st.st_dev;
  m_ino = st.st_ino;
  if (at_end) ::lseek(m_fd, 0, SEEK_END);
  return true;
}

void LogFollower::close_current() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
}

void LogFollower::read_available(std::vector<LogLine>& out) {
  if (m_fd < 0) return;
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(m_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    m_partial.append(buf, static_cast<size_t>(n));
  }
  size_t start = 0;
  for (size_t nl; (nl = m_partial.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back({m_copy_dir, m_partial.substr(start, nl - start)});
  m_partial.erase(0, start);
}

std::vector<LogLine> LogFollower::poll() {
  std::vector<LogLine> out;
  auto copies = list_copies(m_instance_dir);
  if (m_copy_dir.empty()) {
    if (copies.empty()) return out;
    // A copy that appeared after the follower started: all of it is new.
    m_copy_dir = copies.front().dir;
  }
  if (m_fd < 0) open_current(false);
  read_available(out);
  // Rotated: the file we hold is now output.log.1. Read what was written to it before
  // the rename, then go on with the new file from its start.
  struct stat st {};
  if (m_fd >= 0 && ::stat((m_copy_dir / k_log_file).c_str(), &st) == 0 &&
      (static_cast<uint64_t>(st.st_dev) != m_dev || static_cast<uint64_t>(st.st_ino) != m_ino)) {
    read_available(out);
    // Rotated twice since the last look: the file between is output.log.1 now.
    const fs::path between = rotated(m_copy_dir / k_log_file, 1);
    if (::stat(between.c_str(), &st) == 0 &&
        (static_cast<uint64_t>(st.st_dev) != m_dev || static_cast<uint64_t>(st.st_ino) != m_ino)) {
      int fd = ::open(between.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        close_current();
        m_fd = fd;
        read_available(out);
      }
    }
    open_current(false);
    read_available(out);
  }
  // A newer copy (a restart): finish the old one and follow the new one from its start.
  if (!copies.empty() && copies.front().dir != m_copy_dir) {
    read_available(out);
    if (!m_partial.empty()) out.push_back({m_copy_dir, std::exchange(m_partial, {})});
    m_copy_dir = copies.front().dir;
    open_current(false);
    read_available(out);
  }
  return out;
}

std::vector<LogLine> LogFollower::next(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto lines = poll();
    if (!lines.empty() || std::chrono::steady_clock::now() >= deadline) return lines;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace gaia::process
