#pragma once
// An in-process Store with the whole contract (docs/store.md): MVCC history with reads at
// past revisions, changes_since, compaction, and leases that expire lazily by an
// injected clock. Nothing is persisted; it exists for tests, which get a store without a
// file, and with transaction limits of their choosing.
//
// Several handles may share one backing state, the way processes share a SQLite file or
// an etcd cluster: make_backing() creates it and open() gives a handle on it. Every call
// takes the backing's mutex, so handles and threads may use it freely.

#include <chrono>
#include <cstdint>
#include <memory>

#include "lib/clock.hpp"
#include "lib/store.hpp"

namespace gaia {

struct MemoryStoreOptions {
  // Used for lease deadlines; a SystemClock when null.
  std::shared_ptr<const Clock> clock;
  // Bounds of one transaction (etcd's --max-txn-ops and --max-request-bytes); a
  // transaction that does not fit fails with StoreErrc::TooLarge. None by default.
  TxnLimits limits;
};

class MemoryStore final : public Store {
 public:
  // The state the handles share; its contents are private to memory_store.cpp.
  struct Backing;

  // A new, empty backing store at revision 0.
  static std::shared_ptr<Backing> make_backing(MemoryStoreOptions options = {});
  // A handle on `backing`.
  static std::unique_ptr<MemoryStore> open(std::shared_ptr<Backing> backing);
  // A handle on a backing of its own.
  static std::unique_ptr<MemoryStore> open(MemoryStoreOptions options = {});

  explicit MemoryStore(std::shared_ptr<Backing> backing);

  StoreResult<RangeResponse> read(const RangeRequest& request) override;
  StoreResult<int64_t> revision() override;
  StoreResult<TxnResult> txn(const Txn& txn) override;
  TxnLimits txn_limits() const override;
  StoreResult<std::vector<Event>> changes_since(int64_t from_revision, std::string_view prefix,
                                                size_t limit = 0) override;
  StoreResult<void> compact(int64_t revision) override;
  StoreResult<int64_t> grant(std::chrono::seconds ttl) override;
  StoreResult<void> keep_alive(int64_t lease) override;
  StoreResult<void> revoke(int64_t lease) override;

 private:
  std::shared_ptr<Backing> m_backing;
};

}  // namespace gaia
