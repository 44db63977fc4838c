// The config and label centers over a real SQLite file: writes with history, bounded
// history, optimistic concurrency, tenant-beats-global resolution, parent and child keys,
// labels of apps (per tenant), tenants and nodes.
#include "lib/config_center.hpp"

#include <catch2/catch.hpp>

#include "store/sqlite_store.hpp"
#include "lib/state.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using json = nlohmann::json;

namespace {

struct Fixture {
  test::TempDir dir;
  std::unique_ptr<Store> store;

  Fixture() {
    auto s = SqliteStore::open(dir.path() / "gaia.db");
    REQUIRE(s);
    store = std::move(*s);
  }

  // Sets one key, expecting it unchanged since the last load.
  int64_t set(const std::string& scope, const std::string& key, json value) {
    auto centers = StoreConfigSource::load(*store);
    REQUIRE(centers);
    std::map<std::string, int64_t> expected;
    if (const ConfigEntry* e = centers->find(scope, key)) expected[key] = e->revision;
    auto w = write_config(*store, scope, {ConfigEdit{key, std::move(value)}}, expected, "op-test", "2026-01-01T00:00:00Z");
    REQUIRE(w);
    REQUIRE(w->succeeded);
    return w->revision;
  }

  StoreConfigSource load() {
    auto centers = StoreConfigSource::load(*store);
    REQUIRE(centers);
    return std::move(*centers);
  }
};

ConfigEntry entry(const std::string& key, json value, int64_t rev) { return ConfigEntry{"_global", key, value, rev, "t"}; }

}  // namespace

TEST_CASE("config center: a tenant's value beats the global one, revisions come from the store", "[config_center]") {
  Fixture f;
  int64_t g = f.set(k_global_scope, "web.replicas", 3);
  int64_t t = f.set("shop", "web.replicas", 5);
  CHECK(t > g);
  auto centers = f.load();
  auto shop = centers.snapshot("shop");
  auto other = centers.snapshot("other");
  REQUIRE(shop.get_config("web.replicas"));
  CHECK(shop.get_config("web.replicas")->value == 5);
  CHECK(shop.get_config("web.replicas")->revision == t);
  CHECK(shop.get_config("web.replicas")->source == "center:shop");
  CHECK(other.get_config("web.replicas")->value == 3);
  CHECK(other.get_config("web.replicas")->revision == g);
  // Parents are readable as objects.
  CHECK(shop.get_config("web")->value == json{{"replicas", 5}});
  CHECK_FALSE(shop.get_config("nothing"));
}

TEST_CASE("config center: history per key, oldest first, bounded, with unsets", "[config_center]") {
  Fixture f;
  std::vector<int64_t> revs;
  for (int v = 1; v <= 4; ++v) revs.push_back(f.set(k_global_scope, "a.b", v));
  f.set(k_global_scope, "a.bc", "other key");  // A sibling whose name extends a.b.
  auto centers = f.load();
  auto w = write_config(*f.store, k_global_scope, {ConfigEdit{"a.b", std::nullopt}},
                        {{"a.b", centers.find(k_global_scope, "a.b")->revision}}, "op-unset", "t");
  REQUIRE(w);
  REQUIRE(w->succeeded);
  auto h = config_history(*f.store, k_global_scope, "a.b");
  REQUIRE(h);
  REQUIRE(h->size() == 5);
  for (size_t k = 0; k < 4; ++k) {
    CHECK(h->at(k).revision == revs[k]);
    CHECK(h->at(k).value == json(static_cast<int>(k) + 1));
    CHECK(h->at(k).op == "op-test");
  }
  CHECK_FALSE(h->back().value.has_value());
  CHECK(h->back().op == "op-unset");
  CHECK_FALSE(f.load().find(k_global_scope, "a.b"));

  // Bounded: only the newest `history_limit` writes stay.
  for (int v = 0; v < 5; ++v) {
    auto c = f.load();
    const ConfigEntry* cur = c.find(k_global_scope, "x");
    std::map<std::string, int64_t> expected;
    if (cur) expected["x"] = cur->revision;
    REQUIRE(write_config(*f.store, k_global_scope, {ConfigEdit{"x", v}}, expected, "op", "t", 3)->succeeded);
  }
  auto hx = config_history(*f.store, k_global_scope, "x");
  REQUIRE(hx->size() == 3);
  CHECK(hx->front().value == 2);
  CHECK(hx->back().value == 4);
}

TEST_CASE("config center: a write guarded by a stale revision writes nothing", "[config_center]") {
  Fixture f;
  int64_t first = f.set(k_global_scope, "k", 1);
  f.set(k_global_scope, "k", 2);
  auto rev = f.store->revision();
  auto w = write_config(*f.store, k_global_scope, {ConfigEdit{"k", 3}}, {{"k", first}}, "op", "t");
  REQUIRE(w);
  CHECK_FALSE(w->succeeded);
  CHECK(*f.store->revision() == *rev);
  CHECK(f.load().find(k_global_scope, "k")->value == 2);
  // Creating a key that exists (expected 0) fails too.
  CHECK_FALSE(write_config(*f.store, k_global_scope, {ConfigEdit{"k", 4}}, {}, "op", "t")->succeeded);
}

TEST_CASE("resolve_config: deeper keys refine shallower ones, later layers replace subtrees", "[config_center]") {
  ConfigLayer global = {entry("web", {{"replicas", 3}, {"port", 80}}, 10), entry("web.replicas", 5, 12)};
  auto r = resolve_config({global});
  CHECK(r.at("web").value == json({{"replicas", 5}, {"port", 80}}));
  CHECK(r.at("web").revision == 12);          // Shaped by both writes.
  CHECK(r.at("web.port").revision == 10);     // Only the object write.
  CHECK(r.at("web.replicas").revision == 12);
  CHECK(r.at("web.replicas").value == 5);

  // A tenant's `web` replaces the whole global subtree: web.port is gone for it, and
  // the global writes no longer count for its revisions.
  ConfigLayer tenant = {ConfigEntry{"shop", "web", {{"replicas", 7}}, 20, "center:shop"}};
  auto t = resolve_config({global, tenant});
  CHECK(t.at("web").value == json({{"replicas", 7}}));
  CHECK_FALSE(t.count("web.port"));
  CHECK(t.at("web.replicas").revision == 20);
  CHECK(t.at("web.replicas").source == "center:shop");

  // A deeper key under a scalar turns it into an object.
  auto s = resolve_config({{entry("a", 1, 1), entry("a.b", 2, 2)}});
  CHECK(s.at("a").value == json({{"b", 2}}));
}

TEST_CASE("config keys: what is valid and which keys overlap", "[config_center]") {
  CHECK(config_key_problem("web.replicas").empty());
  CHECK(config_key_problem("a_b-c.D9").empty());
  CHECK_FALSE(config_key_problem("").empty());
  CHECK_FALSE(config_key_problem(".a").empty());
  CHECK_FALSE(config_key_problem("a..b").empty());
  CHECK_FALSE(config_key_problem("a.").empty());
  CHECK_FALSE(config_key_problem("a/b").empty());
  CHECK_FALSE(config_key_problem("a b").empty());
  CHECK_FALSE(config_key_problem(std::string(254, 'a')).empty());
  CHECK(config_keys_overlap("web", "web"));
  CHECK(config_keys_overlap("web", "web.port"));
  CHECK(config_keys_overlap("web.port", "web"));
  CHECK_FALSE(config_keys_overlap("web", "webx"));
  CHECK_FALSE(config_keys_overlap("web.port", "web.ports"));
}

TEST_CASE("label center: app labels per tenant, tenant labels, node labels from node records", "[config_center]") {
  Fixture f;
  auto w = write_labels(*f.store, "app", "shop", "web", {LabelChange{"tier", "gold"}, LabelChange{"gaia.io/team", "a"}}, {});
  REQUIRE(w);
  REQUIRE(w->succeeded);
  REQUIRE(write_labels(*f.store, "tenant", "", "shop", {LabelChange{"cost", "42"}}, {})->succeeded);
  ManualClock clock;
  State state(*f.store, clock);
  auto st = state.load();
  REQUIRE(st);
  Batch b;
  Node n;
  n.name = "n1";
  n.labels = {{"disk", "ssd"}};
  b.put_nodes.push_back(n);
  REQUIRE(state.commit(*st, b, "op").value());
  int64_t node_rev = *f.store->revision();

  auto centers = f.load();
  auto shop = centers.snapshot("shop");
  CHECK(shop.get_label("app", "web", "tier")->value == "gold");
  CHECK(shop.get_label("app", "web", "gaia.io/team")->value == "a");
  CHECK(shop.get_label("app", "web", "tier")->revision == w->revision);
  CHECK(shop.get_label("tenant", "shop", "cost")->value == "42");
  CHECK(shop.get_label("node", "n1", "disk")->value == "ssd");
  CHECK(shop.get_label("node", "n1", "disk")->revision == node_rev);
  // Another tenant's app of the same name has no labels; tenants and nodes are shared.
  auto other = centers.snapshot("other");
  CHECK_FALSE(other.get_label("app", "web", "tier"));
  CHECK(other.get_label("tenant", "shop", "cost"));
  CHECK(other.get_label("node", "n1", "disk"));

  // Removing, guarded by the revision read.
  const LabelEntry* tier = centers.find_label("app", "shop", "web", "tier");
  REQUIRE(tier);
  REQUIRE(write_labels(*f.store, "app", "shop", "web", {LabelChange{"tier", std::nullopt}}, {{"tier", tier->revision}})
              ->succeeded);
  CHECK_FALSE(f.load().snapshot("shop").get_label("app", "web", "tier"));
}

TEST_CASE("label center: what-if edits of labels change neither a snapshot taken before nor the copy they came from",
          "[config_center]") {
  Fixture f;
  REQUIRE(write_labels(*f.store, "app", "shop", "web", {LabelChange{"tier", "gold"}}, {})->succeeded);
  REQUIRE(write_labels(*f.store, "tenant", "", "shop", {LabelChange{"cost", "42"}}, {})->succeeded);
  auto centers = f.load();
  auto before = centers.snapshot("shop");
  StoreConfigSource what_if = centers;
  what_if.put_label(LabelEntry{"app", "shop", "web", "tier", "silver", 99});
  what_if.put_label(LabelEntry{"node", "", "n9", "disk", "hdd", 100});
  what_if.erase_label("tenant", "", "shop", "cost");
  // Snapshots look labels up in the list as it was when they were taken.
  CHECK(before.get_label("app", "web", "tier")->value == "gold");
  CHECK(before.get_label("tenant", "shop", "cost")->value == "42");
  CHECK_FALSE(before.get_label("node", "n9", "disk"));
  auto after = what_if.snapshot("shop");
  CHECK(after.get_label("app", "web", "tier")->value == "silver");
  CHECK(after.get_label("app", "web", "tier")->revision == 99);
  CHECK(after.get_label("node", "n9", "disk")->source == "node");
  CHECK_FALSE(after.get_label("tenant", "shop", "cost"));
  CHECK(centers.snapshot("shop").get_label("app", "web", "tier")->value == "gold");
  CHECK(centers.snapshot("shop").get_label("tenant", "shop", "cost")->source == "center:labels");
  // Labels set in the snapshot itself (a config file's) come before the center's.
  after.labels["app"]["web"]["tier"] = ConfigValue{"bronze", 0, "file:x"};
  CHECK(after.get_label("app", "web", "tier")->value == "bronze");
}

TEST_CASE("config center: what-if edits change the loaded copy only", "[config_center]") {
  Fixture f;
  f.set(k_global_scope, "k", 1);
  auto centers = f.load();
  StoreConfigSource what_if = centers;
  what_if.put(ConfigEntry{k_global_scope, "k", 2, 99, ""});
  what_if.put(ConfigEntry{"shop", "k", 3, 100, ""});
  CHECK(what_if.snapshot("x").get_config("k")->value == 2);
  CHECK(what_if.snapshot("shop").get_config("k")->value == 3);
  what_if.erase("shop", "k");
  CHECK(what_if.snapshot("shop").get_config("k")->value == 2);
  CHECK(centers.snapshot("shop").get_config("k")->value == 1);
  CHECK(f.load().snapshot("shop").get_config("k")->value == 1);
}
