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
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "lib/topology.hpp"
#include "tests/cli/process_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

bool programs_installed() {
  return std::filesystem::exists("/usr/bin/redis-server") && std::filesystem::exists("/usr/bin/busybox") &&
         std::filesystem::exists("/usr/bin/redis-cli");
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
  for (const auto& [address, port] : web) CHECK(gaia::loopback_cidr(address + "/32"));
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
  auto before = lasting_processes_under(s.dir()).size();
  std::map<std::string, pid_t> pids;
  for (std::string name : {"0.server.kv.default", "0.web.hits.default", "1.web.hits.default"})
    pids[name] = app_pid(s, name);
  s.run_ok({"agent", "stop"});
  CHECK(get(web[1].first, web[1].second, "/").starts_with("200 hello from 1.web.hits.default"));
  s.run_ok({"agent", "start"});
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK(lasting_processes_under(s.dir()).size() == before);
  for (const auto& [name, pid] : pids) CHECK(app_pid(s, name) == pid);
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
