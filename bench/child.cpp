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

std::vector<std::string> gaia_environment(const std::filesystem::path& home) {
  // Dropped before they are set again: with a variable twice, getenv finds the first.
  static const std::vector<std::string_view> drop = {"XDG_STATE_HOME=", "XDG_CACHE_HOME=", "GAIA_STORE=", "COLUMNS=",
                                                     "NO_COLOR="};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (std::ranges::none_of(drop, [&](std::string_view d) { return kv.starts_with(d); })) env.emplace_back(kv);
  }
  env.push_back("XDG_STATE_HOME=" + (home / "state").string());
  env.push_back("XDG_CACHE_HOME=" + (home / "cache").string());
  env.push_back("NO_COLOR=1");
  return env;
}

std::unique_ptr<SqliteStore> open_home_store(const std::filesystem::path& home) {
  const auto db = home / "state" / "gaia" / "gaia.db";
  std::filesystem::create_directories(db.parent_path());
  auto store = SqliteStore::open(db, SqliteStoreOptions{});
  if (!store) throw std::runtime_error("cannot open the store: " + store.error().to_string());
  return std::move(*store);
}

size_t count_lines(const std::filesystem::path& p) {
  std::ifstream in(p);
  size_t n = 0;
  for (std::string l; std::getline(in, l);) ++n;
  return n;
}

}  // namespace gaia::bench
