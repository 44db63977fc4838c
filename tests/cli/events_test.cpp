// End-to-end tests of `gaia events` and `gaia explain` with the real binary: a cluster
// made with `gaia cluster create`, apps submitted, then the timeline read back with
// filters, followed live from a second process, and bounded by --retention.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "store/sqlite_store.hpp"
#include "lib/state.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia;
using namespace gaia::test;
using nlohmann::json;

namespace {

// The operation id a writing command prints on stderr with -v.
std::string op_of(const RunResult& r) {
  auto at = r.err.find("operation op-");
  REQUIRE(at != std::string::npos);
  auto start = at + std::string("operation ").size();
  return r.err.substr(start, r.err.find('\n', start) - start);
}

// An app with one role `web` asking for `cpu` cores.
void write_sized_app(const Scratch& s, const std::string& name, const std::string& cpu) {
  write_app(s, name, name, "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '" + cpu + "', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
}

// A small cluster with one placed app (`small`, 2 instances' worth of cpu on 3 nodes)
// and one that fits nowhere (`huge`). Returns the op ids of the three commands.
std::vector<std::string> build_cluster(const Scratch& s) {
  std::vector<std::string> ops;
  ops.push_back(op_of(ok(s, {"-v", "cluster", "create", "--nodes", "3", "--cpu", "8", "--memory", "32Gi"})));
  write_sized_app(s, "small", "2");
  write_sized_app(s, "huge", "64");
  ops.push_back(op_of(ok(s, {"-v", "submit", "small"})));
  RunResult huge = s.gaia({"-v", "submit", "huge"});
  INFO(huge.out << huge.err);
  REQUIRE(huge.code <= 1);  // Pending is not a failure to submit, but be lenient on the exit code.
  ops.push_back(op_of(huge));
  return ops;
}

std::vector<json> events_json(const Scratch& s, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"events", "-o", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return json_lines(ok(s, args).out);
}

// Waits up to `limit` for `path` to contain `needle`.
bool wait_for_text(const std::filesystem::path& path, const std::string& needle, std::chrono::milliseconds limit) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (Scratch::slurp(path).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Scratch::slurp(path).find(needle) != std::string::npos;
}

// Commits `n` events with reason `reason` to the store at `path`, as another gaia
// process would.
void commit_events(const std::filesystem::path& path, const std::string& reason, int n) {
  auto store = SqliteStore::open(path);
  REQUIRE(store);
  SystemClock clock;
  State state(**store, clock);
  auto r = state.update("op-outside", [&](const ClusterState&, Batch& b) -> Result<void> {
    for (int i = 0; i < n; ++i) b.event(reason, fmt::format("outside event {}", i)).node = "ext";
    return {};
  });
  REQUIRE(r);
}

}  // namespace

TEST_CASE("gaia events lists the timeline as JSON lines in sequence order, filtered", "[e2e][events]") {
  Scratch s;
  auto ops = build_cluster(s);
  auto all = events_json(s);
  REQUIRE(all.size() >= 6);
  std::set<std::string> reasons;
  int64_t last = 0;
  for (const auto& e : all) {
    for (const char* field : {"seq", "time", "type", "reason", "message", "op"}) {
      INFO(e.dump() << " lacks " << field);
      CHECK(e.contains(field));
    }
    CHECK(e["seq"].get<int64_t>() > last);
    last = e["seq"].get<int64_t>();
    CHECK_FALSE(e["op"].get<std::string>().empty());
    reasons.insert(e["reason"].get<std::string>());
  }
  CHECK(reasons.count("Scheduled"));
  CHECK(reasons.count("FailedScheduling"));

  SECTION("--op shows exactly one command's events") {
    size_t total = 0;
    for (const auto& op : ops) {
      auto mine = events_json(s, {"--op", op});
      CHECK_FALSE(mine.empty());
      for (const auto& e : mine) CHECK(e["op"] == op);
      total += mine.size();
    }
    CHECK(total == all.size());  // Every event belongs to one of the three commands.
  }
  SECTION("--app, --reason, --type, --node, --instance and --tenant select their events") {
    auto small = events_json(s, {"--app", "small"});
    REQUIRE_FALSE(small.empty());
    for (const auto& e : small) CHECK(e["app"] == "small");
    CHECK(events_json(s, {"--app", "default/small"}).size() == small.size());
    CHECK(events_json(s, {"--app", "nosuch"}).empty());

    auto sched = events_json(s, {"--reason", "Scheduled,FailedScheduling"});
    REQUIRE_FALSE(sched.empty());
    for (const auto& e : sched) CHECK((e["reason"] == "Scheduled" || e["reason"] == "FailedScheduling"));

    auto warnings = events_json(s, {"--type", "warning"});
    REQUIRE_FALSE(warnings.empty());
    for (const auto& e : warnings) CHECK(e["type"] == "Warning");

    std::string node;
    for (const auto& e : all)
      if (e["reason"] == "Scheduled") node = e["node"];
    REQUIRE_FALSE(node.empty());
    auto on_node = events_json(s, {"--node", node});
    REQUIRE_FALSE(on_node.empty());
    for (const auto& e : on_node) CHECK(e["node"] == node);

    // The shorthand, the key and the DNS name all name the same instance.
    auto by_short = events_json(s, {"--instance", "small/web/0"});
    REQUIRE_FALSE(by_short.empty());
    for (const auto& e : by_short) CHECK(e["instance"] == "0.web.small.default");
    CHECK(events_json(s, {"--instance", "0.web.small.default.gaia"}).size() == by_short.size());

    for (const auto& e : events_json(s, {"--tenant", "default"})) CHECK(e["tenant"] == "default");
    CHECK(events_json(s, {"--tenant", "nobody"}).empty());
  }
  SECTION("--limit keeps the newest, --since/--until bound the time") {
    auto tail = events_json(s, {"--limit", "2"});
    REQUIRE(tail.size() == 2);
    CHECK(tail[0]["seq"] == all[all.size() - 2]["seq"]);
    CHECK(tail[1]["seq"] == all.back()["seq"]);
    CHECK(events_json(s, {"--since", "1h"}).size() == all.size());
    CHECK(events_json(s, {"--until", "1h"}).empty());
    CHECK(events_json(s, {"--since", "2000-01-01T00:00:00Z", "--until", "2999-01-01T00:00:00+02:00"}).size() ==
          all.size());
    RunResult bad = s.gaia({"events", "--since", "yesterday", "--type", "Fatal"});
    CHECK(bad.code == 1);
    CHECK(bad.err.find("'yesterday' is neither an RFC 3339 time nor a duration") != std::string::npos);
    CHECK(bad.err.find("unknown event type 'Fatal'") != std::string::npos);  // Both errors, in one go.
  }
  SECTION("the table has the kubectl columns, and -o wide adds sequence and operation") {
    RunResult t = ok(s, {"events", "--reason", "Scheduled"});
    CHECK(t.out.starts_with("TIME"));
    for (const char* col : {"TYPE", "REASON", "OBJECT", "MESSAGE"}) CHECK(t.out.find(col) != std::string::npos);
    CHECK(t.out.find("instance/0.web.small.default") != std::string::npos);
    CHECK(t.out.find(" OP ") == std::string::npos);
    RunResult w = ok(s, {"events", "-o", "wide", "--op", ops[1]});
    CHECK(w.out.starts_with("SEQ"));
    CHECK(w.out.find(ops[1]) != std::string::npos);
    RunResult none = ok(s, {"events", "--app", "nosuch"});
    CHECK(none.out.empty());
    CHECK(none.err == "no events\n");
  }
}

TEST_CASE("gaia events -f sees another process's events within a second", "[e2e][events]") {
  Scratch s;
  auto store_path = s.dir() / "follow.db";
  commit_events(store_path, "Seeded", 1);
  auto out = s.dir() / "follow.out";
  pid_t pid = s.spawn({"--store", store_path.string(), "events", "-f", "-o", "json", "--reason", "Seeded,Live"}, "follow");
  // The follower has started (and printed the listing) once the seeded event shows.
  REQUIRE(wait_for_text(out, "\"Seeded\"", std::chrono::seconds(10)));
  commit_events(store_path, "Live", 3);
  commit_events(store_path, "Ignored", 1);  // Filtered out while following too.
  bool seen = wait_for_text(out, "outside event 2", std::chrono::seconds(1));
  ::kill(pid, SIGTERM);
  int code = wait_exit(pid);
  INFO(Scratch::slurp(out) << Scratch::slurp(s.dir() / "follow.err"));
  CHECK(seen);
  CHECK(code == 0);  // SIGTERM ends a follower cleanly.
  auto lines = json_lines(Scratch::slurp(out));
  REQUIRE(lines.size() == 4);
  int64_t last = 0;
  for (const auto& e : lines) {
    CHECK(e["reason"] != "Ignored");
    CHECK(e["seq"].get<int64_t>() > last);
    last = e["seq"].get<int64_t>();
  }
  CHECK(lines[1]["op"] == "op-outside");

  // --timeout ends a follower by itself; a table follower prints its header first.
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = s.gaia({"--store", store_path.string(), "events", "-f", "--timeout", "300ms", "--reason", "Live"});
  CHECK(r.code == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(r.out.starts_with("TIME"));
  CHECK(r.out.find("outside event 1") != std::string::npos);
  RunResult bad = s.gaia({"--store", store_path.string(), "events", "--timeout", "1s"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("--timeout only applies with --follow") != std::string::npos);
}

TEST_CASE("gaia events --retention bounds the timeline for every later command", "[e2e][events]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "4"});
  auto before = events_json(s);
  REQUIRE(before.size() >= 2);
  RunResult set = ok(s, {"events", "--retention", "3"});
  CHECK(set.out.find("event retention set to 3 (was 100000)") != std::string::npos);
  auto after = events_json(s);
  REQUIRE(after.size() == 3);
  CHECK(after.back()["reason"] == "RetentionChanged");
  CHECK(after.front()["seq"].get<int64_t>() == before.back()["seq"].get<int64_t>() - 1);

  // Later commands (other processes) keep the bound: only the newest 3 remain.
  ok(s, {"node", "cordon", "node-1"});
  ok(s, {"node", "uncordon", "node-1"});
  auto later = events_json(s);
  REQUIRE(later.size() == 3);
  CHECK(later.back()["seq"].get<int64_t>() > after.back()["seq"].get<int64_t>());
  CHECK(later.front()["seq"].get<int64_t>() == later.back()["seq"].get<int64_t>() - 2);
  for (const auto& e : later) CHECK(e["seq"].get<int64_t>() > after.front()["seq"].get<int64_t>());

  RunResult zero = s.gaia({"events", "--retention", "0"});
  CHECK(zero.code == 2);  // A usage error: CLI11 checks the number.
}

TEST_CASE("gaia explain tells why an instance is placed or pending", "[e2e][explain]") {
  Scratch s;
  build_cluster(s);
  SECTION("placed: chosen node against the runner-up") {
    RunResult r = ok(s, {"explain", "small/web/0"});
    CHECK(r.out.starts_with("Instance 0.web.small.default: placed on node-"));
    CHECK(r.out.find("runner-up") != std::string::npos);
    CHECK(r.out.find("TOTAL") != std::string::npos);
    auto j = json::parse(ok(s, {"explain", "0.web.small.default.gaia", "-o", "json"}).out);
    CHECK(j["placed"] == true);
    CHECK(j["instance"] == "0.web.small.default");
    REQUIRE(j.contains("chosen"));
    REQUIRE(j.contains("runner_up"));
    CHECK(j["chosen"]["node"] == j["node"]);
    CHECK(j["nodes"].size() == 3);
  }
  SECTION("pending: per-filter counts") {
    RunResult r = ok(s, {"explain", "0.web.huge.default"});
    CHECK(r.out.starts_with("Instance 0.web.huge.default: pending"));
    CHECK(r.out.find("0/3 nodes fit: 3 ResourceFit (cpu)") != std::string::npos);
    auto j = json::parse(ok(s, {"explain", "huge/web/0", "-o", "json"}).out);
    CHECK(j["placed"] == false);
    REQUIRE(j["failing"].size() == 1);
    CHECK(j["failing"][0]["filter"] == "ResourceFit");
    CHECK(j["failing"][0]["nodes"] == 3);
  }
  SECTION("--node: that node's failing filters only") {
    RunResult r = ok(s, {"explain", "huge/web/0", "--node", "node-2"});
    CHECK(r.out.find("node-2") != std::string::npos);
    CHECK(r.out.find("node-1 ") == std::string::npos);
    CHECK(r.out.find("ResourceFit: cpu") != std::string::npos);
  }
  SECTION("unknown names get suggestions") {
    RunResult r = s.gaia({"explain", "0.wbe.small.default"});
    CHECK(r.code == 1);
    CHECK(r.err.find("no instance '0.wbe.small.default'") != std::string::npos);
    CHECK(r.err.find("did you mean 0.web.small.default?") != std::string::npos);
    RunResult app = s.gaia({"explain", "small"});
    CHECK(app.code == 1);
    CHECK(app.err.find("instances of app small: 0.web.small.default") != std::string::npos);
    RunResult node = s.gaia({"explain", "small/web/0", "--node", "node-9"});
    CHECK(node.code == 1);
    CHECK(node.err.find("no node 'node-9'") != std::string::npos);
  }
}

TEST_CASE("gaia events -f starts with the last events, like tail -f, and reads only those", "[e2e][events]") {
  Scratch s;
  auto store_path = s.dir() / "many.db";
  const std::string store = store_path.string();
  commit_events(store_path, "Old", 20000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // The recent events are a later millisecond.
  commit_events(store_path, "Recent", 5);
  auto follow = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"-v", "--store", store, "events", "-f", "--timeout", "200ms", "-o", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return expect_exit(s, 0, args);
  };
  // The keys the command read from the store (-v reports them).
  auto keys_read = [](const RunResult& r) {
    auto at = r.err.find(" read(s) of ");
    REQUIRE(at != std::string::npos);
    return std::stol(r.err.substr(at + std::string(" read(s) of ").size()));
  };

  RunResult tail = follow({});
  auto last10 = json_lines(tail.out);
  REQUIRE(last10.size() == 10);
  for (size_t i = 0; i < 10; ++i) CHECK(last10[i]["reason"] == (i < 5 ? "Old" : "Recent"));
  CHECK(last10.back()["message"] == "outside event 4");
  CHECK(keys_read(tail) < 1000);  // Not the 20,005 events of the timeline.

  auto three = json_lines(follow({"--tail", "3"}).out);
  REQUIRE(three.size() == 3);
  CHECK(three[0]["message"] == "outside event 2");
  CHECK(json_lines(follow({"--tail", "0"}).out).empty());
  // Filters pick the last matching ones, however far back they are.
  RunResult old = follow({"--reason", "Old", "--tail", "2"});
  auto old2 = json_lines(old.out);
  REQUIRE(old2.size() == 2);
  CHECK(old2[1]["message"] == "outside event 19999");
  CHECK(keys_read(old) < 1000);

  // --since chooses the start: every event from then on.
  const std::string since = three[0]["time"];
  RunResult from = follow({"--since", since});
  auto recent = json_lines(from.out);
  REQUIRE(recent.size() == 5);
  for (const auto& e : recent) CHECK(e["reason"] == "Recent");
  CHECK(keys_read(from) < 2000);
  // The whole history on request.
  CHECK(json_lines(follow({"--tail", "-1"}).out).size() == 20005);
  // Without -f, --tail is the newest N, as --limit.
  CHECK(json_lines(ok(s, {"--store", store, "events", "--tail", "4", "-o", "json"}).out) ==
        json_lines(ok(s, {"--store", store, "events", "--limit", "4", "-o", "json"}).out));

  // Then only what is new is printed.
  pid_t pid = s.spawn({"--store", store, "events", "-f", "--tail", "1", "-o", "json"}, "live");
  KillOnExit guard(pid);
  auto out = s.dir() / "live.out";
  REQUIRE(wait_for_text(out, "outside event 4", std::chrono::seconds(10)));
  commit_events(store_path, "Live", 2);
  CHECK(wait_for_text(out, "\"Live\"", std::chrono::seconds(5)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGTERM);
  CHECK(guard.wait() == 0);
  auto lines = json_lines(Scratch::slurp(out));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["reason"] == "Recent");
  CHECK(lines[1]["reason"] == "Live");
  CHECK(lines[2]["reason"] == "Live");
}
