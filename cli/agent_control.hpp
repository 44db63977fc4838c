#pragma once
// The node agent of the process backend as a background process (docs/backends.md):
// at most one agent serves the nodes of a store, which a lock file in the store's run
// dir enforces; a pid file says which process it is. `gaia cluster create --backend
// process` and `gaia agent start` start it the way `nomad agent -dev` runs, detached,
// logging to agent.log; `gaia agent status|stop` find it through these files.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "cli/common.hpp"
#include "lib/error.hpp"

namespace gaia::cli {

struct AgentStatus {
  bool running = false;
  pid_t pid = 0;
  uint64_t start = 0;  // Its start time (/proc), so a reused pid is never taken for it.
  std::string since;  // RFC 3339, when it took the lock.
  std::string store;
  std::filesystem::path log;
};

// Whether an agent holds the lock of `run_dir`, and which.
Result<AgentStatus> agent_status(const std::filesystem::path& run_dir);

// Held by a running agent for its whole life: the lock (released by the kernel when the
// agent dies, so a killed agent never blocks the next) and the pid file.
class AgentLock {
 public:
  // Fails, naming the holder, when another agent serves the store.
  static Result<AgentLock> acquire(const std::filesystem::path& run_dir, const std::string& store,
                                   const std::string& since);
  AgentLock(AgentLock&& other) noexcept : m_fd(other.m_fd), m_pid_file(std::move(other.m_pid_file)) { other.m_fd = -1; }
  AgentLock& operator=(AgentLock&&) = delete;
  AgentLock(const AgentLock&) = delete;
  ~AgentLock();

 private:
  AgentLock(int fd, std::filesystem::path pid_file) : m_fd(fd), m_pid_file(std::move(pid_file)) {}
  int m_fd = -1;
  std::filesystem::path m_pid_file;
};

struct EnsuredAgent {
  AgentStatus status;
  bool started = false;  // False: one was running already.
  std::string message;   // "agent started (pid 4711); log: ..." for the user.
};

// Starts `gaia --store STORE agent run` detached, unless an agent already serves the
// store, and waits until it holds the lock; when it dies at start, the error quotes the
// end of its log.
Result<EnsuredAgent> ensure_agent(const Globals& g, const std::string& store, const std::string& interval = "");

// Asks the agent to stop (SIGTERM) and waits until it released the lock; SIGKILL after
// `timeout`. Returns the agent that was stopped, or nullopt when none ran. The
// instances keep running: they do not belong to the agent.
Result<std::optional<AgentStatus>> stop_agent(const std::filesystem::path& run_dir, std::chrono::milliseconds timeout);

}  // namespace gaia::cli
