#pragma once
// The files of one copy in the process backend's run directory (docs/backends.md):
//
//   <run_dir>/<instance key>/.lock              flock while a copy dir is created or removed
//   <run_dir>/<instance key>/<node>-g<gen>/
//     copy.json    what to run (CopyConfig), written once by `start`
//     work/        the app's working directory; work/config.json is StartSpec::config
//     output.log   stdout and stderr (output.log.1... after rotation)
//     shim.log     the supervisor's own stderr
//     pids.json    the supervisor and the app, by pid and start time (CopyPids)
//     stop.json    a stop was asked for, with its grace (StopRequest)
//     exit.json    how the copy ended (CopyExit), written once it has
//     unhealthy.json  its health check failed for good (reason)
//     cgroup.json  the app's cgroup and the limits enforced there (process/cgroup.hpp)
//     removed      the copy was stopped and is gone: kept for `logs --previous` only
//
// Every JSON file is written whole to a temporary name and renamed, so a reader in
// another process sees either nothing or all of it.

#include <cstdint>
#include <expected>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/workload.hpp"

namespace gaia::process {

inline constexpr const char* k_copy_file = "copy.json";
inline constexpr const char* k_pids_file = "pids.json";
inline constexpr const char* k_exit_file = "exit.json";
inline constexpr const char* k_stop_file = "stop.json";
inline constexpr const char* k_unhealthy_file = "unhealthy.json";
inline constexpr const char* k_removed_file = "removed";
inline constexpr const char* k_log_file = "output.log";
inline constexpr const char* k_shim_log_file = "shim.log";
inline constexpr const char* k_work_dir = "work";
inline constexpr const char* k_config_file = "config.json";
inline constexpr const char* k_lock_file = ".lock";
// <run_dir>/.changes: one byte appended after every change of any copy's files.
inline constexpr const char* k_changes_file = ".changes";

struct CopyConfig {
  std::string instance, node;
  int64_t generation = 0;
  std::vector<std::string> command;
  // The role's env with gaia's (StartSpec::env and GAIA_CONFIG) over it; the app also
  // inherits the supervisor's environment beneath.
  std::map<std::string, std::string> env;
  int64_t grace_ms = 10'000;
  std::string address;
  std::map<std::string, int> ports;
  HealthCheck health;
  int64_t started_ms = 0;
  uint64_t log_max_bytes = 10 << 20;
  int log_keep = 1;
  // The role's limits (its request unless it declares limits): the caps of the copy's
  // cgroup (process/cgroup.hpp).
  Resources resources;
  // Whether the supervisor puts the app in a cgroup of its own (ProcessOptions::cgroups).
  bool cgroup = true;
};

struct CopyPids {
  int shim_pid = 0;
  uint64_t shim_start = 0;
  // Zero until the app was spawned. The app leads its own process group (pgid == pid).
  int child_pid = 0;
  int child_pgid = 0;
  uint64_t child_start = 0;
};

struct CopyExit {
  std::optional<int> exit_code;  // Set when the app exited by itself.
  int signal = 0;                // Set when a signal ended it.
  int64_t ended_ms = 0;
  std::string reason;  // "exited with code 3", "killed by signal 9 (SIGKILL)", "stopped".
  bool stopped = false;         // It ended because a stop was asked for.
  bool never_started = false;   // It was never spawned (a check before it failed, or exec failed).
};

struct StopRequest {
  int64_t grace_ms = 10'000;
  std::string reason;
  int64_t requested_ms = 0;
};

void to_json(nlohmann::json& j, const CopyConfig& c);
void from_json(const nlohmann::json& j, CopyConfig& c);
void to_json(nlohmann::json& j, const CopyPids& p);
void from_json(const nlohmann::json& j, CopyPids& p);
void to_json(nlohmann::json& j, const CopyExit& e);
void from_json(const nlohmann::json& j, CopyExit& e);
void to_json(nlohmann::json& j, const StopRequest& s);
void from_json(const nlohmann::json& j, StopRequest& s);

// Writes `text` to `path` through a temporary file in the same directory and a rename.
std::expected<void, std::string> write_file_atomic(const std::filesystem::path& path, const std::string& text);

template <class T>
std::expected<void, std::string> write_json_atomic(const std::filesystem::path& path, const T& value) {
  return write_file_atomic(path, nlohmann::json(value).dump(2) + "\n");
}

// Reads and decodes a JSON file: nothing when it does not exist, an error when it
// exists but does not decode.
template <class T>
std::expected<std::optional<T>, std::string> read_json(const std::filesystem::path& path);

extern template std::expected<std::optional<CopyConfig>, std::string> read_json(const std::filesystem::path&);
extern template std::expected<std::optional<CopyPids>, std::string> read_json(const std::filesystem::path&);
extern template std::expected<std::optional<CopyExit>, std::string> read_json(const std::filesystem::path&);
extern template std::expected<std::optional<StopRequest>, std::string> read_json(const std::filesystem::path&);
extern template std::expected<std::optional<nlohmann::json>, std::string> read_json(const std::filesystem::path&);

// One copy directory of an instance, as listed by list_copies.
struct CopyDir {
  std::filesystem::path dir;
  CopyConfig config;
};

// The copy directories of the instance directory `instance_dir`, newest first (by
// started_ms, then generation). Directories without a readable copy.json (one being
// created) are left out.
std::vector<CopyDir> list_copies(const std::filesystem::path& instance_dir);

// The reason text of an exit status ("exited with code 3", "killed by signal 9
// (SIGKILL)").
std::string describe_exit(std::optional<int> exit_code, int signal);

// "SIGKILL" for 9; "signal 64" when it has no name.
std::string signal_name(int signal);

int64_t wall_clock_ms();

// Says that a copy's files changed (a copy dir made or removed, pids, exit, stop or
// health written): appends a byte to <run_dir>/.changes, where the copy dir is
// <run_dir>/<instance>/<copy>. Called after the change is on disk, so an observer that
// saw the byte also sees the change; a waiting observer then learns of news from one
// stat() instead of reading every copy (docs/backends.md, "wait").
void note_change(const std::filesystem::path& copy_dir);

// The state of <run_dir>/.changes, compared to tell whether anything changed since:
// its inode and size (a size, unlike a time stamp, moves with every change however
// close together). All zero when the file does not exist.
struct ChangeMarker {
  uint64_t inode = 0, size = 0;
  bool operator==(const ChangeMarker&) const = default;
};
ChangeMarker change_marker(const std::filesystem::path& run_dir);
// Empties .changes when it grew past `bound` bytes (any change of the marker is news
// to a waiter, so emptying it only costs one early wake-up).
void trim_changes(const std::filesystem::path& run_dir, uint64_t bound);

// An flock held on a file for the lifetime of the object.
class FileLock {
 public:
  // Blocks until the lock is held; an error when the file cannot be opened.
  static std::expected<FileLock, std::string> acquire(const std::filesystem::path& path);
  FileLock(FileLock&& other) noexcept : m_fd(other.m_fd) { other.m_fd = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : m_fd(fd) {}
  int m_fd = -1;
};

}  // namespace gaia::process
