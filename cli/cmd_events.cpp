// gaia events: the timeline (docs/cli.md#gaia-events), filtered by app, instance, node,
// reason, type, tenant, operation and time; `-f` prints the last few (or those since
// --since) and follows new events as other gaia processes commit them, reading only
// what is new; `--retention N` sets how many events the store keeps.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <ctime>
#include <limits>
#include <optional>

#include "cli/context.hpp"
#include "cli/interrupt.hpp"
#include "cli/table.hpp"
#include "lib/instance_ref.hpp"
#include "lib/timeline.hpp"

namespace gaia::cli {

namespace {

// How many past events `-f` prints before following, like `tail -f`.
constexpr int64_t k_follow_tail = 10;

struct EventsArgs {
  std::string apps, instances, nodes, reasons, type, tenant, op, since, until;
  size_t limit = 0;
  std::optional<int64_t> tail;  // --tail N: the newest N matching events; -1 = all.
  bool follow = false;
  std::string timeout;
  std::string output;  // "" (table), wide, json
  int64_t retention = 0;
};

std::string object_of(const TimelineEvent& e) {
  if (!e.instance.empty()) return "instance/" + e.instance;
  if (!e.app.empty()) return fmt::format("app/{}/{}", e.tenant, e.app);
  if (!e.node.empty()) return "node/" + e.node;
  if (!e.tenant.empty()) return "tenant/" + e.tenant;
  return "-";
}

// "2024-01-01T10:00:00.123Z" -> "2024-01-01T10:00:00Z": the table keeps whole seconds;
// -o wide and -o json keep the milliseconds.
std::string short_time(const std::string& t) {
  auto dot = t.find('.');
  if (dot == std::string::npos || !t.ends_with("Z")) return t;
  return t.substr(0, dot) + "Z";
}

std::vector<std::string> event_headers(bool wide) {
  if (wide) return {"SEQ", "TIME", "TYPE", "REASON", "OBJECT", "OP", "MESSAGE"};
  return {"TIME", "TYPE", "REASON", "OBJECT", "MESSAGE"};
}

std::vector<std::string> event_row(const Globals& g, const TimelineEvent& e, bool wide) {
  std::string type = e.type == "Warning" ? yellow(g, stdout, e.type) : e.type;
  if (wide) return {std::to_string(e.seq), e.time, type, e.reason, object_of(e), e.op, e.message};
  return {short_time(e.time), type, e.reason, object_of(e), e.message};
}

// On a narrow terminal the type and the time give way first (the reason says most of
// what the type does); the object is a name and is never cut; the message wraps.
void fit_event_table(Table& t) {
  t.set_fit("SEQ", ColumnFit{4, Fit::Cut});
  t.set_fit("OP", ColumnFit{3, Fit::Cut});
  t.set_fit("TYPE", ColumnFit{2, Fit::Cut});
  t.set_fit("TIME", ColumnFit{1, Fit::Cut});
  t.set_fit("REASON", ColumnFit{0, Fit::Keep});
  t.set_fit("OBJECT", ColumnFit{0, Fit::Keep});
  t.set_fit("MESSAGE", ColumnFit{0, Fit::Wrap});
}

// A follower prints rows as they come, so it cannot size columns from all of them at
// once: the first batch (with typical minimum widths) chooses the columns and their
// widths, and later batches keep those columns, which only grow, except the message,
// which wraps to what is left of the terminal's width.
class FollowTable {
 public:
  FollowTable(const Globals& g, bool wide) : m_g(g), m_wide(wide) {
    m_layout.shown.assign(event_headers(wide).size(), true);
    m_layout.width = wide ? std::vector<size_t>{3, 24, 7, 12, 24, 24, 0} : std::vector<size_t>{20, 7, 12, 24, 0};
  }

  void print(const std::vector<TimelineEvent>& events) {
    Table t(event_headers(m_wide));
    fit_event_table(t);
    for (const auto& e : events) t.add_row(event_row(m_g, e, m_wide));
    if (!m_header_done) {
      // The first batch may be empty or unusually short: a typical row of the minimum
      // widths takes part in choosing the columns and widths, so later rows neither
      // shift nor overflow a narrow terminal.
      Table sized = t;
      std::vector<std::string> typical;
      for (size_t w : m_layout.width) typical.push_back(std::string(w, 'x'));
      sized.add_row(std::move(typical));
      m_layout = sized.layout(m_options);
    } else {
      m_layout = t.layout(m_options, &m_layout);
    }
    std::fputs(t.render(m_options, m_layout, !m_header_done).c_str(), stdout);
    m_header_done = true;
    std::fflush(stdout);
  }

 private:
  const Globals& m_g;
  bool m_wide;
  bool m_header_done = false;
  TableLayout m_layout;
  TableOptions m_options = table_options_for(stdout);
};

void print_table(const Globals& g, const std::vector<TimelineEvent>& events, bool wide) {
  Table t(event_headers(wide));
  fit_event_table(t);
  for (const auto& e : events) t.add_row(event_row(g, e, wide));
  std::fputs(t.render(table_options_for(stdout)).c_str(), stdout);
}

void print_json(const std::vector<TimelineEvent>& events) {
  for (const auto& e : events) std::fputs((nlohmann::json(e).dump() + "\n").c_str(), stdout);
  std::fflush(stdout);
}

Result<EventFilter> build_filter(const Globals& g, const EventsArgs& a, Clock::time_point now) {
  EventFilter f;
  Diagnostics errors;
  f.apps = split_list(a.apps);
  f.nodes = split_list(a.nodes);
  f.reasons = split_list(a.reasons);
  f.tenant = a.tenant;
  f.op = a.op;
  const std::string& tenant = a.tenant.empty() ? g.tenant : a.tenant;
  for (const auto& ref : split_list(a.instances)) f.instances.push_back(instance_key_from_ref(ref, tenant));
  if (!a.type.empty()) {
    std::string t = a.type;
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    if (t == "normal") f.type = "Normal";
    else if (t == "warning") f.type = "Warning";
    else
      errors.push_back({{}, "--type", fmt::format("unknown event type '{}'", a.type), "use Normal or Warning"});
  }
  if (!a.since.empty()) {
    auto t = parse_time_bound(a.since, now, "--since");
    if (t) f.since = *t;
    else errors.insert(errors.end(), t.error().begin(), t.error().end());
  }
  if (!a.until.empty()) {
    auto t = parse_time_bound(a.until, now, "--until");
    if (t) f.until = *t;
    else errors.insert(errors.end(), t.error().begin(), t.error().end());
  }
  if (f.since && f.until && *f.since > *f.until)
    errors.push_back({{}, "--since", fmt::format("--since {} is after --until {}", a.since, a.until),
                      "swap them, or drop one"});
  if (!errors.empty()) return fail(errors);
  return f;
}

// Whether `e` happened before `t` (an unreadable time counts as not before).
bool before(const TimelineEvent& e, Clock::time_point t) {
  auto at = parse_rfc3339(e.time);
  return at && *at < t;
}

// The newest `n` events matching `f` (0: every match from f.since on), oldest first, and
// the sequence number the timeline had reached. The timeline is read backwards in
// growing windows of sequence numbers, stopping once `n` events matched or the window
// reaches events older than f.since, so a timeline of 100,000 events costs what is
// shown, not the whole history.
Result<std::pair<std::vector<TimelineEvent>, int64_t>> read_newest(State& state, const EventFilter& f, size_t n) {
  auto last = state.last_seq();
  if (!last) return fail(last.error());
  // The oldest event retention kept: windows never reach below it.
  auto oldest = state.events_after(0, 1);
  if (!oldest) return fail(oldest.error());
  const int64_t bottom = oldest->empty() ? *last : oldest->front().seq - 1;
  std::vector<TimelineEvent> read;  // Oldest first.
  size_t matched = 0;
  int64_t hi = *last;
  int64_t window = std::max<int64_t>(256, static_cast<int64_t>(n) * 4);
  while (hi > bottom) {
    const int64_t lo = std::max(bottom, hi - window);
    auto chunk = state.events_after(lo, static_cast<size_t>(hi - lo));
    if (!chunk) return fail(chunk.error());
    // Retention may have removed events since `oldest` was read; then the read ran on
    // past `hi`, into events already read.
    std::erase_if(*chunk, [&](const TimelineEvent& e) { return e.seq > hi; });
    for (const auto& e : *chunk) matched += matches(f, e) ? 1 : 0;
    const bool old_enough = f.since && !chunk->empty() && before(chunk->front(), *f.since);
    read.insert(read.begin(), std::make_move_iterator(chunk->begin()), std::make_move_iterator(chunk->end()));
    if ((n > 0 && matched >= n) || old_enough) break;
    hi = lo;
    window *= 4;
  }
  // Events committed after last_seq was read are the follower's first news.
  const int64_t cursor = read.empty() ? *last : std::max(*last, read.back().seq);
  return std::pair{select_events(read, f, n), cursor};
}

int run_events(const Globals& g, const EventsArgs& a) {
  std::optional<Clock::time_point::duration> timeout;
  if (!a.timeout.empty()) {
    if (!a.follow) return report_error(g, "--timeout only applies with --follow", "add -f, or drop --timeout");
    auto d = parse_duration(a.timeout);
    if (!d) return report(g, d.error());
    timeout = *d;
  }
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  Session& s = **session;

  if (a.retention != 0) {
    auto change = set_event_retention(*s.state, a.retention, s.op);
    if (!change) return report(g, change.error());
    if (!g.quiet)
      fmt::print("event retention set to {} (was {}); {} older event{} removed\n", change->retention,
                 change->previous, change->pruned, change->pruned == 1 ? "" : "s");
    return k_ok;
  }

  auto filter = build_filter(g, a, s.clock.now());
  if (!filter) return report(g, filter.error());

  // How many past events to show: --tail, else --limit; a follower, like `tail -f`,
  // starts with the last few unless --since chooses where it starts.
  int64_t newest = a.tail ? *a.tail : a.limit > 0 ? static_cast<int64_t>(a.limit) : -1;
  if (a.follow && !a.tail && a.limit == 0 && a.since.empty()) newest = k_follow_tail;

  // Signals go to our handler from here on, so a follower ends between polls, cleanly.
  if (a.follow) catch_stop_signals();
  std::vector<TimelineEvent> selected;
  int64_t cursor = 0;
  if (newest == 0) {
    auto last = s.state->last_seq();
    if (!last) return report(g, last.error());
    cursor = *last;
  } else if (newest > 0 || filter->since) {
    auto recent = read_newest(*s.state, *filter, newest > 0 ? static_cast<size_t>(newest) : 0);
    if (!recent) return report(g, recent.error());
    std::tie(selected, cursor) = std::move(*recent);
  } else {
    auto events = s.state->events_after(0);
    if (!events) return report(g, events.error());
    cursor = events->empty() ? 0 : events->back().seq;
    selected = select_events(*events, *filter);
  }

  bool wide = a.output == "wide";
  if (!a.follow) {
    if (a.output == "json") print_json(selected);
    else if (!selected.empty()) print_table(g, selected, wide);
    else if (!g.quiet) std::fputs("no events\n", stderr);
    return k_ok;
  }
  FollowTable table(g, wide);
  auto emit = [&](const std::vector<TimelineEvent>& batch) {
    if (a.output == "json") print_json(batch);
    else table.print(batch);
  };
  emit(selected);

  auto deadline = timeout ? std::optional(std::chrono::steady_clock::now() + *timeout) : std::nullopt;
  std::string outage;    // The last transient failure reported, so it is said once.
  bool pending = false;  // A change was seen and its events are not read yet.
  while (!stop_requested()) {
    // A watch on the timeline wakes the follower when an event is committed; it waits in
    // short slices so Ctrl-C ends it promptly.
    auto slice = std::chrono::milliseconds(250);
    if (deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      slice = std::min(slice, left);
    }
    auto changed = s.state->wait_for_change("events/", slice);
    if (!changed && is_transient(changed.error())) {
      // The store is briefly away (an etcd restart): say so once, wait, and read what
      // came meanwhile once it answers; the cursor makes sure nothing is missed.
      std::string why = format_diagnostics(changed.error());
      if (why != outage && !g.quiet) fmt::print(stderr, "warning: the store cannot be reached; retrying:\n{}", why);
      outage = why;
      nap(std::chrono::milliseconds(500));
      continue;
    }
    if (!changed) return report(g, changed.error());
    if (stop_requested()) break;
    pending = pending || *changed;
    if (!pending) continue;
    // Only the events after the cursor are read (a key interval), however long the
    // timeline is.
    auto fresh = s.state->events_after(cursor);
    if (!fresh && is_transient(fresh.error())) {
      nap(std::chrono::milliseconds(500));
      continue;  // Still pending: read again on the next turn.
    }
    if (!fresh) return report(g, fresh.error());
    pending = false;
    outage.clear();
    if (fresh->empty()) continue;
    cursor = fresh->back().seq;
    auto batch = select_events(*fresh, *filter);
    if (!batch.empty()) emit(batch);
  }
  return k_ok;
}

}  // namespace

void register_events(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<EventsArgs>();
  auto* cmd = app.add_subcommand("events", "Show the timeline: every decision and state change, oldest first");
  cmd->footer(
      "Examples:\n"
      "  gaia events --app shop --type Warning\n"
      "  gaia events --op op-20240101T100000-3fa2     # one command's whole story\n"
      "  gaia events --since 10m -o json | jq .reason\n"
      "  gaia events -f                               # the last 10, then new events (Ctrl-C ends)\n"
      "  gaia events -f --since 1h --app shop         # follow from an hour ago\n"
      "  gaia events --retention 50000                # keep only the newest 50000 events");
  cmd->add_option("--app", a->apps, "Only events of these apps (comma list; NAME or TENANT/NAME)")->type_name("APPS");
  cmd->add_option("--instance", a->instances,
                  "Only events of these instances (comma list; key, DNS name, or app/role/ordinal)")
      ->type_name("INSTANCES");
  cmd->add_option("--node", a->nodes, "Only events about these nodes (comma list)")->type_name("NODES");
  cmd->add_option("--reason", a->reasons, "Only these reasons (comma list, e.g. Scheduled,Preempted)")
      ->type_name("REASONS");
  cmd->add_option("--type", a->type, "Only Normal or Warning events")->type_name("TYPE");
  cmd->add_option("--tenant", a->tenant, "Only events of this tenant (default: all tenants)")->type_name("TENANT")
      ->check(tenant_validator());
  cmd->add_option("--op", a->op, "Only events of this operation id (printed by writing commands with -v)")
      ->type_name("ID");
  cmd->add_option("--since", a->since, "Events at or after this time: RFC 3339, or a duration ago (10m, 2h)")
      ->type_name("TIME");
  cmd->add_option("--until", a->until, "Events at or before this time: RFC 3339, or a duration ago")
      ->type_name("TIME");
  cmd->add_option("--limit", a->limit, "Only the newest N matching events")->type_name("N");
  cmd->add_option("--tail", a->tail,
                  "The newest N matching events (with -f: before following; default 10, or all from --since; -1 = all)")
      ->type_name("N")
      ->check(CLI::Range(int64_t{-1}, std::numeric_limits<int64_t>::max()));
  cmd->add_flag("-f,--follow", a->follow, "Keep running and print new events as they are committed");
  cmd->add_option("--timeout", a->timeout, "With --follow: stop after this long (e.g. 30s)")->type_name("D");
  cmd->add_option("-o,--output", a->output, "wide (adds sequence, milliseconds, operation) or json (one object a line)")
      ->check(CLI::IsMember({"wide", "json"}));
  cmd->add_option("--retention", a->retention, "Keep only the newest N events from now on (and drop older ones)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  cmd->callback([&g, a, code] { *code = run_events(g, *a); });
}

}  // namespace gaia::cli
