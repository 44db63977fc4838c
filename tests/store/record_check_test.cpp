// `gaia store check` underneath (store/record_check.hpp): which records gaia cannot read
// back, and moving them under quarantine/ so a State loads again. On the memory store,
// the contract's third implementation; the decisions do not depend on the store.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "lib/app_summary.hpp"
#include "lib/clock.hpp"
#include "lib/codec.hpp"
#include "lib/hash.hpp"
#include "lib/state.hpp"
#include "store/memory_store.hpp"
#include "store/record_check.hpp"

using namespace gaia;

namespace {

std::unique_ptr<Store> memory() {
  auto store = MemoryStore::open(MemoryStoreOptions{});
  return store;
}

// A small cluster committed the way gaia commits it: two nodes, a tenant, an instance
// and three events.
void commit_cluster(Store& store) {
  SystemClock clock;
  State state(store, clock);
  auto st = state.load();
  REQUIRE(st);
  Batch b;
  for (const char* name : {"n1", "n2"}) {
    Node n;
    n.name = name;
    b.put_nodes.push_back(n);
  }
  Tenant tenant;
  tenant.name = "default";
  b.put_tenants.push_back(tenant);
  Instance i;
  i.tenant = "default";
  i.app = "web";
  i.role = "web";
  b.put_instance(i);
  for (int k = 0; k < 3; ++k) b.event("Test", fmt::format("event {}", k));
  auto ok = state.commit(*st, b, "op-test");
  REQUIRE(ok);
  REQUIRE(*ok);
}

KeyValue kv(std::string key, std::string value) { return KeyValue{std::move(key), std::move(value), 1, 1, 1, 0}; }

}  // namespace

TEST_CASE("record check: what gaia writes decodes, garbage, wrong shapes and wrong hashes do not",
          "[store][check]") {
  auto store = memory();
  commit_cluster(*store);
  auto scan = find_bad_records(*store);
  REQUIRE(scan);
  CHECK(scan->bad.empty());
  CHECK(scan->records >= 7);  // Nodes, tenant, instance, events, the sequence.

  CHECK(record_problem(kv("instances/default/web/web/0", "\xff\xfe{")));
  CHECK(record_problem(kv("nodes/n1", "[1, 2]")));
  CHECK(record_problem(kv("apps/default/web", "{\"name\": 3}")));
  CHECK(record_problem(kv("events/00000000000000000001", "not json")));
  CHECK(record_problem(kv("status/apps/default/web", "{")));
  CHECK(record_problem(kv("meta/event_seq", "twelve")));
  CHECK_FALSE(record_problem(kv("meta/event_seq", "12")));
  CHECK(record_problem(kv("meta/event_retention", "0")));
  CHECK_FALSE(record_problem(kv("meta/event_retention", "500")));
  CHECK(record_problem(kv("config/nokey", "1")));
  CHECK(record_problem(kv("config/global/db.url", "{unquoted")));
  CHECK_FALSE(record_problem(kv("config/global/db.url", "\"pg://db\"")));
  CHECK(record_problem(kv("labels/app/default", "x")));
  CHECK_FALSE(record_problem(kv("labels/app/default/web/team", "any text")));
  std::string bundle = R"({"format":1})";
  CHECK_FALSE(record_problem(kv("bundles/" + content_hash(bundle), bundle)));
  auto wrong = record_problem(kv("bundles/" + content_hash("other"), bundle));
  REQUIRE(wrong);
  CHECK(*wrong == "its content does not match its hash");
  CHECK(record_problem(kv("sim/copies/x", "}")));
  // Heartbeats are rewritten every beat and skipped when unreadable; quarantined
  // records and keys that are not gaia's are none of the check's business.
  CHECK_FALSE(record_problem(kv("heartbeats/n1", "garbage")));
  CHECK_FALSE(record_problem(kv("quarantine/nodes/n1@3", "garbage")));
  CHECK_FALSE(record_problem(kv("someone-else/key", "garbage")));
}

TEST_CASE("record check: a quarantined record no longer fails a load, and its bytes are kept", "[store][check]") {
  auto store = memory();
  commit_cluster(*store);
  const std::string garbage = "\x01\xff not a record";
  REQUIRE(store->put("nodes/n2", garbage));
  SystemClock clock;
  State state(*store, clock);
  auto failed = state.load();
  REQUIRE_FALSE(failed);
  CHECK(failed.error().front().path == "nodes/n2");

  auto scan = find_bad_records(*store);
  REQUIRE(scan);
  REQUIRE(scan->bad.size() == 1);
  const BadRecord bad = scan->bad.front();
  CHECK(bad.key == "nodes/n2");
  CHECK_FALSE(bad.reason.empty());

  // A record rewritten since it was found bad is left alone.
  REQUIRE(store->put("nodes/n2", garbage + "!"));
  auto stale = quarantine_record(*store, bad);
  REQUIRE(stale);
  CHECK_FALSE(stale->has_value());

  auto fresh = find_bad_records(*store);
  REQUIRE(fresh);
  REQUIRE(fresh->bad.size() == 1);
  auto moved = quarantine_record(*store, fresh->bad.front());
  REQUIRE(moved);
  REQUIRE(moved->has_value());
  CHECK(**moved == fmt::format("quarantine/nodes/n2@{}", fresh->bad.front().mod_revision));
  auto kept = store->get(**moved);
  REQUIRE(kept);
  REQUIRE(*kept);
  CHECK((*kept)->value == garbage + "!");

  auto loaded = state.load();
  REQUIRE(loaded);
  REQUIRE(loaded->snapshot.nodes.size() == 1);
  CHECK(loaded->snapshot.nodes.front().name == "n1");
  auto clean = find_bad_records(*store);
  REQUIRE(clean);
  CHECK(clean->bad.empty());
}

TEST_CASE("record check: a damaged timeline sequence is rebuilt from the newest event, not dropped",
          "[store][check]") {
  auto store = memory();
  commit_cluster(*store);
  REQUIRE(store->put(keys::k_seq, "garbage"));
  auto scan = find_bad_records(*store);
  REQUIRE(scan);
  REQUIRE(scan->bad.size() == 1);
  auto moved = quarantine_record(*store, scan->bad.front());
  REQUIRE(moved);
  REQUIRE(moved->has_value());
  auto seq = store->get(keys::k_seq);
  REQUIRE(seq);
  REQUIRE(*seq);
  CHECK((*seq)->value == "3");
  // The next commit numbers its events after the old ones, overwriting none.
  SystemClock clock;
  State state(*store, clock);
  auto st = state.load();
  REQUIRE(st);
  Batch b;
  b.event("Test", "after the repair");
  auto ok = state.commit(*st, b, "op-test");
  REQUIRE(ok);
  REQUIRE(*ok);
  auto events = state.events_after(0);
  REQUIRE(events);
  REQUIRE(events->size() == 4);
  CHECK(events->back().seq == 4);
  CHECK(events->front().message == "event 0");
}

TEST_CASE("record check: app summaries are checked, and a quarantine of what they count leaves them unkept",
          "[store][check]") {
  auto store = memory();
  commit_cluster(*store);
  SystemClock clock;
  State state(*store, clock);
  AppRecord web;
  web.tenant = "default";
  web.name = "web";
  Role role;
  role.name = "web";
  role.replicas = 1;
  web.workload.roles.push_back(role);
  auto added = state.update("op-test", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_apps.push_back(web);
    return {};
  });
  REQUIRE(added);
  auto kept = read_app_summaries(*store, "");
  REQUIRE(kept);
  REQUIRE(*kept);
  REQUIRE((*kept)->size() == 1);
  CHECK_FALSE(record_problem(kv(keys::app_summary("default", "web"), nlohmann::json((*kept)->front()).dump())));
  CHECK(record_problem(kv(keys::app_summary("default", "web"), "{\"tenant\": 1}")));

  // The instance turns to garbage behind gaia's back; set aside, it no longer counts,
  // so the summaries that counted it are no longer read until a commit writes them.
  auto st = state.load();
  REQUIRE(st);
  REQUIRE(st->snapshot.instances.size() == 1);
  REQUIRE(store->put("instances/" + st->snapshot.instances.front().key(), "{garbage"));
  auto scan = find_bad_records(*store);
  REQUIRE(scan);
  REQUIRE(scan->bad.size() == 1);
  auto moved = quarantine_record(*store, scan->bad.front());
  REQUIRE(moved);
  REQUIRE(moved->has_value());
  auto after = read_app_summaries(*store, "");
  REQUIRE(after);
  CHECK_FALSE(*after);
  auto tick = state.update("op-test", [](const ClusterState&, Batch& b) -> Result<void> {
    b.event("Tick", "nothing");
    return {};
  });
  REQUIRE(tick);
  auto again = read_app_summaries(*store, "");
  REQUIRE(again);
  REQUIRE(*again);
  REQUIRE((*again)->size() == 1);
  CHECK((*again)->front().serving == 0);
}
