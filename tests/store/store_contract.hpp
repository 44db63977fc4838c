#pragma once
// The behaviour every Store implementation must have. An implementation's test file
// defines how to create a fresh backing store and calls run_store_contract() inside a
// TEST_CASE; each SECTION below then runs against a new, empty store. The sqlite store
// runs it in sqlite_store_test.cpp, the in-process store in memory_store_test.cpp, the
// etcd store in etcd_store_test.cpp.
//
// Two things differ between backends by nature, and the backend says which way it goes:
// the revision of an empty store (SQLite starts at 0, etcd at 1; every expected revision
// below is relative to it, so SQLite is held to exactly the numbers it always was), and
// whose clock expires leases (SQLite's is the injected ManualClock, moved by hand and
// checked to the second; etcd's is the server's own, so its lease sections use TTLs of a
// few seconds and real time, and give the server a bounded slack to notice an expiry).

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
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
  // The revision of a new, empty store.
  virtual int64_t initial_revision() const { return 0; }
  // Whether leases expire by the server's clock rather than the clock given to open().
  virtual bool leases_use_server_clock() const { return false; }
};

// How long a server may take past a lease's deadline to delete its keys: etcd looks for
// expired leases every 500 ms and then commits the revocation through raft.
inline constexpr std::chrono::milliseconds kServerExpirySlack{3000};

// Polls (in real time) until `key` is gone from `store`, for at most `within`; false
// when it is still there then, or on a store error.
inline bool wait_until_gone(Store& store, const std::string& key, std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    auto kv = store.get(key);
    if (!kv) return false;
    if (!kv->has_value()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

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

inline std::vector<std::string> keys_of(const RangeResponse& r) { return keys_of(r.kvs); }

// A read of one key.
inline RangeRequest single(std::string_view key, int64_t revision = 0) {
  RangeRequest r;
  r.key = std::string(key);
  r.revision = revision;
  return r;
}

// Calls `watch.next()` until it has returned an event at `revision` or later, or for at
// most `within`; returns every batch it got (each batch is one next()).
inline std::vector<std::vector<Event>> watch_until(Watch& watch, int64_t revision,
                                                   std::chrono::milliseconds within) {
  std::vector<std::vector<Event>> batches;
  auto deadline = std::chrono::steady_clock::now() + within;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return batches;
    auto batch = watch.next(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    if (!batch) FAIL(batch.error().to_string());
    if (batch->empty()) continue;
    int64_t last = batch->back().revision();
    batches.push_back(std::move(*batch));
    if (last >= revision) return batches;
  }
}

inline std::vector<Event> flatten(const std::vector<std::vector<Event>>& batches) {
  std::vector<Event> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
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
  // Expected revisions are r0 + the number of changes made so far in the section.
  const int64_t r0 = backend->initial_revision();
  // Lease sections move the injected clock, or, on a server's clock, really wait.
  const bool real_time = backend->leases_use_server_clock();
  auto pass = [&](std::chrono::milliseconds d) {
    if (real_time)
      std::this_thread::sleep_for(d);
    else
      clock->advance(d);
  };

  SECTION("a new store is empty at its initial revision") {
    CHECK(must(store.revision()) == r0);
    CHECK(must(store.range("")).empty());
    CHECK_FALSE(must(store.get("apps/default/hdfs")).has_value());
  }

  SECTION("put then get returns the value with its revisions") {
    CHECK(must(store.put("apps/default/hdfs", R"({"replicas":3})")) == r0 + 1);
    auto kv = must(store.get("apps/default/hdfs"));
    REQUIRE(kv);
    CHECK(kv->key == "apps/default/hdfs");
    CHECK(kv->value == R"({"replicas":3})");
    CHECK(kv->create_revision == r0 + 1);
    CHECK(kv->mod_revision == r0 + 1);
    CHECK(kv->version == 1);
    CHECK(kv->lease == 0);

    must(store.put("nodes/n1", "{}"));
    CHECK(must(store.put("apps/default/hdfs", R"({"replicas":5})")) == r0 + 3);
    kv = must(store.get("apps/default/hdfs"));
    REQUIRE(kv);
    CHECK(kv->value == R"({"replicas":5})");
    CHECK(kv->create_revision == r0 + 1);
    CHECK(kv->mod_revision == r0 + 3);
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
    t.compares.push_back(Compare{"a", r0 + 1});
    t.compares.push_back(Compare{"b", 0});
    t.puts.push_back(Put{"a", "new", 0});
    t.puts.push_back(Put{"b", "new", 0});
    t.deletes.push_back(Delete{"gone/", true});
    auto r = must(store.txn(t));
    REQUIRE(r.succeeded);
    CHECK(r.revision == r0 + 4);
    CHECK(must(store.get("a"))->mod_revision == r0 + 4);
    CHECK(must(store.get("b"))->mod_revision == r0 + 4);
    CHECK(must(store.range("gone/")).empty());
    auto events = must(store.changes_since(r0 + 4, ""));
    REQUIRE(events.size() == 4);
    for (const auto& e : events) CHECK(e.revision() == r0 + 4);
    // Deletes come before puts inside the revision, each in request order.
    CHECK(events[0].type == EventType::Delete);
    CHECK(events[1].type == EventType::Delete);
    CHECK(events[2].kv.key == "a");
    CHECK(events[3].kv.key == "b");
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
    CHECK(must(store.revision()) == r0);
  }

  SECTION("changes_since lists changes in revision order, filtered by prefix") {
    must(store.put("apps/a", "1"));   // r0 + 1
    must(store.put("nodes/n1", "n"));  // r0 + 2
    must(store.put("apps/b", "2"));   // r0 + 3
    must(store.put("apps/a", "3"));   // r0 + 4
    must(store.del("apps/b"));        // r0 + 5
    auto all = must(store.changes_since(r0 + 1, ""));
    REQUIRE(all.size() == 5);
    for (size_t i = 0; i < all.size(); ++i)
      CHECK(all[i].revision() == r0 + static_cast<int64_t>(i + 1));

    auto apps = must(store.changes_since(r0 + 2, "apps/"));
    REQUIRE(apps.size() == 3);
    CHECK(apps[0].type == EventType::Put);
    CHECK(apps[0].kv == KeyValue{"apps/b", "2", r0 + 3, r0 + 3, 1, 0});
    CHECK(apps[1].kv == KeyValue{"apps/a", "3", r0 + 1, r0 + 4, 2, 0});
    CHECK(apps[2].type == EventType::Delete);
    CHECK(apps[2].kv.key == "apps/b");
    CHECK(apps[2].revision() == r0 + 5);

    CHECK(must(store.changes_since(r0 + 6, "")).empty());
    CHECK(must(store.changes_since(r0 + 60, "")).empty());
    CHECK(must(store.changes_since(0, "")).size() == 5);
  }

  SECTION("changes_since_skipping lists the changes of every key but those under a prefix") {
    must(store.put("apps/a", "1"));        // r0 + 1
    must(store.put("events/0001", "e"));   // r0 + 2
    Txn both;
    both.puts.push_back(Put{"events/0002", "f", 0});
    both.puts.push_back(Put{"eventsx", "g", 0});  // Past the prefix: listed.
    both.puts.push_back(Put{"apps/b", "2", 0});
    must(store.txn(both));                  // r0 + 3
    must(store.del("events/0001"));        // r0 + 4
    must(store.del("apps/a"));             // r0 + 5
    auto rest = must(store.changes_since_skipping(r0 + 1, "events/"));
    std::vector<std::string> seen;
    for (const auto& e : rest) seen.push_back(fmt::format("{} {} {}", e.revision() - r0, e.type == EventType::Put ? "put" : "delete", e.kv.key));
    // In the order changes_since lists them, without the skipped keys.
    std::vector<std::string> want;
    for (const auto& e : must(store.changes_since(r0 + 1, "")))
      if (!e.kv.key.starts_with("events/"))
        want.push_back(fmt::format("{} {} {}", e.revision() - r0, e.type == EventType::Put ? "put" : "delete", e.kv.key));
    CHECK(seen == want);
    REQUIRE(rest.size() == 4);
    CHECK(rest[0].kv == KeyValue{"apps/a", "1", r0 + 1, r0 + 1, 1, 0});
    CHECK(rest[3].type == EventType::Delete);
    CHECK(rest[3].kv.key == "apps/a");
    CHECK(must(store.changes_since_skipping(r0 + 4, "events/")).size() == 1);
    CHECK(must(store.changes_since_skipping(r0 + 6, "events/")).empty());
    CHECK(must(store.changes_since_skipping(r0 + 1, "apps/")).size() == 4);
  }

  SECTION("changes_since with a limit never splits a transaction") {
    must(store.put("x", "0"));  // r0 + 1
    Txn t;
    for (int i = 0; i < 3; ++i) t.puts.push_back(Put{"t/" + std::to_string(i), "v", 0});
    must(store.txn(t));         // r0 + 2: three events
    must(store.put("y", "0"));  // r0 + 3
    auto first = must(store.changes_since(r0 + 1, "", 2));
    REQUIRE(first.size() == 4);
    CHECK(first.back().revision() == r0 + 2);
    auto next = must(store.changes_since(first.back().revision() + 1, "", 2));
    REQUIRE(next.size() == 1);
    CHECK(next[0].kv.key == "y");
    // The prefix filter applies to the completion of the last revision as well.
    auto filtered = must(store.changes_since(r0 + 1, "t/", 1));
    CHECK(filtered.size() == 3);
  }

  SECTION("changes_at lists the first and last changes of one revision, as changes_since does") {
    must(store.put("x", "0"));  // r0 + 1
    Txn t;
    t.deletes.push_back(Delete{"x", false});
    for (int i = 0; i < 5; ++i) t.puts.push_back(Put{"t/" + std::to_string(i), "v" + std::to_string(i), 0});
    must(store.txn(t));         // r0 + 2: a delete and five puts
    must(store.put("y", "0"));  // r0 + 3
    auto whole = must(store.changes_since(r0 + 2, "", 1));
    REQUIRE(whole.size() == 6);
    CHECK(must(store.changes_at(r0 + 2, 0)) == whole);
    CHECK(must(store.changes_at(r0 + 2, 100)) == whole);
    CHECK(must(store.changes_at(r0 + 2, 3)) == whole);
    std::vector<Event> ends = {whole[0], whole[1], whole[4], whole[5]};
    CHECK(must(store.changes_at(r0 + 2, 2)) == ends);
    CHECK(must(store.changes_at(r0 + 2, 1)) == std::vector<Event>{whole[0], whole[5]});
    CHECK(must(store.changes_at(r0 + 3, 2)).size() == 1);
    CHECK(must(store.changes_at(r0 + 4, 2)).empty());
    must(store.compact(r0 + 3));
    auto gone = store.changes_at(r0 + 2, 2);
    REQUIRE_FALSE(gone);
    CHECK(gone.error().code == StoreErrc::Compacted);
  }

  SECTION("compacted history is reported clearly") {
    for (int i = 0; i < 50; ++i) must(store.put("k", std::to_string(i)));
    must(store.compact(r0 + 40));
    auto r = store.changes_since(r0 + 12, "");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Compacted);
    CHECK(r.error().message == fmt::format("revision {} has been compacted; oldest available is {}",
                                           r0 + 12, r0 + 40));
    CHECK(r.error().compact_revision == r0 + 40);
    auto kept = must(store.changes_since(r0 + 40, ""));
    REQUIRE(kept.size() == 11);
    CHECK(kept.front().revision() == r0 + 40);
    // The current state is untouched by compaction.
    CHECK(must(store.get("k"))->value == "49");
    CHECK(must(store.get("k"))->version == 50);

    auto future = store.compact(r0 + 51);
    REQUIRE_FALSE(future);
    CHECK(future.error().code == StoreErrc::FutureRevision);
    auto backwards = store.compact(r0 + 30);
    REQUIRE_FALSE(backwards);
    CHECK(backwards.error().code == StoreErrc::Compacted);
    CHECK(backwards.error().compact_revision == r0 + 40);
    // Compacting again to where history starts is no error.
    must(store.compact(r0 + 40));
  }

  SECTION("compacting at a revision keeps all of it, deletes included") {
    must(store.put("a", "1"));  // r0 + 1
    must(store.put("b", "1"));  // r0 + 2
    must(store.del("a"));       // r0 + 3
    must(store.compact(r0 + 3));
    auto kept = must(store.changes_since(r0 + 3, ""));
    REQUIRE(kept.size() == 1);
    CHECK(kept[0].type == EventType::Delete);
    CHECK(kept[0].kv.key == "a");
    CHECK(must(store.changes_since(r0 + 4, "")).empty());
    auto gone = store.changes_since(r0 + 2, "");
    REQUIRE_FALSE(gone);
    CHECK(gone.error().compact_revision == r0 + 3);
  }

  SECTION("read selects one key, a prefix, an interval, or every key from one on") {
    for (const char* key : {"a", "b", "b/1", "b/2", "b2", "c"}) must(store.put(key, key));
    auto one = must(store.read(single("b/1")));
    REQUIRE(one.kvs.size() == 1);
    CHECK(one.kvs[0] == KeyValue{"b/1", "b/1", r0 + 3, r0 + 3, 1, 0});
    CHECK(one.count == 1);
    CHECK_FALSE(one.more);
    CHECK(one.revision == r0 + 6);
    auto missing = must(store.read(single("b/")));
    CHECK(missing.kvs.empty());
    CHECK(missing.count == 0);
    CHECK(missing.revision == r0 + 6);

    CHECK(keys_of(must(store.read(RangeRequest::prefix("b/")))) == std::vector<std::string>{"b/1", "b/2"});
    CHECK(keys_of(must(store.read(RangeRequest::prefix("b")))) ==
          std::vector<std::string>{"b", "b/1", "b/2", "b2"});
    CHECK(keys_of(must(store.read(RangeRequest::interval("b/", "b2")))) == std::vector<std::string>{"b/1", "b/2"});
    CHECK(keys_of(must(store.read(RangeRequest::interval("b/2", "c")))) == std::vector<std::string>{"b/2", "b2"});
    RangeRequest to_end = RangeRequest::interval("b2", std::string_view("\0", 1));
    CHECK(keys_of(must(store.read(to_end))) == std::vector<std::string>{"b2", "c"});
    auto all = must(store.read(RangeRequest::prefix("")));
    CHECK(all.kvs.size() == 6);
    CHECK(all.count == 6);
    CHECK(all.kvs.front().value == "a");
  }

  SECTION("read with a limit says whether there are more and counts the whole range") {
    for (int i = 0; i < 5; ++i) must(store.put(fmt::format("k/{}", i), "v"));
    must(store.put("z", "v"));
    auto page = must(store.read(RangeRequest::prefix("k/", 0, 2)));
    CHECK(keys_of(page) == std::vector<std::string>{"k/0", "k/1"});
    CHECK(page.more);
    CHECK(page.count == 5);
    CHECK(page.revision == r0 + 6);
    for (size_t limit : {5, 7}) {
      auto whole = must(store.read(RangeRequest::prefix("k/", 0, limit)));
      CHECK(whole.kvs.size() == 5);
      CHECK_FALSE(whole.more);
      CHECK(whole.count == 5);
    }
    // The next page starts just after the last key read, at the first page's revision.
    auto next = must(store.read(RangeRequest::interval("k/1" + std::string(1, '\0'), "k0", page.revision, 2)));
    CHECK(keys_of(next) == std::vector<std::string>{"k/2", "k/3"});
    CHECK(next.more);
    CHECK(next.count == 3);
  }

  SECTION("read with keys_only leaves values out; count_only returns only the count") {
    must(store.put("a", "1"));  // r0 + 1
    must(store.put("b", "1"));  // r0 + 2
    must(store.put("b", "2"));  // r0 + 3
    must(store.put("c", "3"));  // r0 + 4
    RangeRequest keys = RangeRequest::prefix("");
    keys.keys_only = true;
    auto r = must(store.read(keys));
    REQUIRE(keys_of(r) == std::vector<std::string>{"a", "b", "c"});
    for (const auto& kv : r.kvs) CHECK(kv.value.empty());
    CHECK(r.kvs[1].create_revision == r0 + 2);
    CHECK(r.kvs[1].mod_revision == r0 + 3);
    CHECK(r.kvs[1].version == 2);
    CHECK(r.count == 3);

    RangeRequest count = RangeRequest::prefix("");
    count.count_only = true;
    auto counted = must(store.read(count));
    CHECK(counted.kvs.empty());
    CHECK(counted.count == 3);
    CHECK(counted.revision == r0 + 4);
    count = RangeRequest::interval("b", "c");
    count.count_only = true;
    CHECK(must(store.read(count)).count == 1);
  }

  SECTION("a read at a past revision returns the keys as they were then") {
    int64_t lease = must(store.grant(60s));
    must(store.put("a", "1"));         // r0 + 1
    must(store.put("b", "1", lease));  // r0 + 2
    must(store.put("a", "2"));         // r0 + 3
    must(store.del("b"));              // r0 + 4
    must(store.put("c", "1"));         // r0 + 5
    must(store.put("b", "again"));     // r0 + 6
    must(store.del_prefix(""));        // r0 + 7: everything at once
    must(store.put("d", "1"));         // r0 + 8
    const KeyValue a1{"a", "1", r0 + 1, r0 + 1, 1, 0};
    const KeyValue a2{"a", "2", r0 + 1, r0 + 3, 2, 0};
    const KeyValue b1{"b", "1", r0 + 2, r0 + 2, 1, lease};
    const KeyValue b2{"b", "again", r0 + 6, r0 + 6, 1, 0};
    const KeyValue c1{"c", "1", r0 + 5, r0 + 5, 1, 0};
    auto at = [&](int64_t revision) {
      auto r = must(store.read(RangeRequest::prefix("", revision)));
      CHECK(r.revision == revision);
      CHECK(r.count == static_cast<int64_t>(r.kvs.size()));
      return r.kvs;
    };
    CHECK(at(r0 + 1) == std::vector<KeyValue>{a1});
    CHECK(at(r0 + 2) == std::vector<KeyValue>{a1, b1});
    CHECK(at(r0 + 3) == std::vector<KeyValue>{a2, b1});
    CHECK(at(r0 + 4) == std::vector<KeyValue>{a2});
    CHECK(at(r0 + 5) == std::vector<KeyValue>{a2, c1});
    CHECK(at(r0 + 6) == std::vector<KeyValue>{a2, b2, c1});
    CHECK(at(r0 + 7).empty());
    CHECK(keys_of(at(r0 + 8)) == std::vector<std::string>{"d"});

    CHECK(must(store.read(single("b", r0 + 4))).kvs.empty());
    CHECK(must(store.read(single("b", r0 + 3))).kvs == std::vector<KeyValue>{b1});
    CHECK(must(store.read(single("b", r0 + 6))).kvs == std::vector<KeyValue>{b2});
    CHECK(keys_of(must(store.read(RangeRequest::interval("b", "d", r0 + 6)))) == std::vector<std::string>{"b", "c"});
    auto page = must(store.read(RangeRequest::prefix("", r0 + 6, 2)));
    CHECK(page.kvs == std::vector<KeyValue>{a2, b2});
    CHECK(page.more);
    CHECK(page.count == 3);
    RangeRequest keys = RangeRequest::prefix("", r0 + 3);
    keys.keys_only = true;
    auto keys_only = must(store.read(keys));
    REQUIRE(keys_of(keys_only) == std::vector<std::string>{"a", "b"});
    CHECK(keys_only.kvs[0].value.empty());
    CHECK(keys_only.kvs[0].mod_revision == r0 + 3);
    RangeRequest count = RangeRequest::prefix("", r0 + 5);
    count.count_only = true;
    CHECK(must(store.read(count)).count == 2);
    // The current state is untouched by the reads of old ones.
    CHECK(keys_of(must(store.read(RangeRequest::prefix("")))) == std::vector<std::string>{"d"});
  }

  SECTION("reads before the compacted revision fail; from it on they see the old state") {
    must(store.put("gone", "x"));                                          // r0 + 1
    for (int i = 0; i < 8; ++i) must(store.put("k", std::to_string(i)));  // r0 + 2 ... r0 + 9
    must(store.del("gone"));                                               // r0 + 10
    must(store.put("k", "8"));                                             // r0 + 11
    must(store.compact(r0 + 10));
    for (int64_t old : {r0 + 9, r0 + 2}) {
      auto r = store.read(RangeRequest::prefix("", old));
      REQUIRE_FALSE(r);
      CHECK(r.error().code == StoreErrc::Compacted);
      CHECK(r.error().compact_revision == r0 + 10);
      CHECK_FALSE(store.read(single("k", old)));
    }
    CHECK(must(store.read(RangeRequest::prefix("", r0 + 10))).kvs ==
          std::vector<KeyValue>{KeyValue{"k", "7", r0 + 2, r0 + 9, 8, 0}});
    CHECK(must(store.read(single("gone", r0 + 10))).kvs.empty());
    CHECK(must(store.read(single("k", r0 + 11))).kvs.at(0).value == "8");
    CHECK(must(store.read(single("k"))).kvs.at(0).version == 9);
    // History after the compaction point is still there for followers too.
    CHECK(must(store.changes_since(r0 + 10, "")).size() == 2);
  }

  SECTION("a read at a future revision fails; a read tells the store's revision") {
    CHECK(must(store.read(RangeRequest::prefix(""))).revision == r0);
    must(store.put("a", "1"));
    auto future = store.read(RangeRequest::prefix("", r0 + 2));
    REQUIRE_FALSE(future);
    CHECK(future.error().code == StoreErrc::FutureRevision);
    auto far = store.read(single("a", r0 + 5));
    REQUIRE_FALSE(far);
    CHECK(far.error().code == StoreErrc::FutureRevision);
    // Neither a failed compare nor a lease grant moves it.
    Txn stale;
    stale.compares.push_back(Compare{"a", 0});
    stale.puts.push_back(Put{"a", "2", 0});
    CHECK_FALSE(must(store.txn(stale)).succeeded);
    must(store.grant(60s));
    for (const RangeRequest& r : {RangeRequest::prefix(""), single("a"), single("missing"), single("a", r0 + 1)})
      CHECK(must(store.read(r)).revision == must(store.revision()));
    CHECK(must(store.revision()) == r0 + 1);
  }

  SECTION("a watch delivers the changes under its prefix in order, in whole revisions") {
    must(store.put("apps/a", "1"));    // r0 + 1
    must(store.put("nodes/n1", "n"));  // r0 + 2
    must(store.put("apps/b", "1"));    // r0 + 3
    auto watch = must(store.watch("apps/", r0 + 2));
    Txn t;
    for (const char* key : {"apps/c", "nodes/n2", "apps/d"}) t.puts.push_back(Put{key, "v", 0});
    must(store.txn(t));                // r0 + 4
    must(store.put("apps/a", "2"));    // r0 + 5
    must(store.del("apps/b"));         // r0 + 6
    auto batches = watch_until(*watch, r0 + 6, 10s);
    auto events = flatten(batches);
    REQUIRE(events.size() == 5);
    CHECK(events[0].kv == KeyValue{"apps/b", "1", r0 + 3, r0 + 3, 1, 0});
    CHECK(events[1].kv.key == "apps/c");
    CHECK(events[2].kv.key == "apps/d");
    CHECK(events[2].revision() == r0 + 4);
    CHECK(events[3].kv == KeyValue{"apps/a", "2", r0 + 1, r0 + 5, 2, 0});
    CHECK(events[4].type == EventType::Delete);
    CHECK(events[4].kv.key == "apps/b");
    CHECK(events[4].revision() == r0 + 6);
    // A revision never straddles two batches.
    for (const auto& batch : batches)
      if (std::ranges::any_of(batch, [&](const Event& e) { return e.revision() == r0 + 4; }))
        CHECK(std::ranges::count_if(batch, [&](const Event& e) { return e.revision() == r0 + 4; }) == 2);
    CHECK(watch->revision() >= r0 + 6);
  }

  SECTION("a watch waits for changes, and returns nothing when none come in time") {
    auto watch = must(store.watch("x/", r0 + 1));
    auto start = std::chrono::steady_clock::now();
    CHECK(must(watch->next(300ms)).empty());
    CHECK(std::chrono::steady_clock::now() - start >= 250ms);
    must(store.put("y", "not watched"));  // r0 + 1
    CHECK(must(watch->next(300ms)).empty());
    // A change made through another handle while the watch waits.
    auto other = backend->open(clock);
    std::atomic<bool> written{false};
    std::thread writer([&] {
      std::this_thread::sleep_for(200ms);
      written = other->put("x/1", "v").has_value();
    });
    auto events = flatten(watch_until(*watch, r0 + 2, 10s));
    writer.join();
    CHECK(written);
    REQUIRE(events.size() == 1);
    CHECK(events[0].kv == KeyValue{"x/1", "v", r0 + 2, r0 + 2, 1, 0});
    CHECK(watch->revision() >= r0 + 2);
  }

  SECTION("a watch from a compacted revision fails with Compacted") {
    for (int i = 0; i < 10; ++i) must(store.put("k", std::to_string(i)));  // r0 + 1 ... r0 + 10
    must(store.compact(r0 + 8));
    // The failure may come from watch() itself or from the first next(), and stays.
    auto watch = store.watch("", r0 + 3);
    std::optional<StoreError> failure;
    if (!watch) {
      failure = watch.error();
    } else {
      auto first = (*watch)->next(10s);
      REQUIRE_FALSE(first);
      failure = first.error();
      CHECK_FALSE((*watch)->next(100ms));
    }
    CHECK(failure->code == StoreErrc::Compacted);
    CHECK(failure->compact_revision == r0 + 8);

    auto kept = must(store.watch("", r0 + 8));
    auto events = flatten(watch_until(*kept, r0 + 10, 10s));
    REQUIRE(events.size() == 3);
    CHECK(events.front().revision() == r0 + 8);
    CHECK(events.front().kv.value == "7");
  }

  SECTION("keys attached to a lease vanish when it expires") {
    // The key must outlive the TTL only thanks to the renewal: two waits of `inside`
    // each stay within the TTL, and together exceed it. With the injected clock: a 10s
    // TTL, 9s waits, and the key is gone exactly 10s after the renewal. In real time:
    // a 3s TTL, 2s waits (1s of margin either way), and the server's slack to expire.
    const std::chrono::seconds ttl = real_time ? 3s : 10s;
    const std::chrono::seconds inside = real_time ? 2s : 9s;
    int64_t lease = must(store.grant(ttl));
    CHECK(lease > 0);
    CHECK(must(store.revision()) == r0);  // Granting is not a change to any key.
    must(store.put("leader/scheduler", "me", lease));
    must(store.put("plain", "stays"));
    CHECK(must(store.get("leader/scheduler"))->lease == lease);

    pass(inside);
    REQUIRE(must(store.get("leader/scheduler")).has_value());
    must(store.keep_alive(lease));
    pass(inside);  // Past the TTL after the grant, within it after the renewal.
    REQUIRE(must(store.get("leader/scheduler")).has_value());

    int64_t before = must(store.revision());
    if (real_time) {
      CHECK(wait_until_gone(store, "leader/scheduler", ttl - inside + kServerExpirySlack));
    } else {
      clock->advance(ttl - inside);
      CHECK_FALSE(must(store.get("leader/scheduler")).has_value());
    }
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
    int64_t lease = must(store.grant(real_time ? 1s : 5s));
    must(store.put("leader", "a", lease));
    if (real_time)
      CHECK(wait_until_gone(*other, "leader", 1s + kServerExpirySlack));
    else
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
    CHECK(must(store.revision()) == r0 + kThreads * kIncrements);
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
