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

// What one process group uses and who is in it, from one scan of the process table.
struct GroupUsage {
  std::vector<int> pids;  // Live (non-zombie) members.
  int64_t rss_bytes = 0;
  uint64_t cpu_ticks = 0;  // utime + stime of the live members.
};
std::map<int, GroupUsage> group_usage(const std::vector<ProcStat>& procs);

// The `comm` of `pid` ("redis-server"), or "" when unknown.
std::string process_name(int pid);

int64_t page_size();
int64_t clock_ticks_per_second();

}  // namespace gaia::process
