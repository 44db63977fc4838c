// The in-process store: the whole Store contract, plus what only it has (handles on one
// backing state, transaction limits chosen by the test).
#include "store/memory_store.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "lib/journal.hpp"
#include "tests/store/store_contract.hpp"

using namespace gaia;
using gaia::testing::must;
using namespace std::chrono_literals;

namespace {

// One backing state per backend, made on the first open with the contract's clock; every
// handle opened afterwards shares it, as processes share a SQLite file.
class MemoryBackend final : public gaia::testing::StoreBackend {
 public:
  std::unique_ptr<Store> open(std::shared_ptr<const Clock> clock) override {
    if (!m_backing) m_backing = MemoryStore::make_backing(MemoryStoreOptions{std::move(clock), {}});
    return MemoryStore::open(m_backing);
  }

 private:
  std::shared_ptr<MemoryStore::Backing> m_backing;
};

}  // namespace

TEST_CASE("memory store satisfies the Store contract", "[store][memory]") {
  gaia::testing::run_store_contract([] { return std::make_unique<MemoryBackend>(); });
}

TEST_CASE("memory store handles on one backing see each other's changes", "[store][memory]") {
  auto clock = std::make_shared<ManualClock>();
  auto backing = MemoryStore::make_backing(MemoryStoreOptions{clock, {}});
  auto a = MemoryStore::open(backing);
  auto b = MemoryStore::open(backing);
  CHECK(must(a->put("k", "1")) == 1);
  CHECK(must(b->get("k"))->value == "1");
  int64_t lease = must(b->grant(5s));
  must(b->put("held", "x", lease));
  clock->advance(5s);
  // Expiry is lazy: the first call through any handle deletes the key.
  CHECK_FALSE(must(a->get("held")).has_value());
  CHECK(must(b->revision()) == 3);

  // A store of its own shares nothing.
  auto alone = MemoryStore::open();
  CHECK(must(alone->revision()) == 0);
  CHECK_FALSE(must(alone->get("k")).has_value());
}

TEST_CASE("memory store refuses transactions over its limits, and journals fit them", "[store][memory]") {
  MemoryStoreOptions options;
  options.limits = TxnLimits{.max_ops = 3, .max_bytes = 400};
  auto store = MemoryStore::open(options);
  CHECK(store->txn_limits().max_ops == 3);
  CHECK(store->txn_limits().max_bytes == 400);

  Txn many;
  for (int i = 0; i < 4; ++i) many.puts.push_back(Put{"k/" + std::to_string(i), "v", 0});
  auto refused = store->txn(many);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == StoreErrc::TooLarge);
  Txn big;
  big.puts.push_back(Put{"big", std::string(500, 'x'), 0});
  auto too_big = store->txn(big);
  REQUIRE_FALSE(too_big);
  CHECK(too_big.error().code == StoreErrc::TooLarge);
  CHECK(must(store->revision()) == 0);

  many.puts.pop_back();
  CHECK(must(store->txn(many)).succeeded);

  // A change larger than one transaction goes through the journal and lands whole.
  Txn large;
  for (int i = 0; i < 10; ++i) large.puts.push_back(Put{"big/" + std::to_string(i), "v", 0});
  CHECK(must(commit_any_size(*store, large, "op1")));
  CHECK(must(store->range("big/")).size() == 10);
  CHECK_FALSE(must(store->get("meta/journal")).has_value());
}

TEST_CASE("memory store compaction keeps the state at the compacted revision", "[store][memory]") {
  auto store = MemoryStore::open();
  must(store->put("a", "1"));  // 1
  must(store->put("b", "1"));  // 2
  must(store->del("a"));       // 3
  must(store->put("b", "2"));  // 4
  must(store->compact(3));
  CHECK(gaia::testing::keys_of(must(store->read(RangeRequest::prefix("", 3)))) == std::vector<std::string>{"b"});
  CHECK(must(store->read(RangeRequest::prefix("", 3))).kvs.at(0).value == "1");
  must(store->compact(4));
  CHECK(must(store->read(RangeRequest::prefix("", 4))).kvs.at(0).value == "2");
  auto compacted = store->read(RangeRequest::prefix("", 3));
  REQUIRE_FALSE(compacted);
  CHECK(compacted.error().code == StoreErrc::Compacted);
  CHECK(must(store->changes_since(4, "")).size() == 1);
}
