// The SQLite store's checkpoints (store/sqlite_checkpointer.hpp): once the WAL holds
// 1,000 pages, its frames are copied into the database file by a thread of the store's
// own instead of inside the commit that crossed the mark. These tests check that the
// copy happens (the database file alone then holds the commits), that SQLite's own way
// is kept when asked for, that writers and readers on the same file lose nothing while
// it runs, and that the WAL stays bounded.
#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "store/sqlite_checkpointer.hpp"
#include "store/sqlite_store.hpp"
#include "tests/store/sqlite_util.hpp"
#include "tests/store/store_contract.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::test::TempDir;
using gaia::testing::must;
using gaia::testing::open_or_fail;

namespace {

// Commits `puts` values of 4 KiB under `prefix` (a few WAL pages each, with the
// history). Checked by the caller, as Catch2 may not be called from other threads.
bool commit_pages(SqliteStore& store, const std::string& prefix, int round, int puts) {
  Txn t;
  for (int k = 0; k < puts; ++k)
    t.puts.push_back(Put{prefix + std::to_string(round) + "/" + std::to_string(k),
                         std::string(4096, static_cast<char>('a' + (round + k) % 26)), 0});
  auto r = store.txn(t);
  return r && r->succeeded;
}

// How many keys under `prefix` the database file at `path` holds by itself: a copy of
// the file without its -wal (and -shm) holds exactly what checkpoints copied into it.
int64_t keys_in_database_file(const std::filesystem::path& path, const std::filesystem::path& scratch,
                              const std::string& prefix) {
  std::filesystem::create_directories(scratch);
  auto copy = scratch / "alone.db";
  std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(copy.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  // Before any checkpoint even the schema is in the WAL alone.
  REQUIRE(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'kv'", -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const bool has_table = sqlite3_column_int64(s, 0) == 1;
  sqlite3_finalize(s);
  if (!has_table) {
    sqlite3_close(db);
    return 0;
  }
  REQUIRE(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM kv WHERE key >= ?1 AND key < ?2", -1, &s, nullptr) ==
          SQLITE_OK);
  std::string end = prefix;
  end.back() = static_cast<char>(end.back() + 1);
  sqlite3_bind_text(s, 1, prefix.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(s, 2, end.c_str(), -1, SQLITE_TRANSIENT);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  int64_t n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

}  // namespace

TEST_CASE("sqlite store copies its WAL into the database file on a thread of its own", "[store]") {
  TempDir dir;
  auto path = dir.path() / "state.db";
  auto store = open_or_fail(path);
  // A few small commits stay in the WAL: nothing is asked of the checkpointer.
  for (int round = 0; round < 3; ++round) REQUIRE(commit_pages(*store, "small/", round, 10));
  CHECK(store->wait_for_checkpoints() == 0);
  CHECK(keys_in_database_file(path, dir.path() / "scratch", "small/") == 0);

  // Commits until the WAL is past the mark but short of the limit, from which a commit
  // copies it itself: so whatever the database file then holds by itself, the thread
  // copied (this fails when the thread copies nothing).
  const auto wal = dir.path() / "state.db-wal";
  const uintmax_t frame = 4096 + 24;
  int rounds = 0;
  while (std::filesystem::file_size(wal) < SqliteCheckpointer::k_pages * frame) {
    REQUIRE(commit_pages(*store, "big/", rounds++, 50));
    REQUIRE(rounds < 100);
  }
  REQUIRE(std::filesystem::file_size(wal) < SqliteCheckpointer::k_limit_pages * frame);
  CHECK(store->wait_for_checkpoints() >= 1);
  CHECK(keys_in_database_file(path, dir.path() / "scratch", "big/") == 50 * rounds);
  CHECK(keys_in_database_file(path, dir.path() / "scratch", "small/") == 30);

  // More, through the limit and back, and everything is kept.
  for (int round = rounds; round < rounds + 40; ++round) REQUIRE(commit_pages(*store, "big/", round, 50));
  rounds += 40;
  // The closing connection copies the rest; everything is still there.
  store.reset();
  store = open_or_fail(path);
  CHECK(must(store->read(RangeRequest::prefix("big/"))).kvs.size() == static_cast<size_t>(50 * rounds));
  CHECK(must(store->read(RangeRequest::prefix("small/"))).kvs.size() == 30);
  must(store->integrity_check());
}

TEST_CASE("sqlite store without a background checkpoint leaves it to SQLite's commit", "[store]") {
  TempDir dir;
  auto path = dir.path() / "state.db";
  SqliteStoreOptions options;
  options.background_checkpoint = false;
  auto store = open_or_fail(path, options);
  for (int round = 0; round < 12; ++round) REQUIRE(commit_pages(*store, "big/", round, 100));
  CHECK(store->wait_for_checkpoints() == 0);
  // The commits that crossed the mark copied the WAL themselves, before they returned.
  CHECK(keys_in_database_file(path, dir.path() / "scratch", "big/") >= 400);
}

TEST_CASE("sqlite store: writers and readers lose nothing while the WAL is checkpointed", "[store]") {
  TempDir dir;
  auto path = dir.path() / "state.db";
  auto first = open_or_fail(path);
  // A second store on the same file, with its own checkpointer: the two write in turn,
  // their checkpoints overlap the other's commits. (Writers in other processes, past
  // the mark too, are sqlite_store_test.cpp's compare-and-set and SIGKILL cases.)
  auto second = open_or_fail(path);
  constexpr int k_rounds = 40;
  int second_failed = 0, torn_reads = 0, failed_reads = 0;
  std::thread other([&] {
    for (int round = 0; round < k_rounds; ++round)
      if (!commit_pages(*second, "second/", round, 40)) ++second_failed;
  });
  // A reader on the first store's connection while both write: every read is whole.
  std::thread reader([&] {
    for (int k = 0; k < 60; ++k) {
      auto r = first->read(RangeRequest::prefix("first/"));
      if (!r) ++failed_reads;
      else if (r->kvs.size() % 40 != 0) ++torn_reads;
    }
  });
  for (int round = 0; round < k_rounds; ++round) REQUIRE(commit_pages(*first, "first/", round, 40));
  other.join();
  reader.join();
  CHECK(second_failed == 0);
  CHECK(failed_reads == 0);
  CHECK(torn_reads == 0);
  CHECK(first->wait_for_checkpoints() + second->wait_for_checkpoints() >= 1);
  second.reset();
  first.reset();

  auto store = open_or_fail(path);
  must(store->integrity_check());
  auto a = must(store->read(RangeRequest::prefix("first/")));
  auto b = must(store->read(RangeRequest::prefix("second/")));
  CHECK(a.kvs.size() == 40 * k_rounds);
  CHECK(b.kvs.size() == 40 * k_rounds);
  CHECK(must(store->revision()) == 2 * k_rounds);
  for (const auto& kv : a.kvs) CHECK(kv.value.size() == 4096);
  store.reset();
  // The last close copied the rest and emptied the WAL.
  std::error_code ec;
  auto wal_size = std::filesystem::file_size(dir.path() / "state.db-wal", ec);
  CHECK((ec || wal_size == 0));
}

TEST_CASE("sqlite store keeps its WAL bounded under back-to-back commits", "[store]") {
  // The WAL starts over only after a checkpoint copied all of it; one in the background
  // copies what was committed when it began, so commits arriving faster than it copies
  // kept the WAL growing (a 16 MiB disk filled up in sqlite_admin_test's full-disk case).
  // Past twice SQLite's mark the committing connection copies the rest itself.
  TempDir dir;
  auto path = dir.path() / "state.db";
  SqliteStoreOptions options;
  options.synchronous_full = false;  // Commits as fast as they come: the hard case.
  auto store = open_or_fail(path, options);
  uintmax_t largest = 0;
  int failed = 0;
  for (int round = 0; round < 1500; ++round) {
    if (!commit_pages(*store, "k/", round, 1)) ++failed;
    std::error_code ec;
    largest = std::max(largest, std::filesystem::file_size(dir.path() / "state.db-wal", ec));
  }
  CHECK(failed == 0);
  // The limit, one commit (a few pages) and the frame headers.
  const uintmax_t bound = (SqliteCheckpointer::k_limit_pages + 16) * (4096 + 24) + 32;
  INFO("largest WAL: " << largest << " bytes, bound " << bound);
  CHECK(largest <= bound);
  CHECK(largest > 0);
  CHECK(must(store->read(RangeRequest::prefix("k/"))).kvs.size() == 1500);
}
