// End-to-end tests of `gaia sim usage`, `gaia sim fail` and `gaia sim options` with the
// real binary: reclamation lending a prod instance's unused memory to nonprod work,
// a spike killing that work and requeueing it, restarts with back-off until retry_times
// runs out, internal failures that do not count, and user errors that leave the store
// unchanged.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

struct Sim {
  Scratch s;
  StoreCli cli{s};

  RunResult run(const std::vector<std::string>& args) const { return cli.run(args); }
  RunResult ok(const std::vector<std::string>& args) const { return cli.ok(args); }
  json instances() const { return json::parse(ok({"get", "instances", "-o", "json"}).out); }
  json instance(const std::string& key) const {
    for (const auto& i : instances()) {
      std::string k = fmt::format("{}.{}.{}.{}", i.value("ordinal", 0), i.value("role", ""), i.value("app", ""),
                                  i.value("tenant", ""));
      if (i.value("name", k) == key || k == key) return i;
    }
    FAIL("no instance " << key);
    return {};
  }
  std::vector<json> events(const std::string& reason) const {
    return json_lines(ok({"events", "-o", "json", "--reason", reason}).out);
  }

  // An app with one role of `replicas` instances: `cpu` cores and `memory`, restart
  // policy with a short back-off so restarts happen within the test.
  void app(const std::string& name, const std::string& priority, int replicas, const std::string& cpu,
           const std::string& memory, int retry_times = 2) const {
    s.write("apps/" + name + "/app.yaml", fmt::format("name: {}\nversion: 1.0.0\npriority: {}\n", name, priority));
    s.write("apps/" + name + "/config.jsonnet", "{}\n");
    s.write("apps/" + name + "/main.jsonnet",
            fmt::format("function(config, deps, app) {{\n"
                        "  roles: {{ main: {{ image: 'busybox:1', replicas: {},\n"
                        "                    resources: {{ cpu: '{}', memory: '{}' }},\n"
                        "                    restart: {{ retry_times: {}, backoff: '100ms' }} }} }},\n"
                        "  outputs: {{}},\n"
                        "}}\n",
                        replicas, cpu, memory, retry_times));
  }

  // One node of 8 cpu / 10Gi.
  void cluster() const {
    s.write("cluster.yaml", "name: sim\nnodes:\n  - name: n1\n    capacity: {cpu: 8, memory: 10Gi}\n");
    ok({"cluster", "create", "-f", "cluster.yaml"});
  }
};

const std::string kDb = "0.main.db.default";
const std::string kJob = "0.main.batch.default";

}  // namespace

TEST_CASE("gaia sim usage: reclaimed memory goes to nonprod work until a spike takes it back", "[e2e][sim]") {
  Sim x;
  x.cluster();
  x.app("db", "prod", 1, "2", "8Gi");
  x.app("batch", "nonprod", 1, "1", "4Gi");
  x.ok({"sim", "options", "--reclaim-startup", "0s"});
  x.ok({"submit", "apps/db"});

  // Without a model nothing is observed and the batch job does not fit (8Gi of 10Gi held).
  x.ok({"submit", "apps/batch"});
  CHECK(x.instance(kJob)["state"] == "Pending");

  auto set = x.ok({"sim", "usage", "db", "--cpu", "0.25", "--memory", "0.25"});
  CHECK_THAT(set.out, Catch::Contains("usage of default/db: cpu 25%, memory 25%"));
  CHECK_THAT(set.out, Catch::Contains("Reclaimed"));
  auto db = x.instance(kDb);
  REQUIRE(db.contains("reservation"));
  CHECK(db["usage"]["memory_bytes"] == 2LL * 1024 * 1024 * 1024);
  CHECK(db["reservation"]["memory_bytes"].get<int64_t>() < 3LL * 1024 * 1024 * 1024);
  // The pending nonprod job was placed on the reclaimed memory in the same run.
  CHECK(x.instance(kJob)["state"] == "Running");
  CHECK(x.events("Reclaimed").size() == 1);
  CHECK(x.events("UsageModel").size() == 1);

  auto list = x.ok({"sim", "usage", "--list"});
  CHECK_THAT(list.out, Catch::Contains("default/db"));
  CHECK_THAT(list.out, Catch::Contains("25%"));
  auto model = json::parse(x.ok({"sim", "usage", "--list", "-o", "json"}).out);
  CHECK(model["default/db"]["memory"] == 0.25);

  // A memory spike of the prod instance: the node runs out, the nonprod job is killed
  // and requeued, and the reservation snaps back so it is not placed there again.
  auto spike = x.ok({"sim", "usage", "db", "--spike-memory", "1.0"});
  CHECK_THAT(spike.out, Catch::Contains("Preempted"));
  CHECK_THAT(spike.out, Catch::Contains("SnappedBack"));
  auto job = x.instance(kJob);
  CHECK(job["state"] == "Pending");
  // With no start-up hold (0s) the memory reservation is back at the full 8Gi request.
  CHECK(x.instance(kDb)["reservation"]["memory_bytes"] == 8LL * 1024 * 1024 * 1024);
  auto preempted = x.events("Preempted");
  REQUIRE(preempted.size() == 1);
  CHECK(preempted[0]["type"] == "Warning");
  CHECK_THAT(preempted[0]["message"].get<std::string>(), Catch::Contains("node n1 out of memory"));
  CHECK(x.instance(kDb)["state"] == "Running");

  // The spike ends: with no start-up hold the reservation decays again and the job returns.
  x.ok({"sim", "usage", "db", "--end-spike"});
  CHECK(x.instance(kJob)["state"] == "Running");

  // Setting the same usage again runs the controllers, which find nothing to do.
  auto before = x.ok({"events", "-o", "json"}).out;
  auto same = x.ok({"sim", "usage", "db", "--cpu", "0.25"});
  CHECK_THAT(same.out, Catch::Contains("(unchanged)"));
  CHECK(x.ok({"events", "-o", "json"}).out == before);

  x.ok({"sim", "usage", "--clear"});
  CHECK(json::parse(x.ok({"sim", "usage", "--list", "-o", "json"}).out).empty());
}

TEST_CASE("gaia sim usage: cpu shortage throttles and never kills", "[e2e][sim]") {
  Sim x;
  x.cluster();
  x.app("batch", "nonprod", 2, "3", "1Gi");
  x.ok({"submit", "apps/batch"});
  auto r = x.ok({"sim", "usage", "batch", "--cpu", "1.5"});  // 9 cores used of 8.
  CHECK_THAT(r.out, Catch::Contains("Throttled"));
  int throttled = 0;
  for (const auto& i : x.instances()) {
    CHECK(i["state"] == "Running");
    throttled += i.value("throttled", false);
  }
  CHECK(throttled == 1);
  auto back = x.ok({"sim", "usage", "batch", "--cpu", "0.5"});
  CHECK_THAT(back.out, Catch::Contains("Unthrottled"));
}

TEST_CASE("gaia sim usage: errors leave the store unchanged", "[e2e][sim]") {
  Sim x;
  x.cluster();
  x.app("db", "prod", 1, "1", "1Gi");
  x.ok({"submit", "apps/db"});
  auto before = x.ok({"get", "instances", "-o", "json"}).out;
  auto model = x.ok({"sim", "usage", "--list", "-o", "json"}).out;

  auto unknown = x.run({"sim", "usage", "dbb", "--cpu", "0.5"});
  CHECK(unknown.code == 1);
  CHECK_THAT(unknown.err, Catch::Contains("no app 'dbb'"));
  CHECK_THAT(unknown.err, Catch::Contains("did you mean db?"));
  auto role = x.run({"sim", "usage", "db/mian", "--cpu", "0.5"});
  CHECK(role.code == 1);
  CHECK_THAT(role.err, Catch::Contains("did you mean db/main?"));
  auto inst = x.run({"sim", "usage", "7.main.db.default", "--cpu", "0.5"});
  CHECK(inst.code == 1);
  CHECK_THAT(inst.err, Catch::Contains("no instance"));
  CHECK(x.run({"sim", "usage", "db", "--cpu", "20"}).code == 2);
  CHECK(x.run({"sim", "usage", "db", "--cpu", "-1"}).code == 2);
  CHECK(x.run({"sim", "usage", "db"}).code == 2);
  CHECK(x.run({"sim", "usage", "--cpu", "0.5"}).code == 2);
  CHECK(x.run({"sim", "usage", "db", "--cpu", "0.5", "--for", "10s"}).code == 2);
  CHECK(x.run({"sim", "options", "--reclaim-margin", "-0.5"}).code == 2);
  auto fail_unknown = x.run({"sim", "fail", "0.main.dbx.default"});
  CHECK(fail_unknown.code == 1);
  CHECK_THAT(fail_unknown.err, Catch::Contains("did you mean 0.main.db.default?"));

  CHECK(x.ok({"get", "instances", "-o", "json"}).out == before);
  CHECK(x.ok({"sim", "usage", "--list", "-o", "json"}).out == model);
}

TEST_CASE("gaia sim fail: restarts with back-off until retry_times, then the role fails", "[e2e][sim]") {
  Sim x;
  x.cluster();
  x.app("db", "prod", 1, "1", "1Gi", /*retry_times=*/2);
  x.ok({"submit", "apps/db"});

  auto first = x.ok({"sim", "fail", kDb, "--reason", "exit code 3", "--wait", "--timeout", "30s"});
  CHECK_THAT(first.out, Catch::Contains("BackOff"));
  CHECK_THAT(first.out, Catch::Contains("Restarted"));
  auto db = x.instance(kDb);
  CHECK(db["state"] == "Running");
  CHECK(db["restarts"] == 1);
  CHECK(db["failure"] == "exit code 3");
  CHECK(x.events("Failed").size() == 1);

  // An internal failure is restarted without spending a retry.
  x.ok({"sim", "fail", kDb, "--internal", "--wait", "--timeout", "30s"});
  CHECK(x.instance(kDb)["restarts"] == 1);
  CHECK(x.instance(kDb)["state"] == "Running");

  x.ok({"sim", "fail", kDb, "--wait", "--timeout", "30s"});
  CHECK(x.instance(kDb)["restarts"] == 2);
  // The third counted failure is one too many for retry_times 2.
  auto last = x.ok({"sim", "fail", kDb, "--reason", "segfault", "--wait", "--timeout", "30s"});
  CHECK_THAT(last.out, Catch::Contains("role db/main failed"));
  CHECK(x.instance(kDb)["state"] == "Failed");
  auto apps = x.ok({"get", "apps"});
  CHECK_THAT(apps.out, Catch::Contains("Failed"));
  auto describe = x.ok({"describe", "app", "db"});
  CHECK_THAT(describe.out, Catch::Contains("Failed roles"));
  CHECK_THAT(describe.out, Catch::Contains("segfault"));
  auto status = x.ok({"status", "-o", "json"});
  CHECK(json::parse(status.out)["apps"]["by_status"]["Failed"] == 1);

  // Failing it again is an error: it is not running.
  auto again = x.run({"sim", "fail", kDb});
  CHECK(again.code == 1);
  CHECK_THAT(again.err, Catch::Contains("not running"));
}

TEST_CASE("gaia sim fail: without --wait the restart time is set and reported", "[e2e][sim]") {
  Sim x;
  x.cluster();
  x.app("db", "prod", 1, "1", "1Gi");
  x.ok({"submit", "apps/db"});
  x.ok({"sim", "options", "--max-backoff", "1h"});
  auto r = x.ok({"sim", "fail", kDb, "-o", "json"});
  auto j = json::parse(r.out);
  CHECK(j["state"] == "Failed");
  CHECK(j.contains("restart_at"));
  auto opts = json::parse(x.ok({"sim", "options", "-o", "json"}).out);
  CHECK(opts["max_backoff_ms"] == 3'600'000);
}
