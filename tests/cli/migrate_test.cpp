// End-to-end tests of `gaia scale`, `gaia migrate`, `gaia drain`, `gaia node
// fail|recover` and `gaia rebalance` through the real binary: absolute and relative
// scaling, errors that leave the store unchanged, moves with --to and explained
// refusals, drains (and dry runs that write nothing), failures and recoveries of nodes
// holding stateful instances, a rebalance plan that lets a large instance fit, and the
// rebalance controller turned on with `gaia controller options --rebalance-budget`.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <chrono>
#include <set>
#include <thread>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// Runs a command that must fail with `code`, mention `needle` on stderr, and write
// nothing.
void refused(const StoreCli& g, const std::vector<std::string>& args, int code, const std::string& needle) {
  int64_t before = g.revision();
  auto r = g.run(args);
  INFO("gaia " << fmt::format("{}", fmt::join(args, " ")) << "\nstdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == code);
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(g.revision() == before);
}

// An app `name` with roles given as jsonnet role bodies by name.
void write_roles(const Scratch& s, const std::string& name, const std::map<std::string, std::string>& roles) {
  s.write("apps/" + name + "/app.yaml", fmt::format("name: {}\nversion: 1.0.0\n", name));
  s.write("apps/" + name + "/config.jsonnet", "{}\n");
  std::string body;
  for (const auto& [role, spec] : roles) body += fmt::format("    {}: {},\n", role, spec);
  s.write("apps/" + name + "/main.jsonnet", fmt::format("function(config, deps, app) {{\n  roles: {{\n{}  }},\n  outputs: {{}},\n}}\n", body));
}

std::string service(int replicas, const std::string& cpu, const std::string& extra = "") {
  return fmt::format("{{ image: 'nginx:1.25', replicas: {}, resources: {{ cpu: '{}', memory: '1Gi' }}{} }}", replicas, cpu,
                     extra.empty() ? "" : ", " + extra);
}

int running(const gaia::ClusterState& st, const std::string& app) {
  int n = 0;
  for (const auto& i : st.snapshot.instances)
    if (i.app == app && i.state == gaia::InstanceState::Running) ++n;
  return n;
}

}  // namespace

TEST_CASE("scale: absolute and relative counts, highest ordinals removed first", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "3", "--cpu", "4", "--memory", "16Gi"});
  write_roles(s, "web", {{"web", service(2, "1")}});
  g.ok({"submit", "apps/web", "--wait", "--timeout", "30s"});

  auto up = g.ok({"scale", "web", "--replicas", "4"});
  CHECK(up.out.find("scaled web/web: 2 -> 4 replica(s)") != std::string::npos);
  auto st = g.load();
  CHECK(ordinals(st, "web") == std::vector<int>{0, 1, 2, 3});
  CHECK(running(st, "web") == 4);
  CHECK(st.apps.at("default/web").scale.at("web") == 4);

  g.ok({"scale", "web/web", "--by", "+2"});
  CHECK(running(g.load(), "web") == 6);
  auto down = g.ok({"scale", "web", "--by=-3"});
  CHECK(down.out.find("6 -> 3") != std::string::npos);
  CHECK(ordinals(g.load(), "web") == std::vector<int>{0, 1, 2});
  // A negative change may also follow the flag as its own argument.
  g.ok({"scale", "web", "--by", "-1"});
  CHECK(ordinals(g.load(), "web") == std::vector<int>{0, 1});

  auto same = g.ok({"scale", "web", "--replicas", "2"});
  CHECK(same.out.find("already has 2") != std::string::npos);

  // Dry run: says what would happen, writes nothing.
  int64_t before = g.revision();
  auto dry = g.ok({"scale", "web", "--replicas", "3", "--dry-run"});
  CHECK(dry.out.find("would scale web/web: 2 -> 3") != std::string::npos);
  CHECK(dry.out.find("2.web.web.default on node-") != std::string::npos);
  CHECK(dry.out.find("dry run") != std::string::npos);
  CHECK(g.revision() == before);

  // Scaling beyond the cluster: the rest is pending with the scheduler's reason.
  auto big = g.ok({"scale", "web", "--replicas", "14"});
  CHECK(big.out.find("pending: 0/3 nodes fit") != std::string::npos);
  auto events = g.ok({"events", "--reason", "ScaledUp", "-o", "json"});
  CHECK(events.out.find("ScaledUp") != std::string::npos);
}

TEST_CASE("scale: errors name the problem and leave the store unchanged", "[e2e][scale]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "2", "--cpu", "4", "--memory", "16Gi"});
  write_roles(s, "web", {{"web", service(1, "500m")}});
  write_roles(s, "duo", {{"api", service(1, "500m")}, {"worker", service(1, "500m")}, {"job", "{ kind: 'batch', image: 'busybox', resources: { cpu: '100m', memory: '64Mi' } }"}});
  g.ok({"submit", "apps/web", "apps/duo", "--wait", "--timeout", "30s"});

  refused(g, {"scale", "wbe", "--replicas", "2"}, 1, "did you mean web?");
  refused(g, {"scale", "duo", "--replicas", "2"}, 1, "api, job, worker");
  refused(g, {"scale", "duo/wroker", "--replicas", "2"}, 1, "did you mean duo/worker?");
  refused(g, {"scale", "duo/job", "--replicas", "2"}, 1, "batch role");
  refused(g, {"scale", "web", "--by=-5"}, 1, "would make -4");
  refused(g, {"scale", "web", "--replicas", "1000000"}, 1, "more than the 10000");
  refused(g, {"scale", "web", "--replicas", "lots"}, 2, "expected a count");
  refused(g, {"scale", "web", "--replicas", "99999999999999999999"}, 2, "expected a count");
  refused(g, {"--tenant", "other", "scale", "web", "--replicas", "2"}, 1, "--tenant default");
  auto help = g.ok({"scale", "--help"});
  CHECK(help.out.find("Examples:") != std::string::npos);
}

TEST_CASE("migrate: --to moves an instance, refusals are explained", "[e2e][migrate]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "3", "--cpu", "4", "--memory", "16Gi"});
  g.ok({"node", "add", "--nodes", "1", "--cpu", "500m", "--memory", "1Gi", "--name-prefix", "tiny"});
  write_roles(s, "web", {{"web", service(1, "1", "migration: { migrate_times: 1 }")}});
  g.ok({"submit", "apps/web", "--wait", "--timeout", "30s"});
  std::string from = instance(g.load(), "0.web.web.default").node;
  std::string to = from == "node-1" ? "node-2" : "node-1";

  // Dry run: the move is printed, nothing written.
  int64_t before = g.revision();
  auto dry = g.ok({"migrate", "web/web/0", "--to", to, "--dry-run"});
  CHECK(dry.out.find("would move 0.web.web.default from " + from + " to " + to) != std::string::npos);
  CHECK(g.revision() == before);

  refused(g, {"migrate", "0.web.web.default", "--to", "tiny-1"}, 1, "ResourceFit");
  refused(g, {"migrate", "0.web.web.default", "--to", "nod-1"}, 1, "did you mean node-1?");
  refused(g, {"migrate", "0.web.web.default", "--to", from}, 1, "already on " + from);
  refused(g, {"migrate", "0.wbe.web.default"}, 1, "did you mean 0.web.web.default?");

  auto moved = g.ok({"migrate", "0.web.web.default", "--to", to});
  CHECK(moved.out.find("moved 0.web.web.default from " + from + " to " + to) != std::string::npos);
  auto st = g.load();
  CHECK(instance(st, "0.web.web.default").node == to);
  CHECK(instance(st, "0.web.web.default").migrations == 1);

  // migrate_times is 1: the next move is refused, --force overrides.
  refused(g, {"migrate", "0.web.web.default"}, 1, "migrate_times");
  auto forced = g.ok({"migrate", "0.web.web.default", "--force", "-o", "json"});
  auto j = json::parse(forced.out);
  CHECK(j["migrations"] == 2);
  CHECK(j["from"] == to);
  auto events = g.ok({"events", "--reason", "Migrated"});
  CHECK(events.out.find("0.web.web.default") != std::string::npos);
  CHECK(g.ok({"migrate", "--help"}).out.find("Examples:") != std::string::npos);
}

TEST_CASE("drain: dry run writes nothing, drain keeps min_available and empties the node", "[e2e][drain]") {
  Scratch s;
  StoreCli g{s};
  // One node first, so every replica lands on it; then two empty ones to drain onto.
  g.ok({"cluster", "create", "--nodes", "1", "--cpu", "8", "--memory", "32Gi"});
  write_roles(s, "web", {{"web", service(3, "1", "migration: { min_available: 2 }")},
                         {"pinned", service(1, "1", "migration: { migrate_times: 0 }")}});
  g.ok({"submit", "apps/web", "--wait", "--timeout", "30s"});
  g.ok({"node", "add", "--nodes", "2", "--cpu", "8", "--memory", "32Gi"});
  auto st = g.load();
  REQUIRE(st.snapshot.nodes.size() == 3);
  for (const auto& i : st.snapshot.instances) REQUIRE(i.node == "node-1");

  int64_t before = g.revision();
  auto dry = g.ok({"drain", "node-1", "--dry-run"});
  CHECK(dry.out.find("drain node-1 would move its instances:") != std::string::npos);
  CHECK(dry.out.find("0.web.web.default") != std::string::npos);
  CHECK(dry.out.find("migrate_times") != std::string::npos);  // The pinned one stays, and why.
  CHECK(dry.out.find("3 moved, 0 pending, 1 still on the node") != std::string::npos);
  CHECK(dry.out.find("dry run: nothing was written") != std::string::npos);
  CHECK(g.revision() == before);
  auto dry_json = json::parse(g.ok({"drain", "node-1", "--dry-run", "-o", "json"}).out);
  CHECK(dry_json["moves"].size() == 4);
  CHECK(g.revision() == before);
  refused(g, {"drain", "nod-1"}, 1, "did you mean node-1?");

  auto drained = g.ok({"drain", "node-1"});
  CHECK(drained.out.find("3 moved") != std::string::npos);
  CHECK(drained.out.find("still on node-1") != std::string::npos);
  st = g.load();
  CHECK(st.find_node("node-1")->state == gaia::NodeState::Cordoned);
  CHECK(st.find_node("node-1")->draining);
  for (const auto& i : st.snapshot.instances) {
    if (i.role == "pinned") CHECK(i.node == "node-1");
    else {
      CHECK(i.node != "node-1");
      CHECK(i.migrations == 1);
    }
  }
  // Every pass kept two of the three web replicas running: the timeline shows the moves
  // one at a time, each re-placed before the next left.
  auto events = json::parse("[" + [&] {
    std::string lines = g.ok({"events", "-o", "json"}).out, joined;
    for (size_t at = 0; at < lines.size();) {
      size_t end = lines.find('\n', at);
      if (end == std::string::npos) end = lines.size();
      if (end > at) joined += (joined.empty() ? "" : ",") + lines.substr(at, end - at);
      at = end + 1;
    }
    return joined;
  }() + "]");
  int web_running = 3, lowest = 3;
  for (const auto& e : events) {
    if (e.value("role", "") != "web") continue;
    if (e.value("reason", "") == "Migrated") --web_running;
    if (e.value("reason", "") == "Scheduled" && web_running < 3) ++web_running;
    lowest = std::min(lowest, web_running);
  }
  CHECK(lowest == 2);

  // --wait gives up on the pinned instance and says why.
  auto wait = g.run({"drain", "node-1", "--wait", "--timeout", "1s"});
  CHECK(wait.code == 1);
  CHECK(wait.err.find("0.pinned.web.default") != std::string::npos);
  CHECK(wait.err.find("migrate_times") != std::string::npos);
  // Scaling the pinned role away lets the drain finish.
  g.ok({"scale", "web/pinned", "--replicas", "0"});
  auto finished = g.ok({"events", "--reason", "Drained"});
  CHECK(finished.out.find("node-1") != std::string::npos);
  CHECK_FALSE(g.load().find_node("node-1")->draining);
  CHECK(g.ok({"drain", "--help"}).out.find("Examples:") != std::string::npos);
}

TEST_CASE("node fail and recover: stateless instances move, stateful ones wait for their volume", "[e2e][drain]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "1", "--cpu", "8", "--memory", "32Gi"});
  write_roles(s, "web", {{"web", service(2, "1")}});
  write_roles(s, "db", {{"db", service(1, "1", "volumes: [{ name: 'data', size: '1Gi', class: 'hdd', mount: '/data' }]")}});
  g.ok({"submit", "apps/web", "apps/db", "--wait", "--timeout", "30s"});
  g.ok({"node", "add", "--nodes", "2", "--cpu", "8", "--memory", "32Gi"});

  int64_t before = g.revision();
  auto dry = g.ok({"node", "fail", "node-1", "--dry-run"});
  CHECK(dry.out.find("fail node-1 would move its instances:") != std::string::npos);
  CHECK(dry.out.find("waiting for node node-1 (holds volume data)") != std::string::npos);
  CHECK(dry.out.find("2 moved, 1 pending") != std::string::npos);
  CHECK(g.revision() == before);
  CHECK(g.load().find_node("node-1")->state == gaia::NodeState::Ready);

  auto failed = g.ok({"node", "fail", "node-1"});
  CHECK(failed.out.find("2 moved, 1 pending") != std::string::npos);
  auto st = g.load();
  CHECK(st.find_node("node-1")->state == gaia::NodeState::Down);
  for (const auto& i : st.snapshot.instances) {
    CHECK(i.node != "node-1");
    CHECK(i.migrations == 0);  // A failure does not spend migrate_times.
  }
  const auto& db = instance(st, "0.db.db.default");
  CHECK(db.state == gaia::InstanceState::Pending);
  CHECK(db.pending_reason == "waiting for node node-1 (holds volume data)");
  CHECK(g.ok({"node", "fail", "node-1"}).out.find("already down") != std::string::npos);
  refused(g, {"migrate", "0.db.db.default"}, 1, "--force");
  refused(g, {"drain", "node-1"}, 1, "is down");

  auto recovered = g.ok({"node", "recover", "node-1"});
  CHECK(recovered.out.find("NodeRecovered") != std::string::npos);
  st = g.load();
  CHECK(st.find_node("node-1")->state == gaia::NodeState::Ready);
  CHECK(instance(st, "0.db.db.default").state == gaia::InstanceState::Running);
  CHECK(instance(st, "0.db.db.default").node == "node-1");

  // --move-stateful: the stateful instance starts elsewhere, with a fresh volume.
  auto moved = g.ok({"node", "fail", "node-1", "--move-stateful"});
  CHECK(moved.out.find("0.db.db.default") != std::string::npos);
  st = g.load();
  const auto& db2 = instance(st, "0.db.db.default");
  CHECK(db2.state == gaia::InstanceState::Running);
  CHECK(db2.node != "node-1");
  REQUIRE(db2.volumes.size() == 1);
  CHECK(db2.volumes[0].node == db2.node);
  CHECK(g.ok({"events", "--reason", "VolumeLost"}).out.find("0.db.db.default") != std::string::npos);
  refused(g, {"node", "fail", "nope"}, 1, "no node named 'nope'");
  CHECK(g.ok({"node", "fail", "--help"}).out.find("Examples:") != std::string::npos);
}

TEST_CASE("rebalance: the plan first, then the moves that let a large instance fit", "[e2e][rebalance]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "2", "--cpu", "4", "--memory", "16Gi"});
  write_roles(s, "small", {{"s", service(4, "1")}});  // Two per node: 2 cores free on each.
  g.ok({"submit", "apps/small", "--wait", "--timeout", "30s"});
  write_roles(s, "big", {{"b", service(1, "4")}});
  g.ok({"submit", "apps/big"});
  REQUIRE(instance(g.load(), "0.b.big.default").state == gaia::InstanceState::Pending);

  int64_t before = g.revision();
  auto dry = g.ok({"rebalance", "--dry-run"});
  CHECK(dry.out.find("plan: 2 move(s)") != std::string::npos);
  CHECK(dry.out.find("then 0.b.big.default fits on node-") != std::string::npos);
  CHECK(dry.out.find("dry run: nothing was written") != std::string::npos);
  CHECK(g.revision() == before);
  CHECK(dry.out.find("allocation of nodes in use: before ") != std::string::npos);
  auto dry_json = json::parse(g.ok({"rebalance", "--dry-run", "-o", "json"}).out);
  CHECK(dry_json["dry_run"] == true);
  CHECK(dry_json["moves"].size() == 2);
  // Fractions, as map and replay give them; the text shows the same as a percentage.
  double before_fraction = dry_json["allocation_before"].get<double>();
  CHECK(before_fraction > 0.0);
  CHECK(before_fraction <= 1.0);
  CHECK(dry_json["allocation_after"].get<double>() <= 1.0);
  CHECK(dry.out.find(fmt::format("allocation of nodes in use: before {:.1f}%", before_fraction * 100)) !=
        std::string::npos);
  // No moves allowed: nothing moves, and the report does not also claim there was
  // nothing worth moving.
  auto none = g.ok({"rebalance", "--dry-run", "--max-moves", "0"});
  CHECK(none.out.find("nothing to move\n") != std::string::npos);
  CHECK(none.out.find("no node worth emptying") == std::string::npos);
  CHECK(none.out.find("defragmentation stopped: no moves allowed") != std::string::npos);
  // A target out of reach is said so.
  auto high = g.ok({"rebalance", "--dry-run", "--max-moves", "100", "--target", "100"});
  CHECK(high.out.find("note: the target of 100.0% is not reached") != std::string::npos);
  CHECK(dry_json["nodes_in_use_before"] == 2);
  CHECK(dry_json.contains("stopped"));
  refused(g, {"rebalance", "--max-moves", "-1"}, 2, "--max-moves");
  refused(g, {"rebalance", "--target", "101"}, 2, "--target");
  auto one = g.ok({"rebalance", "--dry-run", "--max-moves", "1"});
  CHECK(one.out.find("0.b.big.default still fits nowhere") != std::string::npos);

  auto applied = g.ok({"rebalance"});
  CHECK(applied.out.find("plan: 2 move(s)") != std::string::npos);
  CHECK(applied.out.find("applied 2 move(s)") != std::string::npos);
  auto st = g.load();
  CHECK(instance(st, "0.b.big.default").state == gaia::InstanceState::Running);
  CHECK(running(st, "small") == 4);
  // Nothing left to do.
  CHECK(g.ok({"rebalance", "--dry-run"}).out.find("nothing to move") != std::string::npos);
  CHECK(g.ok({"rebalance", "--help"}).out.find("Examples:") != std::string::npos);
}

namespace {

// Nodes holding at least one instance.
std::set<std::string> occupied_nodes(const gaia::ClusterState& st) {
  std::set<std::string> out;
  for (const auto& i : st.snapshot.instances)
    if (gaia::occupies_node(i)) out.insert(i.node);
  return out;
}

size_t reason_count(const StoreCli& g, const std::string& reason) {
  return json_lines(g.ok({"events", "--reason", reason, "-o", "json"}).out).size();
}

}  // namespace

TEST_CASE("rebalance controller: on with a budget per period, through the options", "[e2e][rebalance][controller]") {
  Scratch s;
  StoreCli g{s};
  g.ok({"cluster", "create", "--nodes", "4", "--cpu", "4", "--memory", "16Gi"});
  write_roles(s, "web", {{"web", service(4, "1")}});  // Spread: one per node.
  g.ok({"submit", "apps/web", "--wait", "--timeout", "30s"});
  REQUIRE(occupied_nodes(g.load()).size() == 4);

  // Off by default; bad values are usage errors that write nothing.
  auto shown = json::parse(g.ok({"controller", "options", "-o", "json"}).out);
  CHECK(shown["rebalance_budget"] == 0);
  CHECK(g.ok({"controller", "options"}).out.find("rebalance          off") != std::string::npos);
  refused(g, {"controller", "options", "--rebalance-budget", "-1"}, 2, "--rebalance-budget");
  refused(g, {"controller", "options", "--rebalance-period", "10ms"}, 2, "--rebalance-period");
  refused(g, {"controller", "options", "--rebalance-period", "abc"}, 2, "--rebalance-period: 'abc' is not a duration");
  // Every bad duration is named at once, not only the first.
  refused(g, {"controller", "options", "--max-backoff", "soon", "--rebalance-period", "abc"}, 2,
          "--max-backoff: 'soon' is not a duration");
  refused(g, {"controller", "options", "--max-backoff", "soon", "--rebalance-period", "abc"}, 2,
          "--rebalance-period: 'abc' is not a duration");
  refused(g, {"controller", "options", "--rebalance-target", "120"}, 2, "--rebalance-target");
  CHECK(reason_count(g, "Migrated") == 0);

  // Turning it on runs the controllers: the first period moves two instances, the budget.
  auto on = g.ok({"controller", "options", "--rebalance-budget", "2", "--rebalance-period", "30m"});
  CHECK(on.out.find("rebalance          at most 2 move(s) every 30m") != std::string::npos);
  CHECK(reason_count(g, "Migrated") == 2);
  auto summary = json_lines(g.ok({"events", "--reason", "Rebalanced", "-o", "json"}).out);
  REQUIRE(summary.size() == 1);
  std::string message = summary[0]["message"];
  // 1 core and 1 GiB of 4 and 16 on each node: (25% + 6.25%) / 2.
  CHECK(message.find("moved 2 instance(s) (budget 2 per period): allocation of nodes in use 15.6% on 4 node(s) -> "
                     "31.2% on 2 node(s)") != std::string::npos);
  auto st = g.load();
  CHECK(occupied_nodes(st).size() == 2);
  CHECK(running(st, "web") == 4);

  // Within the period nothing more moves, whatever runs the controllers.
  g.ok({"controller", "run", "--once"});
  g.ok({"scale", "web", "--replicas", "4"});
  CHECK(reason_count(g, "Migrated") == 2);

  // A shorter period: once it has passed, the next run moves the last one.
  g.ok({"controller", "options", "--rebalance-period", "1s"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto pass = g.ok({"controller", "run", "--once"});
  CHECK(pass.out.find("Rebalanced") != std::string::npos);
  CHECK(reason_count(g, "Migrated") == 3);
  st = g.load();
  CHECK(occupied_nodes(st).size() == 1);
  CHECK(running(st, "web") == 4);
  int migrations = 0;  // Each move counts against the instance's migrate_times.
  for (const auto& i : st.snapshot.instances) migrations += i.migrations;
  CHECK(migrations == 3);

  // Off again: nothing moves, however long it waits.
  g.ok({"controller", "options", "--rebalance-budget", "0"});
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  g.ok({"controller", "run", "--once"});
  CHECK(reason_count(g, "Migrated") == 3);
}
