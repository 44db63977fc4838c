// Hostile Jsonnet: unbounded recursion, infinite loops, enormous output and memory
// exhaustion all end in a clear error, and the test process itself is never harmed.

#include <catch2/catch.hpp>

#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>

#include "render/renderer.hpp"
#include "render/sandbox.hpp"
#include "tests/render/render_test_util.hpp"

using gaia::test::TempApp;
namespace render = gaia::render;

namespace {

std::string main_with(const std::string& expr, const std::string& prelude = "") {
  return prelude + "function(config, deps, app) { roles: {}, outputs: { x: " + expr + " } }\n";
}

}  // namespace

TEST_CASE("unbounded recursion stops at max_stack with the Jsonnet location", "[hostile]") {
  TempApp app("{}", main_with("f(0)", "local f(n) = 1 + f(n + 1);\n"));
  auto bad = render::evaluate(app.request());
  REQUIRE_FALSE(bad.has_value());
  const auto& d = bad.error()[0];
  CHECK_THAT(d.message, Catch::StartsWith("max stack frames exceeded"));
  CHECK(d.location.file == "demo/main.jsonnet");
  CHECK(d.location.line == 1);
  CHECK_THAT(d.hint, Catch::Contains("recursion"));
}

TEST_CASE("an infinite loop is killed after the timeout", "[hostile]") {
  // Tail recursion in Jsonnet does not grow the stack, so this loops forever.
  TempApp app("{}", main_with("loop(0)", "local loop(n) = if n < 0 then n else loop(n + 1) tailstrict;\n"));
  auto req = app.request();
  req.options.timeout_ms = 1000;
  auto start = std::chrono::steady_clock::now();
  auto bad = render::evaluate(req);
  auto took = std::chrono::steady_clock::now() - start;
  REQUIRE_FALSE(bad.has_value());
  CHECK(took < std::chrono::seconds(5));
  CHECK(took >= std::chrono::milliseconds(1000));
  const auto& d = bad.error()[0];
  CHECK(d.message == "render of demo timed out after 1s (demo/main.jsonnet): the template may loop forever");
  CHECK(d.hint == "raise --render-timeout if it is really this slow");
  CHECK(d.location.file == "demo/main.jsonnet");

  SECTION("in config.jsonnet, the message names config.jsonnet") {
    app.write("config.jsonnet", "local loop(n) = if n < 0 then n else loop(n + 1) tailstrict; { a: loop(0) }");
    auto bad2 = render::evaluate(req);
    REQUIRE_FALSE(bad2.has_value());
    CHECK_THAT(bad2.error()[0].message, Catch::Contains("(demo/config.jsonnet)"));
  }
}

TEST_CASE("enormous output is refused", "[hostile]") {
  // A string of 2^24 bytes (16MiB, built by doubling so it is quick to make); with the
  // rest of the output it is just over the default limit.
  TempApp app("{}", main_with("d('x', 24)", "local d(s, n) = if n == 0 then s else d(s + s, n - 1);\n"));
  auto req = app.request();
  auto bad = render::evaluate(req);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error()[0].message, Catch::Contains("exceeds 16MiB"));
  CHECK(bad.error()[0].location.file == "demo/main.jsonnet");

  SECTION("a large array against a small limit") {
    app.write("main.jsonnet", main_with("std.makeArray(200000, function(i) i)"));
    req.options.max_output_bytes = 1 << 20;
    auto bad2 = render::evaluate(req);
    REQUIRE_FALSE(bad2.has_value());
    CHECK_THAT(bad2.error()[0].message, Catch::Contains("exceeds 1MiB"));
  }
}

TEST_CASE("memory exhaustion ends the child, not the caller", "[hostile]") {
  TempApp app("{}", main_with("std.length(std.makeArray(1e8, function(i) i))"));
  auto req = app.request();
  req.options.memory_limit_bytes = size_t{256} << 20;
  auto bad = render::evaluate(req);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error()[0].message, Catch::Contains("memory limit of 256MiB"));
  CHECK(bad.error()[0].location.file == "demo/main.jsonnet");
}

TEST_CASE("sandbox: payloads, progress, crashes and limits", "[hostile]") {
  render::SandboxLimits limits;
  limits.timeout_ms = 2000;
  auto ok = render::run_sandboxed(limits, [](render::SandboxChannel& ch) {
    ch.progress("step one");
    ch.progress("step\ntwo");
    return std::string(200000, 'R');  // Bigger than a pipe buffer, starts with the marker byte.
  });
  CHECK(ok.status == render::SandboxOutcome::Status::Ok);
  CHECK(ok.payload == std::string(200000, 'R'));
  CHECK(ok.progress == "step two");

  auto crash = render::run_sandboxed(limits, [](render::SandboxChannel&) -> std::string { std::abort(); });
  CHECK(crash.status == render::SandboxOutcome::Status::Crashed);
  CHECK(crash.signal == SIGABRT);

  limits.max_output_bytes = 1000;
  auto big = render::run_sandboxed(limits, [](render::SandboxChannel&) { return std::string(5000, 'x'); });
  CHECK(big.status == render::SandboxOutcome::Status::OutputTooLarge);
  CHECK(big.payload.empty());

  CHECK(render::format_byte_size(16u << 20) == "16MiB");
  CHECK(render::format_byte_size(1536) == "1.5KiB");
  CHECK(render::format_ms(10000) == "10s");
  CHECK(render::format_ms(1500) == "1.5s");
  CHECK(render::format_ms(250) == "250ms");
}

TEST_CASE("sandbox: the child dies with its parent and has a CPU limit", "[hostile]") {
  render::SandboxLimits limits;
  limits.timeout_ms = 1500;
  // What the child itself sees: the signal it gets when its parent dies, and its CPU
  // limit (the timeout rounded up to whole seconds and one more, so the parent's clock
  // decides first; the hard limit one second later).
  auto seen = render::run_sandboxed(limits, [](render::SandboxChannel&) {
    int sig = 0;
    ::prctl(PR_GET_PDEATHSIG, &sig);
    rlimit cpu{};
    ::getrlimit(RLIMIT_CPU, &cpu);
    return std::to_string(sig) + " " + std::to_string(cpu.rlim_cur) + " " + std::to_string(cpu.rlim_max);
  });
  REQUIRE(seen.status == render::SandboxOutcome::Status::Ok);
  CHECK(seen.payload == std::to_string(SIGKILL) + " 3 4");

  SECTION("a child stopped by its CPU limit is reported as a timeout") {
    // The kernel's verdict can come before the parent's clock (here the body lowers its
    // own limit to stand for that): it is the same verdict.
    limits.timeout_ms = 30000;
    auto start = std::chrono::steady_clock::now();
    auto spun = render::run_sandboxed(limits, [](render::SandboxChannel&) -> std::string {
      rlimit cpu{1, 2};
      ::setrlimit(RLIMIT_CPU, &cpu);
      for (volatile unsigned long i = 0;; i = i + 1) {
      }
    });
    CHECK(spun.status == render::SandboxOutcome::Status::Timeout);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  }
}
