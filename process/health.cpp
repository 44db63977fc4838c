#include "process/health.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <thread>

#include "process/group_leader.hpp"

namespace gaia::process {

namespace bp = boost::process;
using Clock = std::chrono::steady_clock;

namespace {

// strerror as a reason reads: "connection refused".
std::string error_text(int err) {
  std::string s = std::strerror(err);
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

std::string timeout_text(std::chrono::milliseconds timeout) {
  if (timeout.count() % 1000 == 0) return fmt::format("timed out after {}s", timeout.count() / 1000);
  return fmt::format("timed out after {}ms", timeout.count());
}

int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(left, 0));
}

// A connected socket, or why not.
std::expected<int, std::string> connect_until(const std::string& address, int port, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(address.c_str(), service.c_str(), &hints, &res); rc != 0)
    return std::unexpected(fmt::format("bad address {}: {}", address, ::gai_strerror(rc)));
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return std::unexpected(error_text(errno));
  }
  int rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (rc != 0 && errno != EINPROGRESS) {
    int err = errno;
    ::close(fd);
    return std::unexpected(error_text(err));
  }
  if (rc != 0) {
    pollfd p{fd, POLLOUT, 0};
    int ready = ::poll(&p, 1, ms_left(deadline));
    if (ready <= 0) {
      ::close(fd);
      return std::unexpected(std::string("connect timed out"));
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      ::close(fd);
      return std::unexpected(error_text(err));
    }
  }
  return fd;
}

}  // namespace

std::expected<void, std::string> check_tcp(const std::string& address, int port, std::chrono::milliseconds timeout) {
  auto fd = connect_until(address, port, Clock::now() + timeout);
  if (!fd) return std::unexpected(fd.error());
  ::close(*fd);
  return {};
}

std::expected<void, std::string> check_http(const std::string& address, int port, const std::string& path,
                                            std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto fd = connect_until(address, port, deadline);
  if (!fd) return std::unexpected(fd.error());
  bool v6 = address.find(':') != std::string::npos;
  std::string request = fmt::format("GET {} HTTP/1.0\r\nHost: {}{}{}:{}\r\nUser-Agent: gaia-health\r\n"
                                    "Connection: close\r\n\r\n",
                                    path, v6 ? "[" : "", address, v6 ? "]" : "", port);
  size_t sent = 0;
  while (sent < request.size()) {
    pollfd p{*fd, POLLOUT, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) {
      ::close(*fd);
      return std::unexpected(timeout_text(timeout));
    }
    ssize_t n = ::send(*fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n < 0) {
      int err = errno;
      ::close(*fd);
      return std::unexpected(error_text(err));
    }
    sent += static_cast<size_t>(n);
  }
  // Only the status line matters: "HTTP/1.1 200 OK".
  std::string answer;
  while (answer.find("\r\n") == std::string::npos && answer.size() < 4096) {
    pollfd p{*fd, POLLIN, 0};
    if (::poll(&p, 1, ms_left(deadline)) <= 0) {
      ::close(*fd);
      return std::unexpected(timeout_text(timeout));
    }
    char buf[1024];
    ssize_t n = ::recv(*fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  ::close(*fd);
  int code = 0;
  if (answer.starts_with("HTTP/") && answer.find(' ') != std::string::npos)
    code = std::atoi(answer.c_str() + answer.find(' ') + 1);
  if (code == 0) return std::unexpected(std::string("no HTTP answer"));
  if (code < 200 || code >= 400) return std::unexpected(fmt::format("HTTP {}", code));
  return {};
}

std::expected<void, std::string> check_exec(const std::string& command, const std::map<std::string, std::string>& env,
                                            const std::filesystem::path& work_dir, std::chrono::milliseconds timeout) {
  bp::environment e = boost::this_process::environment();
  for (const auto& [k, v] : env) e[k] = v;
  int pid = 0;
  try {
    bp::child c(bp::exe = "/bin/sh", bp::args = std::vector<std::string>{"-c", command}, bp::env = e,
                bp::start_dir = work_dir.string(), bp::std_out > bp::null, bp::std_err > bp::null,
                bp::std_in < bp::null, GroupLeader{});
    pid = c.id();
    c.detach();  // Reaped below, with its own deadline.
  } catch (const bp::process_error& err) {
    return std::unexpected(fmt::format("cannot run sh: {}", err.code().message()));
  }
  auto deadline = Clock::now() + timeout;
  int status = 0;
  for (;;) {
    // Seen ended but not reaped (WNOWAIT): the group number stays ours until the reap
    // after the group kill below.
    siginfo_t ended{};
    int rc = ::waitid(P_PID, static_cast<id_t>(pid), &ended, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0 && ended.si_pid == pid) break;
    if (rc < 0 && errno != EINTR) return std::unexpected(fmt::format("waitid: {}", std::strerror(errno)));
    if (Clock::now() >= deadline) {
      // The check and whatever it started (its own group) go.
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return std::unexpected(timeout_text(timeout));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // A check that left a background process behind must not leave it running.
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (WIFSIGNALED(status)) return std::unexpected(fmt::format("killed by signal {}", WTERMSIG(status)));
  return std::unexpected(fmt::format("exit code {}", WEXITSTATUS(status)));
}

std::expected<void, std::string> run_health_check(const CopyConfig& config, const std::filesystem::path& work_dir) {
  const HealthCheck& h = config.health;
  auto timeout = std::chrono::milliseconds(std::max(h.timeout_s, 1) * 1000);
  auto port_of = [&](const std::string& name) -> std::expected<int, std::string> {
    auto it = config.ports.find(name);
    if (it == config.ports.end()) return std::unexpected(fmt::format("the instance has no port named `{}`", name));
    return it->second;
  };
  if (h.type == "tcp") {
    auto port = port_of(h.target);
    if (!port) return std::unexpected(port.error());
    return check_tcp(config.address, *port, timeout);
  }
  if (h.type == "http") {
    auto slash = h.target.find('/');
    std::string name = h.target.substr(0, slash);
    std::string path = slash == std::string::npos ? "/" : h.target.substr(slash);
    auto port = port_of(name);
    if (!port) return std::unexpected(port.error());
    return check_http(config.address, *port, path, timeout);
  }
  if (h.type == "exec") return check_exec(h.target, config.env, work_dir, timeout);
  return std::unexpected(fmt::format("unknown health check type `{}`", h.type));
}

}  // namespace gaia::process
