#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <chrono>
#include <fmt/format.h>

#include "lib/instance_ref.hpp"
#include "store/sqlite_store.hpp"
#include "lib/state.hpp"
#include "lib/timeline.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using namespace std::chrono_literals;
using Duration = Clock::time_point::duration;

namespace {

Clock::time_point at(int y, unsigned m, unsigned d, int hh = 0, int mm = 0, int ss = 0) {
  return std::chrono::time_point_cast<Duration>(std::chrono::sys_days(std::chrono::year(y) / m / d) +
                                                std::chrono::hours(hh) + std::chrono::minutes(mm) +
                                                std::chrono::seconds(ss));
}

TimelineEvent ev(int64_t seq, std::string time, std::string reason, std::string app = "", std::string node = "") {
  TimelineEvent e;
  e.seq = seq;
  e.time = std::move(time);
  e.reason = std::move(reason);
  e.app = std::move(app);
  e.node = std::move(node);
  return e;
}

std::vector<int64_t> seqs(const std::vector<TimelineEvent>& es) {
  std::vector<int64_t> out;
  for (const auto& e : es) out.push_back(e.seq);
  return out;
}

}  // namespace

TEST_CASE("durations are sums of number and unit terms", "[timeline]") {
  CHECK(*parse_duration("90s") == Duration(90s));
  CHECK(*parse_duration("10m") == Duration(10min));
  CHECK(*parse_duration("2h") == Duration(2h));
  CHECK(*parse_duration("1h30m") == Duration(90min));
  CHECK(*parse_duration("500ms") == Duration(500ms));
  CHECK(*parse_duration("1d") == Duration(24h));
  CHECK(*parse_duration("1.5h") == Duration(90min));
  for (const char* bad : {"", "10", "10x", "m", "1h30", "-5m"}) {
    INFO(bad);
    auto r = parse_duration(bad);
    REQUIRE_FALSE(r);
    CHECK(r.error().front().hint.find("10m") != std::string::npos);
  }
  CHECK(parse_duration("10").error().front().message.find("no unit") != std::string::npos);
  CHECK(parse_duration("3w").error().front().message.find("unknown unit 'w'") != std::string::npos);
}

// Found by fuzzing (fuzz/targets/duration.cpp): "18446744073709551615d" overflowed the
// conversion and came out negative, a retention or --since in the past.
TEST_CASE("durations beyond a century are errors, not negative", "[timeline][fuzz]") {
  CHECK(*parse_duration("36500d") == Duration(std::chrono::hours(24 * 36500)));
  for (const char* huge : {"36501d", "18446744073709551615d", "99999999999999999999h1s"}) {
    INFO(huge);
    auto r = parse_duration(huge);
    REQUIRE_FALSE(r);
    CHECK(r.error().front().message.find("more than 100 years") != std::string::npos);
  }
}

TEST_CASE("RFC 3339 times parse with fractions and offsets", "[timeline]") {
  CHECK(*parse_rfc3339("2024-01-01T10:00:00Z") == at(2024, 1, 1, 10));
  CHECK(*parse_rfc3339("2024-01-01 10:00:00z") == at(2024, 1, 1, 10));
  CHECK(*parse_rfc3339("2024-01-01T10:00:00.250Z") == at(2024, 1, 1, 10) + Duration(250ms));
  CHECK(*parse_rfc3339("2024-01-01T10:00:00+02:00") == at(2024, 1, 1, 8));
  CHECK(*parse_rfc3339("2024-01-01T00:30:00-01:30") == at(2024, 1, 1, 2));
  CHECK(*parse_rfc3339("2024-02-29T12:00:00Z") == at(2024, 2, 29, 12));
  for (const char* bad : {"2024-01-01", "2024-01-01T10:00:00", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
                          "2024-01-01T24:00:00Z", "2024-01-01T10:00:00.Z", "2024-01-01T10:00:00Zjunk",
                          "2024-1-01T10:00:00Z", "yesterday"}) {
    INFO(bad);
    CHECK_FALSE(parse_rfc3339(bad));
  }
  CHECK(format_rfc3339(at(2024, 3, 5, 7, 8, 9) + Duration(42ms)) == "2024-03-05T07:08:09.042Z");
  // Beyond what the clock can count, bounds saturate rather than wrap.
  CHECK(*parse_rfc3339("2999-01-01T00:00:00Z") == Clock::time_point::max());
  CHECK(*parse_rfc3339("1000-01-01T00:00:00Z") == Clock::time_point::min());
  CHECK(*parse_rfc3339("2999-01-01T00:00:00Z") > *parse_rfc3339("2000-01-01T00:00:00Z"));
}

TEST_CASE("formatted times parse back to the same millisecond", "[timeline]") {
  CHECK(rc::check("parse(format(t)) == t", [](uint32_t seconds, uint16_t millis) {
    auto t = Clock::time_point(std::chrono::seconds(seconds)) +
             std::chrono::duration_cast<Duration>(std::chrono::milliseconds(millis % 1000));
    auto back = parse_rfc3339(format_rfc3339(t));
    RC_ASSERT(back.has_value());
    RC_ASSERT(*back == t);
  }));
}

TEST_CASE("flags --since and --until take a time or a duration before now", "[timeline]") {
  auto now = at(2024, 6, 1, 12);
  CHECK(*parse_time_bound("10m", now, "--since") == at(2024, 6, 1, 11, 50));
  CHECK(*parse_time_bound("2h", now, "--since") == at(2024, 6, 1, 10));
  CHECK(*parse_time_bound("2024-05-31T00:00:00Z", now, "--since") == at(2024, 5, 31));
  auto bad = parse_time_bound("2024-05-31", now, "--until");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().front().path == "--until");
  CHECK(bad.error().front().message.find("neither an RFC 3339 time nor a duration") != std::string::npos);
  CHECK_FALSE(parse_time_bound("soon", now, "--since"));
}

TEST_CASE("comma lists are split and trimmed", "[timeline]") {
  CHECK(split_list("Scheduled, Preempted,,FailedScheduling ") ==
        std::vector<std::string>{"Scheduled", "Preempted", "FailedScheduling"});
  CHECK(split_list("").empty());
  CHECK(split_list("one") == std::vector<std::string>{"one"});
}

TEST_CASE("event filters match on every field together", "[timeline]") {
  TimelineEvent e = ev(7, "2024-01-01T10:00:00.500Z", "Scheduled", "shop", "n1");
  e.tenant = "t1";
  e.instance = "0.web.shop.t1";
  e.op = "op-1";
  e.type = "Normal";

  CHECK(matches(EventFilter{}, e));
  EventFilter f;
  f.apps = {"other", "shop"};
  CHECK(matches(f, e));
  f.apps = {"t1/shop"};
  CHECK(matches(f, e));
  f.apps = {"t2/shop"};
  CHECK_FALSE(matches(f, e));

  f = {};
  f.reasons = {"preempted", "scheduled"};  // Case does not matter for reasons.
  CHECK(matches(f, e));
  f.reasons = {"Preempted"};
  CHECK_FALSE(matches(f, e));

  f = {};
  f.type = "warning";
  CHECK_FALSE(matches(f, e));
  f.type = "normal";
  CHECK(matches(f, e));

  f = {};
  f.nodes = {"n2"};
  CHECK_FALSE(matches(f, e));
  f.nodes = {"n2", "n1"};
  CHECK(matches(f, e));
  f.instances = {"0.web.shop.t1"};
  CHECK(matches(f, e));
  f.instances = {"1.web.shop.t1"};
  CHECK_FALSE(matches(f, e));

  f = {};
  f.tenant = "t1";
  f.op = "op-1";
  CHECK(matches(f, e));
  f.op = "op-2";
  CHECK_FALSE(matches(f, e));
  f.op.clear();
  f.tenant = "t2";
  CHECK_FALSE(matches(f, e));

  // Time bounds are inclusive, to the millisecond.
  f = {};
  f.since = at(2024, 1, 1, 10) + Duration(500ms);
  f.until = f.since;
  CHECK(matches(f, e));
  f.since = *f.since + Duration(1ms);
  CHECK_FALSE(matches(f, e));
  f.since.reset();
  f.until = at(2024, 1, 1, 10);
  CHECK_FALSE(matches(f, e));

  // An unreadable time is outside every window, but still shown without one.
  TimelineEvent broken = ev(8, "not a time", "Scheduled");
  CHECK(matches(EventFilter{}, broken));
  f = {};
  f.since = at(2000, 1, 1);
  CHECK_FALSE(matches(f, broken));
}

TEST_CASE("select_events keeps the newest N matches, oldest first", "[timeline]") {
  std::vector<TimelineEvent> es;
  for (int i = 1; i <= 10; ++i)
    es.push_back(ev(i, fmt::format("2024-01-01T10:00:{:02d}.000Z", i), i % 2 ? "Scheduled" : "Preempted"));
  EventFilter f;
  CHECK(seqs(select_events(es, f)) == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(seqs(select_events(es, f, 3)) == std::vector<int64_t>{8, 9, 10});
  f.reasons = {"Preempted"};
  CHECK(seqs(select_events(es, f, 2)) == std::vector<int64_t>{8, 10});
  f.since = at(2024, 1, 1, 10, 0, 3);
  f.until = at(2024, 1, 1, 10, 0, 6);
  CHECK(seqs(select_events(es, f)) == std::vector<int64_t>{4, 6});
}

TEST_CASE("instance references resolve to keys", "[timeline]") {
  CHECK(instance_key_from_ref("0.web.shop.t1", "default") == "0.web.shop.t1");
  CHECK(instance_key_from_ref("0.web.shop.t1.gaia", "default") == "0.web.shop.t1");
  CHECK(instance_key_from_ref("shop/web/0", "t2") == "0.web.shop.t2");
  CHECK(instance_key_from_ref("t1/shop/web/3", "t2") == "3.web.shop.t1");
  CHECK(instance_key_from_ref("2.web.shop", "t3") == "2.web.shop.t3");
  // Anything else comes back as typed, for the caller to report as unknown.
  CHECK(instance_key_from_ref("shop", "t1") == "shop");
  CHECK(instance_key_from_ref("shop/web/x", "t1") == "shop/web/x");
  CHECK(instance_key_from_ref("shop//0", "t1") == "shop//0");
  CHECK(instance_key_from_ref("web.shop.t1", "t1") == "web.shop.t1");
}

namespace {

Result<bool> commit_events(State& state, int count, const std::string& op = "op-test") {
  auto st = state.load();
  if (!st) return std::unexpected(st.error());
  Batch b;
  for (int i = 0; i < count; ++i) b.event("Tested", fmt::format("event {}", i));
  return state.commit(*st, std::move(b), op);
}

}  // namespace

TEST_CASE("retention keeps only the newest N events", "[timeline]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  const int64_t n = 5;
  State state(**store, clock, StateOptions{n});
  // N + k events, committed in batches of varying size.
  for (int c : {3, 1, 4, 2}) REQUIRE(*commit_events(state, c));
  auto events = state.events_after(0);
  REQUIRE(events);
  CHECK(seqs(*events) == std::vector<int64_t>{6, 7, 8, 9, 10});
  CHECK(*state.last_seq() == 10);
}

TEST_CASE("a batch with more events than the retention keeps the newest N", "[timeline]") {
  // `gaia cluster create` of 100,000 nodes commits more NodeAdded events than the
  // default retention: the batch retires its own oldest events instead of putting and
  // deleting the same keys in one transaction.
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  State state(**store, clock, StateOptions{5});
  REQUIRE(*commit_events(state, 3));
  REQUIRE(*commit_events(state, 12));  // Over the window, with older events stored.
  auto events = state.events_after(0);
  REQUIRE(events);
  CHECK(seqs(*events) == std::vector<int64_t>{11, 12, 13, 14, 15});
  CHECK(events->back().message == "event 11");
  CHECK(*state.last_seq() == 15);
  REQUIRE(*commit_events(state, 7));  // Over the window, the stored ones all retired.
  events = state.events_after(0);
  REQUIRE(events);
  CHECK(seqs(*events) == std::vector<int64_t>{18, 19, 20, 21, 22});
  REQUIRE(*commit_events(state, 2));  // And the usual case after it.
  CHECK(seqs(*state.events_after(0)) == std::vector<int64_t>{20, 21, 22, 23, 24});
}

TEST_CASE("changing the retention persists it and prunes at once", "[timeline]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  {
    State state(**store, clock);
    REQUIRE(*commit_events(state, 20));
    CHECK(*load_event_retention(**store) == std::nullopt);
    auto change = set_event_retention(state, 6, "op-ret");
    REQUIRE(change);
    CHECK(change->previous == StateOptions{}.event_retention);
    CHECK(change->retention == 6);
    CHECK(change->pruned == 15);
    CHECK(change->seq == 21);
    auto events = state.events_after(0);
    REQUIRE(events);
    CHECK(seqs(*events) == std::vector<int64_t>{16, 17, 18, 19, 20, 21});
    CHECK(events->back().reason == "RetentionChanged");
    CHECK(events->back().op == "op-ret");
    CHECK(events->back().message == "event retention set to 6 (was 100000); 15 older events removed");
  }
  // A later process reads the setting and keeps enforcing it.
  auto stored = load_event_retention(**store);
  REQUIRE(stored);
  REQUIRE(*stored == 6);
  State state(**store, clock, StateOptions{**stored});
  REQUIRE(*commit_events(state, 4));
  CHECK(seqs(*state.events_after(0)) == std::vector<int64_t>{20, 21, 22, 23, 24, 25});
  // Raising it keeps everything that is left.
  auto up = set_event_retention(state, 100, "op-up");
  REQUIRE(up);
  CHECK(up->previous == 6);
  CHECK(up->pruned == 0);
  CHECK(state.events_after(0)->size() == 7);
  CHECK_FALSE(set_event_retention(state, 0, "op-zero"));
  CHECK(*load_event_retention(**store) == 100);
}

TEST_CASE("a corrupt retention setting is reported", "[timeline]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  REQUIRE((*store)->put(keys::k_event_retention, "lots"));
  auto r = load_event_retention(**store);
  REQUIRE_FALSE(r);
  CHECK(r.error().front().hint.find("--retention") != std::string::npos);
}
