#pragma once
// The behaviour every Store implementation must have. An implementation's test file
// defines how to create a fresh backing store and calls run_store_contract() inside a
// TEST_CASE; each SECTION below then runs against a new, empty store. The sqlite store
// runs it in sqlite_store_test.cpp; the etcd store will run the same suite.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lib/clock.hpp"
#include "lib/store.hpp"

namespace gaia::testing {

// A fresh, empty backing store from which any number of handles can be opened; the
// concurrency sections open one handle per thread, as separate processes would.
class StoreBackend {
 public:
  virtual ~StoreBackend() = default;
  virtual std::unique_ptr<Store> open(std::shared_ptr<const Clock> clock) = 0;
};

template <class T>
T must(StoreResult<T> r) {
  if (!r) FAIL(r.error().to_string());
  return std::move(*r);
}
inline void must(StoreResult<void> r) {
  if (!r) FAIL(r.error().to_string());
}

inline std::vector<std::string> keys_of(const std::vector<KeyValue>& kvs) {
  std::vector<std::string> keys;
  for (const auto& kv : kvs) keys.push_back(kv.key);
  return keys;
}

// Reads `key` as a decimal counter and writes it back incremented, retrying on conflict
// with compare-and-set, the way every controller updates shared state. Returns false on
// a store error (Catch2 assertions are not thread-safe, so threads report back).
inline bool increment(Store& store, const std::string& key) {
  for (;;) {
    auto current = store.get(key);
    if (!current) return false;
    int64_t value = *current ? std::stoll((*current)->value) : 0;
    int64_t mod = *current ? (*current)->mod_revision : 0;
    Txn t;
    t.compares.push_back(Compare{key, mod});
    t.puts.push_back(Put{key, std::to_string(value + 1), 0});
    auto r = store.txn(t);
    if (!r) return false;
    if (r->succeeded) return true;
  }
}

// `make_backend` is a callable returning std::unique_ptr<StoreBackend> for a new, empty
// store each time it is called.
template <class MakeBackend>
void run_store_contract(MakeBackend make_backend) {
  using namespace std::chrono_literals;
  std::unique_ptr<StoreBackend> backend = make_backend();
  auto clock = std::make_shared<ManualClock>();
  std::unique_ptr<Store> owned = backend->open(clock);
  REQUIRE(owned);
  Store& store = *owned;

  SECTION("a new store is empty at revision 0") {
    CHECK(must(store.revision()) == 0);
    CHECK(must(store.range("")).empty());
    CHECK_FALSE(must(store.get("apps/default/hdfs")).has_value());
  }

  SECTION("put then get returns the value with its revisions") {
    CHECK(must(store.put("apps/default/hdfs", R"({"replicas":3})")) == 1);
    auto kv = must(store.get("apps/default/hdfs"));
    REQUIRE(kv);
    CHECK(kv->key == "apps/default/hdfs");
    CHECK(kv->value == R"({"replicas":3})");
    CHECK(kv->create_revision == 1);
    CHECK(kv->mod_revision == 1);
    CHECK(kv->version == 1);
    CHECK(kv->lease == 0);

    must(store.put("nodes/n1", "{}"));
    CHECK(must(store.put("apps/default/hdfs", R"({"replicas":5})")) == 3);
    kv = must(store.get("apps/default/hdfs"));
    REQUIRE(kv);
    CHECK(kv->value == R"({"replicas":5})");
    CHECK(kv->create_revision == 1);
    CHECK(kv->mod_revision == 3);
    CHECK(kv->version == 2);
  }

  SECTION("values are stored byte for byte") {
    std::string value = "line1\nline2\t\"quoted\" \xc3\xa9 {}";
    must(store.put("k", value));
    CHECK(must(store.get("k"))->value == value);
    must(store.put("empty", ""));
    auto empty = must(store.get("empty"));
    REQUIRE(empty);
    CHECK(empty->value.empty());
  }

  SECTION("range returns the keys under a prefix in key order") {
    for (const char* key : {"nodes/n2", "apps/default/hdfs/datanode", "apps/default/hdfs2",
                            "apps/default/hdfs", "apps/default/hdfs/namenode", "nodes/n1",
                            "apps/other/zk"})
      must(store.put(key, "{}"));
    CHECK(keys_of(must(store.range("apps/default/hdfs/"))) ==
          std::vector<std::string>{"apps/default/hdfs/datanode", "apps/default/hdfs/namenode"});
    // A plain string prefix: without the trailing '/', hdfs2 matches too.
    CHECK(keys_of(must(store.range("apps/default/hdfs"))) ==
          std::vector<std::string>{"apps/default/hdfs", "apps/default/hdfs/datanode",
                                   "apps/default/hdfs/namenode", "apps/default/hdfs2"});
    CHECK(keys_of(must(store.range("nodes/"))) == std::vector<std::string>{"nodes/n1", "nodes/n2"});
    CHECK(keys_of(must(store.range("apps/", 2))) ==
          std::vector<std::string>{"apps/default/hdfs", "apps/default/hdfs/datanode"});
    CHECK(must(store.range("")).size() == 7);
    CHECK(must(store.range("zzz")).empty());
  }

  SECTION("range handles prefixes ending in 0xff bytes") {
    must(store.put("a\xff", "1"));
    must(store.put("a\xff\xff", "2"));
    must(store.put("b", "3"));
    CHECK(keys_of(must(store.range("a\xff"))) == std::vector<std::string>{"a\xff", "a\xff\xff"});
    CHECK(keys_of(must(store.range("a"))) == std::vector<std::string>{"a\xff", "a\xff\xff"});
  }

  SECTION("delete removes one key; delete of a prefix removes the subtree") {
    for (const char* key : {"apps/a/x", "apps/a/y", "apps/ab", "apps/b"}) must(store.put(key, "{}"));
    int64_t before = must(store.revision());
    CHECK(must(store.del("apps/b")) == before + 1);
    CHECK_FALSE(must(store.get("apps/b")).has_value());
    CHECK(must(store.del_prefix("apps/a/")) == before + 2);
    CHECK(keys_of(must(store.range("apps/"))) == std::vector<std::string>{"apps/ab"});

    // Deleting nothing changes nothing, not even the revision.
    CHECK(must(store.del("apps/missing")) == before + 2);
    CHECK(must(store.del_prefix("nothing/")) == before + 2);
    CHECK(must(store.revision()) == before + 2);

    // A re-created key starts a new life: new create_revision, version 1.
    must(store.put("apps/b", "again"));
    auto kv = must(store.get("apps/b"));
    REQUIRE(kv);
    CHECK(kv->create_revision == before + 3);
    CHECK(kv->version == 1);
  }

  SECTION("the revision rises by exactly one per committed change") {
    int64_t last = must(store.revision());
    for (int i = 0; i < 20; ++i) {
      int64_t r = must(store.put("k" + std::to_string(i % 3), std::to_string(i)));
      CHECK(r == last + 1);
      CHECK(must(store.revision()) == r);
      last = r;
    }
    Txn nothing_to_do;
    nothing_to_do.compares.push_back(Compare{"k0", must(store.get("k0"))->mod_revision});
    auto r = must(store.txn(nothing_to_do));
    CHECK(r.succeeded);
    CHECK(r.revision == last);
    CHECK(must(store.revision()) == last);
  }

  SECTION("a transaction applies when its mod_revision compares hold") {
    int64_t rev = must(store.put("counter", "1"));
    Txn t;
    t.compares.push_back(Compare{"counter", rev});
    t.puts.push_back(Put{"counter", "2", 0});
    auto r = must(store.txn(t));
    CHECK(r.succeeded);
    CHECK(r.revision == rev + 1);
    CHECK(must(store.get("counter"))->value == "2");
  }

  SECTION("a failed compare leaves the store unchanged") {
    int64_t rev = must(store.put("counter", "1"));
    must(store.put("other", "x"));
    Txn t;
    t.compares.push_back(Compare{"counter", rev - 1});
    t.puts.push_back(Put{"counter", "2", 0});
    t.puts.push_back(Put{"new", "n", 0});
    t.deletes.push_back(Delete{"other", false});
    auto r = must(store.txn(t));
    CHECK_FALSE(r.succeeded);
    CHECK(r.revision == rev + 1);
    CHECK(must(store.revision()) == rev + 1);
    CHECK(must(store.get("counter"))->value == "1");
    CHECK_FALSE(must(store.get("new")).has_value());
    CHECK(must(store.get("other")).has_value());
    CHECK(must(store.changes_since(rev + 2, "")).empty());
  }

  SECTION("compare with mod_revision 0 creates only when the key is absent") {
    Txn create;
    create.compares.push_back(Compare{"locks/leader", 0});
    create.puts.push_back(Put{"locks/leader", "me", 0});
    CHECK(must(store.txn(create)).succeeded);
    create.puts[0].value = "someone else";
    CHECK_FALSE(must(store.txn(create)).succeeded);
    CHECK(must(store.get("locks/leader"))->value == "me");
  }

  SECTION("all operations of a transaction share one revision") {
    must(store.put("a", "old"));
    must(store.put("gone/1", "x"));
    must(store.put("gone/2", "x"));
    Txn t;
    t.compares.push_back(Compare{"a", 1});
    t.compares.push_back(Compare{"b", 0});
    t.puts.push_back(Put{"a", "new", 0});
    t.puts.push_back(Put{"b", "new", 0});
    t.deletes.push_back(Delete{"gone/", true});
    auto r = must(store.txn(t));
    REQUIRE(r.succeeded);
    CHECK(r.revision == 4);
    CHECK(must(store.get("a"))->mod_revision == 4);
    CHECK(must(store.get("b"))->mod_revision == 4);
    CHECK(must(store.range("gone/")).empty());
    auto events = must(store.changes_since(4, ""));
    REQUIRE(events.size() == 4);
    for (const auto& e : events) CHECK(e.revision() == 4);
  }

  SECTION("malformed transactions are rejected before anything is written") {
    Txn dup;
    dup.puts.push_back(Put{"k", "1", 0});
    dup.puts.push_back(Put{"k", "2", 0});
    auto r = store.txn(dup);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::InvalidArgument);
    CHECK(r.error().message == "key 'k' is put more than once in one transaction");

    Txn overlap;
    overlap.puts.push_back(Put{"apps/x", "1", 0});
    overlap.deletes.push_back(Delete{"apps/", true});
    r = store.txn(overlap);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::InvalidArgument);

    Txn empty_key;
    empty_key.puts.push_back(Put{"", "1", 0});
    CHECK_FALSE(store.txn(empty_key));
    CHECK(must(store.revision()) == 0);
  }

  SECTION("changes_since lists changes in revision order, filtered by prefix") {
    must(store.put("apps/a", "1"));   // 1
    must(store.put("nodes/n1", "n"));  // 2
    must(store.put("apps/b", "2"));   // 3
    must(store.put("apps/a", "3"));   // 4
    must(store.del("apps/b"));        // 5
    auto all = must(store.changes_since(1, ""));
    REQUIRE(all.size() == 5);
    for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].revision() == static_cast<int64_t>(i + 1));

    auto apps = must(store.changes_since(2, "apps/"));
    REQUIRE(apps.size() == 3);
    CHECK(apps[0].type == EventType::Put);
    CHECK(apps[0].kv == KeyValue{"apps/b", "2", 3, 3, 1, 0});
    CHECK(apps[1].kv == KeyValue{"apps/a", "3", 1, 4, 2, 0});
    CHECK(apps[2].type == EventType::Delete);
    CHECK(apps[2].kv.key == "apps/b");
    CHECK(apps[2].revision() == 5);

    CHECK(must(store.changes_since(6, "")).empty());
    CHECK(must(store.changes_since(0, "")).size() == 5);
  }

  SECTION("changes_since with a limit never splits a transaction") {
    must(store.put("x", "0"));  // 1
    Txn t;
    for (int i = 0; i < 3; ++i) t.puts.push_back(Put{"t/" + std::to_string(i), "v", 0});
    must(store.txn(t));         // 2: three events
    must(store.put("y", "0"));  // 3
    auto first = must(store.changes_since(1, "", 2));
    REQUIRE(first.size() == 4);
    CHECK(first.back().revision() == 2);
    auto next = must(store.changes_since(first.back().revision() + 1, "", 2));
    REQUIRE(next.size() == 1);
    CHECK(next[0].kv.key == "y");
    // The prefix filter applies to the completion of the last revision as well.
    auto filtered = must(store.changes_since(1, "t/", 1));
    CHECK(filtered.size() == 3);
  }

  SECTION("compacted history is reported clearly") {
    for (int i = 0; i < 50; ++i) must(store.put("k", std::to_string(i)));
    must(store.compact(40));
    auto r = store.changes_since(12, "");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Compacted);
    CHECK(r.error().message == "revision 12 has been compacted; oldest available is 40");
    CHECK(r.error().compact_revision == 40);
    auto kept = must(store.changes_since(40, ""));
    REQUIRE(kept.size() == 11);
    CHECK(kept.front().revision() == 40);
    // The current state is untouched by compaction.
    CHECK(must(store.get("k"))->value == "49");
    CHECK(must(store.get("k"))->version == 50);

    auto future = store.compact(51);
    REQUIRE_FALSE(future);
    CHECK(future.error().code == StoreErrc::FutureRevision);
    auto backwards = store.compact(30);
    REQUIRE_FALSE(backwards);
    CHECK(backwards.error().code == StoreErrc::Compacted);
  }

  SECTION("keys attached to a lease vanish when it expires") {
    int64_t lease = must(store.grant(10s));
    CHECK(lease > 0);
    CHECK(must(store.revision()) == 0);  // Granting is not a change to any key.
    must(store.put("leader/scheduler", "me", lease));
    must(store.put("plain", "stays"));
    CHECK(must(store.get("leader/scheduler"))->lease == lease);

    clock->advance(9s);
    REQUIRE(must(store.get("leader/scheduler")).has_value());
    must(store.keep_alive(lease));
    clock->advance(9s);  // 18s after the grant, 9s after the renewal.
    REQUIRE(must(store.get("leader/scheduler")).has_value());

    int64_t before = must(store.revision());
    clock->advance(1s);
    CHECK_FALSE(must(store.get("leader/scheduler")).has_value());
    CHECK(must(store.get("plain")).has_value());
    // The expiry is a delete at its own revision, visible to followers.
    CHECK(must(store.revision()) == before + 1);
    auto events = must(store.changes_since(before + 1, ""));
    REQUIRE(events.size() == 1);
    CHECK(events[0].type == EventType::Delete);
    CHECK(events[0].kv.key == "leader/scheduler");

    auto renew = store.keep_alive(lease);
    REQUIRE_FALSE(renew);
    CHECK(renew.error().code == StoreErrc::LeaseNotFound);
    auto attach = store.put("leader/scheduler", "me again", lease);
    REQUIRE_FALSE(attach);
    CHECK(attach.error().code == StoreErrc::LeaseNotFound);
  }

  SECTION("lease expiry is seen through every handle") {
    auto other = backend->open(clock);
    int64_t lease = must(store.grant(5s));
    must(store.put("leader", "a", lease));
    clock->advance(6s);
    CHECK_FALSE(must(other->get("leader")).has_value());
    CHECK(must(other->range("")).empty());
    CHECK_FALSE(must(store.get("leader")).has_value());
  }

  SECTION("revoking a lease deletes its keys at once; a plain put detaches a key") {
    int64_t lease = must(store.grant(60s));
    must(store.put("a", "1", lease));
    must(store.put("b", "1", lease));
    must(store.put("b", "2"));  // Now outside the lease.
    must(store.revoke(lease));
    CHECK_FALSE(must(store.get("a")).has_value());
    CHECK(must(store.get("b"))->value == "2");
    CHECK(store.revoke(lease).error().code == StoreErrc::LeaseNotFound);
    CHECK(store.grant(0s).error().code == StoreErrc::InvalidArgument);
  }

  SECTION("concurrent writers with compare-and-retry lose no update") {
    constexpr int kThreads = 4;
    constexpr int kIncrements = 100;
    std::atomic<int> failures{0};
    std::vector<std::unique_ptr<Store>> handles;
    for (int i = 0; i < kThreads; ++i) handles.push_back(backend->open(clock));
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        for (int n = 0; n < kIncrements; ++n)
          if (!increment(*handles[i], "counter")) ++failures;
      });
    for (auto& t : threads) t.join();
    CHECK(failures == 0);
    auto kv = must(store.get("counter"));
    REQUIRE(kv);
    CHECK(kv->value == std::to_string(kThreads * kIncrements));
    CHECK(kv->version == kThreads * kIncrements);
    CHECK(must(store.revision()) == kThreads * kIncrements);
  }

  SECTION("one handle may be shared between threads") {
    constexpr int kThreads = 4;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&] {
        for (int n = 0; n < 50; ++n)
          if (!increment(store, "shared")) ++failures;
      });
    for (auto& t : threads) t.join();
    CHECK(failures == 0);
    CHECK(must(store.get("shared"))->value == std::to_string(kThreads * 50));
  }
}

}  // namespace gaia::testing
