#include "process/proc.hpp"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gaia::process {

namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::optional<ProcStat> read_proc_stat(int pid) {
  if (pid <= 0) return std::nullopt;
  std::string text = read_small_file("/proc/" + std::to_string(pid) + "/stat");
  // comm is in parentheses and may itself hold spaces and parentheses: the fields
  // after it start after the *last* ')'.
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcStat s;
  s.pid = pid;
  s.comm = text.substr(open + 1, close - open - 1);
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> f;
  for (std::string w; rest >> w;) f.push_back(std::move(w));
  // f[0] is field 3 (state): field N is f[N - 3].
  if (f.size() < 22) return std::nullopt;
  auto num = [&](int field) -> int64_t {
    int64_t v = 0;
    const std::string& w = f[field - 3];
    std::from_chars(w.data(), w.data() + w.size(), v);
    return v;
  };
  s.state = f[0].empty() ? '?' : f[0][0];
  s.ppid = static_cast<int>(num(4));
  s.pgrp = static_cast<int>(num(5));
  s.session = static_cast<int>(num(6));
  s.utime = static_cast<uint64_t>(num(14));
  s.stime = static_cast<uint64_t>(num(15));
  s.start_time = static_cast<uint64_t>(num(22));
  s.rss_pages = num(24);
  return s;
}

std::vector<ProcStat> scan_processes() {
  std::vector<ProcStat> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err != std::errc{} || p != name.data() + name.size()) continue;
    // A process may end between listing and reading: it simply is not in the scan.
    if (auto s = read_proc_stat(pid)) out.push_back(std::move(*s));
  }
  return out;
}

bool process_alive(int pid, uint64_t start_time) {
  auto s = read_proc_stat(pid);
  return s && s->state != 'Z' && s->start_time == start_time;
}

ProcessTable ProcessTable::scan() {
  ProcessTable t;
  for (auto& p : scan_processes())
    if (p.state != 'Z') t.m_by_pid.emplace(p.pid, std::move(p));
  for (const auto& [pid, p] : t.m_by_pid) t.m_by_group[p.pgrp].push_back(&p);
  return t;
}

bool ProcessTable::alive(int pid, uint64_t start_time) const {
  auto it = m_by_pid.find(pid);
  return pid > 0 && it != m_by_pid.end() && it->second.start_time == start_time;
}

std::vector<const ProcStat*> ProcessTable::group(int pgid, uint64_t leader_start, int session) const {
  std::vector<const ProcStat*> out;
  // An unknown leader start would match every later group that reuses the number.
  if (pgid <= 0 || leader_start == 0 || session <= 0) return out;
  auto it = m_by_group.find(pgid);
  if (it == m_by_group.end()) return out;
  for (const ProcStat* s : it->second)
    if (s->start_time >= leader_start && s->session == session) out.push_back(s);
  return out;
}

std::vector<const ProcStat*> ProcessTable::find_all(const std::vector<int>& pids) const {
  std::vector<const ProcStat*> out;
  for (int pid : pids)
    if (auto it = m_by_pid.find(pid); it != m_by_pid.end()) out.push_back(&it->second);
  return out;
}

std::string process_name(int pid) {
  std::string comm = read_small_file("/proc/" + std::to_string(pid) + "/comm");
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\r')) comm.pop_back();
  return comm;
}

int64_t page_size() {
  static const int64_t size = ::sysconf(_SC_PAGESIZE);
  return size;
}

int64_t clock_ticks_per_second() {
  static const int64_t ticks = ::sysconf(_SC_CLK_TCK);
  return ticks;
}

}  // namespace gaia::process
