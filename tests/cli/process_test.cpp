// End-to-end tests of the process backend with the real binary and real programs: a
// cluster created with `--backend process` starts its agent; the example stack of
// examples/local (redis-server and busybox httpd from Debian) runs as local processes,
// each bound to its own loopback address, and answers a request through the endpoint
// `gaia endpoints` prints; a killed instance is restarted; `gaia logs` shows what it
// wrote; a restarted agent adopts the running processes instead of starting duplicates;
// deleting the app stops its processes. No process is left behind: each test ends by
// looking for any process working under its scratch dir, and fails (after killing them)
// when it finds one.
#include <catch2/catch.hpp>
#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// Processes whose working directory or command line points into `dir`: the copies'
// supervisors (their command line names the copy dir), the apps (they run in it) and
// the agent (its command line names the store).
std::vector<pid_t> processes_under(const std::filesystem::path& dir) {
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
    std::string stat = Scratch::slurp(fmt::format("/proc/{}/stat", pid));
    bool zombie = stat.find(") Z ") != std::string::npos;
    if (zombie) continue;
    if ((!ec && cwd.string().starts_with(prefix)) || cmdline.find(prefix) != std::string::npos) out.push_back(pid);
  }
  ::closedir(proc);
  return out;
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
};

bool programs_installed() {
  return std::filesystem::exists("/usr/bin/redis-server") && std::filesystem::exists("/usr/bin/busybox") &&
         std::filesystem::exists("/usr/bin/redis-cli");
}

// "address:port" of every instance of app/role, by the endpoints command.
std::vector<std::pair<std::string, int>> endpoints(const ProcessScratch& s, const std::string& app, const std::string& port) {
  json j = json::parse(s.run_ok({"endpoints", app, "-o", "json"}).out);
  std::vector<std::pair<std::string, int>> out;
  for (const auto& r : j["roles"])
    for (const auto& i : r["instances"]) out.emplace_back(i["address"].get<std::string>(), i["ports"][port].get<int>());
  return out;
}

// A GET with busybox wget (what the demo uses; its -T segfaults in bookworm, hence timeout): "200 BODY", or "<no answer>" when
// nothing answers or the status is not 2xx.
std::string get(const std::string& address, int port, const std::string& path) {
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

// The pid of the app process of the newest copy of `instance` (the copy dir
// "<node>-g<generation>" with the highest generation, its pids.json); 0 when none runs.
pid_t app_pid(const ProcessScratch& s, const std::string& instance) {
  auto run = s.dir() / "state" / "gaia" / "gaia.db.run" / instance;
  long best = -1;
  std::filesystem::path newest;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run, ec)) {
    std::string name = e.path().filename().string();
    auto g = name.rfind("-g");
    if (!e.is_directory() || g == std::string::npos || name.starts_with(".")) continue;
    long gen = std::atol(name.c_str() + g + 2);
    if (gen > best) {
      best = gen;
      newest = e.path();
    }
  }
  std::string text = newest.empty() ? "" : Scratch::slurp(newest / "pids.json");
  if (text.empty()) return 0;
  return json::parse(text).value("child_pid", 0);
}

size_t count_reason(const ProcessScratch& s, const std::string& reason, const std::string& instance) {
  size_t n = 0;
  for (const auto& e : json_lines(s.run_ok({"events", "-o", "json"}).out))
    if (e.value("reason", "") == reason && e.value("instance", "") == instance) ++n;
  return n;
}

template <class F>
bool eventually(F f, std::chrono::seconds limit = std::chrono::seconds(30)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (f()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return f();
}

}  // namespace

TEST_CASE("process backend: the example stack runs as local processes and answers a request",
          "[e2e][process]") {
  if (!programs_installed()) FAIL("redis-server, redis-cli and busybox are needed (scripts/setup.sh installs them)");
  ProcessScratch s;
  auto created = s.run_ok({"cluster", "create", "--backend", "process", "--nodes", "2"});
  CHECK(created.out.find("agent started (pid") != std::string::npos);
  s.run_ok({"submit", std::string(GAIA_SOURCE_DIR) + "/examples/local/hits", "--wait", "--timeout", "60s"});

  auto web = endpoints(s, "hits", "http");
  REQUIRE(web.size() == 2);
  for (const auto& [address, port] : web) CHECK(address.starts_with("127.64."));
  CHECK(get(web[0].first, web[0].second, "/cgi-bin/hits") == "200 hello from 0.web.hits.default: visit 1\n");
  CHECK(get(web[1].first, web[1].second, "/cgi-bin/hits") == "200 hello from 1.web.hits.default: visit 2\n");
  auto logs = s.run_ok({"logs", "0.server.kv.default"});
  CHECK(logs.out.find("Ready to accept connections") != std::string::npos);

  // kill -9 of the key-value server: the agent sees it exit, the restart controller
  // starts it again after its back-off, and the web instances reach it again.
  pid_t kv = app_pid(s, "0.server.kv.default");
  REQUIRE(kv > 0);
  REQUIRE(::kill(kv, SIGKILL) == 0);
  CHECK(eventually([&] { return count_reason(s, "Failed", "0.server.kv.default") >= 1; }));
  CHECK(eventually([&] { return count_reason(s, "Restarted", "0.server.kv.default") >= 1; }));
  CHECK(eventually([&] {
    auto kv_now = endpoints(s, "kv", "redis");
    return get(web[0].first, web[0].second, "/cgi-bin/hits").starts_with("200 hello") &&
           app_pid(s, "0.server.kv.default") != kv;
  }));
  auto previous = s.run_ok({"logs", "0.server.kv.default", "--previous"});
  CHECK(previous.out.find("Ready to accept connections") != std::string::npos);

  // The agent stops; the instances keep running. A new agent adopts them: no duplicates.
  auto before = processes_under(s.dir()).size();
  s.run_ok({"agent", "stop"});
  CHECK(get(web[1].first, web[1].second, "/").starts_with("200 hello from 1.web.hits.default"));
  s.run_ok({"agent", "start"});
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK(processes_under(s.dir()).size() == before);
  auto status = json::parse(s.run_ok({"agent", "status", "-o", "json"}).out);
  CHECK(status["running"] == true);
  CHECK(status["ready"] == 3);

  // Deleting the app stops its processes (kv stays: it was a dependency).
  s.run_ok({"delete", "hits"});
  CHECK(eventually([&] { return get(web[0].first, web[0].second, "/").starts_with("<no answer"); }));
  s.run_ok({"delete", "kv"});
}

TEST_CASE("process backend: a cluster refuses a non-loopback subnet, and logs need the process backend",
          "[e2e][process]") {
  ProcessScratch s;
  auto bad = s.gaia({"cluster", "create", "--backend", "process", "--nodes", "1", "--subnet", "10.0.0.0/16"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("instance subnet '10.0.128.0/24' is not a loopback range") != std::string::npos);
  ok(s, {"cluster", "create", "--nodes", "1"});
  auto logs = s.gaia({"logs", "0.web.web.default"});
  CHECK(logs.code == 1);
  CHECK(logs.err.find("runs on the sim backend") != std::string::npos);
  auto agent = s.gaia({"agent", "start"});
  CHECK(agent.code == 1);
  CHECK(agent.err.find("this cluster runs on the sim backend: it has no agent") != std::string::npos);
}
