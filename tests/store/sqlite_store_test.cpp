#include "store/sqlite_store.hpp"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <thread>

#include "store/memory_store.hpp"
#include "tests/store/sqlite_util.hpp"
#include "tests/support/unchained_commit.hpp"
#include "tests/store/store_contract.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::testing::must;
using namespace std::chrono_literals;
using gaia::test::TempDir;

namespace {

class SqliteBackend final : public gaia::testing::StoreBackend {
 public:
  std::unique_ptr<Store> open(std::shared_ptr<const Clock> clock) override {
    SqliteStoreOptions options;
    options.clock = std::move(clock);
    auto store = SqliteStore::open(m_dir.path() / "state.db", options);
    if (!store) FAIL(store.error().to_string());
    return std::move(*store);
  }

 private:
  TempDir m_dir;
};

using gaia::testing::open_or_fail;

void set_user_version(const std::filesystem::path& path, int version) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  std::string sql = "PRAGMA user_version = " + std::to_string(version);
  REQUIRE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

// Forks a child that runs `body` and exits with its result (0 = success). The child
// must not touch Catch2 or any store handle opened by the parent.
template <class F>
pid_t fork_child(F body) {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) _exit(body());
  return pid;
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

TEST_CASE("sqlite store satisfies the Store contract", "[store]") {
  gaia::testing::run_store_contract([] { return std::make_unique<SqliteBackend>(); });
}

TEST_CASE("sqlite store creates missing parent directories and keeps data across opens",
          "[store]") {
  TempDir dir;
  auto path = dir.path() / "a" / "b" / "state.db";
  {
    auto store = open_or_fail(path);
    must(store->put("nodes/n1", R"({"cpu":4000})"));
    must(store->put("nodes/n2", R"({"cpu":8000})"));
  }
  REQUIRE(std::filesystem::is_regular_file(path));
  auto store = open_or_fail(path);
  CHECK(must(store->revision()) == 2);
  CHECK(must(store->get("nodes/n2"))->value == R"({"cpu":8000})");
  must(store->integrity_check());
}

TEST_CASE("sqlite store has an identity of its own, kept across opens, new for a store made again at its path",
          "[store]") {
  TempDir dir;
  auto path = dir.path() / "state.db";
  std::string first;
  {
    auto store = open_or_fail(path);
    first = must(store->identity());
    CHECK(first.starts_with("sqlite:"));
    CHECK(first.size() == std::string("sqlite:").size() + 16);
  }
  CHECK(must(open_or_fail(path)->identity()) == first);
  std::filesystem::remove(path);
  CHECK(must(open_or_fail(path)->identity()) != first);
  CHECK(must(open_or_fail(dir.path() / "other.db")->identity()) != first);
}

TEST_CASE("sqlite store's history hash is chained over every change, as changes_since lists them", "[store]") {
  TempDir dir;
  auto store = open_or_fail(dir.path() / "state.db");
  auto start = must(store->history_mark());
  REQUIRE(start);
  CHECK(start->revision == 0);
  must(store->put("a", "1"));
  Txn t;
  t.deletes.push_back(Delete{"a", false});
  t.puts.push_back(Put{"b", "2", 0});
  t.puts.push_back(Put{"c", "", 0});
  must(store->txn(t));
  must(store->put("b", "3"));
  auto now = must(store->history_mark());
  REQUIRE(now);
  CHECK(now->revision == 3);
  // Folded from the start over the changes since, it is the store's.
  CHECK(chain_history(start->hash, must(store->changes_since(1, ""))) == now->hash);
  // The hash at each of the last revisions is still known after later commits; at an
  // older one it is not.
  constexpr int64_t kept = Store::k_history_kept;
  std::vector<uint64_t> at;
  for (int64_t i = 0; i < kept + 6; ++i) {
    must(store->put("k", std::to_string(i)));  // Revisions 4..kept + 9.
    at.push_back(must(store->history_mark())->hash);
  }
  const int64_t last = kept + 9;
  auto before_last = must(store->history_mark(last - 1));
  REQUIRE(before_last);
  CHECK(before_last->revision == last - 1);
  CHECK(before_last->hash == at[static_cast<size_t>(last - 1 - 4)]);
  CHECK(must(store->history_mark(last))->hash == at[static_cast<size_t>(last - 4)]);
  CHECK(must(store->history_mark(10))->hash == at[10 - 4]);
  CHECK_FALSE(must(store->history_mark(9)));         // k_history_kept revisions back: forgotten.
  CHECK_FALSE(must(store->history_mark(last + 1)));  // Not yet.
  // Every commit since a revision in the ring chained the hash on.
  CHECK(must(store->history_chained(10, last)));
  CHECK(must(store->history_chained(last, last)));
  CHECK_FALSE(must(store->history_chained(8, last)));  // Out of the ring.
  CHECK_FALSE(must(store->history_chained(10, last + 1)));
  // Another store, with the same changes, has another history (its start is its own).
  auto other = open_or_fail(dir.path() / "other.db");
  must(other->put("a", "1"));
  CHECK(must(other->history_mark())->hash != must(store->history_mark())->hash);
}

TEST_CASE("sqlite store: a commit that did not chain the history hash, as an older gaia's, leaves no hash for now",
          "[store]") {
  // An older gaia writes the same store without the hash: its commit moves the revision
  // and leaves the hash and the ring as they were. The hash then describes no revision
  // since, and a state kept from before (lib/kept_file.hpp) must not pass for current.
  TempDir dir;
  const auto path = dir.path() / "state.db";
  auto store = open_or_fail(path);
  must(store->put("a", "1"));
  must(store->put("b", "2"));
  const int64_t before = must(store->revision());
  REQUIRE(must(store->history_mark()));
  gaia::test::commit_without_history(path, "old", "x");
  REQUIRE(must(store->revision()) == before + 1);
  CHECK_FALSE(must(store->history_mark()));
  CHECK(must(store->history_mark(before)));  // Still known there.
  CHECK_FALSE(must(store->history_chained(before, before + 1)));
  // The next commit of this build chains on again (from the hash as it was).
  must(store->put("c", "3"));
  CHECK(must(store->history_mark()));
  CHECK(must(store->history_chained(before + 1, before + 2)));
  CHECK_FALSE(must(store->history_chained(before, before + 2)));
}

TEST_CASE("sqlite store refuses paths that are not store files", "[store]") {
  TempDir dir;

  SECTION("a directory") {
    auto r = SqliteStore::open(dir.path());
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Io);
    CHECK_THAT(r.error().message, Catch::Contains("is a directory, not a file"));
  }

  SECTION("a file of garbage") {
    auto path = dir.path() / "garbage.db";
    {
      std::ofstream out(path, std::ios::binary);
      std::mt19937 rng(42);
      for (int i = 0; i < 8192; ++i) out.put(static_cast<char>(rng()));
    }
    auto r = SqliteStore::open(path);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Corrupt);
    CHECK_THAT(r.error().message, Catch::Contains("is not a usable gaia store"));
    CHECK_THAT(r.error().message, Catch::Contains("garbage.db"));
    CHECK_FALSE(r.error().hint.empty());
  }

  SECTION("an SQLite database that belongs to something else") {
    auto path = dir.path() / "other.db";
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "CREATE TABLE invoices (id INTEGER)", nullptr, nullptr, nullptr) ==
            SQLITE_OK);
    sqlite3_close(db);
    auto r = SqliteStore::open(path);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Corrupt);
    CHECK_THAT(r.error().message, Catch::Contains("not a gaia store"));
    CHECK_THAT(r.error().message, Catch::Contains("invoices"));
  }

  SECTION("a store written by a newer gaia") {
    auto path = dir.path() / "new.db";
    open_or_fail(path);
    set_user_version(path, SqliteStore::kSchemaVersion + 1);
    auto r = SqliteStore::open(path);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::SchemaTooNew);
    CHECK_THAT(r.error().message,
               Catch::Contains("has schema version " +
                               std::to_string(SqliteStore::kSchemaVersion + 1)));
    CHECK_THAT(r.error().message, Catch::Contains("written by a newer gaia"));
  }
}

TEST_CASE("sqlite store keeps the configured number of revisions of history", "[store]") {
  TempDir dir;
  SqliteStoreOptions options;
  options.history_revisions = 10;
  auto store = open_or_fail(dir.path() / "state.db", options);
  for (int i = 0; i < 25; ++i) must(store->put("k" + std::to_string(i % 4), std::to_string(i)));
  // Revisions 16..25 are the newest ten.
  auto kept = must(store->changes_since(16, ""));
  REQUIRE(kept.size() == 10);
  CHECK(kept.front().revision() == 16);
  auto r = store->changes_since(15, "");
  REQUIRE_FALSE(r);
  CHECK(r.error().message == "revision 15 has been compacted; oldest available is 16");
}

TEST_CASE("sqlite store reads past revisions as far back as the kept history", "[store]") {
  TempDir dir;
  SqliteStoreOptions options;
  options.history_revisions = 10;
  auto store = open_or_fail(dir.path() / "state.db", options);
  for (int i = 0; i < 25; ++i) must(store->put("k" + std::to_string(i % 4), std::to_string(i)));
  // Revisions 16..25 are kept, so the state at 16 can still be rebuilt.
  auto at16 = must(store->read(RangeRequest::prefix("", 16)));
  REQUIRE(at16.kvs.size() == 4);
  CHECK(at16.kvs[0] == KeyValue{"k0", "12", 1, 13, 4, 0});
  CHECK(at16.kvs[3] == KeyValue{"k3", "15", 4, 16, 4, 0});
  auto r = store->read(RangeRequest::prefix("", 15));
  REQUIRE_FALSE(r);
  CHECK(r.error().code == StoreErrc::Compacted);
  CHECK(r.error().message == "revision 15 has been compacted; oldest available is 16");
  CHECK(r.error().compact_revision == 16);
}

TEST_CASE("sqlite store reads at any kept revision agree with the memory store", "[store]") {
  // Random puts, overwrites, deletes and prefix deletes on both stores, then random
  // reads (ranges, limits, keys_only, count_only) at random revisions: SQLite rebuilds
  // old states from its change log, the memory store keeps every state, so any
  // difference is a bug in one of them.
  auto seed = GENERATE(1u, 2u, 3u, 4u);
  std::mt19937 rng(seed);
  TempDir dir;
  SqliteStoreOptions options;
  options.history_revisions = 40;
  options.synchronous_full = false;
  auto sqlite = open_or_fail(dir.path() / "state.db", options);
  auto memory = MemoryStore::open();
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  auto key = [&] { return fmt::format("{}/{}", "abc"[pick(3)], pick(6)); };
  for (int step = 0; step < 150; ++step) {
    Txn t;
    int kind = pick(10);
    if (kind < 6) {
      for (int n = 1 + pick(3); n > 0; --n) {
        std::string k = key();
        if (std::ranges::none_of(t.puts, [&](const Put& p) { return p.key == k; }))
          t.puts.push_back(Put{k, fmt::format("v{}", step), 0});
      }
    } else if (kind < 9) {
      t.deletes.push_back(Delete{key(), false});
    } else {
      t.deletes.push_back(Delete{std::string(1, "abc"[pick(3)]), true});
    }
    auto a = must(sqlite->txn(t));
    auto b = must(memory->txn(t));
    REQUIRE(a.revision == b.revision);

    int64_t current = must(sqlite->revision());
    for (int q = 0; q < 4; ++q) {
      static const std::vector<std::pair<std::string, std::string>> ranges = {
          {"", std::string(1, '\0')}, {"a", "b"}, {"b/", "c"}, {"b/3", ""}, {"a/2", "c/1"}, {"c", std::string(1, '\0')}};
      const auto& [from, to] = ranges[pick(static_cast<int>(ranges.size()))];
      RangeRequest r = RangeRequest::interval(from, to, current > 0 ? pick(static_cast<int>(current) + 1) : 0,
                                              static_cast<size_t>(pick(4)));
      r.keys_only = pick(4) == 0;
      r.count_only = pick(6) == 0;
      auto got = sqlite->read(r);
      if (!got) {
        REQUIRE(got.error().code == StoreErrc::Compacted);
        CHECK(r.revision < current - options.history_revisions + 1);
        continue;
      }
      auto want = must(memory->read(r));
      INFO("seed " << seed << " step " << step << " range [" << from << ", " << to << ") at " << r.revision
                   << " limit " << r.limit);
      CHECK(got->kvs == want.kvs);
      CHECK(got->count == want.count);
      CHECK(got->more == want.more);
      CHECK(got->revision == want.revision);
    }
  }
}

namespace {

// The schema gaia wrote as version 1, before changes recorded the state they replace.
constexpr const char* kSchemaVersion1 = R"sql(
CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('revision', 0), ('compact_revision', 0);
CREATE TABLE kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  create_revision INTEGER NOT NULL,
  mod_revision INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX kv_by_lease ON kv(lease) WHERE lease != 0;
CREATE TABLE changes (
  revision INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  type INTEGER NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  create_revision INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  PRIMARY KEY (revision, seq)
) WITHOUT ROWID;
CREATE TABLE leases (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ttl_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
CREATE INDEX leases_by_expiry ON leases(expires_at_ms);
-- put a=1 (1), put b=1 (2), put a=2 (3)
UPDATE meta SET value = 3 WHERE name = 'revision';
INSERT INTO kv VALUES ('a', '2', 1, 3, 2, 0), ('b', '1', 2, 2, 1, 0);
INSERT INTO changes VALUES (1, 0, 0, 'a', '1', 1, 1, 0), (2, 0, 0, 'b', '1', 2, 1, 0),
                           (3, 0, 0, 'a', '2', 1, 2, 0);
PRAGMA user_version = 1;
)sql";

}  // namespace

TEST_CASE("sqlite store upgrades a version 1 store, whose older history cannot be read back",
          "[store]") {
  TempDir dir;
  auto path = dir.path() / "state.db";
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, kSchemaVersion1, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = open_or_fail(path);
  must(store->integrity_check());
  CHECK_FALSE(must(store->identity()).empty());  // Given by the first opener that may write.
  CHECK(must(store->revision()) == 3);
  CHECK(must(store->get("a"))->value == "2");
  // Version 1 changes lack the state before them, so history before the upgrade is
  // compacted: reading it, or following from it, fails instead of answering wrongly.
  auto old = store->read(RangeRequest::prefix("", 2));
  REQUIRE_FALSE(old);
  CHECK(old.error().code == StoreErrc::Compacted);
  CHECK(old.error().compact_revision == 3);
  CHECK(store->changes_since(2, "").error().compact_revision == 3);
  CHECK(must(store->changes_since(3, "")).size() == 1);

  // Changes from now on record what they replace.
  must(store->put("a", "3"));  // 4
  must(store->del("b"));       // 5
  auto at3 = must(store->read(RangeRequest::prefix("", 3)));
  CHECK(at3.kvs == std::vector<KeyValue>{KeyValue{"a", "2", 1, 3, 2, 0}, KeyValue{"b", "1", 2, 2, 1, 0}});
  auto at4 = must(store->read(RangeRequest::prefix("", 4)));
  CHECK(at4.kvs == std::vector<KeyValue>{KeyValue{"a", "3", 1, 4, 3, 0}, KeyValue{"b", "1", 2, 2, 1, 0}});
  store.reset();

  // The upgrade happened once: a second open changes nothing.
  store = open_or_fail(path);
  CHECK(must(store->read(RangeRequest::prefix("", 3))).kvs.size() == 2);
}

TEST_CASE("sqlite store: processes incrementing with compare-and-set lose no update",
          "[store]") {
  TempDir dir;
  auto path = dir.path() / "state.db";
  open_or_fail(path);  // Create the schema up front; the children race on data only.
  constexpr int kChildren = 4;
  constexpr int kIncrements = 200;
  std::vector<pid_t> children;
  for (int c = 0; c < kChildren; ++c)
    children.push_back(fork_child([&] {
      auto store = SqliteStore::open(path);
      if (!store) return 2;
      for (int i = 0; i < kIncrements; ++i)
        if (!gaia::testing::increment(**store, "counter")) return 3;
      return 0;
    }));
  for (pid_t pid : children) CHECK(wait_exit_code(pid) == 0);
  auto store = open_or_fail(path);
  auto kv = must(store->get("counter"));
  REQUIRE(kv);
  CHECK(kv->value == std::to_string(kChildren * kIncrements));
  CHECK(must(store->revision()) == kChildren * kIncrements);
}

TEST_CASE("sqlite store survives writers killed with SIGKILL mid-transaction", "[store]") {
  // A process crash must never lose or tear a commit, whatever the sync level (which
  // only matters for power loss).
  bool synchronous_full = GENERATE(true, false);
  SqliteStoreOptions options;
  options.synchronous_full = synchronous_full;
  TempDir dir;
  auto path = dir.path() / "state.db";
  open_or_fail(path, options);
  std::mt19937 rng(std::random_device{}());
  int64_t last_revision = 0;
  for (int round = 0; round < 5; ++round) {
    // Each transaction writes the same counter to two keys and appends an event; a
    // torn write would leave the two keys different.
    pid_t child = fork_child([&] {
      auto store = SqliteStore::open(path, options);
      if (!store) return 2;
      for (int64_t i = 0;; ++i) {
        auto current = (*store)->get("pair/a");
        if (!current) return 3;
        int64_t n = *current ? std::stoll((*current)->value) + 1 : 1;
        Txn t;
        t.compares.push_back(Compare{"pair/a", *current ? (*current)->mod_revision : 0});
        t.puts.push_back(Put{"pair/a", std::to_string(n), 0});
        t.puts.push_back(Put{"pair/b", std::to_string(n), 0});
        t.puts.push_back(Put{"pair/big", std::string(4096 + (i % 7) * 1000, 'x'), 0});
        if (!(*store)->txn(t)) return 4;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 150));
    REQUIRE(kill(child, SIGKILL) == 0);
    CHECK(wait_exit_code(child) == 128 + SIGKILL);

    auto store = open_or_fail(path);
    must(store->integrity_check());
    auto a = must(store->get("pair/a"));
    auto b = must(store->get("pair/b"));
    REQUIRE(a.has_value() == b.has_value());
    if (!a) continue;  // Killed before its first commit.
    CHECK(a->value == b->value);
    CHECK(a->mod_revision == b->mod_revision);
    int64_t revision = must(store->revision());
    CHECK(revision >= last_revision);
    CHECK(a->mod_revision == revision);
    last_revision = revision;
  }
  CHECK(last_revision > 0);
}
