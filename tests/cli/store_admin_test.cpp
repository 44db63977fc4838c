// A way out of a damaged or full store (issue 14, item 4): `gaia store check` finds the
// records that do not decode and `--quarantine` sets them aside so every command works
// again; `gaia store backup` takes a consistent copy while others write and `gaia store
// restore` brings it back (refusing while the store is in use, keeping the old content
// aside); on a full disk (a real one, a small tmpfs, when this process may mount it)
// `delete` and `events --retention` still work.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/cli/e2e_util.hpp"
#include "tests/store/full_disk.hpp"

using namespace gaia::test;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Writes `bytes` as the value of `key`, straight through SQLite, as a disk error or a
// stray tool would.
void corrupt(const std::string& store, const std::string& key, const std::string& bytes) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(store.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "UPDATE kv SET value = ?1 WHERE key = ?2", -1, &stmt, nullptr) == SQLITE_OK);
  sqlite3_bind_blob(stmt, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, key.c_str(), -1, SQLITE_TRANSIENT);
  REQUIRE(sqlite3_step(stmt) == SQLITE_DONE);
  REQUIRE(sqlite3_changes(db) == 1);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

std::map<std::string, std::string> all_keys(const std::string& store) {
  gaia::SqliteStoreOptions o;
  o.create = false;
  o.read_only = true;
  auto st = gaia::SqliteStore::open(store, o);
  REQUIRE(st);
  auto kvs = (*st)->range("");
  REQUIRE(kvs);
  std::map<std::string, std::string> out;
  for (const auto& kv : *kvs) out[kv.key] = kv.value;
  return out;
}


}  // namespace

TEST_CASE("store check names a corrupt record, --quarantine sets it aside, and delete works again",
          "[e2e][store][check]") {
  Scratch s;
  StoreCli g(s);
  g.ok({"cluster", "create", "--nodes", "2"});
  write_app(s, "web", "web", "1.0.0");
  g.ok({"submit", "web"});
  g.ok({"store", "check"});
  const std::string key = "instances/0.web.web.default";
  corrupt(g.store, key, std::string("\xff\xfe\x00{garbage", 11));

  // Every command that loads the cluster fails, naming the key and the way out.
  auto r = g.expect(1, {"get", "instances"});
  CHECK(contains(r.err, key));
  CHECK(contains(r.err, "corrupt record in the store"));
  CHECK(contains(r.err, "gaia store check --quarantine"));
  CHECK(contains(g.expect(1, {"delete", "web"}).err, key));

  r = g.expect(1, {"store", "check"});
  CHECK(contains(r.out, "bad record " + key + ":"));
  CHECK(contains(r.out, "1 bad record(s)"));
  auto j = nlohmann::json::parse(g.expect(1, {"store", "check", "-o", "json"}).out);
  REQUIRE(j["bad"].size() == 1);
  CHECK(j["bad"][0]["key"] == key);
  CHECK(j["integrity"] == "ok");

  r = g.ok({"store", "check", "--quarantine"});
  CHECK(contains(r.out, "quarantined " + key + " -> quarantine/" + key + "@"));
  CHECK(contains(g.ok({"store", "check"}).out, "every record decodes"));
  auto keys = all_keys(g.store);
  bool kept = false;
  for (const auto& [k, v] : keys) kept |= k.starts_with("quarantine/" + key + "@") && v.starts_with("\xff\xfe");
  CHECK(kept);

  // Everything works again: the app is listed without its lost instance, and goes.
  g.ok({"get", "instances"});
  CHECK(contains(g.ok({"delete", "web"}).out, "deleted web"));
  CHECK(g.load().apps.empty());
}

TEST_CASE("store backup while another process writes is one moment, restore brings exactly it back",
          "[e2e][store][backup]") {
  Scratch s;
  StoreCli g(s);
  g.ok({"cluster", "create", "--nodes", "2"});
  // Another process commits as gaia does: a node and its event in each commit.
  pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    auto store = gaia::SqliteStore::open(g.store);
    if (!store) ::_exit(1);
    gaia::SystemClock clock;
    gaia::State state(**store, clock);
    for (int k = 0; k < 150; ++k) {
      auto committed = state.update("op-writer", [&](const gaia::ClusterState&, gaia::Batch& b) -> gaia::Result<void> {
        gaia::Node n;
        n.name = fmt::format("extra-{:03d}", k);
        n.address = fmt::format("10.9.{}.{}", k / 200, k % 200 + 1);
        b.put_nodes.push_back(n);
        b.event("Extra", n.name);
        return {};
      });
      if (!committed) ::_exit(2);
    }
    ::_exit(0);
  }
  std::vector<std::string> backups;
  for (int k = 0; k < 4; ++k) {
    std::this_thread::sleep_for(100ms);
    backups.push_back((s.dir() / fmt::format("backup-{}.db", k)).string());
    auto r = g.ok({"store", "backup", backups.back()});
    CHECK(contains(r.out, "backed up " + g.store + " to " + backups.back()));
  }
  REQUIRE(exit_within(writer, 60s) == 0);
  CHECK(contains(g.expect(1, {"store", "backup", backups.front()}).err, "already exists"));

  // Each copy is one moment: as many Extra events as extra nodes, the sequence at the
  // newest event, and a state that loads.
  for (const auto& b : backups) {
    INFO(b);
    auto st = load_state(b);
    size_t extra_nodes = 0;
    for (const auto& n : st.snapshot.nodes) extra_nodes += n.name.starts_with("extra-") ? 1 : 0;
    auto keys = all_keys(b);
    size_t events = 0, extra_events = 0;
    for (const auto& [k, v] : keys) {
      if (!k.starts_with("events/")) continue;
      ++events;
      extra_events += contains(v, "\"Extra\"") ? 1 : 0;
    }
    CHECK(extra_nodes == extra_events);
    CHECK(static_cast<int64_t>(events) == st.seq);
  }

  // The store moved on; restoring the second copy brings back exactly its records.
  auto r = g.ok({"store", "restore", backups[1]});
  CHECK(contains(r.out, "restored " + g.store + " from " + backups[1]));
  CHECK(contains(r.out, "the previous content is kept in " + g.store + ".before-restore-"));
  CHECK(all_keys(g.store) == all_keys(backups[1]));
  // The content it replaced is whole in the file kept aside.
  std::string aside;
  for (const auto& e : fs::directory_iterator(s.dir()))
    if (e.path().filename().string().starts_with("store.db.before-restore-")) aside = e.path().string();
  REQUIRE_FALSE(aside.empty());
  auto before = load_state(aside);
  size_t extra = 0;
  for (const auto& n : before.snapshot.nodes) extra += n.name.starts_with("extra-") ? 1 : 0;
  CHECK(extra == 150);
  // And gaia goes on from it.
  g.ok({"node", "cordon", "node-1"});
  g.ok({"store", "check"});
}

TEST_CASE("store restore refuses while a controller runner leads the store, unless --force", "[e2e][store][backup]") {
  Scratch s;
  StoreCli g(s);
  g.ok({"cluster", "create", "--nodes", "2"});
  std::string backup = (s.dir() / "b.db").string();
  g.ok({"store", "backup", backup});
  pid_t pid = s.spawn({"--store", g.store, "controller", "run", "--interval", "200ms"}, "runner");
  bool leading =
      eventually([&] { return contains(Scratch::slurp(s.dir() / "runner.out"), "leading the controllers"); }, 10s);
  if (!leading) exit_within(pid, 0ms);
  REQUIRE(leading);
  auto r = g.expect(1, {"store", "restore", backup});
  CHECK(contains(r.err, "is in use: meta/controller_leader is held by a running process"));
  CHECK(contains(r.err, "--force"));
  CHECK_FALSE(contains(r.out, "restored"));
  r = g.ok({"store", "restore", backup, "--force"});
  CHECK(contains(r.out, "restored"));
  ::kill(pid, SIGTERM);
  exit_within(pid, 10s);
  // A restore into a path with no store makes it (an explicit act, like cluster create).
  StoreCli fresh(s);
  fresh.store = (s.dir() / "restored.db").string();
  r = fresh.ok({"store", "restore", backup});
  CHECK_FALSE(contains(r.out, "previous content"));
  CHECK(contains(fresh.ok({"get", "nodes"}).out, "node-2"));
  // What is not a backup is refused, and changes nothing.
  s.write("junk.db", "junk");
  CHECK(contains(fresh.expect(1, {"store", "restore", "junk.db"}).err, "junk.db"));
  CHECK(contains(fresh.ok({"get", "nodes"}).out, "node-2"));
}

TEST_CASE("on a full disk, delete and events --retention still work, a growing command fails saying why",
          "[e2e][store][full-disk]") {
  gaia::testing::SmallDisk disk(16 << 20);
  if (!disk.ok()) {
    WARN("skipped: " << disk.why());
    return;
  }
  Scratch s;
  StoreCli g(s);
  g.store = (disk.dir() / "gaia.db").string();
  g.ok({"cluster", "create", "--nodes", "4"});
  write_app(s, "web", "web", "1.0.0");
  write_app(s, "api", "api", "1.0.0");
  write_app(s, "more", "more", "1.0.0");
  g.ok({"submit", "web"});
  g.ok({"submit", "api"});
  CHECK(contains(g.ok({"store", "check"}).out, "MiB held in " + g.store + "-reserve"));
  REQUIRE(gaia::testing::truncate_wal(g.store));
  REQUIRE(disk.fill() > 0);

  auto r = g.expect(1, {"submit", "more"});
  CHECK(contains(r.err, "the disk is full"));
  CHECK(contains(r.err, "`gaia delete` and `gaia events --retention N` still work"));

  r = g.ok({"delete", "web"});
  CHECK(contains(r.out, "deleted web"));
  CHECK_FALSE(fs::exists(g.store + "-reserve"));
  r = g.ok({"events", "--retention", "3"});
  CHECK(contains(r.out, "event retention set to 3"));
  auto st = g.load();
  CHECK(st.apps.size() == 1);
  CHECK(st.apps.count("default/api") == 1);
  g.ok({"get", "apps"});

  // With room again, the reserve comes back and so do growing commands.
  disk.unfill();
  g.ok({"submit", "more"});
  CHECK(contains(g.ok({"store", "check"}).out, "MiB held in"));
}
