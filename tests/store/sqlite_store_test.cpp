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

std::unique_ptr<SqliteStore> open_or_fail(const std::filesystem::path& path,
                                          SqliteStoreOptions options = {}) {
  auto store = SqliteStore::open(path, std::move(options));
  if (!store) FAIL(store.error().to_string());
  return std::move(*store);
}

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
