#pragma once
// The process backend: every copy is a real local process (docs/backends.md). A copy
// lives in a directory of the run dir (process/copy_files.hpp) and is watched over by
// its own supervisor, gaia-shim (process/shim.hpp), which survives the gaia process
// that started it. The backend keeps nothing that matters in memory: any gaia process
// on the machine (the CLI after a command, a long-running `gaia agent`) may construct
// a ProcessBackend over the same run dir and see and act on the same copies. Only the
// health-check results and the previous CPU reading live in the object; a fresh object
// re-checks at once.
//
// Every node the store names maps to this machine: the node only names the copy.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "lib/backend.hpp"
#include "process/copy_files.hpp"

namespace gaia::process {
class ProcessTable;
}

namespace gaia {

// Whether copies run in cgroups of their own (process/cgroup.hpp).
enum class CgroupMode {
  Auto,  // A cgroup v2 per copy where gaia may make one; else /proc, with a warning.
  Off,   // Never (tests, or users who may not make cgroups): /proc only, limits not enforced.
};

struct ProcessOptions {
  // The supervisor's command line, to which the copy dir is appended:
  // {"/usr/lib/gaia/gaia-shim"} or {"/usr/bin/gaia", "__shim"}. Required.
  std::vector<std::string> shim_command;
  // Bound of output.log, and how many rotated files (output.log.1...) are kept.
  uint64_t log_max_bytes = 10 << 20;
  int log_keep = 1;
  // Values a role's health check leaves at 0 or below.
  int health_period_s = 10;
  int health_timeout_s = 1;
  int health_failure_threshold = 3;
  // How long a copy may go without its supervisor writing pids.json before it counts
  // as lost.
  std::chrono::milliseconds supervisor_start_timeout{10'000};
  // How often wait() looks at the run dir's change marker. A supervisor that dies
  // without writing exit.json moves no marker: the caller's next pass (the agent's
  // --interval) finds it.
  std::chrono::milliseconds poll_interval{100};
  // Stopped copies kept per instance (their logs, for `gaia logs --previous`).
  int keep_removed = 2;
  // Cgroups: usage read from them, and memory and cpu limits enforced where the
  // controllers are available.
  CgroupMode cgroups = CgroupMode::Auto;
};

// One copy as `gaia logs` and `gaia describe` show it.
struct CopyInfo {
  std::string instance, node;
  int64_t generation = 0;
  std::filesystem::path dir;
  std::filesystem::path log;           // output.log
  std::filesystem::path previous_log;  // output.log.1 (may not exist)
  CopyPhase phase = CopyPhase::Starting;
  bool removed = false;  // Stopped and gone: kept for its logs.
  int exit_code = 0;
  std::string reason;
  int64_t started_ms = 0;
  int64_t ended_ms = 0;  // 0 while it runs.
};

class ProcessBackend final : public Backend {
 public:
  // Throws std::invalid_argument when options.shim_command is empty (a wiring bug).
  ProcessBackend(std::filesystem::path run_dir, ProcessOptions options);

  std::string_view name() const override { return "process"; }
  BackendResult<Observation> observe(int64_t now_ms) override;
  BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& specs, int64_t now_ms) override;
  BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& specs, int64_t now_ms) override;
  bool wait(std::chrono::milliseconds timeout) override;
  bool synchronous() const override { return false; }

  // Every copy of `instance` (key "<ordinal>.<role>.<app>.<tenant>"), removed ones
  // included, newest first.
  std::vector<CopyInfo> copies_of(const std::string& instance);

  // Warnings for the user found since the last call, each once per process: today the
  // one that memory and cpu limits are not enforced (and why), found by the first
  // observe or start of the process. The CLI prints what this returns after a cycle.
  std::vector<std::string> take_warnings();

  const std::filesystem::path& run_dir() const { return m_run_dir; }
  // The directory of one copy: <run_dir>/<instance>/<node>-g<generation>.
  std::filesystem::path copy_dir(const std::string& instance, const std::string& node, int64_t generation) const;

 private:
  struct HealthState {
    int64_t next_check_ms = 0;
    bool passed_once = false;
    int failures = 0;  // Consecutive, counted once it passed.
    std::string last_error;
  };
  struct CpuSample {
    uint64_t usec = 0;  // CPU time of the copy: its cgroup's usage_usec, else its group's utime + stime.
    std::chrono::steady_clock::time_point at;
  };

  std::optional<BackendError> start_one(const StartSpec& spec, int64_t now_ms);
  std::optional<BackendError> stop_one(const StopSpec& spec, int64_t now_ms, const process::ProcessTable& procs);
  // Asks for the limits warning once per process (cgroup::take_limits_warning).
  void note_limits();

  std::filesystem::path m_run_dir;
  ProcessOptions m_options;
  std::mutex m_mutex;
  std::map<std::string, HealthState> m_health;  // By copy dir.
  std::map<std::string, CpuSample> m_cpu;       // By copy dir.
  // The run dir's change marker (process/copy_files.hpp) when the last observe began:
  // wait() reports news when it moved.
  process::ChangeMarker m_last_marker;
  int64_t m_wake_at_ms = 0;                     // The next health check due.
  std::vector<std::string> m_warnings;          // Not taken yet.
};

}  // namespace gaia
