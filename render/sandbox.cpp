#include "render/sandbox.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <chrono>
#include <cstring>

namespace gaia::render {
namespace {

// Wire format, child -> parent: zero or more "P<note>\n" records, then "R" followed by
// the payload up to end of stream.
constexpr char k_progress = 'P';
constexpr char k_result = 'R';

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Runs in the child: never returns.
[[noreturn]] void child_main(int fd, pid_t parent, const SandboxLimits& limits,
                             const std::function<std::string(SandboxChannel&)>& body) {
  // The parent may have installed crash handlers (test frameworks do); a crash in the
  // child must simply kill it so the parent sees the signal.
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT, SIGPIPE, SIGXCPU}) ::signal(sig, SIG_DFL);
  // Only the parent enforces the wall-clock limit, so a parent killed outright (a CI
  // cancel sends SIGKILL or SIGTERM to gaia) would leave a looping template running
  // for ever. The kernel kills the child when the parent dies; the parent may already
  // have died between fork and prctl, in which case the child was re-parented and no
  // signal will come, so it checks and leaves by itself.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(4);
  // A second, independent bound: the child can never use much more CPU than the time
  // limit allows, even if nothing is left to watch the clock (the soft limit sends
  // SIGXCPU, the hard one a second later SIGKILL). It is a second above the time limit
  // rounded up: the kernel samples CPU time by ticks and may send SIGXCPU a few ms
  // before that much wall time has passed, so at the limit itself a loop was sometimes
  // stopped just before its timeout (a flaky test saw 998 ms of 1 s); the parent's
  // clock decides first.
  if (limits.timeout_ms > 0) {
    const rlim_t seconds = static_cast<rlim_t>((limits.timeout_ms + 999) / 1000 + 1);
    rlimit cpu{seconds, seconds + 1};
    ::setrlimit(RLIMIT_CPU, &cpu);
  }
  if (limits.memory_limit_bytes > 0) {
    rlimit rl{limits.memory_limit_bytes, limits.memory_limit_bytes};
    ::setrlimit(RLIMIT_AS, &rl);
  }
  SandboxChannel channel(fd);
  std::string payload;
  try {
    payload = body(channel);
  } catch (...) {
    // The body must not throw; if it does anyway (out of memory while reporting an
    // error), unwinding further would run the parent's frames and exit handlers in
    // this copy of it.
    ::_exit(5);
  }
  bool ok = write_all(fd, std::string_view(&k_result, 1)) && write_all(fd, payload);
  ::close(fd);
  ::_exit(ok ? 0 : 3);
}

}  // namespace

void SandboxChannel::progress(std::string_view note) {
  std::string rec;
  rec.reserve(note.size() + 2);
  rec += k_progress;
  for (char c : note) rec += (c == '\n' ? ' ' : c);
  rec += '\n';
  write_all(m_fd, rec);
}

SandboxOutcome run_sandboxed(const SandboxLimits& limits,
                             const std::function<std::string(SandboxChannel&)>& body) {
  SandboxOutcome out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.error = fmt::format("pipe: {}", std::strerror(errno));
    return out;
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    out.error = fmt::format("fork: {}", std::strerror(errno));
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], parent, limits, body);
  }
  ::close(fds[1]);
  const int rfd = fds[0];

  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(limits.timeout_ms);
  std::string buf;        // Unparsed bytes of progress records.
  bool in_result = false;
  bool killed = false;
  char chunk[65536];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      out.status = SandboxOutcome::Status::Timeout;
      killed = true;
      break;
    }
    pollfd p{rfd, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (r < 0) {
      if (errno == EINTR) continue;
      out.error = fmt::format("poll: {}", std::strerror(errno));
      out.status = SandboxOutcome::Status::SystemError;
      killed = true;
      break;
    }
    if (r == 0) continue;  // Re-checks the deadline.
    ssize_t n = ::read(rfd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      out.error = fmt::format("read: {}", std::strerror(errno));
      out.status = SandboxOutcome::Status::SystemError;
      killed = true;
      break;
    }
    if (n == 0) break;  // EOF: the child closed the pipe (exited or died).
    if (in_result) {
      out.payload.append(chunk, static_cast<size_t>(n));
    } else {
      buf.append(chunk, static_cast<size_t>(n));
      // Consumes complete progress records; the rest of the stream after 'R' is payload.
      size_t pos = 0;
      while (pos < buf.size()) {
        if (buf[pos] == k_result) {
          in_result = true;
          out.payload.append(buf, pos + 1);
          pos = buf.size();
          break;
        }
        auto nl = buf.find('\n', pos);
        if (nl == std::string::npos) break;
        out.progress = buf.substr(pos + 1, nl - pos - 1);
        pos = nl + 1;
      }
      buf.erase(0, pos);
    }
    if (out.payload.size() > limits.max_output_bytes) {
      out.status = SandboxOutcome::Status::OutputTooLarge;
      killed = true;
      break;
    }
  }
  ::close(rfd);
  if (killed) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (killed) {
    out.payload.clear();
    return out;
  }
  if (WIFEXITED(status)) out.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  if (in_result && WIFEXITED(status) && out.exit_code == 0) {
    out.status = SandboxOutcome::Status::Ok;
  } else if (out.signal == SIGXCPU) {
    // The CPU limit is the time limit rounded up and a second more: the same verdict
    // as the wall clock's, reached by the kernel when the parent could not watch.
    out.status = SandboxOutcome::Status::Timeout;
    out.payload.clear();
  } else {
    out.status = SandboxOutcome::Status::Crashed;
    out.payload.clear();
  }
  return out;
}

std::string format_byte_size(size_t n) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:g}{}", std::round(v * 10) / 10, units[u]);
}

std::string format_ms(int ms) {
  if (ms < 1000) return fmt::format("{}ms", ms);
  return fmt::format("{:g}s", ms / 1000.0);
}

}  // namespace gaia::render
