#pragma once
// A Store that passes every call on to another one: a test derives from it and overrides
// only what it watches (reads counted), limits (transactions refused) or changes (the
// backing swapped), instead of forwarding every method itself.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "lib/store.hpp"

namespace gaia::test {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store& inner) : m_inner(&inner) {}
  StoreResult<RangeResponse> read(const RangeRequest& r) override { return m_inner->read(r); }
  StoreResult<int64_t> revision() override { return m_inner->revision(); }
  StoreResult<TxnResult> txn(const Txn& t) override { return m_inner->txn(t); }
  StoreResult<std::vector<Event>> changes_since(int64_t from, std::string_view prefix, size_t limit) override {
    return m_inner->changes_since(from, prefix, limit);
  }
  StoreResult<bool> history_chained(int64_t after, int64_t upto) override {
    return m_inner->history_chained(after, upto);
  }
  StoreResult<std::vector<Event>> changes_since_skipping(int64_t from, std::string_view skipped) override {
    return m_inner->changes_since_skipping(from, skipped);
  }
  StoreResult<std::vector<Event>> changes_at(int64_t revision, size_t limit) override {
    return m_inner->changes_at(revision, limit);
  }
  StoreResult<std::string> identity() override { return m_inner->identity(); }
  StoreResult<std::optional<HistoryMark>> history_mark(int64_t revision = 0) override {
    return m_inner->history_mark(revision);
  }
  StoreResult<void> compact(int64_t revision) override { return m_inner->compact(revision); }
  StoreResult<int64_t> grant(std::chrono::seconds ttl) override { return m_inner->grant(ttl); }
  StoreResult<void> keep_alive(int64_t lease) override { return m_inner->keep_alive(lease); }
  StoreResult<void> revoke(int64_t lease) override { return m_inner->revoke(lease); }

 protected:
  Store& inner() const { return *m_inner; }
  // Calls from now on go to `inner`.
  void forward_to(Store& inner) { m_inner = &inner; }

 private:
  Store* m_inner;
};

// Counts the reads of keys under one prefix: a process that starts from a good kept
// file (lib/kept_file.hpp) reads none of what the file holds.
class PrefixReadCounter final : public ForwardingStore {
 public:
  PrefixReadCounter(Store& inner, std::string prefix) : ForwardingStore(inner), m_prefix(std::move(prefix)) {}
  StoreResult<RangeResponse> read(const RangeRequest& r) override {
    if (r.key.starts_with(m_prefix)) ++reads;
    return ForwardingStore::read(r);
  }
  int reads = 0;

 private:
  std::string m_prefix;
};

// Counts the reads of the changes since a revision of every key, or of every key but
// some (Store::changes_since_skipping): what checking a kept file costs.
class ChangesReadCounter final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  StoreResult<std::vector<Event>> changes_since(int64_t from, std::string_view prefix, size_t limit) override {
    auto r = ForwardingStore::changes_since(from, prefix, limit);
    if (prefix.empty() && limit == 0) {
      ++reads;
      ++whole;
      if (r) changes += r->size();
    }
    return r;
  }
  StoreResult<std::vector<Event>> changes_since_skipping(int64_t from, std::string_view skipped) override {
    auto r = ForwardingStore::changes_since_skipping(from, skipped);
    ++reads;
    if (r) changes += r->size();
    return r;
  }
  int reads = 0;       // Of either kind.
  int whole = 0;       // Of every key.
  size_t changes = 0;  // Changes those reads returned.
};

}  // namespace gaia::test
