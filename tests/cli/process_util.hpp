#pragma once
// Helpers of the end-to-end tests of the process backend (process_test.cpp,
// process_lifecycle_test.cpp): a scratch dir that checks no process outlives the test,
// the copies of an instance in the run dir and their pids, the instances and events as
// gaia prints them, and `eventually` for what the agent does in its own time.
#include <catch2/catch.hpp>
#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "process/proc.hpp"
#include "tests/cli/e2e_util.hpp"

namespace gaia::test {

// Processes whose working directory or command line points into `dir`: the copies'
// supervisors (their command line names the copy dir), the apps (they run in it) and
// the agent (its command line names the store).
inline std::vector<pid_t> processes_under(const std::filesystem::path& dir) {
  std::vector<pid_t> out;
  std::string prefix = dir.string();
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (auto* e = ::readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    std::error_code ec;
    auto cwd = std::filesystem::read_symlink(fmt::format("/proc/{}/cwd", pid), ec);
    std::string cmdline = Scratch::slurp(fmt::format("/proc/{}/cmdline", pid));
    auto stat = gaia::process::read_proc_stat(pid);
    if (!stat || stat->state == 'Z') continue;  // Gone, or a zombie waiting for init.
    if ((!ec && cwd.string().starts_with(prefix)) || cmdline.find(prefix) != std::string::npos) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
}

// The processes under `dir` that last: a child forked by a parent with the same command
// line is left out, because servers such as busybox httpd fork one per connection (a
// health check or a request) and it is gone a moment later. Counting those made the
// "no duplicates" checks flaky.
inline std::vector<pid_t> lasting_processes_under(const std::filesystem::path& dir) {
  auto all = processes_under(dir);
  std::vector<pid_t> out;
  for (pid_t pid : all) {
    auto stat = gaia::process::read_proc_stat(pid);
    if (!stat) continue;
    bool forked_copy = std::find(all.begin(), all.end(), stat->ppid) != all.end() &&
                       Scratch::slurp(fmt::format("/proc/{}/cmdline", pid)) ==
                           Scratch::slurp(fmt::format("/proc/{}/cmdline", stat->ppid));
    if (!forked_copy) out.push_back(pid);
  }
  return out;
}

// Whether `pid` names a live process (a zombie has ended: it only waits to be reaped).
inline bool alive(pid_t pid) {
  if (pid <= 0) return false;
  auto stat = gaia::process::read_proc_stat(pid);
  return stat && stat->state != 'Z';
}

// A scratch dir whose processes are all gone at the end of the test (checked).
struct ProcessScratch : Scratch {
  ~ProcessScratch() {
    Scratch::gaia({"agent", "stop"});
    // Stopped copies end within their grace period (SIGTERM first): give them that.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!processes_under(dir()).empty() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto left = processes_under(dir());
    for (pid_t p : left) ::kill(p, SIGKILL);
    CHECK(left.empty());
  }
  std::map<std::string, std::string> env() const {
    return {{"GAIA_REPO", std::string(GAIA_SOURCE_DIR) + "/examples/local"}};
  }
  RunResult run_ok(const std::vector<std::string>& args) const {
    auto r = Scratch::gaia(args, env());
    INFO("gaia " << fmt::format("{}", fmt::join(args, " ")) << "\n" << r.out << r.err);
    REQUIRE(r.code == 0);
    return r;
  }
  // The process backend's run dir of the default context's store.
  std::filesystem::path run_dir() const { return dir() / "state" / "gaia" / "gaia.db.run"; }
};

// "address:port" of every instance of app/role, by the endpoints command.
inline std::vector<std::pair<std::string, int>> endpoints(const ProcessScratch& s, const std::string& app,
                                                          const std::string& port) {
  nlohmann::json j = nlohmann::json::parse(s.run_ok({"endpoints", app, "-o", "json"}).out);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& r : j["roles"])
    for (const auto& i : r["instances"]) out.emplace_back(i["address"].get<std::string>(), i["ports"][port].get<int>());
  return out;
}

// A GET with busybox wget (what the demo uses; its -T segfaults in bookworm, hence timeout): "200 BODY", or "<no answer>" when
// nothing answers or the status is not 2xx.
inline std::string get(const std::string& address, int port, const std::string& path) {
  std::string cmd = fmt::format("timeout 10 busybox wget -q -O - 'http://{}:{}{}' 2>/dev/null", address, port, path);
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "<no answer>";
  std::string body;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) body.append(buf, n);
  int status = ::pclose(p);
  if (status != 0) return "<no answer>";
  return "200 " + body;
}

// The generation of a copy dir named "<node>-g<generation>" (a copy moved aside after a
// stop has a ".<time>" suffix, which atol ignores); -1 for anything else.
inline long copy_generation(const std::string& name) {
  auto g = name.rfind("-g");
  if (g == std::string::npos || name.starts_with(".")) return -1;
  return std::atol(name.c_str() + g + 2);
}

// The copy dirs of `instance`, newest (highest generation) first.
inline std::vector<std::filesystem::path> copy_dirs(const ProcessScratch& s, const std::string& instance) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(s.run_dir() / instance, ec))
    if (e.is_directory() && copy_generation(e.path().filename().string()) >= 0) out.push_back(e.path());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return copy_generation(a.filename().string()) > copy_generation(b.filename().string());
  });
  return out;
}

// The pid of the app process of the newest copy of `instance` (its pids.json); 0 when
// none runs yet.
inline pid_t app_pid(const ProcessScratch& s, const std::string& instance) {
  auto dirs = copy_dirs(s, instance);
  std::string text = dirs.empty() ? "" : Scratch::slurp(dirs.front() / "pids.json");
  if (text.empty()) return 0;
  return nlohmann::json::parse(text).value("child_pid", 0);
}

inline size_t count_reason(const ProcessScratch& s, const std::string& reason, const std::string& instance) {
  size_t n = 0;
  for (const auto& e : json_lines(s.run_ok({"events", "-o", "json"}).out))
    if (e.value("reason", "") == reason && e.value("instance", "") == instance) ++n;
  return n;
}

// The instances as `gaia get instances -o json` prints them, by key.
inline std::map<std::string, nlohmann::json> instances(const ProcessScratch& s) {
  std::map<std::string, nlohmann::json> out;
  for (const auto& i : nlohmann::json::parse(s.run_ok({"get", "instances", "-o", "json"}).out))
    out[i["name"].get<std::string>()] = i;
  return out;
}

// The state of one instance, "<gone>" when the store has none of that key.
inline std::string state_of(const ProcessScratch& s, const std::string& key) {
  auto all = instances(s);
  auto it = all.find(key);
  return it == all.end() ? "<gone>" : it->second.value("state", "");
}

}  // namespace gaia::test
