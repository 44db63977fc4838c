#include "bench/child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include "bench/bench_util.hpp"

extern char** environ;

namespace gaia::bench {

// The child's peak RSS comes from GNU time, which forks the command from its own small
// process: a child spawned straight from this one inherits this process's high-water
// mark on exec (the kernel keeps the larger of the two in ru_maxrss), which after a
// benchmark's fill is far above the command's own.
constexpr const char* k_gnu_time = "/usr/bin/time";

ChildRun run_child(std::vector<std::string> argv, const std::vector<std::string>& env,
                   const std::filesystem::path& out, const std::filesystem::path& err) {
  const auto rss_file = err.string() + ".rss";
  const bool timed = ::access(k_gnu_time, X_OK) == 0;
  if (timed) argv.insert(argv.begin(), {k_gnu_time, "-f", "%M", "-o", rss_file});
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  Timer t;
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot run {}: {}", argv[0], std::strerror(rc)));
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) != pid) throw std::runtime_error("wait4 failed");
  ChildRun r;
  r.ms = t.elapsed_ms();
  if (timed) {
    std::ifstream in(rss_file);
    double kib = -1024.0;  // -1 MiB: not known.
    in >> kib;
    r.peak_rss_mb = round3(kib / 1024.0);
  } else {
    r.peak_rss_mb = -1;
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::vector<std::string> environment_without(const std::vector<std::string>& drop) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (std::ranges::none_of(drop, [&](const std::string& d) { return kv.starts_with(d); })) env.emplace_back(kv);
  }
  return env;
}

size_t count_lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  size_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

}  // namespace gaia::bench
