// End-to-end tests of gaia on etcd: the real gaia binary against a real etcd-server
// (tests/store/etcd_server.hpp starts one per test on free loopback ports). Two gaia
// installations (separate state dirs) sharing one etcd; eight concurrent applies; a
// paused member (SIGSTOP) and a killed and restarted one mid-apply; the controller
// leader's etcd lease taken over after kill -9; contexts with a wrong endpoint, with
// auth (the password never appears in any output or file) and with TLS. Every command
// here uses the sim backend, so nothing but gaia and etcd runs.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "store/etcd_store.hpp"
#include "net/http.hpp"
#include "tests/cli/e2e_util.hpp"
#include "tests/store/etcd_server.hpp"

using namespace gaia::test;
using gaia::testing::EtcdServer;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// "etcd://127.0.0.1:PORT" for the harness's "http://127.0.0.1:PORT" (or "https://...").
std::string host_port(const EtcdServer& server) {
  const std::string& e = server.endpoint();
  return e.substr(e.find("://") + 3);
}
std::string etcd_url(const EtcdServer& server) { return "etcd://" + host_port(server); }

// gaia against one etcd (`--store etcd://...` before the arguments).
struct EtcdCli {
  const Scratch& s;
  std::string url;
  RunResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--store", url});
    return s.gaia(args);
  }
  RunResult expect(int code, std::vector<std::string> args) const {
    args.insert(args.begin(), {"--store", url});
    return expect_exit(s, code, args);
  }
  RunResult ok(const std::vector<std::string>& args) const { return expect(0, args); }
  pid_t spawn(std::vector<std::string> args, const std::string& tag) const {
    args.insert(args.begin(), {"--store", url});
    return s.spawn(args, tag);
  }
};

// Reads the cluster state from etcd the way gaia does, from the test process.
gaia::ClusterState load_etcd(const EtcdServer& server) {
  gaia::EtcdOptions options;
  options.endpoints = {server.endpoint()};
  auto store = gaia::EtcdStore::open(options);
  if (!store) FAIL(store.error().to_string());
  gaia::SystemClock clock;
  gaia::State state(**store, clock);
  auto loaded = state.load();
  if (!loaded) FAIL(gaia::format_diagnostics(loaded.error()));
  return *loaded;
}

std::multiset<std::string> app_name_multiset(const gaia::ClusterState& st) {
  std::multiset<std::string> out;
  for (const auto& [key, app] : st.apps) out.insert(app.name);
  return out;
}

// The sequence numbers of every event, checked to run 1, 2, 3... with no gap and no
// repeat; returns how many events have `reason`.
size_t check_events_gap_free(const EtcdCli& g, const std::string& reason) {
  auto events = json_lines(g.ok({"events", "-o", "json"}).out);
  REQUIRE_FALSE(events.empty());
  size_t with_reason = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    INFO("event " << i << ": " << events[i].dump());
    REQUIRE(events[i]["seq"].get<int64_t>() == static_cast<int64_t>(i + 1));
    if (events[i]["reason"] == reason) ++with_reason;
  }
  return with_reason;
}


double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("etcd: two gaia installations sharing one etcd see each other's apps", "[e2e][etcd]") {
  EtcdServer server;
  Scratch a, b;  // Separate XDG_STATE_HOME and XDG_CACHE_HOME: two machines, one etcd.
  EtcdCli ga{a, etcd_url(server)};
  ga.ok({"cluster", "create", "--nodes", "2"});
  // The other one names the store through GAIA_STORE, as a team's shell profile would.
  std::map<std::string, std::string> env{{"GAIA_STORE", etcd_url(server)}};
  // LD_DEBUG=files: the dynamic loader names each library as it loads it. libcurl is
  // opened by the first HTTP client (net/curl_library.hpp), as etcd needs it.
  auto with_loader_log = env;
  with_loader_log["LD_DEBUG"] = "files";
  with_loader_log["LD_DEBUG_OUTPUT"] = "";  // An empty value unsets it: the log goes to stderr.
  auto submitted = b.gaia({"submit", examples_dir() + "/local/kv"}, with_loader_log);
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.code == 0);
  CHECK_THAT(submitted.err, Catch::Contains("file=libcurl.so.4"));
  ga.ok({"submit", examples_dir() + "/local/hits"});

  for (const Scratch* s : {&a, &b}) {
    auto apps = json::parse(s->gaia({"get", "apps", "-o", "json"}, env).out);
    std::set<std::string> names;
    for (const auto& app : apps) names.insert(app["name"].get<std::string>());
    CHECK(names == std::set<std::string>{"kv", "hits"});
    // Nothing was created locally for the etcd store: no SQLite file, no file named
    // after the URL; the state dir holds at most the contexts file.
    CHECK_FALSE(fs::exists(s->dir() / "state" / "gaia" / "gaia.db"));
    CHECK_FALSE(fs::exists(s->dir() / "etcd:"));
  }
  auto st = load_etcd(server);
  CHECK(app_name_multiset(st) == std::multiset<std::string>{"hits", "kv"});
  CHECK(st.snapshot.nodes.size() == 2);
  // Both see the same timeline, which says who did what.
  auto from_b = b.gaia({"events", "-o", "json"}, env);
  CHECK(from_b.out == ga.ok({"events", "-o", "json"}).out);

  // The process backend's run dir of an etcd store is under the state dir, keyed by the
  // endpoints; the same cluster gets the same folder whatever context names it.
  ga.ok({"context", "add", "team", "--store", etcd_url(server)});
  auto shown = json::parse(ga.ok({"context", "show", "team", "-o", "json"}).out);
  std::string run_dir = shown["run_dir"];
  CHECK(run_dir.starts_with((a.dir() / "state" / "gaia" / "etcd-").string()));
  CHECK(run_dir.ends_with(".run"));
  CHECK(shown["kind"] == "etcd");
  CHECK_FALSE(fs::exists(run_dir));  // Only the process backend creates it.

  // A plan saved on one machine applies on the other: it names the store by its URL,
  // not by a path relative to where it was made.
  write_app(a, "more/m1", "m1", "1.0.0");
  ga.ok({"plan", "-f", "more", "--out", "plan.json"});
  auto applied = b.gaia({"apply", (a.dir() / "plan.json").string()}, env);
  INFO(applied.out << applied.err);
  CHECK(applied.code == 0);
  CHECK(app_name_multiset(load_etcd(server)).count("m1") == 1);
}

TEST_CASE("etcd: eight concurrent applies converge with nothing lost or duplicated", "[e2e][etcd]") {
  EtcdServer server;
  Scratch s;
  EtcdCli g{s, etcd_url(server)};
  g.ok({"cluster", "create", "--nodes", "2"});
  // Four pipelines apply the same folder of four apps; four others apply a folder each.
  for (int k = 0; k < 4; ++k) {
    write_app(s, fmt::format("shared/s{}", k), fmt::format("s{}", k), "1.0.0");
    write_app(s, fmt::format("team{}/t{}", k, k), fmt::format("t{}", k), "1.0.0");
  }
  std::vector<std::string> dirs;
  for (int k = 0; k < 4; ++k) dirs.push_back("shared");
  for (int k = 0; k < 4; ++k) dirs.push_back(fmt::format("team{}", k));
  auto started = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (size_t k = 0; k < dirs.size(); ++k) pids.push_back(g.spawn({"apply", "-f", dirs[k]}, fmt::format("p{}", k)));
  std::vector<size_t> refused;
  for (size_t k = 0; k < pids.size(); ++k) {
    int code = wait_exit(pids[k]);
    std::string err = Scratch::slurp(s.dir() / fmt::format("p{}.err", k));
    INFO("apply -f " << dirs[k] << " exited " << code << "\n" << Scratch::slurp(s.dir() / fmt::format("p{}.out", k)) << err);
    // Converged, or refused with an error that says what happened (never a crash).
    REQUIRE((code == 0 || code == 1));
    if (code == 1) {
      CHECK(contains(err, "error: "));
      refused.push_back(k);
    }
  }
  WARN(fmt::format("8 concurrent applies on etcd: {:.1f} s, {} refused", seconds_since(started), refused.size()));
  // A refused pipeline runs again and converges.
  for (size_t k : refused) g.ok({"apply", "-f", dirs[k]});

  auto st = load_etcd(server);
  CHECK(app_name_multiset(st) == std::multiset<std::string>{"s0", "s1", "s2", "s3", "t0", "t1", "t2", "t3"});
  CHECK(st.snapshot.instances.size() == 8);
  std::set<std::string> instance_keys;
  for (const auto& i : st.snapshot.instances) instance_keys.insert(i.key());
  CHECK(instance_keys.size() == 8);
  // Each app was submitted exactly once: the losers of the races re-decided on the
  // winner's state. The timeline has no gap and no repeated sequence number.
  CHECK(check_events_gap_free(g, "Submitted") == 8);
  CHECK(st.seq == static_cast<int64_t>(json_lines(g.ok({"events", "-o", "json"}).out).size()));
  // And the store is at rest: every folder's diff is empty.
  for (const auto& dir : std::set<std::string>(dirs.begin(), dirs.end())) g.ok({"diff", "-f", dir});
}

TEST_CASE("etcd: a paused member fails a command within its timeout, naming the endpoint", "[e2e][etcd]") {
  EtcdServer server;
  Scratch s;
  EtcdCli g{s, etcd_url(server)};
  g.ok({"cluster", "create", "--nodes", "2"});
  s.gaia({"context", "add", "short", "--store", etcd_url(server), "--etcd-timeout", "1s"});
  server.pause();

  // With the context's 1 s bound: the read and the write both fail within it.
  for (std::vector<std::string> args : {std::vector<std::string>{"--context", "short", "get", "apps"},
                                        {"--context", "short", "submit", examples_dir() + "/local/kv"}}) {
    auto started = std::chrono::steady_clock::now();
    auto r = s.gaia(args);
    double took = seconds_since(started);
    INFO(r.err << "took " << took << " s");
    CHECK(r.code == 1);
    CHECK(took < 3.0);
    CHECK(contains(r.err, "http://" + host_port(server)));
    CHECK(contains(r.err, "did not answer"));
    CHECK(contains(r.err, "etcdctl endpoint health"));
  }
  // A stuck member listed first does not stop a command when another answers: opening
  // moves on to the next member after the bound. (The other member is a separate, empty
  // cluster here; only which one answers matters.)
  EtcdServer other;
  expect_exit(s, 0, {"--store", etcd_url(other), "cluster", "create", "--nodes", "1"});
  s.gaia({"context", "add", "two", "--store", fmt::format("etcd://{},{}", host_port(server), host_port(other)),
          "--etcd-timeout", "1s", "--no-check"});
  {
    auto started = std::chrono::steady_clock::now();
    auto r = s.gaia({"--context", "two", "get", "nodes"});
    double took = seconds_since(started);
    INFO(r.out << r.err << "took " << took << " s");
    CHECK(r.code == 0);
    CHECK(took < 3.0);
  }
  // With the default bound (5 s) through --store.
  auto started = std::chrono::steady_clock::now();
  auto r = g.run({"get", "nodes"});
  double took = seconds_since(started);
  INFO(r.err << "took " << took << " s");
  CHECK(r.code == 1);
  CHECK(took < 7.5);
  CHECK(contains(r.err, host_port(server)));
  CHECK(contains(r.err, "within 5000 ms"));

  server.resume();
  g.ok({"submit", examples_dir() + "/local/kv"});
  CHECK(app_name_multiset(load_etcd(server)) == std::multiset<std::string>{"kv"});
}

TEST_CASE("etcd: killed and restarted mid-apply, a command fails cleanly or completes, the next converges",
          "[e2e][etcd]") {
  EtcdServer server;
  Scratch s;
  EtcdCli g{s, etcd_url(server)};
  g.ok({"cluster", "create", "--nodes", "2"});
  std::multiset<std::string> expected;
  // Where the kill lands and how long etcd stays down. "After open": once the apply's
  // -v log says the store is open, so the kill falls among its reads, render, commit
  // and controller pass; down for a second, longer than the store's retries (about
  // 0.5 s), the apply must fail; restarted at once, the retries may carry it through.
  struct Round {
    bool after_open;
    std::chrono::milliseconds delay, down;
  };
  const Round rounds[] = {{true, 0ms, 1000ms}, {true, 0ms, 0ms}, {false, 0ms, 0ms}, {true, 30ms, 600ms}};
  int failed = 0;
  for (size_t round = 0; round < std::size(rounds); ++round) {
    for (int k = 0; k < 3; ++k) {
      std::string name = fmt::format("r{}a{}", round, k);
      write_app(s, fmt::format("round{}/{}", round, name), name, "1.0.0");
      expected.insert(name);
    }
    std::string dir = fmt::format("round{}", round);
    std::string tag = fmt::format("k{}", round);
    pid_t pid = g.spawn({"-v", "apply", "-f", dir}, tag);
    if (rounds[round].after_open)
      CHECK(eventually([&] { return contains(Scratch::slurp(s.dir() / (tag + ".err")), " opened: "); }, 10s));
    std::this_thread::sleep_for(rounds[round].delay);
    server.kill();
    std::this_thread::sleep_for(rounds[round].down);
    server.restart();  // The same ports and data directory.
    int code = wait_exit(pid);
    std::string err = Scratch::slurp(s.dir() / (tag + ".err"));
    INFO("round " << round << ": exit " << code << "\n" << Scratch::slurp(s.dir() / (tag + ".out")) << err);
    REQUIRE((code == 0 || code == 1));
    if (code == 1) {
      ++failed;
      // The error names the member and says what went wrong with it.
      CHECK(contains(err, host_port(server)));
      CHECK(contains(err, "etcd"));
    }
    if (round == 0) CHECK(code == 1);  // Down for longer than any retry.
    // The next apply converges, whatever the first one left.
    g.ok({"apply", "-f", dir});
    g.ok({"diff", "-f", dir});
  }
  WARN(fmt::format("{} of {} applies interrupted by an etcd restart failed (the rest completed)", failed,
                   std::size(rounds)));
  auto st = load_etcd(server);
  CHECK(app_name_multiset(st) == expected);
  CHECK(st.snapshot.instances.size() == expected.size());
  CHECK(check_events_gap_free(g, "Submitted") == expected.size());
}

TEST_CASE("etcd: controller run holds an etcd lease and after kill -9 the waiting runner takes over within the TTL",
          "[e2e][etcd]") {
  EtcdServer server;
  Scratch s;
  EtcdCli g{s, etcd_url(server)};
  g.ok({"cluster", "create", "--nodes", "2"});
  const std::vector<std::string> run = {"controller", "run", "--interval", "500ms", "--lease-ttl", "3s"};
  pid_t first = g.spawn(run, "c1");
  auto holder = [&] {
    auto r = g.run({"controller", "status", "-o", "json"});
    if (r.code != 0) return std::string();
    auto j = json::parse(r.out);
    return j["leader"].is_null() ? std::string() : j["leader"]["holder"].get<std::string>();
  };
  REQUIRE(eventually([&] { return contains(holder(), fmt::format(":{} ", first)); }, 10s));
  // The leader's key is attached to an etcd lease.
  auto status = json::parse(g.ok({"controller", "status", "-o", "json"}).out);
  CHECK(status["leader"]["lease"].get<int64_t>() != 0);

  pid_t second = g.spawn(run, "c2");
  auto second_out = [&] { return Scratch::slurp(s.dir() / "c2.out"); };
  REQUIRE(eventually([&] { return contains(second_out(), "waiting: "); }, 10s));
  CHECK(contains(second_out(), fmt::format(":{} ", first)));  // It names the leader.

  ::kill(first, SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  CHECK(wait_exit(first) == 128 + SIGKILL);
  bool took_over = eventually([&] { return contains(second_out(), "leading the controllers"); }, 10s);
  double after = seconds_since(killed);
  WARN(fmt::format("controller leadership moved {:.2f} s after kill -9 (lease TTL 3 s)", after));
  CHECK(took_over);
  // The lease expires at most 3 s after its last renewal; etcd revokes expired leases
  // every 500 ms and the waiting runner looks again every 500 ms.
  CHECK(after < 3.0 + 1.5);
  CHECK(contains(holder(), fmt::format(":{} ", second)));

  ::kill(second, SIGTERM);  // Resigns: the lease is revoked at once.
  CHECK(wait_exit(second) == 0);
  CHECK(contains(second_out(), "leadership released"));
  CHECK(holder().empty());
}

TEST_CASE("etcd: context add checks the endpoint and explains what is wrong", "[e2e][etcd]") {
  Scratch s;
  int dead = gaia::testing::free_port_pair().first;
  std::string dead_url = fmt::format("etcd://127.0.0.1:{}", dead);
  auto r = expect_exit(s, 1, {"context", "add", "team", "--store", dead_url});
  CHECK(contains(r.err, fmt::format("context team not added")));
  CHECK(contains(r.err, fmt::format("http://127.0.0.1:{}", dead)));
  CHECK(contains(r.err, "cannot reach etcd"));
  CHECK(contains(r.err, "check that etcd runs"));
  CHECK(contains(r.err, "--no-check"));
  // Several endpoints: each is named with why it failed.
  int dead2 = gaia::testing::free_port_pair().first;
  r = expect_exit(s, 1, {"context", "add", "team", "--store", fmt::format("{},127.0.0.1:{}", dead_url, dead2)});
  CHECK(contains(r.err, fmt::format("127.0.0.1:{}/", dead)));
  CHECK(contains(r.err, fmt::format("127.0.0.1:{}/", dead2)));
  CHECK(contains(r.err, "these client URLs"));
  CHECK_FALSE(contains(expect_exit(s, 0, {"context", "list"}).out, "team"));

  // Malformed URLs and flags that do not fit are refused before any I/O.
  CHECK(contains(expect_exit(s, 1, {"context", "add", "team", "--store", "etcd://127.0.0.1:2379/gaia"}).err, "has a path"));
  CHECK(contains(expect_exit(s, 1, {"context", "add", "team", "--store", "etcd://127.0.0.1:99999"}).err, "not a port"));
  CHECK(contains(expect_exit(s, 1, {"context", "add", "team", "--store", "http://127.0.0.1:2379"}).err,
                 "write etcd://127.0.0.1:2379"));
  CHECK(contains(expect_exit(s, 1, {"context", "add", "team", "--store", "team.db", "--etcd-ca", "ca.pem"}).err,
                 "--etcd-ca is for an etcd store"));
  CHECK(contains(expect_exit(s, 1, {"context", "add", "team", "--store", dead_url, "--etcd-user", "gaia"}).err,
                 "has no password file"));
  CHECK(contains(expect_exit(s, 1, {"context", "add", "team", "--store", dead_url, "--etcd-ca", "missing.pem"}).err,
                 "missing.pem (--etcd-ca)"));

  // --no-check adds it; a command then fails with the same explanation, and nothing is
  // created for it (no store file, no run dir).
  expect_exit(s, 0, {"context", "add", "team", "--store", dead_url, "--no-check"});
  r = expect_exit(s, 1, {"--context", "team", "get", "apps"});
  CHECK(contains(r.err, fmt::format("cannot open the etcd store {} (context team)", dead_url)));
  CHECK(contains(r.err, "cannot reach etcd"));
  r = expect_exit(s, 1, {"--store", dead_url, "cluster", "create", "--nodes", "2"});
  CHECK(contains(r.err, "cannot reach etcd"));
  std::set<std::string> state_files;
  for (const auto& e : fs::directory_iterator(s.dir() / "state" / "gaia")) state_files.insert(e.path().filename());
  CHECK(state_files == std::set<std::string>{"contexts.json"});
}

namespace {

// POSTs to etcd's gateway directly, to set a server up the way an operator would with
// etcdctl (users, roles, auth).
void admin(const EtcdServer& server, const std::string& path, const std::string& body) {
  gaia::http::Client client;
  gaia::http::Request request;
  request.url = server.endpoint() + path;
  request.body = body;
  auto r = client.post(request);
  if (!r) FAIL(path << ": " << r.error().message << " " << r.error().body);
}

// Every file the test's commands wrote (their stdout and stderr, the contexts file, the
// state dir), as text.
std::string everything_written(const Scratch& s, const fs::path& except) {
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(s.dir())) {
    if (!e.is_regular_file() || e.path() == except) continue;
    all += Scratch::slurp(e.path());
    all += '\n';
  }
  return all;
}

}  // namespace

TEST_CASE("etcd: a context with etcd auth works and the password never appears in any output", "[e2e][etcd]") {
  const std::string password = "Gaia-e2e-S3cret-9f1c";
  EtcdServer server;
  admin(server, "/v3/auth/user/add", fmt::format(R"({{"name":"root","password":"{}"}})", password));
  admin(server, "/v3/auth/user/grant", R"({"user":"root","role":"root"})");
  admin(server, "/v3/auth/enable", "{}");
  Scratch s;
  fs::path pw = s.write("secrets/etcd-password", password + "\n");
  s.write("secrets/wrong-password", "not-the-password\n");
  std::string url = etcd_url(server);

  // Without credentials, and with a wrong password: refused, saying what to check.
  auto r = expect_exit(s, 1, {"context", "add", "sec", "--store", url});
  CHECK(contains(r.err, "authentication"));
  r = expect_exit(s, 1, {"context", "add", "sec", "--store", url, "--etcd-user", "root", "--etcd-password-file",
                         "secrets/wrong-password"});
  CHECK(contains(r.err, host_port(server)));
  CHECK_FALSE(contains(r.err, "not-the-password"));
  r = expect_exit(s, 1, {"context", "add", "sec", "--store", fmt::format("etcd://root:{}@{}", password, host_port(server))});
  CHECK(contains(r.err, "carries credentials"));

  // The right one, from a file named relative to the current directory.
  r = expect_exit(s, 0, {"context", "add", "sec", "--store", url, "--etcd-user", "root", "--etcd-password-file",
                         "secrets/etcd-password"});
  CHECK(contains(r.out, "user root"));
  CHECK(contains(r.out, "etcd answered"));
  auto shown = json::parse(expect_exit(s, 0, {"context", "show", "sec", "-o", "json"}).out);
  CHECK(shown["etcd"]["user"] == "root");
  CHECK(shown["etcd"]["password_file"] == fs::canonical(pw).string());
  auto text = expect_exit(s, 0, {"context", "show", "sec"}).out;
  CHECK(contains(text, "password read from " + fs::canonical(pw).string()));
  expect_exit(s, 0, {"context", "list"});
  auto saved = json::parse(Scratch::slurp(s.dir() / "state" / "gaia" / "contexts.json"));
  CHECK(saved["contexts"][1]["etcd"]["password_file"] == fs::canonical(pw).string());

  expect_exit(s, 0, {"context", "use", "sec"});
  expect_exit(s, 0, {"-vv", "cluster", "create", "--nodes", "2"});
  expect_exit(s, 0, {"-vv", "submit", examples_dir() + "/local/kv"});
  CHECK(contains(expect_exit(s, 0, {"get", "apps"}).out, "kv"));
  // --store keeps the context's user, as kubectl's --server keeps the context's.
  expect_exit(s, 0, {"--store", url, "get", "nodes"});
  // The default context has no credentials: refused.
  r = expect_exit(s, 1, {"--context", "default", "--store", url, "get", "nodes"});
  CHECK(contains(r.err, "authentication"));
  // The password is read at each use: changing the file changes what is sent.
  s.write("secrets/etcd-password", "changed\n");
  r = expect_exit(s, 1, {"get", "apps"});
  CHECK(contains(r.err, host_port(server)));
  s.write("secrets/etcd-password", password);
  expect_exit(s, 0, {"controller", "run", "--once"});
  expect_exit(s, 0, {"controller", "status"});
  // Removing the password file: the error names the file, not its former content.
  fs::remove(pw);
  r = expect_exit(s, 1, {"get", "apps"});
  CHECK(contains(r.err, "cannot read the etcd password file " + fs::weakly_canonical(pw).string()));

  // Every output of every command above, and every file gaia wrote, without the password.
  CHECK_FALSE(contains(everything_written(s, pw), password));
}


TEST_CASE("etcd: a TLS context with a CA and a client certificate", "[e2e][etcd]") {
  Scratch s;
  fs::path certs = s.dir() / "certs";
  fs::create_directories(certs);
  gaia::testing::make_test_certificates(certs);
  auto file = [&](const char* name) { return (certs / name).string(); };
  EtcdServer::Options options;
  options.cert_file = file("server.pem");
  options.key_file = file("server.key");
  options.client_tls = {file("ca.pem"), file("client.pem"), file("client.key"), false};
  options.extra_args = {"--client-cert-auth", "--trusted-ca-file", file("ca.pem")};
  EtcdServer server(options);
  std::string hp = host_port(server);

  // A wrong CA, and no client certificate: refused, saying what to check.
  auto r = expect_exit(s, 1, {"context", "add", "tls", "--store", "etcds://" + hp, "--etcd-ca", file("client.pem"),
                              "--etcd-cert", file("client.pem"), "--etcd-key", file("client.key")});
  CHECK(contains(r.err, "TLS"));
  CHECK(contains(r.err, "CA file"));
  r = expect_exit(s, 1, {"context", "add", "tls", "--store", "etcds://" + hp, "--etcd-ca", file("ca.pem")});
  CHECK(contains(r.err, "https://" + hp));
  CHECK(contains(expect_exit(s, 1, {"context", "add", "tls", "--store", "etcds://" + hp, "--etcd-cert",
                                    file("client.pem")})
                     .err,
                 "without its key"));

  // etcds://, and etcd:// with --etcd-ca, are both TLS.
  r = expect_exit(s, 0, {"context", "add", "tls", "--store", "etcds://" + hp, "--etcd-ca", file("ca.pem"),
                         "--etcd-cert", file("client.pem"), "--etcd-key", file("client.key")});
  CHECK(contains(r.out, "TLS (CA " + file("ca.pem") + ")"));
  expect_exit(s, 0, {"context", "add", "tls2", "--store", "etcd://" + hp, "--etcd-ca", file("ca.pem"), "--etcd-cert",
                     file("client.pem"), "--etcd-key", file("client.key")});
  expect_exit(s, 0, {"--context", "tls", "cluster", "create", "--nodes", "2"});
  expect_exit(s, 0, {"--context", "tls2", "submit", examples_dir() + "/local/kv"});
  CHECK(contains(expect_exit(s, 0, {"--context", "tls", "get", "apps"}).out, "kv"));
  // Both contexts name the same cluster, so they share the process backend's run dir.
  auto run_dir = [&](const char* name) {
    return json::parse(expect_exit(s, 0, {"context", "show", name, "-o", "json"}).out)["run_dir"].get<std::string>();
  };
  CHECK(run_dir("tls") == run_dir("tls2"));
}

TEST_CASE("etcd: controller run waits out an etcd restart and goes on leading", "[e2e][etcd]") {
  EtcdServer server;
  Scratch s;
  EtcdCli g{s, etcd_url(server)};
  g.ok({"cluster", "create", "--nodes", "2"});
  pid_t runner = g.spawn({"controller", "run", "--interval", "300ms", "--lease-ttl", "10s"}, "c");
  KillOnExit runner_guard(runner);
  auto out = [&] { return Scratch::slurp(s.dir() / "c.out"); };
  REQUIRE(eventually([&] { return contains(out(), "leading the controllers"); }, 10s));

  server.kill();
  // Longer than the store's own retries: the runner must see the outage, not a retry.
  std::this_thread::sleep_for(1500ms);
  REQUIRE(eventually([&] { return contains(out(), "the store cannot be reached; retrying"); }, 5s));
  int status = 0;
  CHECK(::waitpid(runner, &status, WNOHANG) == 0);  // Still running.
  server.restart();
  INFO(out() << Scratch::slurp(s.dir() / "c.err"));
  REQUIRE(eventually([&] { return contains(out(), "the store answers again"); }, 15s));

  // It still leads and acts: a change made now is reconciled by its passes.
  write_app(s, "after/web", "web", "1.0.0");
  g.ok({"submit", "after/web"});
  auto holder = json::parse(g.ok({"controller", "status", "-o", "json"}).out);
  REQUIRE_FALSE(holder["leader"].is_null());
  CHECK(contains(holder["leader"]["holder"].get<std::string>(), fmt::format(":{} ", runner)));
  ::kill(runner, SIGTERM);
  CHECK(runner_guard.wait() == 0);
  CHECK(contains(out(), "leadership released"));
}

TEST_CASE("etcd: events -f follows the timeline through a watch", "[e2e][etcd]") {
  EtcdServer server;
  Scratch s;
  EtcdCli g{s, etcd_url(server)};
  g.ok({"cluster", "create", "--nodes", "2"});
  pid_t follower = g.spawn({"events", "-f", "-o", "json"}, "f");
  KillOnExit follower_guard(follower);
  auto out = [&] { return Scratch::slurp(s.dir() / "f.out"); };
  REQUIRE(eventually([&] { return contains(out(), "ClusterCreated"); }, 10s));
  for (int k = 0; k < 3; ++k) {
    std::string name = fmt::format("app{}", k);
    write_app(s, "apps/" + name, name, "1.0.0");
    g.ok({"submit", "apps/" + name});
    INFO(out());
    // Each new event shows up at once, not at the next full re-read.
    CHECK(eventually([&] { return contains(out(), fmt::format("\"app\":\"{}\"", name)); }, 5s));
  }
  ::kill(follower, SIGTERM);
  CHECK(follower_guard.wait() == 0);
  // Every event once, in order.
  auto lines = json_lines(out());
  for (size_t i = 1; i < lines.size(); ++i) CHECK(lines[i]["seq"].get<int64_t>() == lines[i - 1]["seq"].get<int64_t>() + 1);
}
