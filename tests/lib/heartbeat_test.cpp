// Heartbeats in the store: written outside the timeline's sequence (a beat never makes
// a command's commit conflict), loaded with the state, forgotten with their node, and a
// corrupt one skipped rather than failing every command.
#include <catch2/catch.hpp>

#include "lib/codec.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;

TEST_CASE("heartbeats: written, loaded, kept out of commits, deleted with their node", "[heartbeat]") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "s.db");
  REQUIRE(store);
  ManualClock clock;
  State state(**store, clock);
  Batch nodes;
  for (const char* name : {"n1", "n2"}) {
    Node n;
    n.name = name;
    nodes.put_nodes.push_back(n);
  }
  auto base = state.load();
  REQUIRE(base);
  REQUIRE(state.commit(*base, nodes, "op-1").value());

  auto loaded = state.load();
  REQUIRE(loaded);
  REQUIRE(state.write_heartbeats({"n1", "n2"}, "pid 7 on host"));
  // A command that loaded before the beat still commits: beats are not in its compare.
  Batch b;
  b.event("Test", "after a beat");
  CHECK(state.commit(*loaded, b, "op-2").value());

  auto now = state.load();
  REQUIRE(now);
  REQUIRE(now->heartbeats.size() == 2);
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock.now().time_since_epoch()).count();
  CHECK(now->heartbeats.at("n1").at_ms == ms);
  CHECK(now->heartbeats.at("n1").agent == "pid 7 on host");

  // A corrupt beat is skipped; the state still loads.
  Txn corrupt;
  corrupt.puts.push_back({keys::heartbeat("n2"), "{not json"});
  REQUIRE((*store)->txn(corrupt));
  auto skipped = state.load();
  REQUIRE(skipped);
  CHECK(skipped->heartbeats.count("n2") == 0);
  CHECK(skipped->heartbeats.count("n1") == 1);

  // Removing a node removes its heartbeat key too.
  Batch remove;
  remove.delete_nodes.push_back("n1");
  REQUIRE(state.commit(*skipped, remove, "op-3").value());
  auto gone = (*store)->get(keys::heartbeat("n1"));
  REQUIRE(gone);
  CHECK_FALSE(gone->has_value());
}
