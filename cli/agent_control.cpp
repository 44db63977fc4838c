#include "cli/agent_control.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "cli/context.hpp"
#include "process/copy_files.hpp"
#include "process/logs.hpp"
#include "process/proc.hpp"

namespace gaia::cli {

namespace {

namespace fs = std::filesystem;

fs::path lock_path(const fs::path& run_dir) { return run_dir / "agent.lock"; }
fs::path pid_path(const fs::path& run_dir) { return run_dir / "agent.pid"; }
fs::path log_path(const fs::path& run_dir) { return run_dir / "agent.log"; }

Diagnostic io_error(const std::string& what, const fs::path& p, int err) {
  return Diagnostic{{}, "", fmt::format("{} {}: {}", what, p.string(), std::strerror(err)),
                    "check the permissions of the store's folder"};
}

// The last lines of a file, indented, for an error that points at a log.
std::string last_lines(const fs::path& p, size_t n) {
  std::string out;
  for (const auto& line : process::tail_lines(p, n)) out += "    " + line + "\n";
  return out;
}

// Whether `pid` is still the process that wrote the pid file (same start time), so a
// stale file left by a killed agent never makes us signal whoever got its pid.
bool same_process(pid_t pid, uint64_t start) {
  return pid > 0 && start > 0 && process::process_alive(pid, start);
}

}  // namespace

Result<AgentStatus> agent_status(const fs::path& run_dir) {
  AgentStatus st;
  st.log = log_path(run_dir);
  int fd = ::open(lock_path(run_dir).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return st;  // No agent ever ran here.
    return fail(io_error("cannot open", lock_path(run_dir), errno));
  }
  // The agent holds an exclusive lock: a shared one is refused while it lives.
  bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  if (!held) return st;
  st.running = true;
  std::ifstream in(pid_path(run_dir));
  try {
    auto j = nlohmann::json::parse(in);
    st.pid = j.value("pid", 0);
    st.start = j.value("start", uint64_t{0});
    st.since = j.value("since", "");
    st.store = j.value("store", "");
  } catch (const std::exception&) {
    // The lock is taken before the pid file is written: an agent just starting.
  }
  return st;
}

Result<AgentLock> AgentLock::acquire(const fs::path& run_dir, const std::string& store, const std::string& since) {
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return fail(Diagnostic{{}, "", fmt::format("cannot create {}: {}", run_dir.string(), ec.message()), ""});
  // O_CLOEXEC: the copies' supervisors the agent starts must not inherit the lock, or
  // it would outlive the agent.
  int fd = ::open(lock_path(run_dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(io_error("cannot open", lock_path(run_dir), errno));
  // `agent_status` probes the lock with a brief shared lock (ensure_agent polls it while
  // this agent starts): try for a moment before calling the lock taken.
  bool locked = false;
  for (int attempt = 0; attempt < 20 && !locked; ++attempt) {
    locked = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!locked) {
    ::close(fd);
    auto other = agent_status(run_dir);
    std::string who = other && other->pid > 0 ? fmt::format(" (pid {}, since {})", other->pid, other->since) : "";
    return fail(Diagnostic{{}, "", fmt::format("an agent already serves the nodes of this store{}", who),
                           "only one agent may serve a node; stop it first with `gaia agent stop`"});
  }
  auto self = process::read_proc_stat(::getpid());
  nlohmann::json j{{"pid", ::getpid()}, {"start", self ? self->start_time : 0}, {"since", since}, {"store", store}};
  if (auto w = process::write_file_atomic(pid_path(run_dir), j.dump() + "\n"); !w) {
    ::close(fd);
    return fail(Diagnostic{{}, "", fmt::format("cannot write {}: {}", pid_path(run_dir).string(), w.error()), ""});
  }
  return AgentLock(fd, pid_path(run_dir));
}

AgentLock::~AgentLock() {
  if (m_fd < 0) return;
  std::error_code ec;
  fs::remove(m_pid_file, ec);
  ::close(m_fd);
}

Result<EnsuredAgent> ensure_agent(const Globals& g, const std::string& store, const std::string& interval) {
  fs::path run_dir = run_dir_of(store);
  EnsuredAgent out;
  auto st = agent_status(run_dir);
  if (!st) return fail(st.error());
  if (st->running) {
    out.status = *st;
    out.message = fmt::format("agent already running (pid {}); log: {}", st->pid, st->log.string());
    return out;
  }
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  std::vector<std::string> args = {self_executable().string(), "--store", store, "agent", "run"};
  // The context too: an etcd store's TLS files and user come from it, and naming it keeps
  // the agent on this context's settings even when the current context changes later.
  if (auto context = resolve_context(g)) args.insert(args.begin() + 1, {"--context", context->name});
  if (!interval.empty()) {
    args.push_back("--interval");
    args.push_back(interval);
  }
  pid_t pid = ::fork();
  if (pid < 0) return fail(Diagnostic{{}, "", fmt::format("cannot start the agent: {}", std::strerror(errno)), ""});
  if (pid == 0) {
    // The agent's own session: it outlives this command and its terminal.
    ::setsid();
    int log = ::open(log_path(run_dir).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    if (null >= 0) ::dup2(null, 0);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::setenv("NO_COLOR", "1", 1);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return fail(Diagnostic{{}, "", fmt::format("the agent exited at start; the end of {}:\n{}", log_path(run_dir).string(),
                                                 last_lines(log_path(run_dir), 8)),
                             "fix what it reports, then `gaia agent start`"});
    }
    auto now = agent_status(run_dir);
    if (now && now->running && now->pid == pid) {
      out.status = *now;
      out.started = true;
      out.message = fmt::format("agent started (pid {}); log: {}", pid, now->log.string());
      return out;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Still our own unreaped child: it can be stopped without any doubt about the pid.
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  return fail(Diagnostic{{}, "", fmt::format("the agent (pid {}) did not take its lock within 10s; stopped it", pid),
                         fmt::format("see {}", log_path(run_dir).string())});
}

Result<std::optional<AgentStatus>> stop_agent(const fs::path& run_dir, std::chrono::milliseconds timeout) {
  auto st = agent_status(run_dir);
  if (!st) return fail(st.error());
  if (!st->running) return std::optional<AgentStatus>{};
  if (!same_process(st->pid, st->start))
    return fail(Diagnostic{{}, "", "an agent holds the lock but its pid file does not name it (yet)",
                           "try again in a moment"});
  ::kill(st->pid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool killed = false;
  while (true) {
    auto now = agent_status(run_dir);
    if (now && !now->running) return std::optional<AgentStatus>{*st};
    if (std::chrono::steady_clock::now() >= deadline) {
      if (killed)
        return fail(Diagnostic{{}, "", fmt::format("the agent (pid {}) did not stop", st->pid),
                               fmt::format("kill it by hand: kill -9 {}", st->pid)});
      if (same_process(st->pid, st->start)) ::kill(st->pid, SIGKILL);
      killed = true;
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace gaia::cli
