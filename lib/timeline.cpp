#include "lib/timeline.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <deque>

#include "lib/app_summary.hpp"

namespace gaia {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

bool app_matches(const std::string& want, const TimelineEvent& e) {
  auto slash = want.find('/');
  if (slash == std::string::npos) return e.app == want;
  return e.tenant == want.substr(0, slash) && e.app == want.substr(slash + 1);
}

bool any_of(const std::vector<std::string>& wanted, auto pred) {
  return wanted.empty() || std::any_of(wanted.begin(), wanted.end(), pred);
}

// Reads exactly `n` digits at `pos`, advancing it.
bool read_digits(std::string_view s, size_t& pos, size_t n, int& out) {
  if (pos + n > s.size()) return false;
  out = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  pos += n;
  return true;
}

bool expect(std::string_view s, size_t& pos, std::string_view chars) {
  if (pos >= s.size() || chars.find(s[pos]) == std::string_view::npos) return false;
  ++pos;
  return true;
}

}  // namespace

bool matches(const EventFilter& f, const TimelineEvent& e) {
  if (!f.type.empty() && !iequals(f.type, e.type)) return false;
  if (!f.tenant.empty() && f.tenant != e.tenant) return false;
  if (!f.op.empty() && f.op != e.op) return false;
  if (!any_of(f.apps, [&](const std::string& a) { return app_matches(a, e); })) return false;
  if (!any_of(f.instances, [&](const std::string& i) { return i == e.instance; })) return false;
  if (!any_of(f.nodes, [&](const std::string& n) { return n == e.node; })) return false;
  if (!any_of(f.reasons, [&](const std::string& r) { return iequals(r, e.reason); })) return false;
  if (f.since || f.until) {
    // An event whose time cannot be read cannot be placed in a window, so a time-bounded
    // query leaves it out rather than guessing.
    auto t = parse_rfc3339(e.time);
    if (!t) return false;
    if (f.since && *t < *f.since) return false;
    if (f.until && *t > *f.until) return false;
  }
  return true;
}

std::vector<TimelineEvent> select_events(const std::vector<TimelineEvent>& events, const EventFilter& f,
                                         size_t limit) {
  std::deque<const TimelineEvent*> kept;
  for (const auto& e : events) {
    if (!matches(f, e)) continue;
    kept.push_back(&e);
    if (limit && kept.size() > limit) kept.pop_front();
  }
  std::vector<TimelineEvent> out;
  out.reserve(kept.size());
  for (const auto* e : kept) out.push_back(*e);
  return out;
}

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string_view part = text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) part.remove_prefix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

Result<Clock::time_point::duration> parse_duration(std::string_view text) {
  auto bad = [&](std::string what) {
    return fail(Diagnostic{{}, "", fmt::format("'{}' is not a duration: {}", text, what),
                           "write a number and a unit (ms, s, m, h, d), e.g. 90s, 10m, 1h30m, 2d"});
  };
  if (text.empty()) return bad("it is empty");
  std::chrono::duration<double> total{0};
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
    if (pos == start) return bad(fmt::format("expected a number at '{}'", text.substr(start)));
    double value = 0;
    auto [end, ec] = std::from_chars(text.data() + start, text.data() + pos, value);
    if (ec != std::errc() || end != text.data() + pos) return bad(fmt::format("'{}' is not a number", text.substr(start, pos - start)));
    size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    double seconds = 0;
    if (unit == "ms") seconds = 0.001;
    else if (unit == "s") seconds = 1;
    else if (unit == "m") seconds = 60;
    else if (unit == "h") seconds = 3600;
    else if (unit == "d") seconds = 86400;
    else if (unit.empty()) return bad(fmt::format("'{}' has no unit", text.substr(start, pos - start)));
    else return bad(fmt::format("unknown unit '{}'", unit));
    total += std::chrono::duration<double>(value * seconds);
  }
  // Converting a double beyond the clock's range is undefined behaviour (it came out
  // negative: "18446744073709551615d" meant a retention in the past), and no duration
  // gaia takes means anything past a century.
  constexpr double kMaxSeconds = 100.0 * 365 * 86400;
  if (!(total.count() <= kMaxSeconds)) return bad("that is more than 100 years (36500d)");
  return std::chrono::duration_cast<Clock::time_point::duration>(total);
}

std::optional<Clock::time_point> parse_rfc3339(std::string_view s) {
  size_t pos = 0;
  int year, month, day, hour, minute, second;
  if (!read_digits(s, pos, 4, year) || !expect(s, pos, "-") || !read_digits(s, pos, 2, month) ||
      !expect(s, pos, "-") || !read_digits(s, pos, 2, day) || !expect(s, pos, "Tt ") ||
      !read_digits(s, pos, 2, hour) || !expect(s, pos, ":") || !read_digits(s, pos, 2, minute) ||
      !expect(s, pos, ":") || !read_digits(s, pos, 2, second))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
      if (digits < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (size_t d = digits; d < 9; ++d) nanos *= 10;
  }
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int sign = s[pos] == '-' ? -1 : 1;
    ++pos;
    int oh, om;
    if (!read_digits(s, pos, 2, oh) || !expect(s, pos, ":") || !read_digits(s, pos, 2, om) || oh > 23 || om > 59)
      return std::nullopt;
    offset_minutes = sign * (oh * 60 + om);
  } else {
    return std::nullopt;  // RFC 3339 requires a zone; a bare local time would be ambiguous.
  }
  if (pos != s.size()) return std::nullopt;
  std::chrono::year_month_day ymd{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month)),
                                  std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return std::nullopt;
  auto t = std::chrono::sys_days(ymd) + std::chrono::hours(hour) + std::chrono::minutes(minute) +
           std::chrono::seconds(second) - std::chrono::minutes(offset_minutes);
  // The clock counts nanoseconds in 64 bits (years 1678-2262); a bound beyond that is
  // as good as the end of time, so it saturates instead of wrapping around.
  using Sec = std::chrono::sys_seconds;
  if (t >= std::chrono::floor<std::chrono::seconds>(Clock::time_point::max())) return Clock::time_point::max();
  if (t <= std::chrono::ceil<std::chrono::seconds>(Clock::time_point::min())) return Clock::time_point::min();
  return std::chrono::time_point_cast<Clock::time_point::duration>(Sec(t)) +
         std::chrono::duration_cast<Clock::time_point::duration>(std::chrono::nanoseconds(nanos));
}

Result<Clock::time_point> parse_time_bound(std::string_view text, Clock::time_point now, std::string_view flag) {
  if (auto t = parse_rfc3339(text)) return *t;
  // Something shaped like a date that did not parse is a mistyped time, not a duration.
  bool looks_like_time = text.size() >= 5 && text[4] == '-';
  if (!looks_like_time) {
    if (auto d = parse_duration(text)) return now - *d;
  }
  return fail(Diagnostic{{}, std::string(flag),
                         fmt::format("'{}' is neither an RFC 3339 time nor a duration", text),
                         "give a time like 2024-01-01T10:00:00Z (or with an offset, +02:00) or a duration "
                         "before now like 10m, 2h, 1d"});
}

std::string format_rfc3339(Clock::time_point t) {
  auto ms = std::chrono::floor<std::chrono::milliseconds>(t);
  auto days = std::chrono::floor<std::chrono::days>(ms);
  std::chrono::year_month_day ymd{days};
  std::chrono::hh_mm_ss hms{ms - days};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                     hms.minutes().count(), hms.seconds().count(), hms.subseconds().count());
}

Result<std::optional<int64_t>> load_event_retention(Store& store) {
  auto kv = store.get(keys::k_event_retention);
  if (!kv) return fail(kv.error().to_diagnostic());
  if (!*kv) return std::optional<int64_t>{};
  int64_t n = 0;
  const std::string& v = (*kv)->value;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < 1)
    return fail(Diagnostic{{}, keys::k_event_retention, fmt::format("corrupt event retention '{}' in the store", v),
                           "set it again with `gaia events --retention N`"});
  return std::optional<int64_t>{n};
}

Result<RetentionChange> set_event_retention(State& state, int64_t retention, const std::string& op) {
  if (retention < 1)
    return fail(Diagnostic{{}, "--retention", fmt::format("retention must be at least 1 event, got {}", retention),
                           "give how many of the newest events to keep, e.g. --retention 100000"});
  Store& store = state.store();
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto stored = load_event_retention(store);
    if (!stored) return fail(stored.error());
    auto seq_kv = store.get(gaia::keys::k_seq);
    if (!seq_kv) return fail(seq_kv.error().to_diagnostic());
    auto events = store.range("events/");
    if (!events) return fail(events.error().to_diagnostic());
    RetentionChange change;
    change.previous = stored->value_or(StateOptions{}.event_retention);
    change.retention = retention;
    int64_t last = *seq_kv ? std::stoll((*seq_kv)->value) : 0;
    change.seq = last + 1;

    // The RetentionChanged event is the newest one kept; everything older than the
    // `retention - 1` events before it goes now, so the bound holds from this commit on
    // (commit only retires one old event per new one).
    int64_t oldest_kept = change.seq - retention + 1;
    Txn txn;
    txn.compares.push_back({gaia::keys::k_seq, *seq_kv ? (*seq_kv)->mod_revision : 0});
    for (const auto& kv : *events)
      if (oldest_kept > 1 && kv.key < gaia::keys::event(oldest_kept)) {
        txn.deletes.push_back({kv.key});
        ++change.pruned;
      }
    TimelineEvent e;
    e.seq = change.seq;
    e.time = state.now_rfc3339();
    e.reason = "RetentionChanged";
    e.message = fmt::format("event retention set to {} (was {}); {} older event{} removed", retention,
                            change.previous, change.pruned, change.pruned == 1 ? "" : "s");
    e.op = op;
    txn.puts.push_back({keys::k_event_retention, std::to_string(retention)});
    txn.puts.push_back({gaia::keys::event(e.seq), nlohmann::json(e).dump()});
    txn.puts.push_back({gaia::keys::k_seq, std::to_string(e.seq)});
    // The app summaries stay kept across this commit, which changes no app: the marker
    // moves with the sequence when it was at the sequence (lib/app_summary.hpp).
    auto marker = store.get(gaia::keys::k_apps_summary_marker);
    if (!marker) return fail(marker.error().to_diagnostic());
    txn.compares.push_back({gaia::keys::k_apps_summary_marker, *marker ? (*marker)->mod_revision : 0});
    if (*marker && *seq_kv && (*marker)->value == (*seq_kv)->value)
      txn.puts.push_back({gaia::keys::k_apps_summary_marker, std::to_string(e.seq)});
    auto r = store.txn(txn);
    if (!r) return fail(r.error().to_diagnostic());
    if (r->succeeded) return change;
  }
  return fail(Diagnostic{{}, "", "gave up after 50 conflicting concurrent writes",
                         "another gaia process keeps changing the store; retry when it is done"});
}

}  // namespace gaia
