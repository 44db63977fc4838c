// The informer (StateOptions::follow_changes): a state brought up to date from the
// store's changes must equal, field for field, one read afresh at the same revision,
// through every kind of change a command makes, through compaction of the history it
// needs, and through a half-applied journal commit. And an app's status lives in its own
// small key: an observation never rewrites the app record.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <functional>
#include <random>
#include <utility>

#include "lib/codec.hpp"
#include "lib/journal.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/support/forwarding_store.hpp"
#include "tests/support/state_history.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::test::dump;
using gaia::test::app;
using gaia::test::random_change;

TEST_CASE("state cache: following changes gives the same state as reading afresh", "[state][informer]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  State writer(**store, clock);
  State fresh(**store, clock);
  StateOptions follow;
  follow.follow_changes = true;
  State cached(**store, clock, follow);
  std::mt19937 rng(20261124);
  for (int step = 0; step < 400; ++step) {
    random_change(writer, rng, step);
    // The follower loads now and then, so some refreshes carry many changes at once.
    if (rng() % 3 != 0) continue;
    auto a = cached.load();
    auto b = fresh.load();
    REQUIRE(a);
    REQUIRE(b);
    INFO("step " << step);
    REQUIRE(dump(*a) == dump(*b));
  }
}

namespace {

// Commits `write` to the store just before each read of the changes since a revision
// that leaves the timeline's events out: a commit that lands while the follower reads.
class WriteWhileReading final : public gaia::test::ForwardingStore {
 public:
  WriteWhileReading(Store& inner, std::function<void()> write) : ForwardingStore(inner), m_write(std::move(write)) {}
  StoreResult<std::vector<Event>> changes_since_skipping(int64_t from, std::string_view skipped) override {
    if (m_write) std::exchange(m_write, nullptr)();
    return ForwardingStore::changes_since_skipping(from, skipped);
  }

 private:
  std::function<void()> m_write;
};

}  // namespace

TEST_CASE("state cache: the follower skips the timeline's events and stands at the revision it read up to",
          "[state][informer]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  State writer(**store, clock);
  std::mt19937 rng(29);
  for (int step = 0; step < 20; ++step) random_change(writer, rng, step);
  StateOptions follow;
  follow.follow_changes = true;
  std::string late = "settings/late";
  WriteWhileReading racing(**store, [&] { REQUIRE((*store)->put(late, "1")); });
  State cached(racing, clock, follow);
  REQUIRE(cached.load());
  random_change(writer, rng, 20);
  // Revisions that wrote only events (no gaia commit writes those alone; another tool
  // may): the state moves to the store's revision past them, with nothing to apply.
  for (int k = 0; k < 3; ++k) {
    Txn events;
    events.puts.push_back({fmt::format("events/{:020d}", 900 + k), "{}"});
    REQUIRE((*store)->txn(events).value().succeeded);
  }
  const int64_t read_up_to = (*store)->revision().value();
  // The refresh reads the store's revision, then the changes since the state's: the write
  // that lands between the two is left for the next refresh, and the state stands at the
  // revision it read up to, whole.
  auto st = cached.load();
  REQUIRE(st);
  CHECK(st->revision == read_up_to);
  CHECK((*store)->revision().value() == read_up_to + 1);
  auto fresh = State(**store, clock).load();
  REQUIRE(fresh);
  CHECK_FALSE(st->settings.count("late"));
  CHECK(fresh->settings.count("late"));
  // The next load takes it.
  auto next = cached.load();
  REQUIRE(next);
  CHECK(next->revision == read_up_to + 1);
  CHECK(dump(*next) == dump(*fresh));
}

TEST_CASE("state cache: a compacted history makes the follower read afresh", "[state][informer]") {
  gaia::test::TempDir dir;
  SqliteStoreOptions options;
  options.history_revisions = 5;  // Far fewer than the changes between two loads below.
  auto store = SqliteStore::open(dir.path() / "s.db", options);
  REQUIRE(store);
  ManualClock clock;
  State writer(**store, clock);
  StateOptions follow;
  follow.follow_changes = true;
  State cached(**store, clock, follow);
  State fresh(**store, clock);
  std::mt19937 rng(7);
  REQUIRE(cached.load());
  for (int step = 0; step < 30; ++step) random_change(writer, rng, step);
  auto a = cached.load();
  auto b = fresh.load();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(dump(*a) == dump(*b));
}

TEST_CASE("state cache: a half-applied journal commit is finished before the follower decides",
          "[state][informer][journal]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  StateOptions follow;
  follow.follow_changes = true;
  State cached(**store, clock, follow);
  auto before = cached.load();
  REQUIRE(before);
  // A writer killed after the commit point of a journaled commit of 40 nodes.
  Txn txn;
  txn.compares.push_back({keys::k_seq, 0});
  for (int k = 0; k < 40; ++k) {
    Node n;
    n.name = fmt::format("n{:02d}", k);
    txn.puts.push_back({keys::node(n.name), nlohmann::json(n).dump()});
  }
  txn.puts.push_back({keys::k_seq, "0"});
  TxnLimits small{8, 0};
  REQUIRE(commit_journaled(**store, txn, small, "killed", 2).value());
  auto after = cached.load();
  REQUIRE(after);
  CHECK(after->snapshot.nodes.size() == 40);
  auto journal = (*store)->get(k_journal_key);
  REQUIRE(journal);
  CHECK_FALSE(journal->has_value());
}

TEST_CASE("app status: an observation rewrites only the status key", "[state][status]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  State state(**store, clock);
  auto base = state.load();
  REQUIRE(base);
  Batch create;
  create.put_apps.push_back(app("web", 2));
  REQUIRE(state.commit(*base, create, "op-create").value());
  auto record = (*store)->get(keys::app("default", "web"));
  REQUIRE(record);
  REQUIRE(record->has_value());
  const int64_t spec_revision = (*record)->mod_revision;
  // The spec record holds no status: that is the status key's.
  CHECK_FALSE(nlohmann::json::parse((*record)->value).contains("status"));

  auto loaded = state.load();
  REQUIRE(loaded);
  CHECK(loaded->find_app("default", "web")->status == "Deploying");
  AppRecord ready = *loaded->find_app("default", "web");
  ready.status = "Ready";
  // As the controllers do: the op is cleared so the commit stamps its own. Bookkeeping
  // is not spec, so the record still stays as it is.
  ready.op.clear();
  Batch observe;
  observe.put_apps.push_back(ready);
  REQUIRE(state.commit(*loaded, observe, "op-observe").value());

  auto unchanged = (*store)->get(keys::app("default", "web"));
  REQUIRE(unchanged);
  CHECK((*unchanged)->mod_revision == spec_revision);
  auto status = (*store)->get(keys::app_status("default", "web"));
  REQUIRE(status);
  REQUIRE(status->has_value());
  CHECK(nlohmann::json::parse((*status)->value).at("status") == "Ready");
  auto now = state.load();
  REQUIRE(now);
  CHECK(now->find_app("default", "web")->status == "Ready");
  CHECK(now->find_app("default", "web")->op == "op-create");
  auto listed = state.list("default");
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].ready);

  // A record written before the split (status inside it) still loads, and a status key
  // written later overrides it.
  Txn old;
  nlohmann::json legacy = app("old", 1);
  legacy["status"] = "Ready";
  old.puts.push_back({keys::app("default", "old"), legacy.dump()});
  REQUIRE((*store)->txn(old));
  auto with_legacy = state.load();
  REQUIRE(with_legacy);
  CHECK(with_legacy->find_app("default", "old")->status == "Ready");

  // A spec change to such an old record keeps its status (it moves to the status key
  // with the new record), for every reader: a fresh read, the resolver's list.
  AppRecord scaled = *with_legacy->find_app("default", "old");
  scaled.scale["r0"] = 3;
  scaled.op.clear();
  Batch scale;
  scale.put_apps.push_back(scaled);
  REQUIRE(state.commit(*with_legacy, scale, "op-scale").value());
  auto after_scale = state.load();
  REQUIRE(after_scale);
  CHECK(after_scale->find_app("default", "old")->status == "Ready");
  CHECK(after_scale->find_app("default", "old")->op == "op-scale");
  bool old_ready = false;
  for (const auto& r : state.list("default"))
    if (r.name == "old") old_ready = r.ready;
  CHECK(old_ready);

  // Deleting the app deletes its status with it.
  Batch del;
  del.delete_apps.emplace_back("default", "web");
  REQUIRE(state.commit(*after_scale, del, "op-delete").value());
  auto gone = (*store)->get(keys::app_status("default", "web"));
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
}

// A store whose backing can be swapped under its users, as when the file a context
// names is re-created or an etcd cluster is restored from an older snapshot.
class SwitchStore final : public gaia::test::ForwardingStore {
 public:
  explicit SwitchStore(Store* inner) : ForwardingStore(*inner) {}
  void point_at(Store* inner) { forward_to(*inner); }
};

TEST_CASE("state cache: a store that went back in time (re-created, restored) is read afresh", "[state][informer]") {
  gaia::test::TempDir dir;
  ManualClock clock;
  auto older = SqliteStore::open(dir.path() / "older.db");
  auto newer = SqliteStore::open(dir.path() / "newer.db");
  REQUIRE(older);
  REQUIRE(newer);
  std::mt19937 rng(3);
  {
    State on_older(**older, clock);
    for (int step = 0; step < 3; ++step) random_change(on_older, rng, step);
    State on_newer(**newer, clock);
    for (int step = 0; step < 30; ++step) random_change(on_newer, rng, step);
  }
  SwitchStore store(newer->get());
  StateOptions follow;
  follow.follow_changes = true;
  State cached(store, clock, follow);
  REQUIRE(cached.load());
  // The store goes back to an earlier, different history.
  store.point_at(older->get());
  auto got = cached.load();
  auto fresh = State(**older, clock).load();
  REQUIRE(got);
  REQUIRE(fresh);
  CHECK(dump(*got) == dump(*fresh));
}

TEST_CASE("full load: the nodes, decoded beside the later reads, come in order, and their error first",
          "[state][load]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  Txn txn;
  for (int k = 0; k < 700; ++k) {
    Node n;
    n.name = fmt::format("n{:04d}", k);
    n.capacity.cpu_millis = 1000 + k;
    txn.puts.push_back({keys::node(n.name), nlohmann::json(n).dump()});
  }
  txn.puts.push_back({keys::app("default", "web"), nlohmann::json(app("web", 1)).dump()});
  REQUIRE((*store)->txn(txn));
  State state(**store, clock);
  auto loaded = state.load();
  REQUIRE(loaded);
  REQUIRE(loaded->snapshot.nodes.size() == 700);
  for (int k = 0; k < 700; ++k) {
    CHECK(loaded->snapshot.nodes[k].name == fmt::format("n{:04d}", k));
    CHECK(loaded->snapshot.nodes[k].capacity.cpu_millis == 1000 + k);
  }
  CHECK(loaded->find_app("default", "web"));

  // A bad app record alone: its error.
  REQUIRE((*store)->txn(Txn{{}, {{keys::app("default", "web"), "{\"name\": "}}, {}}));
  auto bad_app = state.load();
  REQUIRE_FALSE(bad_app);
  CHECK(bad_app.error().front().path == keys::app("default", "web"));
  // And a bad node too: the node's error, as the nodes are read first.
  REQUIRE((*store)->txn(Txn{{}, {{keys::node("n0500"), "[1, 2"}}, {}}));
  auto bad_node = state.load();
  REQUIRE_FALSE(bad_node);
  CHECK(bad_node.error().front().path == keys::node("n0500"));
}
