// End-to-end error messages of the real gaia binary: each bad input gets a golden file
// under tests/golden/cli/ holding the exact stderr (scratch paths replaced by
// "<scratch>"), plus checks of the parts that matter most, so a reviewer sees what a
// user sees and a change of wording is a reviewable diff (GAIA_UPDATE_GOLDEN=1).

#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <fstream>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;

namespace {

// A main.jsonnet for app `q` that reads `deps.p.<field>` into an env variable.
std::string main_reading_dep(const std::string& field) {
  return "function(config, deps, app) {\n"
         "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '1Gi' },\n"
         "                  env: { P: deps.p." + field + " } } },\n"
         "  outputs: {},\n"
         "}\n";
}

std::string main_exporting_url() {
  return "function(config, deps, app) {\n"
         "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '1Gi' } } },\n"
         "  outputs: { url: 'http://p' },\n"
         "}\n";
}

// A repository with zookeeper 3.6.4 and 3.8.1, like examples/, for resolution errors.
void write_zookeepers(const Scratch& s) {
  write_app(s, "repo/zookeeper", "zookeeper", "3.8.1");
  write_app(s, "repo/zookeeper-3.6", "zookeeper", "3.6.4");
}

// The processes whose parent is `parent`, read from /proc/PID/stat (the field after the
// state letter, which follows the command name in parentheses).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) continue;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// Whether `pid` still exists as a process that is not a zombie (an orphan re-parented
// to an init that does not reap would stay a zombie, which uses no CPU).
bool pid_alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return false;
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

}  // namespace

TEST_CASE("e2e errors: broken YAML in app.yaml gives file:line:col", "[e2e]") {
  Scratch s;
  write_app(s, "by", "by", "[1.0.0");
  auto r = expect_error_golden(s, "broken_yaml", {"render", "by"});
  CHECK_THAT(r.err, Catch::StartsWith("by/app.yaml:3:1: error: invalid YAML"));
  CHECK(r.out.empty());
}

TEST_CASE("e2e errors: Jsonnet syntax error keeps the Jsonnet location", "[e2e]") {
  Scratch s;
  write_app(s, "syn", "syn", "1.0.0", "", "local x = ;\n{}\n");
  auto r = expect_error_golden(s, "jsonnet_syntax", {"render", "syn"});
  CHECK_THAT(r.err, Catch::StartsWith("syn/config.jsonnet:1:11: error:"));
}

TEST_CASE("e2e errors: Jsonnet runtime error keeps file:line:col and the trace", "[e2e]") {
  Scratch s;
  write_app(s, "rt", "rt", "1.0.0", "", "{ port: 8080 }\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '1Gi' },\n"
            "                  replicas: error 'no replicas for port ' + config.port } },\n"
            "  outputs: {},\n"
            "}\n");
  auto r = expect_error_golden(s, "jsonnet_runtime", {"render", "rt"});
  CHECK_THAT(r.err, Catch::StartsWith("rt/main.jsonnet:3:29: error: no replicas for port 8080"));
}

TEST_CASE("e2e errors: wrong types in a role are all reported", "[e2e]") {
  Scratch s;
  write_app(s, "wt", "wt", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '1Gi' },\n"
            "                  replicas: 'three', env: { A: 1 }, ports: 'http', kind: 'daemon' } },\n"
            "  outputs: {},\n"
            "}\n");
  auto r = expect_error_golden(s, "wrong_types", {"render", "wt"});
  CHECK_THAT(r.err, Catch::Contains("roles.web.replicas"));
  CHECK_THAT(r.err, Catch::Contains("roles.web.env.A"));
  CHECK_THAT(r.err, Catch::Contains("roles.web.ports"));
  CHECK_THAT(r.err, Catch::Contains("roles.web.kind"));
}

TEST_CASE("e2e errors: huge resource numbers are rejected, not wrapped", "[e2e]") {
  Scratch s;
  write_app(s, "huge", "huge", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1e30', memory: '1e30', disk: 1e30 } } },\n"
            "  outputs: {},\n"
            "}\n");
  auto r = expect_error_golden(s, "huge_numbers", {"render", "huge"});
  CHECK_THAT(r.err, Catch::Contains("resources.cpu"));
  CHECK_THAT(r.err, Catch::Contains("resources.memory"));
  CHECK_THAT(r.err, Catch::Contains("resources.disk"));
}

TEST_CASE("e2e errors: a dependency cycle across three apps prints the cycle", "[e2e]") {
  Scratch s;
  write_app(s, "cyc/a", "a", "1.0.0", "dependencies:\n  - name: b\n");
  write_app(s, "cyc/b", "b", "1.0.0", "dependencies:\n  - name: c\n");
  write_app(s, "cyc/c", "c", "1.0.0", "dependencies:\n  - name: a\n");
  auto r = expect_error_golden(s, "dependency_cycle", {"deps", "cyc/a"});
  CHECK_THAT(r.err, Catch::Contains("a -> b -> c -> a"));
  // render and validate stop at the same place, with the same message.
  auto rr = s.gaia({"render", "cyc/a"});
  CHECK(rr.code == 1);
  CHECK_THAT(rr.err, Catch::Contains("a -> b -> c -> a"));
}

TEST_CASE("e2e errors: an unknown dependency gets a did-you-mean", "[e2e]") {
  Scratch s;
  write_zookeepers(s);
  write_app(s, "repo/a", "a", "1.0.0", "dependencies:\n  - name: zookeper\n");
  auto r = expect_error_golden(s, "unknown_app", {"deps", "repo/a"});
  CHECK_THAT(r.err, Catch::Contains("did you mean 'zookeeper'?"));
}

TEST_CASE("e2e errors: a range no version satisfies lists the available versions", "[e2e]") {
  Scratch s;
  write_zookeepers(s);
  write_app(s, "repo/b", "b", "1.0.0", "dependencies:\n  - name: zookeeper\n    version: \"^4\"\n");
  auto r = expect_error_golden(s, "missing_version", {"deps", "repo/b"});
  CHECK_THAT(r.err, Catch::Contains("available: 3.6.4, 3.8.1"));
}

TEST_CASE("e2e errors: incompatible ranges name both requirers", "[e2e]") {
  Scratch s;
  write_zookeepers(s);
  write_app(s, "repo/c", "c", "1.0.0",
            "dependencies:\n  - name: d\n  - name: zookeeper\n    version: \"~3.6\"\n");
  write_app(s, "repo/d", "d", "1.0.0", "dependencies:\n  - name: zookeeper\n    version: \">=3.8\"\n");
  auto r = expect_error_golden(s, "incompatible_ranges", {"deps", "repo/c"});
  CHECK_THAT(r.err, Catch::Contains("c@1.0.0 requires ~3.6"));
  CHECK_THAT(r.err, Catch::Contains("d@1.0.0 requires >=3.8"));
}

TEST_CASE("e2e errors: importing an output the dependency does not declare", "[e2e]") {
  Scratch s;
  write_app(s, "imp/p", "p", "1.0.0", "outputs: [url]\n", "{}\n", main_exporting_url());
  write_app(s, "imp/q", "q", "1.0.0", "dependencies:\n  - name: p\n    import: [url, host]\n", "{}\n",
            main_reading_dep("url"));
  auto r = expect_error_golden(s, "undeclared_import", {"render", "imp/q"});
  CHECK_THAT(r.err, Catch::Contains("imports 'host' from p@1.0.0, which does not declare it"));
}

TEST_CASE("e2e errors: reading a dependency field that was not imported", "[e2e]") {
  Scratch s;
  write_app(s, "imp/p", "p", "1.0.0", "outputs: [url]\n", "{}\n", main_exporting_url());
  write_app(s, "imp/q", "q", "1.0.0", "dependencies:\n  - name: p\n    import: []\n", "{}\n",
            main_reading_dep("url"));
  auto r = expect_error_golden(s, "unimported_field", {"render", "imp/q"});
  CHECK_THAT(r.err, Catch::StartsWith("imp/q/main.jsonnet:3:"));
  CHECK_THAT(r.err, Catch::Contains("field does not exist: url"));
}

TEST_CASE("e2e errors: a spec path that is a file", "[e2e]") {
  Scratch s;
  write_app(s, "good", "good", "1.0.0");
  auto r = expect_error_golden(s, "spec_dir_is_file", {"render", "good/app.yaml"});
  CHECK_THAT(r.err, Catch::Contains("hint: pass its directory instead: good"));
}

TEST_CASE("e2e errors: a spec path that does not exist", "[e2e]") {
  Scratch s;
  expect_error_golden(s, "nonexistent_dir", {"render", "nope"});
  // Every command reports it the same way, and validate reports all bad paths at once.
  CHECK(s.gaia({"deps", "nope"}).err == s.gaia({"render", "nope"}).err);
  write_app(s, "good", "good", "1.0.0");
  auto v = s.gaia({"validate", "nope", "good/app.yaml", "good"});
  CHECK(v.code == 1);
  CHECK_THAT(v.err, Catch::Contains("nope: error: no such file or directory"));
  CHECK_THAT(v.err, Catch::Contains("good/app.yaml: error: is a file"));
}

TEST_CASE("e2e errors: imports outside the allowed roots are rejected", "[e2e]") {
  Scratch s;
  std::string uses_p = "std.length(p)";
  SECTION("an absolute path") {
    write_output_app(s, "abs", "local p = importstr '/etc/passwd';", uses_p);
    auto r = expect_error_golden(s, "import_absolute", {"render", "abs"});
    CHECK_THAT(r.err, Catch::Contains("outside the allowed paths"));
    CHECK_THAT(r.err, !Catch::Contains("root:"));
  }
  SECTION("a path climbing out of the app directory") {
    s.write("x", "secret\n");
    write_output_app(s, "apps/up", "local p = importstr '../../x';", uses_p);
    auto r = expect_error_golden(s, "import_parent", {"render", "apps/up"});
    CHECK_THAT(r.err, Catch::Contains("outside the allowed paths"));
  }
}

TEST_CASE("e2e errors: unbounded recursion is stopped with the Jsonnet location", "[e2e]") {
  Scratch s;
  write_output_app(s, "rec", "local f(n) = 1 + f(n + 1);", "f(0)");
  auto r = expect_error_golden(s, "unbounded_recursion", {"render", "rec"});
  CHECK_THAT(r.err, Catch::StartsWith("rec/main.jsonnet:1:"));
  CHECK_THAT(r.err, Catch::Contains("max stack frames exceeded"));
}

TEST_CASE("e2e errors: an infinite loop is stopped by --render-timeout", "[e2e]") {
  Scratch s;
  // Tail calls do not grow Jsonnet's stack, so only the timeout ends this.
  write_output_app(s, "loop", "local loop(n) = if n < 0 then n else loop(n + 1) tailstrict;", "loop(0)");
  auto start = std::chrono::steady_clock::now();
  auto r = expect_error_golden(s, "infinite_loop", {"render", "loop", "--render-timeout", "1000"});
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= std::chrono::milliseconds(1000));
  CHECK(took < std::chrono::seconds(6));
  CHECK_THAT(r.err, Catch::Contains("timed out after 1s"));
}

TEST_CASE("e2e errors: killing gaia mid-render leaves no Jsonnet child behind", "[e2e]") {
  // What a CI cancel does: the render's child must not keep looping at 100% CPU until
  // its time limit, which here is a minute, longer than the test waits.
  Scratch s;
  write_output_app(s, "loop", "local loop(n) = if n < 0 then n else loop(n + 1) tailstrict;", "loop(0)");
  const int sig = GENERATE(SIGKILL, SIGTERM);
  INFO("signal " << sig);
  pid_t gaia_pid = s.spawn({"render", "loop", "--render-timeout", "60000"});
  KillOnExit guard(gaia_pid);
  std::vector<pid_t> children;
  REQUIRE(eventually([&] {
    children = children_of(gaia_pid);
    return !children.empty();
  }, std::chrono::seconds(20)));
  ::kill(gaia_pid, sig);
  CHECK(guard.wait() == 128 + sig);
  for (pid_t child : children) {
    INFO("child " << child);
    CHECK(eventually([&] { return !pid_alive(child); }, std::chrono::seconds(5)));
    // Never leave a looping process on the machine, even when the check failed.
    if (pid_alive(child)) ::kill(child, SIGKILL);
  }
}

TEST_CASE("e2e errors: enormous output is stopped", "[e2e]") {
  Scratch s;
  // 2^24 bytes built by doubling: quick to make, just over the 16MiB output limit.
  write_output_app(s, "big", "local d(s, n) = if n == 0 then s else d(s + s, n - 1);", "d('x', 24)");
  auto r = expect_error_golden(s, "enormous_output", {"render", "big"});
  CHECK_THAT(r.err, Catch::Contains("exceeds 16MiB"));
  CHECK(r.out.empty());
}

TEST_CASE("e2e errors: an unknown --set key gets a did-you-mean", "[e2e]") {
  Scratch s;
  copy_examples(s);
  auto r = expect_error_golden(s, "unknown_set_key", {"render", "examples/hdfs", "--set", "replicaton=2"});
  CHECK_THAT(r.err, Catch::Contains("did you mean 'replication'?"));
}

TEST_CASE("e2e errors: a --values file that is broken YAML", "[e2e]") {
  Scratch s;
  copy_examples(s);
  s.write("values.yaml", "datanodes: 5\nreplication: [2\n");
  auto r = expect_error_golden(s, "values_broken_yaml", {"render", "examples/hdfs", "--values", "values.yaml"});
  CHECK_THAT(r.err, Catch::StartsWith("values.yaml:"));
}

TEST_CASE("e2e errors: validate checks specs side by side and reports them in the order given", "[e2e]") {
  // Good and broken specs interleaved: a worker per core must report exactly what one
  // worker does, in the same order, with every problem.
  Scratch s;
  for (int i = 0; i < 8; ++i) {
    std::string name = fmt::format("s{}", i);
    if (i % 3 == 1)
      write_output_app(s, "specs/" + name, "", "error 'broken " + name + "'");
    else
      write_app(s, "specs/" + name, name, "1.0.0");
  }
  auto one = s.gaia({"validate", "specs", "--no-cache", "-j", "1", "-o", "json"});
  auto four = s.gaia({"validate", "specs", "--no-cache", "-j", "4", "-o", "json"});
  CHECK(one.code == 1);
  CHECK(four.code == 1);
  CHECK(four.out == one.out);
  auto doc = nlohmann::json::parse(four.out);
  REQUIRE(doc["specs"].size() == 8);
  for (int i = 0; i < 8; ++i) {
    INFO(i);
    CHECK(doc["specs"][i]["path"].get<std::string>().ends_with(fmt::format("s{}", i)));
    CHECK(doc["specs"][i]["valid"] == (i % 3 != 1));
  }
  auto text = s.gaia({"validate", "specs", "--no-cache", "-j", "4"});
  CHECK_THAT(text.out, Catch::Contains("3 of 8 spec(s) invalid"));
  CHECK_THAT(text.err, Catch::Contains("broken s4"));
  CHECK(s.gaia({"validate", "specs", "-j", "0"}).code == 2);
}

TEST_CASE("e2e errors: validate reports a missing path in its place and still checks every other spec", "[e2e]") {
  Scratch s;
  write_app(s, "good", "good", "1.0.0");
  write_output_app(s, "broken", "", "error 'broken on purpose'");
  auto r = s.gaia({"validate", "good", "nope", "broken", "-o", "json"});
  CHECK(r.code == 1);
  auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc["specs"].size() == 3);
  CHECK(doc["specs"][0]["path"] == "good");
  CHECK(doc["specs"][0]["valid"] == true);
  CHECK(doc["specs"][1]["path"] == "nope");
  CHECK(doc["specs"][1]["errors"][0]["message"] == "no such file or directory");
  CHECK(doc["specs"][2]["valid"] == false);
  auto text = s.gaia({"validate", "good", "nope"});
  CHECK(text.code == 1);
  CHECK_THAT(text.out, Catch::Contains("ok good"));
  CHECK_THAT(text.out, Catch::Contains("1 of 2 spec(s) invalid"));
}
