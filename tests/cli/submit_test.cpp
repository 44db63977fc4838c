// End-to-end tests of `gaia plan`, `gaia submit`, `gaia delete`, `gaia status` and
// `gaia endpoints` with the real binary: the example stack on a cluster, resubmits,
// deletes with dependents, plans that write nothing, --wait timeouts that name each
// blocking instance, 8 concurrent submits on one store, and submits killed with SIGKILL.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "lib/topology.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

std::string examples(const std::string& app) { return examples_dir() + "/" + app; }

// An app with one role `web` of `replicas` instances of `cpu` cores and 1Gi, depending
// on `deps` (names, any version).
void write_app(const Scratch& s, const std::string& name, int replicas, const std::string& cpu,
               const std::vector<std::string>& deps = {}) {
  std::string yaml = fmt::format("name: {}\nversion: 1.0.0\n", name);
  if (!deps.empty()) {
    yaml += "dependencies:\n";
    for (const auto& d : deps) yaml += fmt::format("  - name: {}\n    version: \">=1.0.0\"\n", d);
  }
  s.write("apps/" + name + "/app.yaml", yaml);
  s.write("apps/" + name + "/config.jsonnet", fmt::format("{{ replicas: {} }}\n", replicas));
  s.write("apps/" + name + "/main.jsonnet",
          fmt::format("function(config, deps, app) {{\n"
                      "  roles: {{ web: {{ image: 'nginx:1.25', replicas: config.replicas,\n"
                      "                   resources: {{ cpu: '{}', memory: '1Gi' }} }} }},\n"
                      "  outputs: {{}},\n"
                      "}}\n",
                      cpu));
}

// Every invariant a store must keep whatever happened to the processes writing it:
// instances sit on existing nodes, no node holds more than its capacity, no two
// instances share an address, and each app has exactly the instances its roles ask for
// (an app is all there or absent, never half submitted).
void check_store_invariants(const gaia::ClusterState& st) {
  std::map<std::string, gaia::Resources> used;
  std::set<std::string> addresses;
  for (const auto& i : st.snapshot.instances) {
    INFO(i.key());
    REQUIRE(st.find_app(i.tenant, i.app) != nullptr);
    if (i.node.empty()) continue;
    REQUIRE(st.find_node(i.node) != nullptr);
    used[i.node].cpu_millis += i.request.cpu_millis;
    used[i.node].memory_bytes += i.request.memory_bytes;
    if (!i.address.empty()) CHECK(addresses.insert(i.address).second);
  }
  for (const auto& [node, u] : used) {
    INFO(node);
    CHECK(u.cpu_millis <= st.find_node(node)->capacity.cpu_millis);
    CHECK(u.memory_bytes <= st.find_node(node)->capacity.memory_bytes);
  }
  for (const auto& [id, app] : st.apps) {
    std::set<std::string> want, have;
    for (const auto& r : app.workload.roles)
      for (int k = 0; k < r.replicas; ++k) want.insert(fmt::format("{}.{}.{}.{}", k, r.name, app.name, app.tenant));
    for (const auto& i : st.snapshot.instances)
      if (i.tenant == app.tenant && i.app == app.name) have.insert(i.key());
    INFO(id);
    CHECK(have == want);
  }
}

}  // namespace

TEST_CASE("submit: the example stack on a cluster, resubmit, plan, status, endpoints", "[e2e][submit]") {
  Scratch s;
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "-f", examples_dir() + "/clusters/bigdata-50.yaml"});

  // Plan first: the whole chain, and nothing written.
  int64_t before = store_revision(store);
  auto plan = ok(s, {"--store", store, "plan", examples("web")});
  CHECK(plan.out.find("would place:") != std::string::npos);
  CHECK(plan.out.find("0.server.zookeeper.default") != std::string::npos);
  CHECK(plan.out.find("nothing was written") != std::string::npos);
  auto plan_json = json::parse(ok(s, {"--store", store, "plan", examples("web"), "-o", "json"}).out);
  CHECK(plan_json["dry_run"] == true);
  CHECK(plan_json["apps"].size() == 5);
  CHECK(store_revision(store) == before);
  CHECK(load_state(store).apps.empty());

  auto submit = ok(s, {"--store", store, "submit", examples("web"), "--wait", "--timeout", "60s"});
  CHECK(submit.out.find("ready: every instance of") != std::string::npos);
  auto st = load_state(store);
  CHECK(st.apps.size() == 5);
  for (const auto& [id, app] : st.apps) CHECK(app.status == "Ready");
  for (const auto& i : st.snapshot.instances) {
    CHECK(i.state == gaia::InstanceState::Running);
    CHECK_FALSE(i.address.empty());
  }
  check_store_invariants(st);
  // Dependency order in the timeline: zookeeper is placed before hdfs is submitted.
  {
    auto handle = gaia::SqliteStore::open(store);
    REQUIRE(handle);
    gaia::SystemClock clock;
    gaia::State state(**handle, clock);
    auto events = state.events_after(0);
    REQUIRE(events);
    int64_t zk_scheduled = 0, hdfs_submitted = 0;
    for (const auto& e : *events) {
      if (e.reason == "Scheduled" && e.app == "zookeeper" && !zk_scheduled) zk_scheduled = e.seq;
      if (e.reason == "Submitted" && e.app == "hdfs" && !hdfs_submitted) hdfs_submitted = e.seq;
    }
    CHECK(zk_scheduled > 0);
    CHECK(zk_scheduled < hdfs_submitted);
  }

  // Spark and the trainer reuse hdfs (and say so); the regionservers sit by the data.
  auto more = ok(s, {"--store", store, "submit", examples("spark"), examples("trainer"), "--wait", "--timeout", "60s"});
  CHECK(more.out.find("reuse") != std::string::npos);
  CHECK(more.out.find("hdfs") != std::string::npos);
  st = load_state(store);
  CHECK(st.apps.size() == 7);
  check_store_invariants(st);

  // Resubmitting the unchanged spec writes nothing and says so.
  int64_t settled = store_revision(store);
  auto again = ok(s, {"--store", store, "submit", examples("web")});
  CHECK(again.out.find("no changes") != std::string::npos);
  CHECK(again.out.find("unchanged") != std::string::npos);
  CHECK(store_revision(store) == settled);

  auto status = json::parse(ok(s, {"--store", store, "status", "-o", "json"}).out);
  CHECK(status["nodes"]["total"] == 50);
  CHECK(status["apps"]["by_status"]["Ready"] == 7);
  CHECK(status["events"].size() == 5);
  auto status_text = ok(s, {"--store", store, "status"});
  for (const char* part : {"context:", "store:", "nodes:", "apps:", "instances:", "allocated:", "last 5 events:"})
    CHECK(status_text.out.find(part) != std::string::npos);

  auto ep = json::parse(ok(s, {"--store", store, "endpoints", "hdfs/datanode", "-o", "json"}).out);
  REQUIRE(ep["roles"].size() == 1);
  CHECK(ep["roles"][0]["name"] == "datanode.hdfs.default.gaia");
  CHECK(ep["roles"][0]["addresses"].size() == 3);
  for (const auto& i : ep["roles"][0]["instances"]) {
    CHECK(i["name"].get<std::string>().ends_with(".datanode.hdfs.default.gaia"));
    const auto* node = st.find_node(i["node"].get<std::string>());
    REQUIRE(node);
    // The address is from the node's instance subnet.
    auto prefix = gaia::parse_cidr(node->instance_subnet);
    REQUIRE(prefix);
    CHECK(prefix->contains(*gaia::parse_address(i["address"].get<std::string>())));
    CHECK_FALSE(i["ports"].empty());
  }
  auto ep_text = ok(s, {"--store", store, "endpoints", "zookeeper"});
  CHECK(ep_text.out.find("0.server.zookeeper.default.gaia") != std::string::npos);
  CHECK(ep_text.out.find("server.zookeeper.default.gaia") != std::string::npos);
  auto bad = s.gaia({"--store", store, "endpoints", "hdfs/nosuchrole"});
  CHECK(bad.code == 1);
  CHECK(bad.err.find("datanode") != std::string::npos);
}

TEST_CASE("delete: refuses while dependents exist, cascades dependents first, frees capacity", "[e2e][submit]") {
  Scratch s;
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "2", "--cpu", "4", "--memory", "16Gi"});
  write_app(s, "base", 2, "1");
  write_app(s, "mid", 2, "1", {"base"});
  write_app(s, "top", 1, "1", {"mid"});
  ok(s, {"--store", store, "submit", "apps/top", "--wait", "--timeout", "30s"});
  // A big app waits for the capacity the delete will free.
  write_app(s, "big", 1, "3");
  auto big = ok(s, {"--store", store, "submit", "apps/big"});
  CHECK(big.out.find("not running yet") != std::string::npos);
  CHECK(big.out.find("ResourceFit") != std::string::npos);

  int64_t before = store_revision(store);
  auto refused = s.gaia({"--store", store, "delete", "base"});
  CHECK(refused.code == 1);
  CHECK(refused.err.find("mid, top") != std::string::npos);
  CHECK(refused.err.find("--cascade") != std::string::npos);
  CHECK(store_revision(store) == before);
  auto unknown = s.gaia({"--store", store, "delete", "bsae"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err.find("did you mean base?") != std::string::npos);

  auto cascade = ok(s, {"--store", store, "delete", "base", "--cascade", "-o", "json"});
  auto j = json::parse(cascade.out);
  REQUIRE(j["deleted"].size() == 3);
  CHECK(j["deleted"][0]["name"] == "top");
  CHECK(j["deleted"][1]["name"] == "mid");
  CHECK(j["deleted"][2]["name"] == "base");
  // The freed room went to the pending instance in the same command.
  REQUIRE(j["placed"].size() == 1);
  CHECK(j["placed"][0]["instance"] == "0.web.big.default");
  auto st = load_state(store);
  CHECK(st.apps.size() == 1);
  CHECK(st.find_app("default", "big")->status == "Ready");
  check_store_invariants(st);
}

TEST_CASE("submit --wait: a timeout names each blocking instance and why", "[e2e][submit]") {
  Scratch s;
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "2", "--cpu", "4", "--memory", "16Gi"});
  write_app(s, "huge", 1, "64");
  write_app(s, "front", 2, "1", {"huge"});
  auto r = s.gaia({"--store", store, "submit", "apps/front", "--wait", "--timeout", "1s"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.err.find("still not running after 1s") != std::string::npos);
  CHECK(r.err.find("0.web.huge.default") != std::string::npos);
  CHECK(r.err.find("ResourceFit") != std::string::npos);
  CHECK(r.err.find("0.web.front.default") != std::string::npos);
  CHECK(r.err.find("1.web.front.default") != std::string::npos);
  CHECK(r.err.find("waiting for dependency huge") != std::string::npos);
  CHECK(r.err.find("timed out") == std::string::npos);
  // The submission itself is committed: both apps are there. huge fits nowhere
  // (Degraded: stuck); front waits for it (Progressing: nothing of its own is stuck).
  auto st = load_state(store);
  CHECK(st.apps.size() == 2);
  CHECK(st.find_app("default", "huge")->status == "Degraded");
  CHECK(st.find_app("default", "front")->status == "Progressing");

  // -o json carries the same list.
  auto j = s.gaia({"--store", store, "submit", "apps/front", "--wait", "--timeout", "1s", "-o", "json"});
  CHECK(j.code == 1);
  auto doc = json::parse(j.out);
  CHECK(doc["wait"]["done"] == false);
  CHECK(doc["wait"]["blocking"].size() == 3);

  // A bad timeout is an error before anything is written.
  int64_t before = store_revision(store);
  auto bad = s.gaia({"--store", store, "submit", "apps/front", "--wait", "--timeout", "soon"});
  CHECK(bad.code == 1);
  CHECK(store_revision(store) == before);

  // Without --wait: exit 0, and the pending instances are listed with their reasons.
  write_app(s, "huge2", 1, "64");
  auto nowait = s.gaia({"--store", store, "submit", "apps/huge2"});
  CHECK(nowait.code == 0);
  CHECK(nowait.out.find("1 instance(s) not running yet") != std::string::npos);
  CHECK(nowait.out.find("ResourceFit") != std::string::npos);
}

TEST_CASE("submit: 8 processes at once on one store lose and duplicate nothing", "[e2e][submit][concurrency]") {
  Scratch s;
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "4", "--cpu", "8", "--memory", "32Gi"});
  for (int k = 0; k < 6; ++k) write_app(s, fmt::format("app{}", k), 3, "500m");
  write_app(s, "shared", 4, "500m");
  // Six different apps and the same app twice, all at once.
  std::vector<pid_t> pids;
  for (int k = 0; k < 6; ++k)
    pids.push_back(s.spawn({"--store", store, "submit", fmt::format("apps/app{}", k), "--no-cache"}));
  for (int k = 0; k < 2; ++k) pids.push_back(s.spawn({"--store", store, "submit", "apps/shared", "--no-cache"}));
  for (pid_t p : pids) CHECK(wait_exit(p) == 0);

  auto st = load_state(store);
  CHECK(st.apps.size() == 7);
  CHECK(st.snapshot.instances.size() == 6 * 3 + 4);
  for (const auto& i : st.snapshot.instances) CHECK(i.state == gaia::InstanceState::Running);
  check_store_invariants(st);
  // "shared" was submitted once and found unchanged once: one Submitted event.
  auto store_handle = gaia::SqliteStore::open(store);
  REQUIRE(store_handle);
  gaia::SystemClock clock;
  gaia::State state(**store_handle, clock);
  auto events = state.events_after(0);
  REQUIRE(events);
  int submitted = 0;
  std::set<int64_t> seqs;
  for (const auto& e : *events) {
    if (e.reason == "Submitted" && e.app == "shared") ++submitted;
    CHECK(seqs.insert(e.seq).second);
  }
  CHECK(submitted == 1);
  CHECK(static_cast<int64_t>(seqs.size()) == *seqs.rbegin());  // No gap in the sequence.
}

TEST_CASE("submit: processes killed with SIGKILL leave a consistent store", "[e2e][submit][crash]") {
  Scratch s;
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "6", "--cpu", "16", "--memory", "64Gi", "--ssd", "--racks",
         "2"});
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay(0, 1200);
  int killed = 0;
  for (int round = 0; round < 6; ++round) {
    // Alternate replica counts so rounds update the app (replace instances), not only add.
    pid_t pid = s.spawn({"--store", store, "submit", examples("web"), "--set", fmt::format("replicas={}", 2 + round % 3),
                          "--no-cache"});
    std::this_thread::sleep_for(std::chrono::milliseconds(delay(rng)));
    if (::kill(pid, SIGKILL) == 0) ++killed;
    wait_exit(pid);
    auto integrity = gaia::SqliteStore::open(store);
    REQUIRE(integrity);
    auto check = (*integrity)->integrity_check();
    INFO((check ? std::string() : check.error().to_string()));
    REQUIRE(check);
    check_store_invariants(load_state(store));
  }
  CHECK(killed > 0);
  // The store still works: a full submit completes on top of whatever the kills left.
  ok(s, {"--store", store, "submit", examples("web"), "--wait", "--timeout", "60s"});
  auto st = load_state(store);
  check_store_invariants(st);
  for (const auto& [id, app] : st.apps) CHECK(app.status == "Ready");
}
