// The agent's heartbeats end to end: `gaia agent stop` takes its heartbeats with it and
// the nodes stay up; an agent killed with SIGKILL leaves them, so after the heartbeat
// timeout the next controller run marks its nodes down and the instances move to a node
// that is healthy (here one added after the agent died, which no agent ever served);
// when an agent starts again the nodes come back.
#include "tests/cli/process_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

std::vector<json> events_with(const ProcessScratch& s, const std::string& reason) {
  std::vector<json> out;
  for (const auto& e : json_lines(s.run_ok({"events", "-o", "json"}).out))
    if (e.value("reason", "") == reason) out.push_back(e);
  return out;
}

}  // namespace

TEST_CASE("process backend: a silent agent's nodes go down after the heartbeat timeout and the instances move",
          "[e2e][process]") {
  ProcessScratch s;
  s.run_ok({"cluster", "create", "--backend", "process", "--nodes", "2"});
  s.run_ok({"controller", "options", "--heartbeat-timeout", "2s"});
  s.run_ok({"submit", std::string(GAIA_SOURCE_DIR) + "/examples/local/kv", "--wait", "--timeout", "60s"});
  const std::string kv = "0.server.kv.default";
  const std::string first_node = instances(s)[kv].value("node", "");
  REQUIRE_FALSE(first_node.empty());
  pid_t first = app_pid(s, kv);
  REQUIRE(alive(first));
  // The agent is beating: nothing is down.
  CHECK(events_with(s, "NodeDown").empty());

  // A deliberate stop is not a failure: the agent takes its heartbeats with it, and its
  // nodes stay up however long it stays stopped.
  s.run_ok({"agent", "stop"});
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  s.run_ok({"controller", "run", "--once"});
  CHECK(events_with(s, "NodeDown").empty());
  CHECK(alive(first));

  // An agent that dies leaves its last beats behind: after the timeout, whoever runs the
  // controllers next marks its nodes down.
  s.run_ok({"agent", "start"});
  auto status = json::parse(s.run_ok({"agent", "status", "-o", "json"}).out);
  pid_t agent = status.value("pid", 0);
  REQUIRE(agent > 0);
  // Its first pass has beaten for both nodes once describe shows a heartbeat.
  CHECK(eventually([&] { return s.run_ok({"describe", "node", "node-2"}).out.find("Heartbeat") != std::string::npos; }));
  REQUIRE(::kill(agent, SIGKILL) == 0);
  CHECK(eventually([&] { return !alive(agent); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  s.run_ok({"controller", "run", "--once"});
  auto down = events_with(s, "NodeDown");
  REQUIRE(down.size() == 2);
  for (const auto& e : down) CHECK(e["message"].get<std::string>().find("no heartbeat from its agent (pid ") != std::string::npos);

  // A node no agent served is healthy: the instance moves there, and the inline run
  // starts it and stops the copy left on the down node.
  // Its addresses from the /16 after the cluster's own (127.X.128.0/24 on node-1).
  std::string subnet = json::parse(s.run_ok({"get", "nodes", "-o", "json"}).out)[0].value("instance_subnet", "");
  REQUIRE(subnet.starts_with("127."));
  int octet = std::stoi(subnet.substr(4, subnet.find('.', 4) - 4));
  s.run_ok({"node", "add", "--subnet", fmt::format("127.{}.0.0/16", octet % 254 + 1), "--name-prefix", "spare"});
  CHECK(instances(s)[kv].value("node", "") == "spare-1");
  CHECK(eventually([&] {
    s.run_ok({"controller", "run", "--once"});
    return !alive(first) && alive(app_pid(s, kv));
  }));

  // The agent starts again: its nodes come back, and it serves the spare node too.
  s.run_ok({"agent", "start"});
  CHECK(eventually([&] { return events_with(s, "NodeRecovered").size() == 2; }));
  CHECK(eventually([&] { return state_of(s, kv) == "Running"; }));
  s.run_ok({"delete", "kv"});
}
