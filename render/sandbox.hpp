#pragma once
// Runs a function in a forked child process with a wall-clock timeout, an address-space
// limit and a bound on the bytes it may send back. Renders run user Jsonnet, which can
// loop forever or build enormous values; isolating them in a child means the parent
// can always stop them and never runs out of memory itself. The child also dies with
// its parent (PR_SET_PDEATHSIG) and has a CPU limit equal to the timeout rounded up to
// whole seconds, so a killed gaia never leaves a looping template behind.
//
// The child talks to the parent through a pipe: any number of progress notes (the
// parent remembers the last one, e.g. which file was being evaluated when a timeout
// hit) followed by the result payload.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace gaia::render {

struct SandboxLimits {
  int timeout_ms = 10000;
  size_t memory_limit_bytes = size_t{2} << 30;  // RLIMIT_AS of the child; 0 = no limit.
  size_t max_output_bytes = size_t{16} << 20;   // Bound on the payload.
};

// Given to the child's body so it can say what it is doing.
class SandboxChannel {
 public:
  explicit SandboxChannel(int fd) : m_fd(fd) {}
  // A short note without newlines; the parent keeps the last one.
  void progress(std::string_view note);

 private:
  int m_fd;
};

struct SandboxOutcome {
  enum class Status {
    Ok,              // The child sent a payload and exited with status 0.
    Timeout,         // Killed after limits.timeout_ms (wall clock or CPU time).
    OutputTooLarge,  // Killed after sending more than limits.max_output_bytes.
    Crashed,         // Died from a signal or exited non-zero without a payload.
    SystemError,     // pipe/fork failed.
  };
  Status status = Status::SystemError;
  std::string payload;   // Status::Ok only.
  std::string progress;  // The last progress note the child sent.
  int signal = 0;        // Status::Crashed: the signal, or 0 for a non-zero exit.
  int exit_code = 0;
  std::string error;     // Status::SystemError: what failed.
};

// Forks, runs `body` in the child (its return value is the payload; the child then
// _exits without running destructors or atexit handlers) and waits for it within the
// limits. The body must not throw.
SandboxOutcome run_sandboxed(const SandboxLimits& limits,
                             const std::function<std::string(SandboxChannel&)>& body);

// "16MiB", "1.5GiB", "512KiB", "100B".
std::string format_byte_size(size_t n);
// "10s", "1.5s", "250ms".
std::string format_ms(int ms);

}  // namespace gaia::render
