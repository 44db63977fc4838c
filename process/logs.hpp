#pragma once
// A copy's output log in the process backend (docs/backends.md): the supervisor writes
// the app's stdout and stderr to output.log, rotating it to output.log.1 (and so on, up
// to `keep` files) when it would grow past its bound; `gaia logs` reads the last lines
// across the rotated files and follows new lines across rotations and restarts.

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace gaia::process {

// Appends to a size-bounded log. Rotation happens at a line boundary when one fits, so
// the rotated file ends with a whole line; a single line longer than the bound is cut.
class LogWriter {
 public:
  LogWriter(std::filesystem::path path, uint64_t max_bytes, int keep);
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;
  ~LogWriter();

  std::expected<void, std::string> open();
  // Write errors (a full disk) are dropped: the app must not stop because its log cannot
  // be written.
  void write(std::string_view data);

 private:
  void rotate();
  void append(std::string_view data);

  std::filesystem::path m_path;
  uint64_t m_max_bytes;
  int m_keep;
  int m_fd = -1;
  uint64_t m_size = 0;
};

// The last `n` lines of the log at `log_path` (output.log), reading the rotated files
// (output.log.1 ...) before it when it alone holds fewer. Oldest line first, without
// newlines.
std::vector<std::string> tail_lines(const std::filesystem::path& log_path, size_t n, int keep = 1);

struct LogLine {
  std::filesystem::path copy_dir;  // The copy the line came from.
  std::string text;                // Without its newline.
};

// Follows the log of an instance: the newest copy's output.log, across rotations, and
// on to the next copy when a newer one appears (a restart), from its first line.
class LogFollower {
 public:
  enum class From { End, Beginning };
  // `instance_dir` is <run_dir>/<instance key>. From::End yields only what is written
  // after construction.
  explicit LogFollower(std::filesystem::path instance_dir, From from = From::End);
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;
  ~LogFollower();

  // The complete lines written since the last call; does not block.
  std::vector<LogLine> poll();
  // Waits up to `timeout` for at least one line.
  std::vector<LogLine> next(std::chrono::milliseconds timeout);
  // The copy being followed; empty while the instance has none.
  const std::filesystem::path& copy_dir() const { return m_copy_dir; }

 private:
  bool open_current(bool at_end);
  void read_available(std::vector<LogLine>& out);
  void close_current();

  std::filesystem::path m_instance_dir;
  std::filesystem::path m_copy_dir;
  int m_fd = -1;
  uint64_t m_dev = 0, m_ino = 0;
  std::string m_partial;
};

}  // namespace gaia::process
