// Issue 14.1: a submit moved a shared dependency out from under running apps (hdfs
// 5.2.0 rolled back to 5.1.0 under apps needing ~5.2, exit 0), and the update dropped
// hdfs's `gaia scale` count, deleting 39 of 40 datanodes with their volumes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using json = nlohmann::json;
using namespace gaia::test;

namespace {

// A small app whose one role `role` has `replicas` instances of 100m/64Mi.
std::string main_with(const std::string& role, int replicas) {
  return "function(config, deps, app) {\n  roles: { " + role +
         ": { image: 'x:1', replicas: " + std::to_string(replicas) +
         ", resources: { cpu: '100m', memory: '64Mi' } } },\n  outputs: {},\n}\n";
}

// The catalog: hdfs 5.1.0 and 5.2.0, hbase 2.0.0 on ~5.2, and an old job on ~5.1.
void write_catalog(const Scratch& s) {
  write_app(s, "repo/hdfs-5.1.0", "hdfs", "5.1.0", "", "{}\n", main_with("datanode", 3));
  write_app(s, "repo/hdfs-5.2.0", "hdfs", "5.2.0", "", "{}\n", main_with("datanode", 3));
  write_app(s, "repo/hbase", "hbase", "2.0.0", "dependencies:\n  - name: hdfs\n    version: \"~5.2\"\n", "{}\n",
            main_with("regionserver", 1));
  write_app(s, "oldjob", "oldjob", "1.0.0", "dependencies:\n  - name: hdfs\n    version: \"~5.1\"\n", "{}\n",
            main_with("worker", 1));
  write_app(s, "newjob", "newjob", "1.0.0", "dependencies:\n  - name: hdfs\n    version: \">=5\"\n", "{}\n",
            main_with("worker", 1));
}

// Two pipeline sets of source "ci": set1 holds oldjob (on hdfs ~5.1), set2 hbase (on
// ~5.2). Applies set1, so hdfs 5.1.0 runs, and returns the store.
std::string apply_old_set(const Scratch& s) {
  write_catalog(s);
  write_app(s, "set1/oldjob", "oldjob", "1.0.0", "dependencies:\n  - name: hdfs\n    version: \"~5.1\"\n", "{}\n",
            main_with("worker", 1));
  write_app(s, "set2/hbase", "hbase", "2.0.0", "dependencies:\n  - name: hdfs\n    version: \"~5.2\"\n", "{}\n",
            main_with("regionserver", 1));
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "4", "--cpu", "8", "--memory", "32Gi"});
  ok(s, {"--store", store, "--repo", "repo", "apply", "-f", "set1", "--source", "ci"});
  return store;
}

}  // namespace

TEST_CASE("shared dependencies: a submit that would roll hdfs back under hbase is refused, nothing written",
          "[e2e][submit][resolve]") {
  Scratch s;
  write_catalog(s);
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "4", "--cpu", "8", "--memory", "32Gi"});
  ok(s, {"--store", store, "--repo", "repo", "submit", "repo/hbase"});
  auto st = load_state(store);
  REQUIRE(st.find_app("default", "hdfs"));
  CHECK(st.find_app("default", "hdfs")->version == "5.2.0");

  int64_t before = store_revision(store);
  for (const char* command : {"submit", "plan"}) {
    auto r = s.gaia({"--store", store, "--repo", "repo", command, "oldjob"});
    INFO(command << "\n" << r.out << r.err);
    CHECK(r.code == 1);
    CHECK(r.err.find("oldjob/app.yaml:") != std::string::npos);
    CHECK(r.err.find("hbase@2.0.0 (running) requires ~5.2") != std::string::npos);
    CHECK(r.err.find("instead of the running 5.2.0") != std::string::npos);
  }
  CHECK(store_revision(store) == before);
  CHECK(load_state(store).find_app("default", "hdfs")->version == "5.2.0");

  // A job that accepts what runs reuses it.
  auto reuse = ok(s, {"--store", store, "--repo", "repo", "submit", "newjob", "-o", "json"});
  auto j = json::parse(reuse.out);
  REQUIRE(j["reused"].size() == 1);
  CHECK(j["reused"][0]["name"] == "hdfs");
  CHECK(j["reused"][0]["version"] == "5.2.0");

  // Submitting hdfs 5.1.0 itself is refused too, naming the dependent.
  auto direct = s.gaia({"--store", store, "--repo", "repo", "submit", "repo/hdfs-5.1.0"});
  CHECK(direct.code == 1);
  CHECK(direct.err.find("hdfs@5.1.0 is given to be deployed, which breaks apps running on hdfs: hbase@2.0.0") !=
        std::string::npos);
  CHECK(load_state(store).find_app("default", "hdfs")->version == "5.2.0");
}

TEST_CASE("shared dependencies: an update keeps a gaia scale count and says so", "[e2e][submit][scale]") {
  Scratch s;
  write_catalog(s);
  std::string store = store_path(s);
  ok(s, {"--store", store, "cluster", "create", "--nodes", "4", "--cpu", "8", "--memory", "32Gi"});
  ok(s, {"--store", store, "submit", "repo/hdfs-5.1.0"});
  ok(s, {"--store", store, "scale", "hdfs/datanode", "--replicas", "8"});
  REQUIRE(load_state(store).snapshot.instances.size() == 8);

  // hdfs 5.2.0 says 3 datanodes; the 8 the user asked for stay, and the output says why.
  auto update = ok(s, {"--store", store, "submit", "repo/hdfs-5.2.0"});
  CHECK(update.out.find("scale overrides kept:") != std::string::npos);
  CHECK(update.out.find("hdfs/datanode: 8 replica(s) set by gaia scale (the spec says 3)") != std::string::npos);
  auto st = load_state(store);
  CHECK(st.find_app("default", "hdfs")->version == "5.2.0");
  CHECK(st.find_app("default", "hdfs")->scale.at("datanode") == 8);
  CHECK(st.snapshot.instances.size() == 8);
  for (const auto& i : st.snapshot.instances) CHECK(i.ordinal < 8);

  // The Updated event records it too.
  auto events = ok(s, {"--store", store, "events", "--reason", "Updated", "-o", "json"});
  CHECK(events.out.find("scale overrides kept: datanode: 8 replica(s)") != std::string::npos);

  // --reset follows the spec again: 3 datanodes; the other 5 keep their volumes.
  auto reset = ok(s, {"--store", store, "scale", "hdfs/datanode", "--reset"});
  CHECK(reset.out.find("8 -> 3 replica(s)") != std::string::npos);
  st = load_state(store);
  CHECK(st.find_app("default", "hdfs")->scale.count("datanode") == 0);
  CHECK(st.snapshot.instances.size() == 3);
  auto again = ok(s, {"--store", store, "scale", "hdfs/datanode", "--reset"});
  CHECK(again.out.find("has no scale override") != std::string::npos);
  auto both = s.gaia({"--store", store, "scale", "hdfs/datanode", "--reset", "--replicas", "2"});
  CHECK(both.code == 2);
}

// The ranges of an app that `apply --prune` is about to delete held back the set: a
// pipeline replacing its old job by a new one needing a newer hdfs was refused, naming
// the very job it was pruning. The ranges of an app another source depends on still
// count, since the prune keeps it.
TEST_CASE("shared dependencies: apply --prune may move what only the pruned apps held back", "[e2e][apply][resolve]") {
  Scratch s;
  const std::string store = apply_old_set(s);
  REQUIRE(load_state(store).find_app("default", "hdfs")->version == "5.1.0");

  // Without --prune oldjob stays, and its ~5.1 still refuses the move.
  auto refused = s.gaia({"--store", store, "--repo", "repo", "apply", "-f", "set2", "--source", "ci"});
  CHECK(refused.code == 1);
  CHECK(refused.err.find("oldjob@1.0.0 (running) requires ~5.1") != std::string::npos);
  CHECK(load_state(store).find_app("default", "hdfs")->version == "5.1.0");

  // With --prune oldjob goes, so hdfs moves to 5.2.0 under hbase.
  auto diff = s.gaia({"--store", store, "--repo", "repo", "diff", "-f", "set2", "--source", "ci", "--prune"});
  INFO(diff.out << diff.err);
  CHECK(diff.code == 2);
  CHECK(diff.out.find("- oldjob 1.0.0  prune") != std::string::npos);
  ok(s, {"--store", store, "--repo", "repo", "apply", "-f", "set2", "--source", "ci", "--prune"});
  auto st = load_state(store);
  CHECK(st.find_app("default", "oldjob") == nullptr);
  REQUIRE(st.find_app("default", "hdfs"));
  CHECK(st.find_app("default", "hdfs")->version == "5.2.0");
  REQUIRE(st.find_app("default", "hbase"));
}

TEST_CASE("shared dependencies: apply --prune still honours what another source's app requires", "[e2e][apply][resolve]") {
  Scratch s;
  const std::string store = apply_old_set(s);
  // Another team's job, submitted by hand, runs on the same hdfs 5.1.0.
  write_app(s, "team/report", "report", "1.0.0", "dependencies:\n  - name: hdfs\n    version: \"~5.1\"\n", "{}\n",
            main_with("worker", 1));
  ok(s, {"--store", store, "--repo", "repo", "submit", "team/report"});
  int64_t before = store_revision(store);
  auto refused = s.gaia({"--store", store, "--repo", "repo", "apply", "-f", "set2", "--source", "ci", "--prune"});
  INFO(refused.out << refused.err);
  CHECK(refused.code == 1);
  CHECK(refused.err.find("report@1.0.0 (running) requires ~5.1") != std::string::npos);
  CHECK(store_revision(store) == before);
  CHECK(load_state(store).find_app("default", "hdfs")->version == "5.1.0");
  CHECK(load_state(store).find_app("default", "oldjob") != nullptr);
}
