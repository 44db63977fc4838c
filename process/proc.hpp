#pragma once
// Reading the process table from /proc, for the process backend (docs/backends.md).
// A pid alone does not name a process: the kernel reuses pids, so every process the
// backend remembers is named by its pid *and* its start time (field 22 of
// /proc/PID/stat, in clock ticks since boot). A live process with the same pid but
// another start time is somebody else's.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gaia::process {

struct ProcStat {
  int pid = 0;
  std::string comm;
  char state = '?';  // R, S, D, Z (zombie), T...
  int ppid = 0;
  int pgrp = 0;
  int session = 0;
  uint64_t utime = 0, stime = 0;  // Clock ticks.
  uint64_t start_time = 0;        // Clock ticks since boot.
  int64_t rss_pages = 0;
};

// The stat of `pid`, or nothing when it does not exist (or cannot be parsed).
std::optional<ProcStat> read_proc_stat(int pid);

// Every process of the machine, as far as /proc shows them.
std::vector<ProcStat> scan_processes();

// Whether `pid` runs, is not a zombie, and started at `start_time`.
bool process_alive(int pid, uint64_t start_time);

// One reading of the process table (zombies left out), indexed by pid and by process
// group. Movable, not copyable: the group index points into the pid index.
class ProcessTable {
 public:
  static ProcessTable scan();
  ProcessTable(ProcessTable&&) = default;
  ProcessTable(const ProcessTable&) = delete;

  // Whether `pid` runs and started at `start_time`.
  bool alive(int pid, uint64_t start_time) const;
  // The members of process group `pgid`, whose leader started at `leader_start`, in
  // session `session` (the supervisor's: it called setsid, so the session id is its pid,
  // which the kernel does not hand out again while the session has members). A member
  // cannot have started before the process that made the group, and a group that
  // reuses the number belongs to another session: either marks a stranger. Empty when
  // the leader's start or the session is unknown, so nothing unknown is ever signalled.
  std::vector<const ProcStat*> group(int pgid, uint64_t leader_start, int session) const;
  // The processes of `pids` that the table holds (a copy's cgroup members, which the
  // kernel lists exactly: no start time is needed to tell them from strangers).
  std::vector<const ProcStat*> find_all(const std::vector<int>& pids) const;

 private:
  ProcessTable() = default;
  std::map<int, ProcStat> m_by_pid;
  std::map<int, std::vector<const ProcStat*>> m_by_group;
};

// The `comm` of `pid` ("redis-server"), or "" when unknown.
std::string process_name(int pid);

int64_t page_size();
int64_t clock_ticks_per_second();

}  // namespace gaia::process
