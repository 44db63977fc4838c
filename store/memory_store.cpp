#include "store/memory_store.hpp"
#include "store/store_errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace gaia {

struct MemoryStore::Backing {
  // One state of one key, from `revision` on; no kv means the key was deleted then.
  struct Version {
    int64_t revision = 0;
    std::optional<KeyValue> kv;
  };
  struct Lease {
    int64_t ttl_ms = 0;
    int64_t expires_at_ms = 0;
  };

  explicit Backing(MemoryStoreOptions o) : options(std::move(o)) {
    if (!options.clock) options.clock = std::make_shared<SystemClock>();
  }

  std::mutex mutex;  // Guards everything below: every call holds it throughout.
  MemoryStoreOptions options;
  int64_t revision = 0;
  int64_t compact_revision = 0;
  // Each key's states, oldest first, back to the state at compact_revision: what a read
  // at any retained revision needs.
  std::map<std::string, std::vector<Version>, std::less<>> keys;
  std::vector<Event> changes;  // Revision order, from compact_revision on.
  std::map<int64_t, Lease> leases;
  int64_t next_lease = 1;  // Never reused, as in SQLite and etcd.
};

namespace {

using Backing = MemoryStore::Backing;

StoreError compacted_error(int64_t revision, int64_t oldest, std::string hint) {
  return store_error(StoreErrc::Compacted,
               fmt::format("revision {} has been compacted; oldest available is {}", revision, oldest),
               std::move(hint), oldest);
}

int64_t now_ms(const Backing& b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b.options.clock->now().time_since_epoch())
      .count();
}

// The key's state at `revision` (the newest state when 0), or null when it did not exist.
const KeyValue* state_at(const std::vector<Backing::Version>& versions, int64_t revision) {
  if (revision == 0) return versions.back().kv ? &*versions.back().kv : nullptr;
  auto after = std::upper_bound(versions.begin(), versions.end(), revision,
                                [](int64_t r, const Backing::Version& v) { return r < v.revision; });
  if (after == versions.begin() || !std::prev(after)->kv) return nullptr;
  return &*std::prev(after)->kv;
}

// Applies the changes of one revision: a new state for each key and an event for
// changes_since.
class MemoryRevisionWriter {
 public:
  explicit MemoryRevisionWriter(Backing& b) : m_b(b), m_revision(b.revision + 1) {}

  void put(const Put& p) {
    auto& versions = m_b.keys[p.key];
    KeyValue kv{p.key, p.value, m_revision, m_revision, 1, p.lease};
    if (!versions.empty() && versions.back().kv) {
      kv.create_revision = versions.back().kv->create_revision;
      kv.version = versions.back().kv->version + 1;
    }
    versions.push_back({m_revision, kv});
    m_b.changes.push_back(Event{EventType::Put, std::move(kv)});
  }

  void remove(const std::string& key) {
    auto it = m_b.keys.find(key);
    if (it == m_b.keys.end() || !it->second.back().kv) return;
    it->second.push_back({m_revision, std::nullopt});
    m_b.changes.push_back(Event{EventType::Delete, KeyValue{key, "", 0, m_revision, 0, 0}});
  }

  void remove_matching(const Delete& d) {
    if (!d.prefix) return remove(d.key);
    std::vector<std::string> doomed;
    for (auto it = m_b.keys.lower_bound(d.key); it != m_b.keys.end() && it->first.starts_with(d.key); ++it)
      if (it->second.back().kv) doomed.push_back(it->first);
    for (const auto& key : doomed) remove(key);
  }

  void remove_lease_keys(const std::set<int64_t>& leases) {
    std::vector<std::string> doomed;
    for (const auto& [key, versions] : m_b.keys)
      if (versions.back().kv && leases.contains(versions.back().kv->lease)) doomed.push_back(key);
    for (const auto& key : doomed) remove(key);
  }

  // Records the new revision when anything changed; returns the store's revision.
  int64_t finish() {
    if (!m_b.changes.empty() && m_b.changes.back().revision() == m_revision) m_b.revision = m_revision;
    return m_b.revision;
  }

 private:
  Backing& m_b;
  int64_t m_revision;
};

// Deletes the keys of every lease past its deadline, all at one new revision: expiry is
// lazy, done by whichever call comes first after the deadline.
void expire_leases(Backing& b) {
  int64_t now = now_ms(b);
  std::set<int64_t> expired;
  for (const auto& [id, lease] : b.leases)
    if (lease.expires_at_ms <= now) expired.insert(id);
  if (expired.empty()) return;
  MemoryRevisionWriter writer(b);
  writer.remove_lease_keys(expired);
  for (int64_t id : expired) b.leases.erase(id);
  writer.finish();
}

void compact_to(Backing& b, int64_t revision) {
  for (auto it = b.keys.begin(); it != b.keys.end();) {
    auto& versions = it->second;
    // Keep the state at `revision` (the newest one at or before it) and what follows; a
    // delete there is the same as no state at all.
    auto after = std::upper_bound(versions.begin(), versions.end(), revision,
                                  [](int64_t r, const Backing::Version& v) { return r < v.revision; });
    auto keep = after == versions.begin() ? after : std::prev(after);
    if (keep != versions.end() && keep->revision <= revision && !keep->kv) ++keep;
    versions.erase(versions.begin(), keep);
    it = versions.empty() ? b.keys.erase(it) : std::next(it);
  }
  auto first_kept = std::partition_point(b.changes.begin(), b.changes.end(),
                                         [&](const Event& e) { return e.revision() < revision; });
  b.changes.erase(b.changes.begin(), first_kept);
  b.compact_revision = revision;
}

}  // namespace

std::shared_ptr<MemoryStore::Backing> MemoryStore::make_backing(MemoryStoreOptions options) {
  return std::make_shared<Backing>(std::move(options));
}

std::unique_ptr<MemoryStore> MemoryStore::open(std::shared_ptr<Backing> backing) {
  return std::make_unique<MemoryStore>(std::move(backing));
}

std::unique_ptr<MemoryStore> MemoryStore::open(MemoryStoreOptions options) {
  return open(make_backing(std::move(options)));
}

MemoryStore::MemoryStore(std::shared_ptr<Backing> backing) : m_backing(std::move(backing)) {}

StoreResult<RangeResponse> MemoryStore::read(const RangeRequest& request) {
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  expire_leases(b);
  if (request.revision < 0)
    return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                 fmt::format("cannot read at revision {}; revisions are >= 0", request.revision)));
  if (request.revision > b.revision)
    return std::unexpected(store_error(StoreErrc::FutureRevision,
                                 fmt::format("cannot read at revision {}: the current revision is {}",
                                             request.revision, b.revision)));
  if (request.revision != 0 && request.revision < b.compact_revision)
    return std::unexpected(
        compacted_error(request.revision, b.compact_revision, "read at the current revision (0) instead"));

  RangeResponse out;
  out.revision = request.revision == 0 ? b.revision : request.revision;
  auto take = [&](const KeyValue& kv) {
    ++out.count;
    if (request.count_only) return;
    if (request.limit > 0 && out.kvs.size() >= request.limit) {
      out.more = true;
      return;
    }
    out.kvs.push_back(kv);
    if (request.keys_only) out.kvs.back().value.clear();
  };
  if (request.range_end.empty()) {
    auto it = b.keys.find(request.key);
    if (it != b.keys.end())
      if (const KeyValue* kv = state_at(it->second, request.revision)) take(*kv);
    return out;
  }
  bool to_end = request.range_end == std::string_view("\0", 1);
  for (auto it = b.keys.lower_bound(request.key); it != b.keys.end() && (to_end || it->first < request.range_end);
       ++it)
    if (const KeyValue* kv = state_at(it->second, request.revision)) take(*kv);
  return out;
}

StoreResult<int64_t> MemoryStore::revision() {
  std::lock_guard lock(m_backing->mutex);
  expire_leases(*m_backing);
  return m_backing->revision;
}

TxnLimits MemoryStore::txn_limits() const { return m_backing->options.limits; }

StoreResult<TxnResult> MemoryStore::txn(const Txn& txn) {
  if (auto invalid = validate_txn(txn)) return std::unexpected(std::move(*invalid));
  const TxnLimits& limits = m_backing->options.limits;
  if (!txn_fits(txn, limits))
    return std::unexpected(store_error(
        StoreErrc::TooLarge,
        fmt::format("transaction has {} compares, {} operations and about {} bytes; this store allows at "
                    "most {} compares and {} operations (0: any) and {} bytes (0: any)",
                    txn.compares.size(), txn.puts.size() + txn.deletes.size(), txn_request_bytes(txn),
                    limits.max_ops, limits.max_ops, limits.max_bytes),
        "commit it through a journal (lib/journal.hpp), or raise the store's limits"));
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  expire_leases(b);
  for (const auto& c : txn.compares) {
    auto it = b.keys.find(c.key);
    const KeyValue* kv = it == b.keys.end() ? nullptr : state_at(it->second, 0);
    if ((kv ? kv->mod_revision : 0) != c.mod_revision) return TxnResult{false, b.revision};
  }
  for (const auto& p : txn.puts)
    if (p.lease != 0 && !b.leases.contains(p.lease))
      return std::unexpected(store_error(
          StoreErrc::LeaseNotFound,
          fmt::format("cannot attach '{}' to lease {}: the lease has expired or does not exist", p.key, p.lease),
          "grant a new lease and retry"));
  MemoryRevisionWriter writer(b);
  for (const auto& d : txn.deletes) writer.remove_matching(d);
  for (const auto& p : txn.puts) writer.put(p);
  return TxnResult{true, writer.finish()};
}

StoreResult<std::vector<Event>> MemoryStore::changes_since(int64_t from_revision, std::string_view prefix,
                                                           size_t limit) {
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  expire_leases(b);
  if (from_revision < b.compact_revision)
    return std::unexpected(compacted_error(from_revision, b.compact_revision,
                                           "re-read the current state and follow changes from its revision"));
  std::vector<Event> out;
  auto it = std::partition_point(b.changes.begin(), b.changes.end(),
                                 [&](const Event& e) { return e.revision() < from_revision; });
  for (; it != b.changes.end(); ++it) {
    // A limit never splits a revision: stop only at the first event of a new one.
    if (limit > 0 && out.size() >= limit && it->revision() != out.back().revision()) break;
    if (it->kv.key.starts_with(prefix)) out.push_back(*it);
  }
  return out;
}

StoreResult<void> MemoryStore::compact(int64_t revision) {
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  expire_leases(b);
  if (revision > b.revision)
    return std::unexpected(store_error(
        StoreErrc::FutureRevision,
        fmt::format("cannot compact to revision {}: the current revision is {}", revision, b.revision)));
  if (revision < b.compact_revision) return std::unexpected(compacted_error(revision, b.compact_revision, ""));
  if (revision > b.compact_revision) compact_to(b, revision);
  return {};
}

StoreResult<int64_t> MemoryStore::grant(std::chrono::seconds ttl) {
  if (ttl.count() <= 0)
    return std::unexpected(
        store_error(StoreErrc::InvalidArgument, fmt::format("lease TTL must be positive, got {}s", ttl.count())));
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  expire_leases(b);
  int64_t ttl_ms = std::chrono::duration_cast<std::chrono::milliseconds>(ttl).count();
  int64_t id = b.next_lease++;
  b.leases[id] = Backing::Lease{ttl_ms, now_ms(b) + ttl_ms};
  return id;
}

StoreResult<void> MemoryStore::keep_alive(int64_t lease) {
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  // Expire first: renewing a lease whose deadline has passed must fail, or its keys
  // would outlive it.
  expire_leases(b);
  auto it = b.leases.find(lease);
  if (it == b.leases.end()) return std::unexpected(lease_not_found(lease));
  it->second.expires_at_ms = now_ms(b) + it->second.ttl_ms;
  return {};
}

StoreResult<void> MemoryStore::revoke(int64_t lease) {
  Backing& b = *m_backing;
  std::lock_guard lock(b.mutex);
  expire_leases(b);
  if (!b.leases.contains(lease)) return std::unexpected(lease_not_found(lease));
  MemoryRevisionWriter writer(b);
  writer.remove_lease_keys({lease});
  b.leases.erase(lease);
  writer.finish();
  return {};
}

}  // namespace gaia
