// Watches of the stand-in API server: a chunked stream of one JSON event per line.
// The stream starts at a resourceVersion (synthetic ADDED events for the current
// objects when it is absent or "0"), then follows the history of changes in order,
// translating changes across the selectors as Kubernetes' watch cache does (an object
// that starts matching is ADDED, one that stops is DELETED). It ends cleanly at
// timeoutSeconds or drop_watches(), with a 410 ERROR event when the history it needs
// is gone, and abruptly on restart() or destruction. A watcher waits on the server's
// condition variable, never spinning.

#include <poll.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>

#include "standin/selectors.hpp"
#include "standin/server_impl.hpp"

namespace gaia::standin {

using namespace detail;
using nlohmann::json;
using std::chrono::steady_clock;

namespace {

// Real servers end a watch without timeoutSeconds after 30 to 60 minutes.
constexpr std::chrono::seconds kDefaultTimeout{1800};
// How often a waiting watch checks that its client is still connected.
constexpr std::chrono::milliseconds kLivenessInterval{500};

}  // namespace

struct WatchState {
  const ResourceInfo* resource = nullptr;
  std::string ns;
  ObjectFilter filter;
  int64_t sent_rv = 0;  // Every change up to here has been considered.
  std::vector<std::string> pending;
  bool ended = false;   // `pending` holds the last lines.
  steady_clock::time_point deadline;
  bool bookmarks = false;
  steady_clock::time_point next_bookmark;
  uint64_t drop_generation = 0;
  uint64_t compact_generation = 0;
  uint64_t serve_generation = 0;
  int fd = -1;
};

namespace {

std::string event_line(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

std::string gone_line(int64_t rv, int64_t oldest) {
  // Kubernetes' watch cache answers this with reason Expired (client-go accepts Expired
  // and Gone alike for a 410).
  return event_line("ERROR", status_object(410, "Expired",
                                           fmt::format("too old resource version: {} ({})", rv, oldest)));
}

// Whether the client closed its end: a watch client sends nothing after its request,
// so a hang-up or a readable end of stream means it is gone.
bool client_gone(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  char byte;
  return (p.revents & POLLIN) && ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

// Appends the events of the changes after st.sent_rv, as this watch sees them.
void collect(const ObjectStore& store, WatchState& st, std::vector<std::string>& out) {
  const std::deque<Change>& history = store.history();
  auto it = std::upper_bound(history.begin(), history.end(), st.sent_rv,
                             [](int64_t rv, const Change& c) { return rv < c.rv; });
  for (; it != history.end(); ++it) {
    const Change& c = *it;
    st.sent_rv = c.rv;
    if (c.bucket != st.resource->bucket) continue;
    if (!st.ns.empty() && string_at(c.object, {"metadata", "namespace"}) != st.ns) continue;
    bool matches = st.filter.matches(c.object);
    if (c.type == "MODIFIED") {
      bool matched = st.filter.matches(c.previous);
      if (matches) out.push_back(event_line(matched ? "MODIFIED" : "ADDED", c.object));
      else if (matched) out.push_back(event_line("DELETED", c.object));
    } else if (matches) {
      out.push_back(event_line(c.type, c.object));
    }
  }
}

}  // namespace

void KubeApiServer::Impl::start_watch(const ApiRequest& r, int peer_port, httplib::Response& response) {
  auto st = std::make_shared<WatchState>();
  st->resource = r.resource;
  st->ns = r.ns;
  st->filter = parse_filter(r);
  if (!r.name.empty()) st->filter.fields.add({"metadata.name", true, r.name});
  std::chrono::seconds timeout = kDefaultTimeout;
  if (std::string text = r.param("timeoutSeconds"); !text.empty()) {
    int64_t seconds = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size() || seconds < 0)
      throw bad_request(fmt::format("invalid timeoutSeconds: {}", text));
    if (seconds > 0) timeout = std::chrono::seconds(seconds);
  }
  auto now = steady_clock::now();
  st->deadline = now + timeout;
  st->bookmarks = is_true(r.param("allowWatchBookmarks"));
  st->next_bookmark = now + options.bookmark_interval;
  st->fd = connection_fd(peer_port);

  std::string from = r.param("resourceVersion");
  int64_t from_rv = 0;
  if (!from.empty() && from != "0") {
    auto [end, ec] = std::from_chars(from.data(), from.data() + from.size(), from_rv);
    if (ec != std::errc() || end != from.data() + from.size() || from_rv < 0)
      throw bad_request(fmt::format("invalid resourceVersion: {}", from));
  }
  {
    std::lock_guard lock(mutex);
    st->drop_generation = drop_generation;
    st->compact_generation = compact_generation;
    st->serve_generation = serve_generation;
    if (from.empty() || from == "0") {
      // The current state first, as ADDED events, then every change after it: both
      // read under one lock, so nothing falls between them.
      for (const json* o : store.list(r.resource->bucket, r.ns))
        if (st->filter.matches(*o)) st->pending.push_back(event_line("ADDED", *o));
      st->sent_rv = store.revision();
    } else if (from_rv < store.floor()) {
      st->pending.push_back(gone_line(from_rv, store.floor()));
      st->ended = true;
    } else {
      st->sent_rv = from_rv;
    }
  }

  response.status = 200;
  response.set_chunked_content_provider("application/json", [this, st](size_t, httplib::DataSink& sink) {
    // cpp-httplib calls this outside its handler's exception guard: nothing may escape.
    try {
      return pump(st, sink);
    } catch (const std::exception&) {
      return false;
    }
  });
}

bool KubeApiServer::Impl::pump(const std::shared_ptr<WatchState>& st, httplib::DataSink& sink) {
  std::vector<std::string> out = std::move(st->pending);
  st->pending.clear();
  bool end = st->ended;
  bool abort = false;
  if (out.empty() && !end) {
    std::unique_lock lock(mutex);
    while (true) {
      if (stopping || serve_generation != st->serve_generation) {
        abort = true;
        break;
      }
      if (drop_generation != st->drop_generation) {
        end = true;
        break;
      }
      if (compact_generation != st->compact_generation || st->sent_rv < store.floor()) {
        out.push_back(gone_line(st->sent_rv, store.floor()));
        end = true;
        break;
      }
      collect(store, *st, out);
      if (!out.empty()) break;
      auto at = steady_clock::now();
      if (at >= st->deadline) {
        end = true;
        break;
      }
      if (st->bookmarks && at >= st->next_bookmark) {
        // Everything up to sent_rv has been considered, so the client may resume there.
        json mark = {{"kind", st->resource->kind},
                     {"apiVersion", st->resource->api_version()},
                     {"metadata", {{"resourceVersion", std::to_string(st->sent_rv)}}}};
        out.push_back(event_line("BOOKMARK", mark));
        st->next_bookmark = at + options.bookmark_interval;
        break;
      }
      auto wake = std::min(st->deadline, at + kLivenessInterval);
      if (st->bookmarks) wake = std::min(wake, st->next_bookmark);
      if (changed.wait_until(lock, wake) == std::cv_status::timeout && client_gone(st->fd)) {
        abort = true;
        break;
      }
    }
  }
  for (const std::string& line : out)
    if (!sink.write(line.data(), line.size())) return false;
  if (abort) return false;
  if (end) sink.done();
  return true;
}

}  // namespace gaia::standin
