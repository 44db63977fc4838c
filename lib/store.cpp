#include "lib/store.hpp"

#include <xxhash.h>

#include <algorithm>
#include <stdexcept>
#include <fmt/format.h>

#include <thread>

namespace gaia {

std::string StoreError::to_string() const {
  if (hint.empty()) return message;
  return fmt::format("{} (hint: {})", message, hint);
}

Diagnostic StoreError::to_diagnostic() const {
  return Diagnostic{.location = {},
                    .path = "",
                    .message = message,
                    .hint = hint,
                    .code = fmt::format("store.{}", gaia::to_string(code))};
}

std::string_view to_string(StoreErrc code) {
  switch (code) {
    case StoreErrc::Io: return "io";
    case StoreErrc::Corrupt: return "corrupt";
    case StoreErrc::SchemaTooNew: return "schema-too-new";
    case StoreErrc::Busy: return "busy";
    case StoreErrc::Compacted: return "compacted";
    case StoreErrc::FutureRevision: return "future-revision";
    case StoreErrc::LeaseNotFound: return "lease-not-found";
    case StoreErrc::InvalidArgument: return "invalid-argument";
    case StoreErrc::Timeout: return "timeout";
    case StoreErrc::Unavailable: return "unavailable";
    case StoreErrc::TooLarge: return "too-large";
    case StoreErrc::Unauthenticated: return "unauthenticated";
  }
  return "unknown";
}

bool is_transient(StoreErrc code) {
  return code == StoreErrc::Busy || code == StoreErrc::Timeout || code == StoreErrc::Unavailable;
}

bool is_transient(const Diagnostics& ds) {
  if (ds.empty()) return false;
  for (const auto& d : ds) {
    bool transient = false;
    for (auto code : {StoreErrc::Busy, StoreErrc::Timeout, StoreErrc::Unavailable})
      if (d.code == fmt::format("store.{}", to_string(code))) transient = true;
    if (!transient) return false;
  }
  return true;
}

std::string prefix_range_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

RangeRequest RangeRequest::prefix(std::string_view prefix, int64_t revision, size_t limit) {
  RangeRequest r;
  r.key = std::string(prefix);
  r.range_end = prefix_range_end(prefix);
  r.revision = revision;
  r.limit = limit;
  return r;
}

RangeRequest RangeRequest::interval(std::string_view from, std::string_view to, int64_t revision, size_t limit) {
  RangeRequest r;
  r.key = std::string(from);
  r.range_end = std::string(to);
  r.revision = revision;
  r.limit = limit;
  return r;
}

bool RangeRequest::contains(std::string_view k) const {
  if (range_end.empty()) return k == key;
  if (k < std::string_view(key)) return false;
  return range_end == std::string_view("\0", 1) || k < std::string_view(range_end);
}

StoreResult<std::optional<KeyValue>> Store::get(std::string_view key) {
  RangeRequest r;
  r.key = std::string(key);
  auto answer = read(r);
  if (!answer) return std::unexpected(answer.error());
  if (answer->kvs.empty()) return std::optional<KeyValue>();
  return std::optional<KeyValue>(std::move(answer->kvs.front()));
}

StoreResult<std::vector<KeyValue>> Store::range(std::string_view prefix, size_t limit) {
  auto answer = read(RangeRequest::prefix(prefix, 0, limit));
  if (!answer) return std::unexpected(answer.error());
  return std::move(answer->kvs);
}

namespace {

// The watch of a store without a native one: changes_since() polled every interval.
// Polling is cheap where it is a local indexed query (SQLite, memory), and each poll
// asks only for what is new.
class PollingWatch final : public Watch {
 public:
  PollingWatch(Store& store, std::string prefix, int64_t from, std::chrono::milliseconds poll)
      : m_store(store), m_prefix(std::move(prefix)), m_next(from), m_poll(poll) {}

  StoreResult<std::vector<Event>> next(std::chrono::milliseconds timeout) override {
    if (m_failed) return std::unexpected(*m_failed);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      // The revision first: changes_since, read after it, covers every change up to it,
      // so when nothing under the prefix came the watch has still seen up to there. A
      // revision that has not moved needs no query for changes at all.
      auto rev = m_store.revision();
      if (!rev) return fail(rev.error());
      if (*rev >= m_next) {
        auto changes = m_store.changes_since(m_next, m_prefix);
        if (!changes) return fail(changes.error());
        if (!changes->empty()) {
          m_next = changes->back().revision() + 1;
          return std::move(*changes);
        }
        m_next = *rev + 1;
      }
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) return std::vector<Event>{};
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(m_poll, deadline - now));
    }
  }

  int64_t revision() const override { return m_next - 1; }

 private:
  std::unexpected<StoreError> fail(StoreError e) {
    m_failed = e;
    return std::unexpected(std::move(e));
  }

  Store& m_store;
  std::string m_prefix;
  int64_t m_next;
  std::chrono::milliseconds m_poll;
  std::optional<StoreError> m_failed;
};

}  // namespace

HistoryChain::HistoryChain(uint64_t before, int64_t revision) : m_state(XXH3_createState()) {
  auto* state = static_cast<XXH3_state_t*>(m_state);
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &before, sizeof before);
  XXH3_64bits_update(state, &revision, sizeof revision);
}

HistoryChain::~HistoryChain() { XXH3_freeState(static_cast<XXH3_state_t*>(m_state)); }

void HistoryChain::add(EventType type, const KeyValue& kv) {
  auto* state = static_cast<XXH3_state_t*>(m_state);
  // Each part with its length, so no two different changes read alike.
  const int64_t fixed[6] = {type == EventType::Put ? 0 : 1, static_cast<int64_t>(kv.key.size()),
                            static_cast<int64_t>(kv.value.size()), kv.create_revision, kv.version, kv.lease};
  XXH3_64bits_update(state, fixed, sizeof fixed);
  XXH3_64bits_update(state, kv.key.data(), kv.key.size());
  XXH3_64bits_update(state, kv.value.data(), kv.value.size());
}

uint64_t HistoryChain::digest() const { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(m_state)); }

uint64_t chain_history(uint64_t hash, std::span<const Event> changes) {
  for (size_t k = 0; k < changes.size();) {
    HistoryChain link(hash, changes[k].revision());
    const int64_t revision = changes[k].revision();
    for (; k < changes.size() && changes[k].revision() == revision; ++k) link.add(changes[k].type, changes[k].kv);
    hash = link.digest();
  }
  return hash;
}

StoreResult<std::vector<Event>> Store::changes_since_skipping(int64_t from_revision, std::string_view skipped) {
  if (skipped.empty()) throw std::invalid_argument("Store::changes_since_skipping: an empty prefix skips every key");
  auto changes = changes_since(from_revision, "");
  if (!changes) return changes;
  std::erase_if(*changes, [&](const Event& e) { return e.kv.key.starts_with(skipped); });
  return changes;
}

StoreResult<std::vector<Event>> Store::changes_at(int64_t revision, size_t limit) {
  // A limit of one still returns the whole revision: a revision is never split.
  auto changes = changes_since(revision, "", 1);
  if (!changes) return changes;
  auto end = std::find_if(changes->begin(), changes->end(), [&](const Event& e) { return e.revision() != revision; });
  changes->erase(end, changes->end());
  if (limit > 0 && changes->size() > 2 * limit)
    changes->erase(changes->begin() + static_cast<std::ptrdiff_t>(limit),
                   changes->end() - static_cast<std::ptrdiff_t>(limit));
  return changes;
}

StoreResult<std::unique_ptr<Watch>> Store::watch(std::string_view prefix, int64_t from_revision) {
  if (from_revision < 1)
    return std::unexpected(StoreError{StoreErrc::InvalidArgument,
                                      fmt::format("a watch starts at revision {}; revisions start at 1", from_revision),
                                      "", 0});
  return std::unique_ptr<Watch>(
      std::make_unique<PollingWatch>(*this, std::string(prefix), from_revision, std::chrono::milliseconds(100)));
}

StoreResult<int64_t> Store::put(std::string_view key, std::string_view value, int64_t lease) {
  Txn t;
  t.puts.push_back(Put{std::string(key), std::string(value), lease});
  auto r = txn(t);
  if (!r) return std::unexpected(r.error());
  return r->revision;
}

StoreResult<int64_t> Store::del(std::string_view key) {
  Txn t;
  t.deletes.push_back(Delete{std::string(key), false});
  auto r = txn(t);
  if (!r) return std::unexpected(r.error());
  return r->revision;
}

StoreResult<int64_t> Store::del_prefix(std::string_view prefix) {
  Txn t;
  t.deletes.push_back(Delete{std::string(prefix), true});
  auto r = txn(t);
  if (!r) return std::unexpected(r.error());
  return r->revision;
}

size_t txn_request_bytes(const Txn& txn) {
  size_t bytes = 0;
  for (const auto& c : txn.compares) bytes += c.key.size() + 24;
  for (const auto& d : txn.deletes) bytes += 2 * d.key.size() + 16;
  for (const auto& p : txn.puts) bytes += p.key.size() + p.value.size() + 24;
  return bytes;
}

bool txn_fits(const Txn& txn, const TxnLimits& limits) {
  if (limits.max_ops > 0 &&
      (txn.compares.size() > limits.max_ops || txn.puts.size() + txn.deletes.size() > limits.max_ops))
    return false;
  return limits.max_bytes == 0 || txn_request_bytes(txn) <= limits.max_bytes;
}

std::optional<StoreError> validate_txn(const Txn& txn) {
  auto invalid = [](std::string message, std::string hint = {}) {
    return StoreError{StoreErrc::InvalidArgument, std::move(message), std::move(hint), 0};
  };
  for (const auto& c : txn.compares) {
    if (c.key.empty()) return invalid("transaction compares an empty key");
    if (c.mod_revision < 0)
      return invalid(fmt::format("compare on '{}' expects mod_revision {}; revisions are >= 0",
                                 c.key, c.mod_revision));
  }
  std::vector<std::string_view> put_keys;
  for (const auto& p : txn.puts) {
    if (p.key.empty()) return invalid("transaction puts an empty key");
    if (p.lease < 0) return invalid(fmt::format("put of '{}' names lease {}", p.key, p.lease));
    put_keys.push_back(p.key);
  }
  std::sort(put_keys.begin(), put_keys.end());
  auto dup = std::adjacent_find(put_keys.begin(), put_keys.end());
  if (dup != put_keys.end())
    return invalid(fmt::format("key '{}' is put more than once in one transaction", *dup),
                   "merge the puts into one");
  for (const auto& d : txn.deletes) {
    // An empty prefix means "every key", which is allowed; an empty single key is not.
    if (d.key.empty() && !d.prefix) return invalid("transaction deletes an empty key");
    for (const auto& p : txn.puts) {
      bool overlaps = d.prefix ? p.key.starts_with(d.key) : p.key == d.key;
      if (overlaps)
        return invalid(
            fmt::format("key '{}' is both put and deleted in one transaction", p.key),
            "the outcome would depend on the order; drop the delete or the put");
    }
  }
  return std::nullopt;
}

}  // namespace gaia
