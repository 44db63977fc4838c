// End-to-end tests of `gaia apply`, `gaia diff` and `gaia plan --out` through the real
// binary, driving the flow a CI pipeline runs on a folder of specs kept in git: apply,
// change a spec, diff (exit 2), apply, diff (exit 0), remove specs and apply --prune
// (a dependency still used by another app is kept, a submitted app is never pruned),
// concurrent applies from two processes, --check-revision, saved plans and drift,
// secrets masked, broken specs failing with exit 1.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The example stack web needs, copied into <scratch>/specs like a repo's folder of specs.
void copy_stack(const Scratch& s) {
  fs::create_directories(s.dir() / "specs");
  for (const char* app : {"zookeeper", "hdfs", "hbase", "kafka", "web"})
    fs::copy(examples_dir() + "/" + app, s.dir() / "specs" / app, fs::copy_options::recursive);
}

// The store-bound runner, plus the two calls every case here makes.
struct Cli : StoreCli {
  using StoreCli::StoreCli;
  void cluster() const {
    expect(0, {"cluster", "create", "-f", examples_dir() + "/clusters/bigdata-50.yaml"});
  }
  std::string instances() const { return expect(0, {"get", "instances", "-o", "json"}).out; }
};

void edit(const Scratch& s, const std::string& rel, const std::string& from, const std::string& to) {
  fs::path p = s.dir() / rel;
  std::string text = Scratch::slurp(p);
  auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

std::set<std::string> app_names(const gaia::ClusterState& st) {
  std::set<std::string> out;
  for (const auto& [id, a] : st.apps) out.insert(a.name);
  return out;
}

const json* app_entry(const json& j, const std::string& name) {
  for (const auto& a : j["apps"])
    if (a["name"] == name) return &a;
  return nullptr;
}

}  // namespace

TEST_CASE("apply, change, diff, apply, diff, remove, prune: the flow of a CI pipeline", "[apply][e2e]") {
  Scratch s;
  copy_stack(s);
  Cli g{s};
  g.cluster();

  // Nothing deployed yet: the diff lists five deploys and exits 2.
  auto first = g.expect(2, {"diff", "-f", "specs"});
  for (const char* app : {"zookeeper", "hdfs", "hbase", "kafka", "web"})
    CHECK(first.out.find(fmt::format("+ {} ", app)) != std::string::npos);
  CHECK(first.out.find("summary: 5 to deploy") != std::string::npos);

  auto applied = json::parse(g.expect(0, {"apply", "-f", "specs", "-o", "json", "--wait", "--timeout", "60s"}).out);
  CHECK(applied["summary"]["deploy"] == 5);
  CHECK(applied["changed"] == true);
  CHECK(applied["wait"]["done"] == true);
  std::string source = applied["source"];
  CHECK(source == "dir:" + fs::canonical(s.dir() / "specs").string());
  auto st = g.load();
  CHECK(app_names(st) == std::set<std::string>{"zookeeper", "hdfs", "hbase", "kafka", "web"});
  for (const auto& [id, a] : st.apps) CHECK(a.source == source);

  // A second apply changes nothing and writes nothing, not even an event.
  int64_t revision = st.revision, seq = st.seq;
  auto again = g.expect(0, {"apply", "-f", "specs"});
  CHECK(again.out.find("no changes") != std::string::npos);
  CHECK(g.load().revision == revision);
  CHECK(g.load().seq == seq);
  g.expect(0, {"diff", "-f", "specs"});

  // Change a spec as a merge would: four kafka brokers, a new session secret.
  edit(s, "specs/kafka/config.jsonnet", "gaia.config('kafka.brokers', 3)", "gaia.config('kafka.brokers', 4)");
  edit(s, "specs/web/config.jsonnet", "'change-me'", "'s3cret-rotated-42'");
  auto diff = g.expect(2, {"diff", "-f", "specs"});
  CHECK(diff.out.find("~ kafka 3.6.0") != std::string::npos);
  CHECK(diff.out.find("replicas: 3 -> 4") != std::string::npos);
  CHECK(diff.out.find("(secret, changed)") != std::string::npos);
  CHECK(diff.out.find("s3cret-rotated-42") == std::string::npos);
  CHECK(diff.out.find("change-me") == std::string::npos);
  CHECK(diff.out.find("= zookeeper 3.8.1") != std::string::npos);
  auto diff_json = g.expect(2, {"diff", "-f", "specs", "-o", "json"});
  CHECK(diff_json.out.find("s3cret-rotated-42") == std::string::npos);
  CHECK(diff_json.out.find("change-me") == std::string::npos);
  auto dj = json::parse(diff_json.out);
  CHECK(dj["changed"] == true);
  CHECK(dj["summary"]["update"] == 2);
  CHECK(dj["revision"] == g.load().revision);
  const json* kafka = app_entry(dj, "kafka");
  REQUIRE(kafka);
  CHECK((*kafka)["action"] == "update");
  bool found = false;
  for (const auto& c : (*kafka)["changes"])
    if (c["path"] == "spec.roles.broker.replicas") {
      found = true;
      CHECK(c["before"] == 3);
      CHECK(c["after"] == 4);
    }
  CHECK(found);
  CHECK((*kafka)["instances"]["added"] == json::array({"3.broker.kafka.default"}));

  // apply --dry-run is the same decision, and writes nothing.
  auto dry = json::parse(g.expect(0, {"apply", "-f", "specs", "--dry-run", "-o", "json"}).out);
  CHECK(dry["apps"] == dj["apps"]);
  CHECK(dry["dry_run"] == true);
  CHECK(g.load().revision == revision);

  g.expect(0, {"apply", "-f", "specs", "--wait", "--timeout", "60s"});
  g.expect(0, {"diff", "-f", "specs"});
  CHECK(g.load().find_app("default", "kafka")->workload.roles[0].replicas == 4);

  // A submitted app that uses kafka, and another that uses nothing of the set.
  write_app(s, "other/reporter", "reporter", "1.0.0",
            "dependencies:\n  - name: kafka\n    version: \"^3.4\"\n    import: [bootstrap_servers]\n");
  write_app(s, "other/manual", "manual", "1.0.0");
  g.expect(0, {"submit", "other/reporter"});
  g.expect(0, {"submit", "other/manual"});

  // Remove web and kafka from the folder: web is pruned, kafka is kept for reporter,
  // reporter and manual (created by submit) are never touched.
  fs::remove_all(s.dir() / "specs" / "web");
  fs::remove_all(s.dir() / "specs" / "kafka");
  // Without --prune, leaving the set deletes nothing: no changes.
  auto without_prune = g.expect(0, {"diff", "-f", "specs"});
  CHECK(without_prune.out.find("- web") == std::string::npos);
  auto prune_diff = g.expect(2, {"diff", "-f", "specs", "--prune"});
  CHECK(prune_diff.out.find("- web 1.4.2  prune") != std::string::npos);
  CHECK(prune_diff.out.find("! kafka 3.6.0  kept, not pruned: reporter still depends on it") != std::string::npos);
  std::string before = g.instances();
  CHECK(g.load().find_app("default", "web"));  // The diff wrote nothing.
  auto pruned = json::parse(g.expect(0, {"apply", "-f", "specs", "--prune", "-o", "json"}).out);
  CHECK(pruned["summary"]["prune"] == 1);
  CHECK(pruned["summary"]["keep"] == 1);
  st = g.load();
  CHECK(app_names(st) == std::set<std::string>{"zookeeper", "hdfs", "hbase", "kafka", "reporter", "manual"});
  for (const auto& i : st.snapshot.instances) CHECK(i.app != "web");
  CHECK(g.instances() != before);
  // Idempotent: the kept app stays kept, nothing is written.
  revision = g.load().revision;
  auto second_prune = g.expect(0, {"apply", "-f", "specs", "--prune"});
  CHECK(second_prune.out.find("no changes") != std::string::npos);
  CHECK(g.load().revision == revision);
  auto events = g.expect(0, {"events", "--app", "web", "-o", "json"});
  CHECK(events.out.find("\"Pruned\"") != std::string::npos);
}

TEST_CASE("apply --check-revision refuses over a store that moved, and leaves it unchanged", "[apply][e2e]") {
  Scratch s;
  write_app(s, "specs/a", "a", "1.0.0");
  write_app(s, "specs/b", "b", "1.0.0");
  Cli g{s};
  g.cluster();
  auto planned = json::parse(g.expect(0, {"plan", "-f", "specs", "-o", "json"}).out);
  int64_t revision = planned["revision"];
  CHECK(revision == g.load().revision);
  // Someone else writes in between.
  write_app(s, "elsewhere/c", "c", "1.0.0");
  g.expect(0, {"submit", "elsewhere/c"});
  std::string before = g.instances();
  int64_t moved = g.load().revision;
  auto refused = g.expect(1, {"apply", "-f", "specs", "--check-revision", std::to_string(revision)});
  CHECK(refused.err.find(fmt::format("the store is at revision {}, not {}", moved, revision)) != std::string::npos);
  CHECK(refused.err.find("hint:") != std::string::npos);
  CHECK(g.instances() == before);
  CHECK(g.load().revision == moved);
  // At the current revision it applies.
  g.expect(0, {"apply", "-f", "specs", "--check-revision", std::to_string(moved)});
  CHECK(app_names(g.load()) == std::set<std::string>{"a", "b", "c"});
}

TEST_CASE("a saved plan applies exactly, and refuses after a spec or the store changed", "[apply][e2e]") {
  Scratch s;
  write_app(s, "specs/a", "a", "1.0.0", "", "{ replicas: 2 }\n",
            "function(config, deps, app) { roles: { web: { image: 'nginx:1.25', replicas: config.replicas,"
            " resources: { cpu: '1', memory: '1Gi' } } }, outputs: {} }\n");
  write_app(s, "specs/b", "b", "1.0.0");
  Cli g{s};
  g.cluster();

  auto planned = g.expect(0, {"plan", "-f", "specs", "--out", "plan.json"});
  CHECK(planned.out.find("plan saved to plan.json") != std::string::npos);
  CHECK(planned.out.find("+ a 1.0.0") != std::string::npos);
  auto saved = json::parse(Scratch::slurp(s.dir() / "plan.json"));
  CHECK(saved["format"] == "gaia-plan/v1");
  CHECK(saved["revision"] == g.load().revision);
  CHECK(saved["inputs"].size() >= 6);
  CHECK(app_names(g.load()).empty());  // Planning writes nothing.

  // Applied as reviewed, even though the spec on disk would now render differently?
  // No: a changed input is drift and is refused.
  edit(s, "specs/a/config.jsonnet", "replicas: 2", "replicas: 5");
  std::string before = g.instances();
  auto drift = g.expect(1, {"apply", "plan.json"});
  CHECK(drift.err.find("specs/a/config.jsonnet changed") != std::string::npos);
  CHECK(drift.err.find("plan again") != std::string::npos);
  CHECK(g.instances() == before);

  // Re-planned, it applies, with the records of the plan.
  g.expect(0, {"plan", "-f", "specs", "--out", "plan.json"});
  auto applied = json::parse(g.expect(0, {"apply", "plan.json", "-o", "json"}).out);
  CHECK(applied["summary"]["deploy"] == 2);
  CHECK(g.load().find_app("default", "a")->workload.roles[0].replicas == 5);
  // Applying it again: the store moved since the plan was made.
  auto stale = g.expect(1, {"apply", "plan.json"});
  CHECK(stale.err.find("the store is at revision") != std::string::npos);
  // A plan combined with other arguments is refused.
  g.expect(1, {"apply", "plan.json", "-f", "specs"});
  // A new app in the folder is drift too.
  g.expect(0, {"plan", "-f", "specs", "--out", "plan2.json"});
  write_app(s, "specs/c", "c", "1.0.0");
  auto added = g.expect(1, {"apply", "plan2.json"});
  CHECK(added.err.find("the set now holds specs/c") != std::string::npos);
  // A plan saved inside a spec directory is not an input of itself.
  g.expect(0, {"plan", "-f", "specs", "--out", "specs/a/plan.json"});
  auto inside = json::parse(g.expect(0, {"apply", "specs/a/plan.json", "-o", "json"}).out);
  CHECK(inside["summary"]["deploy"] == 1);
  CHECK(app_names(g.load()) == std::set<std::string>{"a", "b", "c"});
}

TEST_CASE("diff and apply fail with exit 1 and a located error on a broken spec", "[apply][e2e]") {
  Scratch s;
  write_app(s, "specs/a", "a", "1.0.0");
  write_app(s, "specs/bad", "bad", "1.0.0", "", "{ replicas: 1 \n");  // Jsonnet syntax error.
  Cli g{s};
  g.cluster();
  std::string before = g.instances();
  auto diff = g.expect(1, {"diff", "-f", "specs"});
  CHECK(diff.err.find("specs/bad/config.jsonnet:") != std::string::npos);
  CHECK(diff.out.empty());
  auto apply = g.expect(1, {"apply", "-f", "specs"});
  CHECK(apply.err.find("specs/bad/config.jsonnet:") != std::string::npos);
  CHECK(g.instances() == before);
  auto github = g.expect(1, {"diff", "-f", "specs", "--error-format", "github"});
  CHECK(github.err.find("::error file=specs/bad/config.jsonnet") != std::string::npos);
  // diff's usage errors are errors (1), never "changes" (2).
  g.expect(1, {"diff", "-f", "specs/a", "--no-such-flag"});
  g.expect(1, {"diff", "-f", "specs/a", "-o", "xml"});
  g.expect(1, {"diff", "-f", "missing"});
  // apply's usage errors are 2, as everywhere else.
  g.expect(2, {"apply"});
  g.expect(2, {"apply", "-f", "specs/a", "--no-such-flag"});
}

TEST_CASE("two processes applying at once never interleave: both converge", "[apply][e2e]") {
  Scratch s;
  for (int k = 0; k < 4; ++k) write_app(s, fmt::format("specs/app{}", k), fmt::format("app{}", k), "1.0.0");
  write_app(s, "team2/other", "other", "1.0.0");
  Cli g{s};
  g.cluster();
  // Two pipelines apply the same folder and a third applies another one, all at once.
  std::vector<pid_t> pids;
  pids.push_back(s.spawn({"--store", g.store, "apply", "-f", "specs"}, "p1"));
  pids.push_back(s.spawn({"--store", g.store, "apply", "-f", "specs"}, "p2"));
  pids.push_back(s.spawn({"--store", g.store, "apply", "-f", "team2"}, "p3"));
  for (size_t k = 0; k < pids.size(); ++k) {
    int code = wait_exit(pids[k]);
    INFO(Scratch::slurp(s.dir() / fmt::format("p{}.out", k + 1)) << Scratch::slurp(s.dir() / fmt::format("p{}.err", k + 1)));
    CHECK(code == 0);
  }
  auto st = g.load();
  CHECK(app_names(st) == std::set<std::string>{"app0", "app1", "app2", "app3", "other"});
  CHECK(st.snapshot.instances.size() == 5);
  // Each app was submitted once: the loser of a race re-decided and found it deployed.
  auto events = json::parse("[" + [&] {
    std::string lines = g.expect(0, {"events", "--reason", "Submitted", "-o", "json"}).out, joined;
    for (size_t at = 0, nl; at < lines.size(); at = nl + 1) {
      nl = lines.find('\n', at);
      if (nl == std::string::npos) nl = lines.size();
      if (nl > at) joined += (joined.empty() ? "" : ",") + lines.substr(at, nl - at);
    }
    return joined;
  }() + "]");
  CHECK(events.size() == 5);
  // And the store is at rest: another apply of either folder changes nothing.
  g.expect(0, {"diff", "-f", "specs"});
  g.expect(0, {"diff", "-f", "team2"});

  // Two pipelines holding the same --check-revision: exactly one applies, the other is
  // refused clearly and writes nothing.
  write_app(s, "specs/app4", "app4", "1.0.0");
  write_app(s, "team2/other2", "other2", "1.0.0");
  std::string revision = std::to_string(g.load().revision);
  pid_t a = s.spawn({"--store", g.store, "apply", "-f", "specs", "--check-revision", revision}, "c1");
  pid_t b = s.spawn({"--store", g.store, "apply", "-f", "team2", "--check-revision", revision}, "c2");
  int ca = wait_exit(a), cb = wait_exit(b);
  std::string ea = Scratch::slurp(s.dir() / "c1.err"), eb = Scratch::slurp(s.dir() / "c2.err");
  INFO(ea << eb);
  CHECK(std::set<int>{ca, cb} == std::set<int>{0, 1});
  CHECK((ca == 1 ? ea : eb).find("--check-revision: the store is at revision") != std::string::npos);
  auto names = app_names(g.load());
  CHECK(names.count("app4") + names.count("other2") == 1);
}
