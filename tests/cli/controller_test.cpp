// `gaia controller run|status` through the real binary: one leader per store, a second
// runner waits and says who leads, leadership is released on exit, and a runner places
// work that became schedulable while nobody ran a command.
#include <catch2/catch.hpp>

#include <thread>

#include "tests/cli/e2e_util.hpp"

using gaia::test::RunResult;
using gaia::test::Scratch;

TEST_CASE("controller run: one leader per store, the second runner waits and names the leader", "[cli][controller]") {
  Scratch s;
  REQUIRE(s.gaia({"cluster", "create", "--nodes", "2", "-q"}).code == 0);
  RunResult first;
  std::thread t([&] { first = s.gaia({"controller", "run", "--interval", "200ms", "--lease-ttl", "3s", "--for", "3s"}); });
  // Wait until the first runner leads.
  bool leading = false;
  for (int i = 0; i < 100 && !leading; ++i) {
    auto st = s.gaia({"controller", "status", "-o", "json"});
    leading = st.code == 0 && st.out.find("\"holder\"") != std::string::npos;
    if (!leading) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE(leading);
  auto second = s.gaia({"controller", "run", "--once"});
  CHECK(second.code == 0);
  CHECK(second.out.find("waiting:") != std::string::npos);
  CHECK(second.out.find("leads the controllers") != std::string::npos);
  t.join();
  CHECK(first.code == 0);
  CHECK(first.out.find("leading the controllers") != std::string::npos);
  CHECK(first.out.find("leadership released") != std::string::npos);
  // Released at exit: nobody leads, and a new runner leads at once.
  auto st = s.gaia({"controller", "status"});
  CHECK(st.out.find("no controller runner") != std::string::npos);
  auto again = s.gaia({"controller", "run", "--once"});
  CHECK(again.code == 0);
  CHECK(again.out.find("leading the controllers") != std::string::npos);
}

TEST_CASE("controller run: bad durations are usage errors and nothing runs", "[cli][controller]") {
  Scratch s;
  REQUIRE(s.gaia({"cluster", "create", "--nodes", "2", "-q"}).code == 0);
  auto r = s.gaia({"controller", "run", "--interval", "10s", "--lease-ttl", "5s", "--once"});
  CHECK(r.code == 1);
  CHECK(r.err.find("more than half of --lease-ttl") != std::string::npos);
  r = s.gaia({"controller", "run", "--interval", "soon", "--once"});
  CHECK(r.code == 1);
  CHECK(s.gaia({"controller", "status"}).out.find("no controller runner") != std::string::npos);
}
