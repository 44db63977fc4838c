#include "process/shim.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

#include "process/cgroup.hpp"
#include "process/copy_files.hpp"
#include "process/group_leader.hpp"
#include "process/logs.hpp"
#include "process/preflight.hpp"
#include "process/proc.hpp"

namespace gaia::process {

namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

void log_error(const std::string& text) { fmt::print(stderr, "gaia-shim: {}\n", text); }

uint64_t start_time_of(int pid) {
  auto s = read_proc_stat(pid);
  return s ? s->start_time : 0;
}

int write_exit(const fs::path& dir, CopyExit e) {
  e.ended_ms = wall_clock_ms();
  if (auto r = write_json_atomic(dir / k_exit_file, e); !r) {
    log_error(r.error());
    return 1;
  }
  note_change(dir);
  return 0;
}

int never_started(const fs::path& dir, std::string reason) {
  log_error(reason);
  CopyExit e;
  e.never_started = true;
  e.reason = std::move(reason);
  return write_exit(dir, std::move(e));
}

// Puts the app into its copy's cgroup from inside the child, after fork and before
// exec, so it is a member before it runs a single instruction of its own and every
// process it ever starts is born a member. The alternatives are wrong: writing the
// child's pid into cgroup.procs after the spawn races with the app, which may already
// have forked (or setsid'd and double-forked) out of reach; and moving the supervisor
// in first, for the child to inherit, would count the supervisor as part of the app
// (its CPU, its memory, and a cgroup kill would take it down too). The descriptor is
// opened by the supervisor (close-on-exec, so the app does not inherit it), and the
// child only writes "0" (the writer itself) to it: write(2) and _exit(2) are safe
// between fork and exec. A child that cannot join does not run unconfined: it reports
// the error to Boost.Process, which throws in the supervisor, and exits.
struct CgroupJoin : boost::process::extend::handler {
  int procs_fd = -1;
  const char* message = "";  // "cannot join cgroup <path>", built before the fork.
  template <class Executor>
  void on_exec_setup(Executor& exec) const {
    if (procs_fd < 0) return;
    if (::write(procs_fd, "0", 1) != 1) {
      exec.set_error(std::error_code(errno, std::system_category()), message);
      ::_exit(127);
    }
  }
};

int64_t grace_of(const fs::path& dir, const CopyConfig& config) {
  auto stop = read_json<StopRequest>(dir / k_stop_file);
  if (stop && *stop) return (*stop)->grace_ms;
  return config.grace_ms;
}

// Everything after the detach: the supervisor proper.
int supervise(const fs::path& dir, int signal_fd) {
  auto config_read = read_json<CopyConfig>(dir / k_copy_file);
  if (!config_read || !*config_read)
    return never_started(dir, config_read ? "copy.json is missing" : config_read.error());
  const CopyConfig& config = **config_read;

  CopyPids pids;
  pids.shim_pid = ::getpid();
  pids.shim_start = start_time_of(pids.shim_pid);
  if (auto r = write_json_atomic(dir / k_pids_file, pids); !r) return never_started(dir, r.error());
  note_change(dir);
  // A stop that came before pids.json existed could not signal us: it left stop.json
  // (stop writes it before it reads pids.json, so one of the two sees the other).
  if (fs::exists(dir / k_stop_file)) {
    CopyExit e;
    e.stopped = e.never_started = true;
    e.reason = "stopped";
    return write_exit(dir, std::move(e));
  }

  const fs::path work = dir / k_work_dir;
  if (config.command.empty()) return never_started(dir, "the command is empty");
  auto path_it = config.env.find("PATH");
  const char* inherited_path = std::getenv("PATH");
  std::string path = path_it != config.env.end() ? path_it->second : (inherited_path ? inherited_path : "");
  auto exe = find_executable(config.command[0], path, work.string());
  if (!exe) return never_started(dir, fmt::format("cannot run `{}`: {}", config.command[0], exe.error()));

  LogWriter log(dir / k_log_file, config.log_max_bytes, config.log_keep);
  if (auto r = log.open(); !r) return never_started(dir, r.error());

  // The copy's cgroup, made before the app exists (process/cgroup.hpp). cgroup.json is
  // written either way, so every gaia process knows whether the copy has one and which
  // limits are enforced; without one the app still runs, watched through /proc.
  cgroup::CopyCgroup cg;
  if (!config.cgroup) {
    cg.problem = "cgroups are turned off";
  } else {
    auto support = cgroup::prepare_parent();
    std::string unique = fmt::format("{}:{}:{}", dir.string(), pids.shim_pid, pids.shim_start);
    std::string name = cgroup::copy_cgroup_name(config.instance, config.node, config.generation, unique);
    auto made = cgroup::create(support, name, config.resources);
    if (made) cg = std::move(*made);
    else cg.problem = made.error();
  }
  const fs::path cg_path = cg.path;
  CgroupJoin join;
  const std::string join_message = fmt::format("cannot join cgroup {}", cg.path);
  join.message = join_message.c_str();
  if (!cg_path.empty()) {
    join.procs_fd = ::open((cg_path / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (join.procs_fd < 0) {
      // Nothing ran in it yet: the copy simply goes without.
      const int err = errno;
      cg = cgroup::CopyCgroup{};
      cg.problem = fmt::format("cannot open {}: {}", (cg_path / "cgroup.procs").string(), std::strerror(err));
      ::rmdir(cg_path.c_str());
    }
  }
  const bool has_cgroup = join.procs_fd >= 0;
  if (auto r = write_json_atomic(dir / cgroup::k_cgroup_file, cg); !r) {
    if (has_cgroup) {
      ::close(join.procs_fd);
      (void)cgroup::remove(cg_path);
    }
    return never_started(dir, r.error());
  }

  bp::environment env = boost::this_process::environment();
  for (const auto& [k, v] : config.env) env[k] = v;
  std::vector<std::string> args(config.command.begin() + 1, config.command.end());
  bp::pipe out;
  int child = 0;
  try {
    bp::child c(bp::exe = *exe, bp::args = args, bp::env = env, bp::start_dir = work.string(),
                (bp::std_out & bp::std_err) > out, bp::std_in < bp::null, GroupLeader{}, join);
    child = c.id();
    // The supervisor reaps the app itself (waitpid below), to see how it ended.
    c.detach();
  } catch (const bp::process_error& e) {
    if (has_cgroup) {
      ::close(join.procs_fd);
      if (auto r = cgroup::remove(cg_path); !r) log_error(r.error());
    }
    if (std::string_view(e.what()).starts_with(join_message)) return never_started(dir, e.what());
    return never_started(dir, fmt::format("cannot run `{}`: {}", config.command[0], e.code().message()));
  }
  if (has_cgroup) ::close(join.procs_fd);
  pids.child_pid = child;
  pids.child_pgid = child;
  pids.child_start = start_time_of(child);  // Readable even if it already is a zombie.
  if (auto r = write_json_atomic(dir / k_pids_file, pids); !r) log_error(r.error());
  note_change(dir);

  using Clock = std::chrono::steady_clock;
  bool stopping = false, killed = false;
  Clock::time_point kill_at{};
  int64_t grace_ms = 0;
  auto begin_stop = [&] {
    if (stopping) return;
    stopping = true;
    grace_ms = grace_of(dir, config);
    kill_at = Clock::now() + std::chrono::milliseconds(grace_ms);
    ::kill(-child, SIGTERM);
    // What left the group (setsid, a double fork) is still a member of the cgroup, and
    // gets the same polite signal.
    if (has_cgroup) cgroup::signal_members(cg_path, SIGTERM);
  };
  if (fs::exists(dir / k_stop_file)) begin_stop();

  const int out_fd = out.native_source();
  bool pipe_open = true;
  char buf[64 * 1024];
  auto read_pipe = [&] {
    ssize_t n = ::read(out_fd, buf, sizeof buf);
    if (n > 0) log.write(std::string_view(buf, static_cast<size_t>(n)));
    else if (n == 0 || errno != EINTR) pipe_open = false;
  };
  int status = 0;
  for (;;) {
    // Exits and stop signals arrive on the signalfd and output on the pipe, so an idle
    // supervisor needs no timer; the long one is only a safety net (1,000 idle
    // supervisors waking 5 times a second cost 88 ms of CPU a second, bench/).
    int timeout_ms = 5'000;
    if (stopping && !killed) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, timeout_ms));
    }
    pollfd fds[2] = {{signal_fd, POLLIN, 0}, {pipe_open ? out_fd : -1, POLLIN, 0}};
    ::poll(fds, 2, timeout_ms);
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (::read(signal_fd, &info, sizeof info) == sizeof info)
        if (info.ssi_signo != SIGCHLD) begin_stop();
    }
    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) read_pipe();
    // Seen ended but not reaped yet (WNOWAIT): while the app is an unreaped zombie its
    // pid, and so its group number, cannot be handed to anyone else, which makes the
    // group kill below safe.
    siginfo_t ended{};
    if (::waitid(P_PID, static_cast<id_t>(child), &ended, WEXITED | WNOHANG | WNOWAIT) == 0 && ended.si_pid == child)
      break;
    if (stopping && !killed && Clock::now() >= kill_at) {
      ::kill(-child, SIGKILL);
      if (has_cgroup) cgroup::kill_all(cg_path);
      killed = true;
    }
  }
  // The app is gone; what it started in its group goes with it. Then read what they
  // wrote until the pipe closes, for at most a second: a process that left the group
  // (setsid) may still hold the pipe, and it must not keep the copy from ending.
  ::kill(-child, SIGKILL);
  // With a cgroup nothing escapes: every member goes, wherever its group or session,
  // and the copy ends only once none runs (so exit.json means nothing of it is left).
  if (has_cgroup) {
    cgroup::kill_all(cg_path);
    if (!cgroup::await_empty(cg_path, std::chrono::seconds(5))) log_error("the app's cgroup did not empty in 5 s");
  }
  ::waitpid(child, &status, 0);
  auto drain_until = Clock::now() + std::chrono::seconds(1);
  while (pipe_open && Clock::now() < drain_until) {
    pollfd fd{out_fd, POLLIN, 0};
    if (::poll(&fd, 1, 100) > 0) read_pipe();
  }
  // Removed here rather than left to the copy's removal, which may come much later;
  // the removal tries again when this fails.
  if (has_cgroup)
    if (auto r = cgroup::remove(cg_path); !r) log_error(r.error());

  CopyExit e;
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  e.stopped = stopping;
  if (!stopping) e.reason = describe_exit(e.exit_code, e.signal);
  else if (killed) e.reason = fmt::format("stopped: killed after its grace period of {} ms", grace_ms);
  else e.reason = "stopped";
  return write_exit(dir, std::move(e));
}

}  // namespace

int run_shim(const fs::path& copy_dir) {
  const fs::path dir = fs::absolute(copy_dir);
  // Fork so the supervisor is not the caller's child: the caller reaps this first
  // process at once, and the supervisor, orphaned, is reaped by init when it ends
  // instead of lingering as a zombie of a long-running gaia.
  pid_t pid = ::fork();
  if (pid < 0) {
    log_error(fmt::format("fork: {}", std::strerror(errno)));
    return 1;
  }
  if (pid > 0) return 0;
  // Its own session: no terminal's hangup or ^C reaches it, and it survives the
  // process group of the command that started it.
  ::setsid();
  // Descriptors the starting process leaked to us (a store, a lock, a listening
  // socket) must not live on for as long as the app does.
  ::close_range(3, ~0U, 0);
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, nullptr);
  int signal_fd = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd < 0) return never_started(dir, fmt::format("signalfd: {}", std::strerror(errno)));
  return supervise(dir, signal_fd);
}

int shim_main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: {} COPY_DIR\n", argc > 0 ? argv[0] : "gaia-shim");
    return 2;
  }
  return run_shim(argv[1]);
}

}  // namespace gaia::process
