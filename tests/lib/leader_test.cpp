// Leader election over a real SQLite store, with a manual clock driving lease expiry.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "lib/leader.hpp"
#include "store/sqlite_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using namespace std::chrono_literals;

namespace {

using Dir = gaia::test::TempDir;

std::unique_ptr<SqliteStore> open_store(const Dir& d, std::shared_ptr<const Clock> clock) {
  SqliteStoreOptions o;
  o.clock = clock;
  o.synchronous_full = false;
  auto s = SqliteStore::open(d.path() / "state.db", o);
  REQUIRE(s);
  return std::move(*s);
}

}  // namespace

TEST_CASE("one runner leads, the other waits and takes over when the leader resigns", "[leader]") {
  Dir d;
  auto clock = std::make_shared<ManualClock>();
  auto s1 = open_store(d, clock);
  auto s2 = open_store(d, clock);
  LeaderElection a(*s1, "meta/leader", "a", 10s);
  LeaderElection b(*s2, "meta/leader", "b", 10s);
  REQUIRE(a.try_lead("t0").value());
  CHECK_FALSE(b.try_lead("t0").value());
  CHECK(a.try_lead("t1").value());  // Leading again renews; it does not fail on its own key.
  auto cur = LeaderElection::current(*s2, "meta/leader").value();
  REQUIRE(cur);
  CHECK(cur->holder == "a");
  CHECK(cur->since == "t0");
  REQUIRE(a.resign());
  CHECK_FALSE(a.leading());
  CHECK(b.try_lead("t2").value());
  CHECK(LeaderElection::current(*s1, "meta/leader").value()->holder == "b");
  CHECK_FALSE(a.try_lead("t3").value());
}

TEST_CASE("a leader that stops renewing loses to a waiting runner after the TTL", "[leader]") {
  Dir d;
  auto clock = std::make_shared<ManualClock>();
  auto s1 = open_store(d, clock);
  auto s2 = open_store(d, clock);
  LeaderElection a(*s1, "meta/leader", "a", 10s);
  LeaderElection b(*s2, "meta/leader", "b", 10s);
  REQUIRE(a.try_lead("t0").value());
  clock->advance(6s);
  REQUIRE(a.try_lead("t6").value());  // Renewed at 6s: alive until 16s.
  clock->advance(9s);
  CHECK_FALSE(b.try_lead("t15").value());
  clock->advance(2s);  // 17s: a missed its renewal.
  CHECK(b.try_lead("t17").value());
  // a notices it lost the lease and does not take it back while b renews.
  CHECK_FALSE(a.try_lead("t17").value());
  CHECK_FALSE(a.leading());
  CHECK(LeaderElection::current(*s1, "meta/leader").value()->holder == "b");
}

TEST_CASE("no leader is reported when nobody ran", "[leader]") {
  Dir d;
  auto clock = std::make_shared<ManualClock>();
  auto s = open_store(d, clock);
  CHECK_FALSE(LeaderElection::current(*s, "meta/leader").value().has_value());
}
