// cgroup v2 for the process backend (process/cgroup.hpp): the parsers on strings, and,
// where this machine lets gaia make a v2 cgroup, copies in their cgroups: membership,
// a process that escapes the app's group and session still stopped (also when the
// supervisor died), CPU usage from usage_usec, limits where the controllers allow, the
// cgroup removed with the copy. Where no cgroup can be made, those tests say so (WARN)
// and check nothing else. The fixture kills and removes every copy's cgroup when a
// test ends, so not even a failing test leaves a process or a cgroup behind.

#include <signal.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fstream>
#include <thread>

#include "process/cgroup.hpp"
#include "process/copy_files.hpp"
#include "tests/process/process_fixture.hpp"

using namespace gaia;
using namespace gaia::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
namespace cg = gaia::process::cgroup;

namespace {

// The cgroup support of this machine, or nothing (with a WARN saying why) when no
// cgroup can be made here: the caller then returns without checking anything.
std::optional<cg::Support> usable_cgroups() {
  cg::Support s = cg::prepare_parent();
  if (s.parent.empty()) {
    WARN("no cgroup v2 can be made on this machine, so copies run without one and this test checks nothing: "
         << s.problem);
    SUCCEED();
    return std::nullopt;
  }
  return s;
}

// The record of the copy's cgroup, once its supervisor wrote it.
cg::CopyCgroup cgroup_of(ProcessFixture& fx, const StartSpec& spec) {
  fx.await_child(spec);  // cgroup.json is written before the app is spawned.
  auto j = process::read_json<nlohmann::json>(fx.copy_dir(spec) / cg::k_cgroup_file);
  REQUIRE(j);
  REQUIRE(*j);
  return (*j)->get<cg::CopyCgroup>();
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// A process of the app that left its group and session; its script writes its pid to
// work/escaped.pid. Killed by pid and start time when the test ends, whatever happened.
struct Escaped {
  int pid = 0;
  uint64_t start = 0;
  ~Escaped() {
    if (pid > 0 && process::process_alive(pid, start)) ::kill(pid, SIGKILL);
  }
};

// The app: a process that calls setsid in a double fork (the subshell ends at once,
// so init adopts it) and runs `escaped_command`, then `sleep 300` as the app itself.
std::string escaping_script(const std::string& escaped_command) {
  return fmt::format("(setsid sh -c 'echo $$ > escaped.pid; exec {}' &); exec sleep 300", escaped_command);
}

void await_escaped(ProcessFixture& fx, const StartSpec& spec, Escaped& e) {
  const fs::path file = fx.copy_dir(spec) / process::k_work_dir / "escaped.pid";
  auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    std::string text = read_text(file);
    if (!text.empty() && text.back() == '\n') {
      e.pid = std::stoi(text);
      break;
    }
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(20ms);
  }
  // It must really have escaped: otherwise the test would prove nothing. setsid ran
  // before the pid was written, and exec keeps the pid and the start time.
  auto st = process::read_proc_stat(e.pid);
  REQUIRE(st);
  e.start = st->start_time;
  auto pids = fx.pids(spec);
  CHECK(st->pgrp != pids.child_pgid);
  CHECK(st->session != pids.shim_pid);
  CHECK(st->session == e.pid);
}

}  // namespace

// ---- Parsers ----

TEST_CASE("cgroup2 mounts are found in mountinfo, escapes decoded, v1 hierarchies ignored", "[process][cgroup]") {
  const std::string mountinfo =
      "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
      "26 25 0:24 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755\n"
      "27 26 0:25 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw\n"
      "28 26 0:26 / /sys/fs/cgroup/memory rw,nosuid shared:10 - cgroup cgroup rw,memory\n"
      "29 26 0:25 /lxc/c1 /mnt/my\\040cgroups rw,relatime - cgroup2 none rw\n";
  auto mounts = cg::parse_cgroup2_mounts(mountinfo);
  REQUIRE(mounts.size() == 2);
  CHECK(mounts[0] == cg::Mount{"/sys/fs/cgroup/unified", "/"});
  CHECK(mounts[1] == cg::Mount{"/mnt/my cgroups", "/lxc/c1"});
  CHECK(cg::parse_cgroup2_mounts("").empty());
  CHECK(cg::parse_cgroup2_mounts("garbage\n27 26 0:25 / /x rw - cgroup cgroup rw\n").empty());
}

TEST_CASE("the v2 cgroup of a process is its 0:: line, relative to a mount's root", "[process][cgroup]") {
  CHECK(cg::parse_v2_path("12:memory:/a\n1:name=systemd:/\n0::/user.slice/session-3.scope\n") ==
        "/user.slice/session-3.scope");
  CHECK(cg::parse_v2_path("0::/\n") == "/");
  CHECK(!cg::parse_v2_path("4:memory:/x\n1:cpu:/\n"));  // v1 only.

  CHECK(cg::relative_to_root("/", "/") == "");
  CHECK(cg::relative_to_root("/a/b", "/") == "a/b");
  CHECK(cg::relative_to_root("/a/b", "/a") == "b");
  CHECK(cg::relative_to_root("/a", "/a") == "");
  CHECK(cg::relative_to_root("/a/b/", "/a/") == "b");
  CHECK(!cg::relative_to_root("/ab", "/a"));
  CHECK(!cg::relative_to_root("/b", "/a"));
  CHECK(!cg::relative_to_root("/../outside", "/"));  // Outside the cgroup namespace.
  CHECK(!cg::relative_to_root("relative", "/"));
}

TEST_CASE("cpu.stat, controllers, cgroup.procs and cgroup.events are parsed", "[process][cgroup]") {
  CHECK(cg::parse_usage_usec("usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n") == 123456u);
  CHECK(cg::parse_usage_usec("user_usec 1\nusage_usec 7") == 7u);
  CHECK(!cg::parse_usage_usec("user_usec 1\n"));
  CHECK(!cg::parse_usage_usec("usage_usec x\n"));

  CHECK(cg::parse_controllers("cpuset cpu io memory pids\n") ==
        std::set<std::string>{"cpuset", "cpu", "io", "memory", "pids"});
  CHECK(cg::parse_controllers("\n").empty());
  CHECK(cg::parse_controllers("hugetlb\n") == std::set<std::string>{"hugetlb"});

  CHECK(cg::parse_pids("12\n345\n\n") == std::vector<int>{12, 345});
  CHECK(cg::parse_pids("").empty());

  CHECK(cg::parse_populated("populated 1\nfrozen 0\n") == true);
  CHECK(cg::parse_populated("populated 0\nfrozen 0\n") == false);
  CHECK(!cg::parse_populated("frozen 0\n"));
}

TEST_CASE("limits are written as cpu.max and memory.max text", "[process][cgroup]") {
  CHECK(cg::cpu_max_text(500) == "50000 100000");
  CHECK(cg::cpu_max_text(1000) == "100000 100000");
  CHECK(cg::cpu_max_text(2500) == "250000 100000");
  CHECK(cg::cpu_max_text(1) == "1000 100000");  // The kernel's least quota.
  CHECK(cg::cpu_max_text(0) == "max 100000");
  CHECK(cg::cpu_max_text(-5) == "max 100000");
  CHECK(cg::memory_max_text(512LL << 20) == "536870912");
  CHECK(cg::memory_max_text(0) == "max");
}

TEST_CASE("a copy's cgroup name is safe, bounded and unique per supervisor", "[process][cgroup]") {
  auto a = cg::copy_cgroup_name("0.web.shop.t", "n1", 3, "/run/0.web.shop.t/n1-g3:100:5");
  auto b = cg::copy_cgroup_name("0.web.shop.t", "n1", 3, "/run/0.web.shop.t/n1-g3:200:9");
  CHECK(a.starts_with("gaia-0.web.shop.t-n1-g3-"));
  CHECK(a != b);
  CHECK(a == cg::copy_cgroup_name("0.web.shop.t", "n1", 3, "/run/0.web.shop.t/n1-g3:100:5"));
  auto odd = cg::copy_cgroup_name("a/b c\n", std::string(500, 'x'), 1, "u");
  CHECK(odd.find('/') == std::string::npos);
  CHECK(odd.find(' ') == std::string::npos);
  CHECK(odd.find('\n') == std::string::npos);
  CHECK(odd.size() < 255);

  CHECK(cg::is_copy_cgroup_path("/sys/fs/cgroup/gaia/" + a));
  CHECK(!cg::is_copy_cgroup_path("/sys/fs/cgroup"));
  CHECK(!cg::is_copy_cgroup_path("/sys/fs/cgroup/gaia"));
  CHECK(!cg::is_copy_cgroup_path("/sys/fs/cgroup/other/" + a));
  CHECK(!cg::is_copy_cgroup_path("/sys/fs/cgroup/gaia/" + a + "/.."));
  CHECK(!cg::is_copy_cgroup_path("gaia/" + a));
}

TEST_CASE("the limits warning says what is not enforced and why", "[process][cgroup]") {
  CHECK(cg::limits_warning({}, false) ==
        "memory and cpu limits are not enforced: cgroups are turned off (usage is read from /proc)");
  cg::Support none;
  none.problem = "no cgroup v2 hierarchy is mounted";
  CHECK(cg::limits_warning(none, true) ==
        "memory and cpu limits are not enforced: no cgroup v2 hierarchy is mounted (usage is read from /proc)");
  cg::Support hybrid{"/sys/fs/cgroup/unified", "/sys/fs/cgroup/unified/gaia", false, false,
                     "cgroup v2 at /sys/fs/cgroup/unified offers no memory or cpu controller"};
  CHECK(cg::limits_warning(hybrid, true) ==
        "memory and cpu limits are not enforced: cgroup v2 at /sys/fs/cgroup/unified offers no memory or cpu "
        "controller (cpu usage is read from each copy's cgroup, memory usage from /proc)");
  cg::Support no_memory{"/sys/fs/cgroup", "/sys/fs/cgroup/gaia", false, true, "x"};
  CHECK(cg::limits_warning(no_memory, true) == "memory limits are not enforced: x (memory usage is read from /proc)");
  cg::Support full{"/sys/fs/cgroup", "/sys/fs/cgroup/gaia", true, true, ""};
  CHECK(cg::limits_warning(full, true).empty());
}

TEST_CASE("cgroup.json round-trips and only names a copy-shaped cgroup", "[process][cgroup]") {
  TempDir dir("gaia-cgroup-test");
  cg::CopyCgroup c{"/sys/fs/cgroup/gaia/gaia-x-1", true, false, "67108864", "", "no cpu"};
  REQUIRE(process::write_json_atomic(dir.path() / cg::k_cgroup_file, c));
  auto back = cg::read_record(dir.path());
  REQUIRE(back);
  CHECK(back->path == c.path);
  CHECK(back->memory_limit);
  CHECK(!back->cpu_limit);
  CHECK(back->memory_max == "67108864");
  CHECK(back->problem == "no cpu");
  // A copy without a cgroup, and a record naming something else, give nothing.
  cg::CopyCgroup none;
  none.problem = "off";
  REQUIRE(process::write_json_atomic(dir.path() / cg::k_cgroup_file, none));
  CHECK(!cg::read_record(dir.path()));
  cg::CopyCgroup root;
  root.path = "/sys/fs/cgroup";
  REQUIRE(process::write_json_atomic(dir.path() / cg::k_cgroup_file, root));
  CHECK(!cg::read_record(dir.path()));
}

// ---- With real cgroups ----

TEST_CASE("a copy's processes are in its cgroup, with its limits, and the cgroup goes with the copy",
          "[process][cgroup]") {
  auto support = usable_cgroups();
  if (!support) return;
  ProcessFixture fx;
  auto spec = make_spec("sleep 300 & exec sleep 301");
  spec.role.resources.cpu_millis = 500;
  spec.role.resources.memory_bytes = 64 << 20;
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  auto record = cgroup_of(fx, spec);
  REQUIRE(!record.path.empty());
  const fs::path path = record.path;
  CHECK(path.parent_path() == support->parent);
  auto pids = fx.await_child(spec);

  // The app and its child are members; the supervisor is not.
  auto members = cg::members(path);
  for (int i = 0; i < 200 && members && members->size() < 2; ++i) {  // The shell forks its child.
    std::this_thread::sleep_for(10ms);
    members = cg::members(path);
  }
  REQUIRE(members);
  CHECK(contains(*members, pids.child_pid));
  CHECK(!contains(*members, pids.shim_pid));
  CHECK(members->size() == 2);
  CHECK(read_text(fmt::format("/proc/{}/cgroup", pids.child_pid)).find(path.filename().string()) !=
        std::string::npos);

  // The limits are written where the controllers allow, and cgroup.json says which.
  CHECK(record.memory_limit == support->memory);
  CHECK(record.cpu_limit == support->cpu);
  if (support->memory) CHECK(read_text(path / "memory.max") == "67108864\n");
  if (support->cpu) CHECK(read_text(path / "cpu.max") == "50000 100000\n");
  if (!support->memory || !support->cpu) {
    WARN("limits are not enforced here: " << support->problem);
    CHECK(!record.problem.empty());
  }

  auto r = fx.backend().stop({stop_of(spec, 5s)}, now_ms());
  REQUIRE(r);
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  CHECK(!fs::exists(path));
  fx.expect_nothing_left();
}

TEST_CASE("a process that leaves the app's group and session is stopped with the copy", "[process][cgroup]") {
  if (!usable_cgroups()) return;
  ProcessFixture fx;
  Escaped escaped;
  auto spec = make_spec(escaping_script("sleep 300"));
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  await_escaped(fx, spec, escaped);
  auto record = cgroup_of(fx, spec);
  REQUIRE(!record.path.empty());
  auto members = cg::members(record.path);
  REQUIRE(members);
  CHECK(contains(*members, escaped.pid));

  auto r = fx.backend().stop({stop_of(spec, 5s)}, now_ms());
  REQUIRE(r);
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  CHECK(!process::process_alive(escaped.pid, escaped.start));
  CHECK(!fs::exists(record.path));
  fx.expect_nothing_left();
}

TEST_CASE("an escaped process of a copy whose supervisor died is killed by the stop", "[process][cgroup]") {
  if (!usable_cgroups()) return;
  ProcessFixture fx;
  Escaped escaped;
  auto spec = make_spec(escaping_script("sleep 300"));
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  await_escaped(fx, spec, escaped);
  auto record = cgroup_of(fx, spec);
  REQUIRE(!record.path.empty());
  auto pids = fx.pids(spec);
  REQUIRE(::kill(pids.shim_pid, SIGKILL) == 0);
  auto lost = fx.await_phase(spec, CopyPhase::Failed);
  CHECK(lost.internal);
  CHECK(lost.reason == "its supervisor died");

  auto r = fx.backend().stop({stop_of(spec, 5s)}, now_ms());
  REQUIRE(r);
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  CHECK(!process::process_alive(escaped.pid, escaped.start));
  CHECK(!process::process_alive(pids.child_pid, pids.child_start));
  CHECK(!fs::exists(record.path));
  fx.expect_nothing_left();
}

TEST_CASE("a copy's CPU usage comes from its cgroup, escaped processes included", "[process][cgroup]") {
  if (!usable_cgroups()) return;
  ProcessFixture fx;
  Escaped escaped;
  // The busy loop runs in the escaped process: the app's own group is idle, so only
  // the cgroup can see the CPU it burns.
  auto spec = make_spec(escaping_script("sh -c \"while :; do :; done\""));
  fx.start(spec);
  fx.await_phase(spec, CopyPhase::Running);
  await_escaped(fx, spec, escaped);
  auto record = cgroup_of(fx, spec);
  REQUIRE(!record.path.empty());

  auto first = cg::read_usage(record.path);
  REQUIRE(first.cpu_usec);
  std::this_thread::sleep_for(300ms);
  auto second = cg::read_usage(record.path);
  REQUIRE(second.cpu_usec);
  CHECK(*second.cpu_usec > *first.cpu_usec + 50'000);  // A busy loop for 300 ms on a loaded machine.
  if (record.memory_limit) CHECK(second.memory_bytes > 0);

  // Two observations by the same backend give a rate; a busy loop is far above 100m
  // even on a machine busy with other work.
  auto busy = fx.await(spec, [](const ObservedCopy* c) { return c && c->usage && c->usage->cpu_millis > 100; }, 15s);
  CHECK(busy.usage->memory_bytes > 0);
  CHECK(busy.usage->cpu_millis < 3000);

  auto r = fx.backend().stop({stop_of(spec, 5s)}, now_ms());
  REQUIRE(r);
  fx.await(spec, [](const ObservedCopy* c) { return c == nullptr; });
  CHECK(!process::process_alive(escaped.pid, escaped.start));
  fx.expect_nothing_left();
}

TEST_CASE("with cgroups off a copy has none, usage is read from /proc, and the warning is given once",
          "[process][cgroup]") {
  cg::forget_limits_warning();  // Other tests of this process may have taken it.
  ProcessOptions options;
  options.cgroups = CgroupMode::Off;
  ProcessFixture fx(options);
  auto spec = make_spec("sleep 300");
  fx.start(spec);
  auto warnings = fx.backend().take_warnings();
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "memory and cpu limits are not enforced: cgroups are turned off (usage is read from /proc)");
  CHECK(fx.backend().take_warnings().empty());
  auto other = fx.another_backend();
  REQUIRE(other->observe(now_ms()));
  CHECK(other->take_warnings().empty());  // Once per process, not per object.

  auto record = cgroup_of(fx, spec);
  CHECK(record.path.empty());
  CHECK(record.problem == "cgroups are turned off");
  auto pids = fx.await_child(spec);
  CHECK(read_text(fmt::format("/proc/{}/cgroup", pids.child_pid)).find("gaia-") == std::string::npos);
  auto used = fx.await(spec, [](const ObservedCopy* c) { return c && c->usage; });
  CHECK(used.usage->memory_bytes > 0);
  fx.expect_nothing_left();
}

TEST_CASE("with cgroups on, the warning is this machine's, once", "[process][cgroup]") {
  cg::forget_limits_warning();
  ProcessFixture fx;
  REQUIRE(fx.backend().observe(now_ms()));
  const std::string expected = cg::limits_warning(cg::prepare_parent(), true);
  auto warnings = fx.backend().take_warnings();
  if (expected.empty()) {
    CHECK(warnings.empty());
  } else {
    REQUIRE(warnings.size() == 1);
    CHECK(warnings[0] == expected);
    WARN("this machine: " << expected);
  }
  REQUIRE(fx.backend().observe(now_ms()));
  CHECK(fx.backend().take_warnings().empty());
}
