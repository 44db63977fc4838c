// The process backend's copies from start to stop, with real processes: idempotent
// starts, adoption by another backend object, stops with their grace, how copies end.

#include <signal.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>

#include "process/copy_files.hpp"
#include "tests/process/process_fixture.hpp"

using namespace gaia;
using namespace gaia::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

size_t copies_reported(ProcessBackend& b) {
  auto obs = b.observe(now_ms());
  REQUIRE(obs);
  return obs->copies.size();
}

}  // namespace

TEST_CASE("a started copy runs, a second start is a no-op, and a new backend adopts it", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  auto running = fx.await_phase(spec, CopyPhase::Running);
  CHECK(running.instance == "0.r.app.t");
  CHECK(running.node == "n1");
  CHECK(running.generation == 1);
  CHECK(running.started_ms > 0);
  auto pids = fx.await_child(spec);
  CHECK(pids.child_pgid == pids.child_pid);

  fx.start(spec);  // Idempotent: the same copy, not a second process.
  CHECK(fx.pids(spec).shim_pid == pids.shim_pid);
  CHECK(copies_reported(fx.backend()) == 1);

  auto other = fx.another_backend();
  auto obs = other->observe(now_ms());
  REQUIRE(obs);
  REQUIRE(obs->copies.size() == 1);
  CHECK(obs->copies[0].phase == CopyPhase::Running);
  CHECK(obs->copies[0].started_ms == running.started_ms);
  REQUIRE(other->start({spec}, now_ms()));
  CHECK(fx.pids(spec).shim_pid == pids.shim_pid);
  CHECK(process::process_alive(pids.shim_pid, pids.shim_start));
  size_t dirs = 0;
  for (const auto& e : fs::directory_iterator(fx.run_dir() / "0.r.app.t"))
    if (e.is_directory() && !e.path().filename().string().starts_with(".")) ++dirs;
  CHECK(dirs == 1);

  // Usage comes from /proc: memory at once, CPU from the second reading on.
  auto second = fx.await(spec, [](const ObservedCopy* c) { return c && c->usage; });
  CHECK(second.usage->memory_bytes > 0);
  CHECK(second.usage->cpu_millis >= 0);
  fx.expect_nothing_left();
}

TEST_CASE("a stopped copy ends within its grace and then disappears", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  auto pids = fx.await_child(spec);
  auto t0 = std::chrono::steady_clock::now();
  auto r = fx.backend().stop({stop_of(spec, 5s)}, now_ms());
  REQUIRE(r);
  CHECK(!(*r)[0].error);
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  CHECK(std::chrono::steady_clock::now() - t0 < 4s);
  CHECK(ProcessFixture::group_members(pids).empty());
  CHECK(!process::process_alive(pids.shim_pid, pids.shim_start));
  auto copies = fx.backend().copies_of(spec.instance.key());
  REQUIRE(copies.size() == 1);
  CHECK(copies[0].removed);
  CHECK(copies[0].reason == "stopped");
  // Stopping again, or stopping a copy that never was, succeeds and changes nothing.
  auto again = fx.backend().stop({stop_of(spec), stop_of(make_spec("true", 7))}, now_ms());
  REQUIRE(again);
  CHECK(!(*again)[0].error);
  CHECK(!(*again)[1].error);
  fx.expect_nothing_left();
}

TEST_CASE("a copy that ignores SIGTERM is killed after its grace", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("trap '' TERM; echo ready; sleep 300");
  fx.start(spec);
  auto pids = fx.await_child(spec);
  // Stop only once the trap is in place.
  auto log = fx.copy_dir(spec) / process::k_log_file;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (read_text(log).find("ready") == std::string::npos) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  auto t0 = std::chrono::steady_clock::now();
  REQUIRE(fx.backend().stop({stop_of(spec, 1s)}, now_ms()));
  // Still reported while it outlives the polite signal.
  std::this_thread::sleep_for(500ms);
  auto during = fx.backend().observe(now_ms());
  REQUIRE(during);
  REQUIRE(during->copies.size() == 1);
  CHECK(during->copies[0].live());
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  auto took = std::chrono::steady_clock::now() - t0;
  CHECK(took >= 1s);
  CHECK(took < 5s);
  CHECK(ProcessFixture::group_members(pids).empty());
  auto exit = process::read_json<process::CopyExit>(fx.copy_dir(spec) / process::k_exit_file);
  REQUIRE(exit);
  REQUIRE(*exit);
  CHECK((*exit)->reason == "stopped: killed after its grace period of 1000 ms");
  CHECK((*exit)->signal == SIGKILL);
  fx.expect_nothing_left();
}

TEST_CASE("a copy's exit code is reported", "[process]") {
  ProcessFixture fx;
  auto fails = make_spec("exit 3", 0);
  auto succeeds = make_spec("exit 0", 1);
  fx.start(fails);
  fx.start(succeeds);
  auto f = fx.await_phase(fails, CopyPhase::Exited);
  CHECK(f.exit_code == 3);
  CHECK(f.reason == "exited with code 3");
  CHECK_FALSE(f.internal);
  auto s = fx.await_phase(succeeds, CopyPhase::Exited);
  CHECK(s.exit_code == 0);
  // An ended copy that is stopped disappears at once.
  REQUIRE(fx.backend().stop({stop_of(fails)}, now_ms()));
  fx.await(fails, [](const ObservedCopy* c) { return c == nullptr; });
  fx.expect_nothing_left();
}

TEST_CASE("an empty command is rejected", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("true");
  spec.role.command.clear();
  auto r = fx.backend().start({spec}, now_ms());
  REQUIRE(r);
  REQUIRE((*r)[0].error);
  CHECK((*r)[0].error->code == BackendErrc::Rejected);
  CHECK(copies_reported(fx.backend()) == 0);
}

TEST_CASE("a missing executable fails the copy with a reason naming it, and nothing runs", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("unused");
  spec.role.command = {"gaia-no-such-program", "--flag"};
  spec.role.env["PATH"] = "/usr/bin:/bin";
  fx.start(spec);
  auto c = fx.await_phase(spec, CopyPhase::Failed);
  CHECK_THAT(c.reason, Catch::Contains("`gaia-no-such-program` not found on PATH (/usr/bin:/bin)"));
  CHECK_FALSE(c.internal);
  CHECK_FALSE(fs::exists(fx.copy_dir(spec) / process::k_pids_file));

  auto not_exec = make_spec("unused", 1);
  fs::path script = fx.run_dir() / "script.sh";
  std::ofstream(script) << "#!/bin/sh\n";
  not_exec.role.command = {script.string()};
  fx.start(not_exec);
  auto n = fx.await_phase(not_exec, CopyPhase::Failed);
  CHECK_THAT(n.reason, Catch::Contains("is not an executable file"));
  fx.expect_nothing_left();
}

TEST_CASE("a busy port fails the copy with a reason naming its holder", "[process]") {
  ProcessFixture fx;
  int port = free_port("127.0.0.2");
  Listener holder("127.0.0.2", port);
  auto spec = make_spec("sleep 300");
  spec.instance.address = "127.0.0.2";
  spec.instance.ports = {{"data", port}};
  fx.start(spec);
  auto c = fx.await_phase(spec, CopyPhase::Failed);
  CHECK(c.reason == fmt::format("port `data`: port {} on 127.0.0.2 is held by {} (pid {})", port,
                                process::process_name(::getpid()), ::getpid()));
  CHECK_FALSE(fs::exists(fx.copy_dir(spec) / process::k_pids_file));

  // The same port on another loopback address is free.
  auto elsewhere = make_spec("sleep 300", 1);
  elsewhere.instance.address = "127.0.0.3";
  elsewhere.instance.ports = {{"data", port}};
  fx.start(elsewhere);
  fx.await_phase(elsewhere, CopyPhase::Running);

  // An address of another machine is refused.
  auto remote = make_spec("sleep 300", 2);
  remote.instance.address = "192.0.2.1";  // TEST-NET-1: never local.
  fx.start(remote);
  auto r = fx.await_phase(remote, CopyPhase::Failed);
  CHECK(r.reason == "instance address 192.0.2.1 is not an address of this machine");
  fx.expect_nothing_left();
}

TEST_CASE("an app killed by a signal fails with the signal as reason", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  auto pids = fx.await_child(spec);
  REQUIRE(::kill(pids.child_pid, SIGKILL) == 0);
  auto c = fx.await_phase(spec, CopyPhase::Failed);
  CHECK(c.reason == "killed by signal 9 (SIGKILL)");
  CHECK(c.exit_code == 137);
  CHECK_FALSE(c.internal);
  fx.expect_nothing_left();
}

TEST_CASE("a copy whose supervisor died is lost, and stop cleans what is left of it", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  auto pids = fx.await_child(spec);
  REQUIRE(::kill(pids.shim_pid, SIGKILL) == 0);
  auto c = fx.await_phase(spec, CopyPhase::Failed);
  CHECK(c.internal);
  CHECK(c.reason == "its supervisor died");
  // The app outlived its supervisor; stop kills it without waiting for a grace.
  CHECK_FALSE(ProcessFixture::group_members(pids).empty());
  REQUIRE(fx.backend().stop({stop_of(spec, 60s)}, now_ms()));
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!ProcessFixture::group_members(pids).empty()) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  fx.expect_nothing_left();
}

TEST_CASE("a pids.json naming a live pid with another start time is not adopted", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  auto pids = fx.await_child(spec);
  fx.expect_nothing_left();  // Supervisor and app are gone; pids.json stays.

  // This test process stands in for a process that reused the supervisor's pid.
  auto self = process::read_proc_stat(::getpid());
  REQUIRE(self);
  auto forged = pids;
  forged.shim_pid = ::getpid();
  forged.child_pid = forged.child_pgid = 0;
  forged.shim_start = self->start_time + 1;
  REQUIRE(process::write_json_atomic(fx.copy_dir(spec) / process::k_pids_file, forged));
  auto other = fx.another_backend();
  auto obs = other->observe(now_ms());
  REQUIRE(obs);
  REQUIRE(obs->copies.size() == 1);
  CHECK(obs->copies[0].phase == CopyPhase::Failed);
  CHECK(obs->copies[0].internal);

  // With the right start time the same pid would count as alive: the start time is
  // what tells them apart.
  forged.shim_start = self->start_time;
  REQUIRE(process::write_json_atomic(fx.copy_dir(spec) / process::k_pids_file, forged));
  obs = other->observe(now_ms());
  REQUIRE(obs);
  CHECK(obs->copies[0].phase == CopyPhase::Starting);
  // Not ours to clean: forget the forged pids before the fixture kills what they name.
  std::filesystem::remove(fx.copy_dir(spec) / process::k_pids_file);
}

TEST_CASE("the app gets its config file and the merged env", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("env > env.txt");
  spec.role.env = {{"ROLE_ONLY", "r"}, {"BOTH", "role"}};
  spec.env = {{"BOTH", "gaia"}, {"GAIA_INSTANCE", "0.r.app.t"}};
  spec.config = {{"replication", 3}};
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Exited);
  auto work = fx.copy_dir(spec) / process::k_work_dir;
  std::string env = read_text(work / "env.txt");
  CHECK_THAT(env, Catch::Contains("GAIA_CONFIG=" + fs::absolute(work / "config.json").string() + "\n"));
  CHECK_THAT(env, Catch::Contains("ROLE_ONLY=r\n"));
  CHECK_THAT(env, Catch::Contains("BOTH=gaia\n"));
  CHECK_THAT(env, Catch::Contains("GAIA_INSTANCE=0.r.app.t\n"));
  CHECK(nlohmann::json::parse(read_text(work / "config.json")) == spec.config);
  fx.expect_nothing_left();
}

TEST_CASE("wait returns when a copy ends, and times out when nothing happens", "[process]") {
  ProcessFixture fx;
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  // The supervisor may still be writing what it reports about the start (a busy machine
  // delays it past await_phase): let those wakes pass, bounded, before timing the quiet.
  // Each wake is observed, as the controller loop does: wait() reports a change until an
  // observation has read it, so without that it would never fall quiet.
  for (int k = 0; k < 20 && fx.backend().wait(100ms); ++k) (void)fx.backend().observe(now_ms());
  auto t0 = std::chrono::steady_clock::now();
  CHECK_FALSE(fx.backend().wait(300ms));
  CHECK(std::chrono::steady_clock::now() - t0 >= 300ms);

  auto pids = fx.await_child(spec);
  std::thread killer([&] {
    std::this_thread::sleep_for(200ms);
    ::kill(pids.child_pid, SIGKILL);
  });
  t0 = std::chrono::steady_clock::now();
  CHECK(fx.backend().wait(10s));
  killer.join();
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
  fx.expect_nothing_left();
}
