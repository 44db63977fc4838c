#pragma once
// A Store that times what it forwards, for `-v`: when the session ends it reports how
// many reads (and keys read) and commits the command made and how long they took; with `-vv` it also
// logs every transaction as it happens. Only used when -v is given, so the normal path
// pays nothing.

#include <functional>
#include <memory>
#include <mutex>

#include "cli/common.hpp"
#include "lib/store.hpp"

namespace gaia::cli {

class TimedStore final : public Store {
 public:
  TimedStore(const Globals& g, std::unique_ptr<Store> inner);
  ~TimedStore() override;

  StoreResult<RangeResponse> read(const RangeRequest& request) override;
  StoreResult<int64_t> revision() override;
  StoreResult<TxnResult> txn(const Txn& txn) override;
  // The inner store's limits, so a large commit still goes through the journal.
  TxnLimits txn_limits() const override { return m_inner->txn_limits(); }
  size_t read_page_size() const override { return m_inner->read_page_size(); }
  // The inner store's own watch (etcd streams one).
  StoreResult<std::unique_ptr<Watch>> watch(std::string_view prefix, int64_t from_revision) override {
    return m_inner->watch(prefix, from_revision);
  }
  StoreResult<std::string> identity() override { return m_inner->identity(); }
  StoreResult<std::optional<HistoryMark>> history_mark(int64_t revision = 0) override {
    return m_inner->history_mark(revision);
  }
  StoreResult<bool> history_chained(int64_t after, int64_t upto) override {
    return m_inner->history_chained(after, upto);
  }
  StoreResult<std::vector<Event>> changes_at(int64_t revision, size_t limit) override {
    return m_inner->changes_at(revision, limit);
  }
  StoreResult<std::vector<Event>> changes_since(int64_t from_revision, std::string_view prefix,
                                                size_t limit = 0) override;
  StoreResult<std::vector<Event>> changes_since_skipping(int64_t from_revision, std::string_view skipped) override;
  StoreResult<void> compact(int64_t revision) override;
  StoreResult<int64_t> grant(std::chrono::seconds ttl) override;
  StoreResult<void> keep_alive(int64_t lease) override;
  StoreResult<void> revoke(int64_t lease) override;

 private:
  // Adds one call's figures; a command reads on several threads (ops::ReadAhead).
  void count(int reads, size_t keys, double read_ms, int commits, int conflicts, double txn_ms);
  // Times one read of changes and logs it at -vv: "store changes since revision N<what>".
  StoreResult<std::vector<Event>> changes_read(int64_t from_revision, const std::string& what,
                                               const std::function<StoreResult<std::vector<Event>>()>& read);

  const Globals& m_g;
  std::unique_ptr<Store> m_inner;
  std::mutex m_mutex;  // Guards the figures below.
  int m_reads = 0, m_commits = 0, m_conflicts = 0;
  size_t m_keys = 0;  // Keys returned by read().
  double m_read_ms = 0, m_txn_ms = 0;
};

}  // namespace gaia::cli
