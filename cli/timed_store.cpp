#include "cli/timed_store.hpp"

#include <fmt/format.h>

#include <chrono>

namespace gaia::cli {

namespace {

// Runs `f` and sets `ms` to its duration in milliseconds.
template <class F>
auto timed(double& ms, F&& f) {
  auto start = std::chrono::steady_clock::now();
  auto result = f();
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

TimedStore::TimedStore(const Globals& g, std::unique_ptr<Store> inner) : m_g(g), m_inner(std::move(inner)) {}

TimedStore::~TimedStore() {
  log_verbose(m_g, 1,
              fmt::format("store: {} read(s) of {} key(s) in {:.1f} ms, {} commit(s) in {:.1f} ms{}", m_reads, m_keys,
                          m_read_ms, m_commits, m_txn_ms,
                          m_conflicts ? fmt::format(", {} conflict(s) re-decided", m_conflicts) : ""));
}

void TimedStore::count(int reads, size_t keys, double read_ms, int commits, int conflicts, double txn_ms) {
  std::lock_guard lock(m_mutex);
  m_reads += reads;
  m_keys += keys;
  m_read_ms += read_ms;
  m_commits += commits;
  m_conflicts += conflicts;
  m_txn_ms += txn_ms;
}

StoreResult<RangeResponse> TimedStore::read(const RangeRequest& request) {
  double ms = 0;
  auto r = timed(ms, [&] { return m_inner->read(request); });
  // Keys, not only reads: one read of the whole timeline and one of a single key differ
  // by five orders of magnitude.
  count(1, r ? r->kvs.size() : 0, ms, 0, 0, 0);
  return r;
}

StoreResult<int64_t> TimedStore::revision() {
  double ms = 0;
  auto r = timed(ms, [&] { return m_inner->revision(); });
  count(1, 0, ms, 0, 0, 0);
  return r;
}

StoreResult<TxnResult> TimedStore::txn(const Txn& t) {
  double ms = 0;
  auto r = timed(ms, [&] { return m_inner->txn(t); });
  count(0, 0, 0, r && r->succeeded, r && !r->succeeded, ms);
  std::string outcome = !r ? "failed" : r->succeeded ? fmt::format("committed at revision {}", r->revision)
                                                     : "conflict (another writer was first)";
  log_verbose(m_g, 2,
              fmt::format("store txn: {} compare(s), {} put(s), {} delete(s): {} in {:.1f} ms", t.compares.size(),
                          t.puts.size(), t.deletes.size(), outcome, ms));
  return r;
}

StoreResult<std::vector<Event>> TimedStore::changes_read(
    int64_t from_revision, const std::string& what, const std::function<StoreResult<std::vector<Event>>()>& read) {
  double ms = 0;
  auto r = timed(ms, read);
  count(1, 0, ms, 0, 0, 0);
  log_verbose(m_g, 2,
              fmt::format("store changes since revision {}{}: {} in {:.1f} ms", from_revision, what,
                          r ? fmt::format("{} change(s)", r->size()) : std::string("failed"), ms));
  return r;
}

StoreResult<std::vector<Event>> TimedStore::changes_since_skipping(int64_t from_revision, std::string_view skipped) {
  return changes_read(from_revision, fmt::format(", of every key but those under {}", skipped),
                      [&] { return m_inner->changes_since_skipping(from_revision, skipped); });
}

StoreResult<std::vector<Event>> TimedStore::changes_since(int64_t from_revision, std::string_view prefix,
                                                          size_t limit) {
  return changes_read(from_revision, prefix.empty() ? std::string() : fmt::format(" under {}", prefix),
                      [&] { return m_inner->changes_since(from_revision, prefix, limit); });
}

StoreResult<void> TimedStore::compact(int64_t revision) { return m_inner->compact(revision); }
StoreResult<int64_t> TimedStore::grant(std::chrono::seconds ttl) { return m_inner->grant(ttl); }
StoreResult<void> TimedStore::keep_alive(int64_t lease) { return m_inner->keep_alive(lease); }
StoreResult<void> TimedStore::revoke(int64_t lease) { return m_inner->revoke(lease); }

}  // namespace gaia::cli
