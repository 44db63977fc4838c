#pragma once
// Reading the timeline (docs/cli.md#gaia-events): which events a `gaia events` query
// selects, how its time bounds are written, and the retention setting kept in the
// store. The filter is a pure function of one event, so the same code serves a one-shot
// listing and `--follow`, and is tested without a store.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/clock.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"
#include "lib/store.hpp"

namespace gaia {

// What `gaia events` asks for. Empty lists and unset fields select everything; a list
// matches when any of its entries does; all fields must match together.
struct EventFilter {
  std::vector<std::string> apps;       // App names, or "tenant/app".
  std::vector<std::string> instances;  // Instance keys ("<ordinal>.<role>.<app>.<tenant>").
  std::vector<std::string> nodes;
  std::vector<std::string> reasons;    // Compared without regard to case.
  std::string type;                    // Normal | Warning (any case); "" for both.
  std::string tenant;
  std::string op;
  std::optional<Clock::time_point> since;  // Inclusive.
  std::optional<Clock::time_point> until;  // Inclusive.
};

bool matches(const EventFilter& f, const TimelineEvent& e);

// Applies `f` to events (oldest first) and keeps the newest `limit` of those that match
// (0: all), still oldest first.
std::vector<TimelineEvent> select_events(const std::vector<TimelineEvent>& events, const EventFilter& f,
                                         size_t limit = 0);

// Splits "a,b, c" into its non-empty, trimmed parts.
std::vector<std::string> split_list(std::string_view text);

// "90s", "10m", "2h", "1h30m", "1d", "500ms": a sum of number+unit terms.
Result<Clock::time_point::duration> parse_duration(std::string_view text);
// RFC 3339: "2024-01-01T10:00:00Z", with optional fractional seconds and a numeric
// offset ("+02:00") instead of Z; a space may replace the T.
std::optional<Clock::time_point> parse_rfc3339(std::string_view text);
// A --since/--until value: an RFC 3339 time, or a duration meaning that long before `now`.
Result<Clock::time_point> parse_time_bound(std::string_view text, Clock::time_point now, std::string_view flag);
// "2024-01-01T10:00:00.000Z" (UTC, milliseconds), the form events are stored with.
std::string format_rfc3339(Clock::time_point t);

// Retention: how many events the store keeps, persisted under meta/ so every gaia
// process that opens the store enforces the same bound.
namespace keys {
inline constexpr const char* k_event_retention = "meta/event_retention";
}

// The retention stored in the store, if one was set.
Result<std::optional<int64_t>> load_event_retention(Store& store);

struct RetentionChange {
  int64_t previous = 0;  // Retention in force before (the StateOptions default if unset).
  int64_t retention = 0;
  size_t pruned = 0;     // Events deleted because they fell out of the new window.
  int64_t seq = 0;       // Sequence number of the RetentionChanged event.
};

// Stores `retention` (>= 1) and, in the same transaction, deletes every event outside
// the new window and records a RetentionChanged event carrying `op`. Retries on
// concurrent writes.
Result<RetentionChange> set_event_retention(State& state, int64_t retention, const std::string& op);

}  // namespace gaia
