// Commits larger than one transaction (lib/journal.hpp): through a store that enforces
// small limits the way etcd does (a wrapper over a real SQLite file), and through a real
// etcd with its default limits. A reader never sees half a change; a writer killed after
// the commit point loses nothing; a writer whose compare fails leaves nothing behind.
#include <catch2/catch.hpp>

#include <atomic>
#include <fmt/format.h>
#include <thread>

#include "lib/clock.hpp"
#include "lib/codec.hpp"
#include "lib/journal.hpp"
#include "lib/state.hpp"
#include "store/etcd_store.hpp"
#include "store/sqlite_store.hpp"
#include "tests/store/etcd_server.hpp"
#include "tests/support/forwarding_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;

namespace {

// A store that refuses what does not fit `limits`, as etcd does, over a real store.
class LimitedStore final : public gaia::test::ForwardingStore {
 public:
  LimitedStore(Store& inner, TxnLimits limits) : ForwardingStore(inner), m_limits(limits) {}
  StoreResult<TxnResult> txn(const Txn& txn) override {
    if (!txn_fits(txn, m_limits)) {
      ++refused;
      return std::unexpected(StoreError{StoreErrc::InvalidArgument, "over the limits", "", 0});
    }
    ++txns;
    return inner().txn(txn);
  }
  TxnLimits txn_limits() const override { return m_limits; }
  int refused = 0, txns = 0;

 private:
  TxnLimits m_limits;
};

Batch nodes_and_events(int nodes, int events, const std::string& tag) {
  Batch b;
  for (int k = 0; k < nodes; ++k) {
    Node n;
    n.name = fmt::format("{}-{:03d}", tag, k);
    b.put_nodes.push_back(n);
  }
  for (int k = 0; k < events; ++k) b.event("Test", fmt::format("{} event {}", tag, k));
  return b;
}

size_t count(Store& s, const std::string& prefix) {
  auto r = s.range(prefix);
  REQUIRE(r);
  return r->size();
}

}  // namespace

TEST_CASE("journal: a State commit larger than one transaction is applied whole", "[journal]") {
  gaia::test::TempDir dir;
  auto sqlite = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(sqlite);
  LimitedStore store(**sqlite, TxnLimits{8, 4096});
  ManualClock clock;
  State state(store, clock);
  auto base = state.load();
  REQUIRE(base);
  auto ok = state.commit(*base, nodes_and_events(40, 60, "n"), "op-big");
  REQUIRE(ok);
  CHECK(*ok);
  CHECK(store.refused == 0);
  CHECK(store.txns > 10);  // Chunks, the commit point, their application, the clean-up.
  auto after = state.load();
  REQUIRE(after);
  CHECK(after->snapshot.nodes.size() == 40);
  CHECK(after->seq == 60);
  CHECK(count(store, "events/") == 60);
  CHECK(count(store, k_journal_prefix) == 0);
  CHECK(count(store, k_journal_key) == 0);
  // Gap-free and in order.
  auto events = state.events_after(0);
  REQUIRE(events);
  REQUIRE(events->size() == 60);
  for (size_t k = 0; k < events->size(); ++k) CHECK((*events)[k].seq == static_cast<int64_t>(k + 1));
}

TEST_CASE("journal: a writer killed after the commit point loses nothing and the next reader finishes it", "[journal]") {
  gaia::test::TempDir dir;
  auto sqlite = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(sqlite);
  LimitedStore store(**sqlite, TxnLimits{8, 4096});
  Txn txn;
  txn.compares.push_back(Compare{"meta/seq", 0});
  txn.puts.push_back(Put{"meta/seq", "1", 0});
  for (int k = 0; k < 50; ++k) txn.puts.push_back(Put{fmt::format("items/{:03d}", k), fmt::format("v{}", k), 0});
  auto r = commit_journaled(store, txn, store.txn_limits(), "crash", 2);  // Stops after two chunks.
  REQUIRE(r);
  CHECK(*r);
  // Half of it is in the store, behind the journal: the commit point moved meta/seq, so a
  // writer comparing it fails and reloads, and the reload finishes the change first.
  CHECK(count(store, "items/") < 50);
  CHECK(count(store, k_journal_key) == 1);
  Txn late;
  late.compares.push_back(Compare{"meta/seq", 0});
  late.puts.push_back(Put{"meta/seq", "1", 0});
  auto refused = store.txn(late);
  REQUIRE(refused);
  CHECK_FALSE(refused->succeeded);
  auto rolled = roll_forward(store);
  REQUIRE(rolled);
  CHECK(*rolled);
  CHECK(count(store, "items/") == 50);
  CHECK(count(store, k_journal_prefix) == 0);
  CHECK(count(store, k_journal_key) == 0);
  auto again = roll_forward(store);
  REQUIRE(again);
  CHECK_FALSE(*again);

  // Through State: a load finds an interrupted journal and finishes it before reading.
  Txn second;
  auto seq = store.get("meta/seq");
  REQUIRE(seq);
  second.compares.push_back(Compare{"meta/seq", (*seq)->mod_revision});
  second.puts.push_back(Put{"meta/seq", "2", 0});
  for (int k = 0; k < 30; ++k) {
    Node n;
    n.name = fmt::format("late-{:02d}", k);
    second.puts.push_back(Put{keys::node(n.name), nlohmann::json(n).dump(), 0});
  }
  REQUIRE(commit_journaled(store, second, store.txn_limits(), "crash2", 1).value());
  ManualClock clock;
  State state(store, clock);
  auto loaded = state.load();
  REQUIRE(loaded);
  CHECK(loaded->snapshot.nodes.size() == 30);
  CHECK(count(store, k_journal_key) == 0);
}

TEST_CASE("journal: a failed compare applies nothing and leaves no chunks and a value too large is refused",
          "[journal]") {
  gaia::test::TempDir dir;
  auto sqlite = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(sqlite);
  LimitedStore store(**sqlite, TxnLimits{8, 4096});
  REQUIRE((*sqlite)->put("meta/seq", "7"));
  Txn txn;
  txn.compares.push_back(Compare{"meta/seq", 0});  // Must not exist: it does.
  for (int k = 0; k < 40; ++k) txn.puts.push_back(Put{fmt::format("items/{:03d}", k), "v", 0});
  auto r = commit_journaled(store, txn, store.txn_limits(), "lost");
  REQUIRE(r);
  CHECK_FALSE(*r);
  CHECK(count(store, "items/") == 0);
  CHECK(count(store, k_journal_prefix) == 0);
  CHECK(count(store, k_journal_key) == 0);

  Txn huge;
  huge.puts.push_back(Put{"big", std::string(10000, 'x'), 0});
  auto refused = commit_any_size(store, huge, "huge");
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == StoreErrc::InvalidArgument);
  CHECK(refused.error().message.find("'big' is 10000 bytes") != std::string::npos);
  CHECK(count(store, k_journal_prefix) == 0);
}

TEST_CASE("journal: concurrent large commits from several writers: one at a time, none lost", "[journal]") {
  gaia::test::TempDir dir;
  {
    auto init = SqliteStore::open(dir.path() / "s.db");
    REQUIRE(init);
  }
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      auto sqlite = SqliteStore::open(dir.path() / "s.db");
      if (!sqlite) {
        ++failures;
        return;
      }
      LimitedStore store(**sqlite, TxnLimits{8, 4096});
      ManualClock clock;
      State state(store, clock);
      auto r = state.update(fmt::format("op-{}", w), [&](const ClusterState&, Batch& b) -> Result<void> {
        b = nodes_and_events(15, 20, fmt::format("w{}", w));
        return {};
      });
      if (!r) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  auto sqlite = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(sqlite);
  ManualClock clock;
  State state(**sqlite, clock);
  auto st = state.load();
  REQUIRE(st);
  CHECK(st->snapshot.nodes.size() == 60);
  CHECK(st->seq == 80);
  auto events = state.events_after(0);
  REQUIRE(events);
  REQUIRE(events->size() == 80);
  // Each writer's events are consecutive: no commit interleaved with another.
  for (size_t k = 0; k < events->size(); k += 20) {
    std::string tag = (*events)[k].message.substr(0, 2);
    for (size_t j = k; j < k + 20; ++j) CHECK((*events)[j].message.substr(0, 2) == tag);
  }
}

TEST_CASE("journal: a submit-sized commit goes through a real etcd with its default limits", "[journal][etcd]") {
  gaia::testing::EtcdServer server;
  EtcdOptions options;
  options.endpoints = {server.endpoint()};
  auto store = EtcdStore::open(options);
  REQUIRE(store);
  ManualClock clock;
  State state(**store, clock);
  auto base = state.load();
  REQUIRE(base);
  // 500 nodes and 700 events: about ten times etcd's 128 operations.
  auto ok = state.commit(*base, nodes_and_events(500, 700, "e"), "op-etcd");
  REQUIRE(ok);
  CHECK(*ok);
  auto after = state.load();
  REQUIRE(after);
  CHECK(after->snapshot.nodes.size() == 500);
  CHECK(after->seq == 700);
  auto journal = (*store)->range(k_journal_prefix);
  REQUIRE(journal);
  CHECK(journal->empty());
  // Heartbeats for all of them, in as many transactions as etcd needs.
  std::vector<std::string> names;
  for (const auto& n : after->snapshot.nodes) names.push_back(n.name);
  REQUIRE(state.write_heartbeats(names, "pid 1 on test"));
  auto beats = state.load();
  REQUIRE(beats);
  CHECK(beats->heartbeats.size() == 500);
}
