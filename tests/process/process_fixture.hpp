#pragma once
// A process backend over a scratch run dir, for tests that start real processes. The
// fixture kills every process group its copies made when the test ends, and
// `expect_nothing_left` checks through /proc that none survived: a test that leaks a
// process fails.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>

#include "process/cgroup.hpp"
#include "process/copy_files.hpp"
#include "process/proc.hpp"
#include "process/process_backend.hpp"
#include "tests/temp_dir.hpp"

namespace gaia::test {

inline int64_t now_ms() { return process::wall_clock_ms(); }

// The whole content of the file `p` (empty when it cannot be read).
inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A TCP port nobody uses right now, from the kernel.
inline int free_port(const char* address = "127.0.0.1") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  ::inet_pton(AF_INET, address, &sa.sin_addr);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

// A listening socket on address:port, closed with the object.
class Listener {
 public:
  Listener(const char* address, int port) {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(m_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, address, &sa.sin_addr);
    REQUIRE(::bind(m_fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
    REQUIRE(::listen(m_fd, 16) == 0);
  }
  ~Listener() { close(); }
  void close() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }

 private:
  int m_fd = -1;
};

inline StartSpec make_spec(const std::string& script, int ordinal = 0, int64_t generation = 1) {
  StartSpec s;
  s.instance.tenant = "t";
  s.instance.app = "app";
  s.instance.role = "r";
  s.instance.ordinal = ordinal;
  s.instance.node = "n1";
  s.instance.generation = generation;
  s.instance.address = "127.0.0.1";
  s.role.name = "r";
  s.role.command = {"/bin/sh", "-c", script};
  return s;
}

inline StopSpec stop_of(const StartSpec& s, std::chrono::milliseconds grace = std::chrono::milliseconds(5000)) {
  return StopSpec{s.instance.key(), s.instance.node, s.instance.generation, grace, "test"};
}

class ProcessFixture {
 public:
  explicit ProcessFixture(ProcessOptions options = {}) : m_dir("gaia-process-test") {
    m_options = std::move(options);
    m_options.shim_command = {GAIA_SHIM_BINARY};
    m_backend = std::make_unique<ProcessBackend>(run_dir(), m_options);
  }
  ~ProcessFixture() { kill_all(); }

  std::filesystem::path run_dir() const { return m_dir.path() / "run"; }
  ProcessBackend& backend() { return *m_backend; }
  const ProcessOptions& options() const { return m_options; }
  std::unique_ptr<ProcessBackend> another_backend() { return std::make_unique<ProcessBackend>(run_dir(), m_options); }

  void start(const StartSpec& s) {
    auto r = m_backend->start({s}, now_ms());
    REQUIRE(r);
    REQUIRE(r->size() == 1);
    INFO(((*r)[0].error ? (*r)[0].error->to_string() : ""));
    REQUIRE(!(*r)[0].error);
  }

  // Observes until `pred` holds on the copy of `s` (nullptr: no copy), or fails.
  ObservedCopy await(const StartSpec& s, const std::function<bool(const ObservedCopy*)>& pred,
                     std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto obs = m_backend->observe(now_ms());
      REQUIRE(obs);
      const ObservedCopy* found = nullptr;
      for (const auto& c : obs->copies)
        if (c.instance == s.instance.key() && c.generation == s.instance.generation) found = &c;
      if (pred(found)) return found ? *found : ObservedCopy{};
      if (std::chrono::steady_clock::now() >= deadline) {
        FAIL("timed out; last phase: " << (found ? std::string(copy_phase_name(found->phase)) + " " + found->reason
                                                 : std::string("(no copy)")));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ObservedCopy await_phase(const StartSpec& s, CopyPhase phase,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(10'000)) {
    return await(s, [&](const ObservedCopy* c) { return c && c->phase == phase; }, timeout);
  }

  std::filesystem::path copy_dir(const StartSpec& s) const {
    return m_backend->copy_dir(s.instance.key(), s.instance.node, s.instance.generation);
  }
  process::CopyPids pids(const StartSpec& s) const {
    auto p = process::read_json<process::CopyPids>(copy_dir(s) / process::k_pids_file);
    REQUIRE(p);
    REQUIRE(*p);
    return **p;
  }
  // Waits until the supervisor has spawned the app.
  process::CopyPids await_child(const StartSpec& s) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      auto p = process::read_json<process::CopyPids>(copy_dir(s) / process::k_pids_file);
      if (p && *p && (*p)->child_pid > 0) return **p;
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Live processes of the app's group.
  static std::vector<int> group_members(const process::CopyPids& p) {
    std::vector<int> out;
    for (const auto* s : process::ProcessTable::scan().group(p.child_pgid, p.child_start, p.shim_pid))
      out.push_back(s->pid);
    return out;
  }

  // Kills every supervisor and app group of the run dir and checks that none survives.
  void expect_nothing_left() {
    auto all = kill_all();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      bool any = false;
      for (const auto& p : all)
        any = any || process::process_alive(p.shim_pid, p.shim_start) || !group_members(p).empty();
      if (!any) break;
      if (std::chrono::steady_clock::now() >= deadline) FAIL("processes of the test survived");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

 private:
  std::vector<process::CopyPids> kill_all() {
    std::vector<process::CopyPids> all;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(run_dir(), ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename() != process::k_pids_file) continue;
      auto p = process::read_json<process::CopyPids>(it->path());
      if (!p || !*p) continue;
      const auto& pids = **p;
      if (process::process_alive(pids.shim_pid, pids.shim_start)) ::kill(pids.shim_pid, SIGKILL);
      if (!group_members(pids).empty()) ::kill(-pids.child_pgid, SIGKILL);
      // The app's cgroup, with anything that left its group: killed and removed.
      process::cgroup::remove_copy_cgroup(it->path().parent_path());
      all.push_back(pids);
    }
    return all;
  }

  TempDir m_dir;
  ProcessOptions m_options;
  std::unique_ptr<ProcessBackend> m_backend;
};

}  // namespace gaia::test
