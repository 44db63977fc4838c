#include "store/etcd_watch.hpp"
#include "store/store_errors.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "net/base64.hpp"
#include "store/etcd_gateway.hpp"

namespace gaia {

using nlohmann::json;
using std::chrono::steady_clock;

namespace {

constexpr std::string_view kPath = "/v3/watch";

// Whether connecting again could cure a failure: a member that is down, frozen, busy or
// without a leader may come back; refused credentials or compacted history do not.
bool is_permanent(StoreErrc code) {
  return !(code == StoreErrc::Io || is_transient(code));
}

}  // namespace

EtcdWatch::EtcdWatch(std::shared_ptr<EtcdGateway> gateway, std::string prefix, int64_t from_revision)
    : m_gateway(std::move(gateway)),
      m_prefix(std::move(prefix)),
      m_queued_revision(from_revision - 1),
      m_returned_revision(from_revision - 1) {
  m_thread = std::thread([this] { run(); });
}

EtcdWatch::~EtcdWatch() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  // Wakes the thread wherever it waits: in a stream (cancelled) or between attempts.
  m_cancellation.cancel();
  m_changed.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

StoreResult<std::vector<Event>> EtcdWatch::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(m_mutex);
  m_changed.wait_for(lock, timeout, [&] { return !m_queue.empty() || m_failure.has_value(); });
  // What arrived before a failure is delivered first: it is history like any other.
  if (!m_queue.empty()) {
    std::vector<Event> events = std::move(m_queue);
    m_queue.clear();
    m_returned_revision = m_queued_revision;
    return events;
  }
  if (m_failure) return std::unexpected(*m_failure);
  m_returned_revision = m_queued_revision;
  return std::vector<Event>{};
}

int64_t EtcdWatch::revision() const {
  std::lock_guard lock(m_mutex);
  return m_returned_revision;
}

void EtcdWatch::fail(StoreError failure) {
  std::lock_guard lock(m_mutex);
  if (!m_failure) m_failure = std::move(failure);
  m_changed.notify_all();
}

bool EtcdWatch::pause(std::chrono::milliseconds duration) {
  std::unique_lock lock(m_mutex);
  m_changed.wait_for(lock, duration, [&] { return m_stopping; });
  return !m_stopping;
}

void EtcdWatch::run() {
  const EtcdOptions& options = m_gateway->options();
  // Since when no member has served the watch, and how many attempts failed since: it
  // fails only once every member had its chance and the request timeout has passed, so
  // a restarting member or a failover costs a pause, not the watch.
  std::optional<steady_clock::time_point> failing_since;
  size_t failures = 0;
  for (;;) {
    int64_t next = 0;
    {
      std::lock_guard lock(m_mutex);
      if (m_stopping) return;
      next = m_queued_revision + 1;
    }
    auto began = steady_clock::now();
    Outcome outcome = follow_once(next);
    {
      std::lock_guard lock(m_mutex);
      if (m_stopping) return;
    }
    if (outcome.served) {
      failing_since.reset();
      failures = 0;
    }
    // A stream only ends without an error when the watch is being destroyed.
    if (!outcome.error) continue;
    if (outcome.permanent) return fail(std::move(*outcome.error));
    if (!failing_since) failing_since = outcome.served ? steady_clock::now() : began;
    ++failures;
    if (failures >= options.endpoints.size() && steady_clock::now() - *failing_since > options.request_timeout) {
      StoreError last = std::move(*outcome.error);
      // A connection that kept breaking is the cluster being unavailable to this watch.
      if (last.code == StoreErrc::Io) last.code = StoreErrc::Unavailable;
      return fail(std::move(last));
    }
    auto backoff = std::min<std::chrono::milliseconds>(options.retry_backoff * (1 << std::min<size_t>(failures, 6)),
                                                       std::chrono::milliseconds(500));
    if (!pause(backoff)) return;
  }
}

EtcdWatch::Outcome EtcdWatch::follow_once(int64_t next) {
  const EtcdOptions& options = m_gateway->options();
  // The stream starts one revision early and drops that revision's events, as
  // changes_since does: etcd reports compaction only for a start before its compact
  // revision C, while gaia counts C itself as discarded (its deletes are gone).
  int64_t start = std::max<int64_t>(next - 1, 1);
  json create = {{"create_request",
                  {{"key", base64_encode(m_prefix.empty() ? std::string(1, '\0') : m_prefix)},
                   {"range_end", base64_encode(prefix_range_end(m_prefix))},
                   {"start_revision", std::to_string(start)}}}};
  Outcome outcome;
  std::string endpoint, ticking;
  auto opened = steady_clock::now();
  auto heard = opened;
  bool unanswered = false;
  bool judged = false;  // The handler failed the stream and said whether for good.
  std::optional<StoreError> silent;  // The member stopped serving while the watch was quiet.

  auto handle = [&](const json& result) -> StoreResult<bool> {
    heard = steady_clock::now();
    if (int64_t compacted = json_int64(result, "compact_revision"); compacted > 0) {
      judged = outcome.permanent = true;
      return std::unexpected(store_error(StoreErrc::Compacted,
                                   fmt::format("revision {} has been compacted; oldest available is {}", next,
                                               compacted + 1),
                                   "re-read the current state and follow changes from its revision", compacted + 1));
    }
    if (result.value("canceled", false)) {
      std::string reason = result.value("cancel_reason", std::string("no reason given"));
      StoreError refused = m_gateway->explain(reason, endpoint, kPath);
      // An expired token is fetched again when the watch connects again.
      outcome.permanent = is_permanent(refused.code) && reason.find("auth token") == std::string::npos;
      judged = true;
      return std::unexpected(std::move(refused));
    }
    if (result.value("created", false)) outcome.served = true;
    // Anything else without events is a progress notification. Its revision is not
    // trusted to advance the watch: etcd 3.4 before 3.4.24 could send one ahead of
    // events still on their way (etcd issue 15220).
    if (!result.contains("events") || !result["events"].is_array()) return true;
    std::vector<Event> events;
    int64_t last = 0;
    for (const auto& e : result["events"]) {
      auto kv = decode_kv(e.value("kv", json::object()), endpoint);
      if (!kv) {
        judged = outcome.permanent = true;
        return std::unexpected(kv.error());
      }
      last = std::max(last, kv->mod_revision);
      // The revision before the start, or one already queued before a reconnect.
      if (kv->mod_revision < next) continue;
      // The gateway names the type ("DELETE"; PUT, being 0, is left out); a proxy may
      // send the enum's number instead.
      const json type_field = e.value("type", json("PUT"));
      bool deleted = type_field == "DELETE" || type_field == 1;
      EventType type = deleted ? EventType::Delete : EventType::Put;
      events.push_back(Event{type, std::move(*kv)});
    }
    // etcd sends a revision's events in one message, so queueing per message never
    // splits a revision, and resuming after the last one queued repeats none.
    if (last >= next) {
      std::lock_guard lock(m_mutex);
      m_queue.insert(m_queue.end(), std::make_move_iterator(events.begin()), std::make_move_iterator(events.end()));
      m_queued_revision = std::max(m_queued_revision, last);
      next = last + 1;
      m_changed.notify_all();
    }
    return true;
  };
  // The handler runs inside libcurl's callback, which no exception may cross; only a
  // field of an unexpected JSON type throws.
  auto on_result = [&](const json& result) -> StoreResult<bool> {
    try {
      return handle(result);
    } catch (const std::exception& e) {
      judged = outcome.permanent = true;
      return std::unexpected(
          store_error(StoreErrc::Io, fmt::format("etcd at {} sent a watch answer gaia cannot read: {}", endpoint, e.what())));
    }
  };

  StreamControl control;
  control.endless = true;
  control.retry = false;
  control.cancellation = &m_cancellation;
  control.endpoint = &endpoint;
  control.on_tick = [&] {
    auto now = steady_clock::now();
    // The gateway may move on to another member; each gets the full bound to answer.
    if (endpoint != ticking) {
      ticking = endpoint;
      opened = now;
    }
    // A member that accepts the connection but does not create the watch in time is
    // stuck (frozen, overloaded, cut off from its peers); so is one silent for long.
    if (!outcome.served && now - opened > options.request_timeout) {
      unanswered = true;
      return false;
    }
    if (outcome.served && now - heard > options.watch_idle) {
      // Silence is normal for a quiet prefix; a member that no longer serves is not.
      // Asking it directly keeps the stream (and its place in history) when it does.
      auto checked = m_gateway->check(endpoint, &m_cancellation);
      if (!checked) {
        silent = std::move(checked.error());
        return false;
      }
      heard = steady_clock::now();
    }
    return true;
  };
  auto streamed = m_gateway->stream(kPath, create, Idempotence::Safe, on_result, control);
  // Being destroyed is no reason to move the store's requests to another member.
  if (m_cancellation.cancelled()) {
    outcome.error = store_error(StoreErrc::Io, "the watch was ended");
    return outcome;
  }
  if (!streamed) {
    outcome.error = streamed.error();
    if (!judged) outcome.permanent = is_permanent(streamed.error().code);
    if (!outcome.permanent) m_gateway->avoid(endpoint);
    return outcome;
  }
  m_gateway->avoid(endpoint);
  if (silent) {
    outcome.error = std::move(silent);
    return outcome;
  }
  if (unanswered) {
    outcome.error = store_error(StoreErrc::Timeout,
                          fmt::format("etcd at {} did not answer {} within {} ms", endpoint, kPath,
                                      options.request_timeout.count()),
                          "the member may be overloaded, stopped or cut off");
    return outcome;
  }
  // The member ended the stream itself (it is shutting down): connect again.
  outcome.error = store_error(StoreErrc::Unavailable, fmt::format("etcd at {} ended the watch stream", endpoint),
                        "check that etcd runs and listens on the client URLs");
  return outcome;
}

}  // namespace gaia
