// Health checks gating Running and failing a ready copy, and the copy's log: rotation,
// tail across the rotated file, following across rotations and restarts.

#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>

#include "process/health.hpp"
#include "process/logs.hpp"
#include "tests/process/process_fixture.hpp"

using namespace gaia;
using namespace gaia::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

ProcessOptions fast_checks() {
  ProcessOptions o;
  o.health_period_s = 1;
  return o;
}

StartSpec with_check(StartSpec s, std::string type, std::string target, int threshold = 2) {
  s.role.health.type = std::move(type);
  s.role.health.target = std::move(target);
  s.role.health.period_s = 1;
  s.role.health.timeout_s = 1;
  s.role.health.failure_threshold = threshold;
  return s;
}

// Observes for `d` and checks the copy stays in `phase` throughout.
void expect_stays(ProcessFixture& fx, const StartSpec& s, CopyPhase phase, std::chrono::milliseconds d) {
  auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
    auto c = fx.await(s, [](const ObservedCopy* c) { return c != nullptr; });
    REQUIRE(copy_phase_name(c.phase) == copy_phase_name(phase));
    std::this_thread::sleep_for(100ms);
  }
}

}  // namespace

TEST_CASE("a tcp check gates Running, and failing checks after Running fail the copy", "[process][health]") {
  ProcessFixture fx(fast_checks());
  int port = free_port();
  auto spec = with_check(make_spec("sleep 300"), "tcp", "data");
  spec.instance.ports = {{"data", port}};
  fx.start(spec);
  fx.await_child(spec);
  expect_stays(fx, spec, CopyPhase::Starting, 1500ms);  // Nothing listens: not ready.
  auto listener = std::make_unique<Listener>("127.0.0.1", port);
  fx.await_phase(spec, CopyPhase::Running, 5s);
  auto t0 = std::chrono::steady_clock::now();
  listener.reset();
  auto c = fx.await_phase(spec, CopyPhase::Failed, 10s);
  CHECK(std::chrono::steady_clock::now() - t0 >= 1s);  // Two failures, a period apart.
  CHECK(c.reason == "health check tcp data failed 2 times: connection refused");
  CHECK_FALSE(c.internal);
  // Written down: another gaia process reports the same failure without checking.
  auto other = fx.another_backend();
  auto obs = other->observe(now_ms());
  REQUIRE(obs);
  REQUIRE(obs->copies.size() == 1);
  CHECK(obs->copies[0].phase == CopyPhase::Failed);
  CHECK(obs->copies[0].reason == c.reason);
  fx.expect_nothing_left();
}

TEST_CASE("a copy being stopped is not failed by its health check during its grace", "[process][health]") {
  ProcessFixture fx(fast_checks());
  int port = free_port();
  auto spec = with_check(make_spec("trap '' TERM; sleep 300"), "tcp", "data", 1);
  spec.instance.ports = {{"data", port}};
  fx.start(spec);
  fx.await_child(spec);
  auto listener = std::make_unique<Listener>("127.0.0.1", port);
  fx.await_phase(spec, CopyPhase::Running, 5s);
  REQUIRE(fx.backend().stop({stop_of(spec, 3s)}, now_ms()));
  listener.reset();
  // It ignores SIGTERM and its check would fail: it is still reported live, as it runs.
  expect_stays(fx, spec, CopyPhase::Running, 2000ms);
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; }, 5s);
  fx.expect_nothing_left();
}

TEST_CASE("an http check wants a 2xx or 3xx answer", "[process][health]") {
  ProcessFixture fx(fast_checks());
  int port = free_port();
  auto spec = with_check(make_spec("sleep 300"), "http", "web/healthz");
  spec.instance.ports = {{"web", port}};
  fx.start(spec);
  fx.await_child(spec);
  // The test's server stands in for the app's, on the app's port.
  httplib::Server server;
  std::atomic<int> status{503};
  server.Get("/healthz", [&](const httplib::Request&, httplib::Response& res) {
    res.status = status.load();
    res.set_content("ok", "text/plain");
  });
  REQUIRE(server.bind_to_port("127.0.0.1", port));
  std::thread serving([&] { server.listen_after_bind(); });
  CHECK(process::check_http("127.0.0.1", port, "/healthz", 1s).error() == "HTTP 503");
  CHECK(process::check_http("127.0.0.1", port, "/other", 1s).error() == "HTTP 404");
  expect_stays(fx, spec, CopyPhase::Starting, 1500ms);
  status = 200;
  fx.await_phase(spec, CopyPhase::Running, 5s);
  status = 302;
  CHECK(process::check_http("127.0.0.1", port, "/healthz", 1s));
  server.stop();
  serving.join();
  fx.expect_nothing_left();
}

TEST_CASE("an exec check runs in the copy's work dir with its env, under its timeout", "[process][health]") {
  ProcessFixture fx(fast_checks());
  auto spec = with_check(make_spec("sleep 300"), "exec", "test -f \"$READY_FILE\"");
  spec.env = {{"READY_FILE", "ready"}};
  fx.start(spec);
  fx.await_child(spec);
  expect_stays(fx, spec, CopyPhase::Starting, 1500ms);
  std::ofstream(fx.copy_dir(spec) / "work" / "ready") << "";
  fx.await_phase(spec, CopyPhase::Running, 5s);

  // A check that hangs is killed at its timeout, with what it started.
  auto t0 = std::chrono::steady_clock::now();
  auto r = process::check_exec("sleep 30 & sleep 30", {}, fx.run_dir(), 1s);
  CHECK(std::chrono::steady_clock::now() - t0 < 3s);
  REQUIRE_FALSE(r);
  CHECK(r.error() == "timed out after 1s");
  CHECK(process::check_exec("exit 4", {}, fx.run_dir(), 1s).error() == "exit code 4");
  fx.expect_nothing_left();
}

TEST_CASE("the log rotates at its bound and the tail reads across the rotated file", "[process][logs]") {
  ProcessOptions o;
  o.log_max_bytes = 4096;
  ProcessFixture fx(o);
  // 300 lines of 100 bytes: 30000 bytes through a 4096-byte log.
  auto spec = make_spec("i=0; while [ $i -lt 300 ]; do printf 'line %04d %089d\\n' $i 0; i=$((i+1)); done");
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Exited);
  auto log = fx.copy_dir(spec) / process::k_log_file;
  auto rotated = fs::path(log.string() + ".1");
  REQUIRE(fs::exists(rotated));
  CHECK(fs::file_size(log) <= 4096);
  CHECK(fs::file_size(rotated) <= 4096);
  CHECK_FALSE(fs::exists(log.string() + ".2"));
  // Rotation happens at line boundaries: the current file holds whole lines only.
  CHECK(fs::file_size(log) % 100 == 0);

  auto lines = process::tail_lines(log, 60);
  REQUIRE(lines.size() == 60);
  CHECK(fs::file_size(log) / 100 < 60);  // So the tail did read the rotated file.
  for (size_t i = 0; i < lines.size(); ++i) CHECK(lines[i].substr(0, 9) == fmt::format("line {:04}", 240 + i));
  CHECK(process::tail_lines(log, 3).back().substr(0, 9) == "line 0299");
  // Asking for more than both files hold gives what they hold.
  auto all = process::tail_lines(log, 1000);
  CHECK(all.size() == (fs::file_size(log) + fs::file_size(rotated)) / 100);
  CHECK(all.back().substr(0, 9) == "line 0299");
  fx.expect_nothing_left();
}

TEST_CASE("the log writer keeps its bound with several rotated files", "[process][logs]") {
  TempDir dir("gaia-log-test");
  auto path = dir.path() / "output.log";
  {
    process::LogWriter w(path, 100, 2);
    REQUIRE(w.open());
    for (int i = 0; i < 50; ++i) w.write(fmt::format("{:09}\n", i));  // 10 bytes a line.
    w.write(std::string(250, 'x') + "\n");  // Longer than the bound: cut.
    w.write("end\n");
  }
  for (const char* suffix : {"", ".1", ".2"}) CHECK(fs::file_size(path.string() + suffix) <= 100);
  CHECK_FALSE(fs::exists(path.string() + ".3"));
  auto tail = process::tail_lines(path, 1, 2);
  REQUIRE(tail.size() == 1);
  CHECK(tail[0] == "end");
}

TEST_CASE("the follower yields new lines, across rotations and restarts", "[process][logs]") {
  ProcessOptions o;
  o.log_max_bytes = 512;
  ProcessFixture fx(o);
  const std::string pad(30, '.');
  auto first = make_spec("echo before; while [ ! -f go ]; do sleep 0.05; done; "
                         "i=0; while [ $i -lt 20 ]; do echo \"after $i " + pad + "\"; i=$((i+1)); done; sleep 300");
  fx.start(first);
  fx.await_child(first);
  auto log = fx.copy_dir(first) / process::k_log_file;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!fs::exists(log) || fs::file_size(log) == 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  process::LogFollower follow(fx.run_dir() / first.instance.key());
  CHECK(follow.poll().empty());  // "before" was written before it started.
  std::ofstream(fx.copy_dir(first) / "work" / "go") << "";
  std::vector<std::string> seen;
  while (seen.size() < 20) {
    auto lines = follow.next(5s);
    REQUIRE_FALSE(lines.empty());
    for (auto& l : lines) seen.push_back(l.text);
  }
  for (int i = 0; i < 20; ++i) CHECK(seen[i] == fmt::format("after {} {}", i, pad));
  CHECK(fs::exists(log.string() + ".1"));  // 20 lines of about 40 bytes did rotate.

  // A restart: the follower moves on to the new copy, from its first line.
  REQUIRE(fx.backend().stop({stop_of(first, 1s)}, now_ms()));
  auto second = make_spec("echo restarted; sleep 300", 0, 2);
  fx.start(second);
  auto lines = follow.next(5s);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].text == "restarted");
  CHECK(lines[0].copy_dir == fx.copy_dir(second));
  fx.expect_nothing_left();
}
