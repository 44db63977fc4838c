// Labels (lib/labels.hpp): copies share one map until one of them changes, and no change
// through one copy is ever seen through another; LabelPool shares equal sets between the
// instances a load decodes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <atomic>
#include <random>
#include <string>
#include <thread>

#include "lib/clock.hpp"
#include "lib/codec.hpp"
#include "lib/instance_scan.hpp"
#include "lib/labels.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;

TEST_CASE("labels: a copy shares the map and a change to one copy leaves the others as they were") {
  Labels a{{"gaia.io/app", "web"}, {"tier", "front"}};
  Labels b = a;
  CHECK(b.shares_with(a));
  CHECK(b == a);

  b.set("tier", "back");
  CHECK_FALSE(b.shares_with(a));
  CHECK(a.at("tier") == "front");
  CHECK(b.at("tier") == "back");

  Labels c = a;
  CHECK(c.erase("tier") == 1);
  CHECK(c.erase("absent") == 0);
  CHECK(a.size() == 2);
  CHECK(c.size() == 1);
  CHECK_FALSE(c.contains("tier"));
  CHECK(a.contains("tier"));

  Labels d = a;
  d.clear();
  CHECK(d.empty());
  CHECK(a.size() == 2);
  CHECK(d == Labels{});
  CHECK(d.begin() == d.end());
}

TEST_CASE("labels: the only holder changes its map in place") {
  Labels a{{"k", "v"}};
  const auto* before = &a.map();
  a.set("k2", "v2");
  CHECK(&a.map() == before);
  {
    Labels held = a;
    a.set("k3", "v3");  // Shared now: a gets a map of its own.
    CHECK(&a.map() != before);
    CHECK(held.size() == 2);
  }
  CHECK(a.size() == 3);
  // Erasing the last label leaves labels equal to none at all.
  Labels e{{"only", "one"}};
  e.erase("only");
  CHECK(e == Labels{});
  CHECK(e.empty());
}

TEST_CASE("labels: a reference into a sole holder's map stays valid across its changes") {
  // The one holder changes its map in place and never frees it on erase or clear, so a
  // reference taken before sees the change, as one into a std::map would (under ASan a
  // freed map would be a use after free here).
  Labels a{{"x", "1"}};
  const Labels::Map& m = a;
  a.set("y", "2");
  CHECK(m.size() == 2);
  a.erase("x");
  a.erase("y");
  CHECK(m.empty());
  a.set("z", "3");
  CHECK(m.at("z") == "3");
  a.clear();
  CHECK(m.empty());
  CHECK(a.empty());
  // Shared, a change goes to a map of the changed holder's own: the reference keeps
  // showing the labels it was taken from, which the other holder still has.
  Labels b{{"k", "1"}};
  Labels other = b;
  const Labels::Map& mb = b;
  b.set("k", "2");
  CHECK(mb.at("k") == "1");
  CHECK(other.at("k") == "1");
  CHECK(b.at("k") == "2");
  b.clear();
  CHECK(b.empty());
  CHECK(other.at("k") == "1");
}

TEST_CASE("labels: a copy changed just after another thread let go of its copy") {
  // The writer finds the map no longer shared and changes it in place; the reader's
  // reads before it let go must not see the change (the acquire fence in Labels::sole).
  for (int round = 0; round < 200; ++round) {
    Labels a{{"gaia.io/app", "web"}, {"tier", "front"}};
    Labels c = a;
    std::atomic<bool> done{false};
    std::string seen;
    std::thread reader([&, c = std::move(c)]() mutable {
      seen = c.at("tier");
      c = Labels();
      done.store(true, std::memory_order_release);
    });
    while (!done.load(std::memory_order_acquire)) std::this_thread::yield();
    a.set("tier", "back");
    reader.join();
    CHECK(seen == "front");
    CHECK(a.at("tier") == "back");
  }
}

TEST_CASE("labels: equality is by content, against another set or a std::map") {
  Labels a{{"x", "1"}, {"y", "2"}};
  Labels b;
  b.set("y", "2");
  b.set("x", "1");
  CHECK(a == b);
  CHECK_FALSE(a.shares_with(b));
  CHECK(a == Labels::Map{{"x", "1"}, {"y", "2"}});
  b.set("x", "3");
  CHECK_FALSE(a == b);
  // The map a function of `const std::map&` gets is the labels' own.
  const Labels::Map& m = a;
  CHECK(&m == &a.map());
}

TEST_CASE("labels: JSON is the object of a std::map, both ways") {
  Labels a{{"b", "2"}, {"a", "1"}};
  nlohmann::json j = a;
  CHECK(j.dump() == R"({"a":"1","b":"2"})");
  CHECK(j.get<Labels>() == a);
  CHECK(nlohmann::json::object().get<Labels>().empty());
  CHECK_THROWS(nlohmann::json::parse(R"({"a":1})").get<Labels>());
}

TEST_CASE("labels: copies on many threads, each changing its own, see only their own changes") {
  Labels base{{"gaia.io/app", "web"}, {"gaia.io/role", "main"}};
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 2000; ++k) {
        Labels mine = base;
        mine.set("thread", std::to_string(t));
        Labels again = mine;
        again.set("thread", "other");
        if (mine.at("thread") != std::to_string(t) || base.contains("thread") || again.at("thread") != "other")
          ++wrong[static_cast<size_t>(t)];
      }
    });
  for (auto& th : threads) th.join();
  CHECK(wrong == std::vector<int>(4, 0));
  CHECK(base.size() == 2);
}

TEST_CASE("label pool: equal sets are shared, a later name wins, and it stops growing at its bound") {
  LabelPool pool;
  Labels a = pool.get({{"gaia.io/app", "web"}, {"gaia.io/role", "main"}});
  Labels b = pool.get({{"gaia.io/app", "web"}, {"gaia.io/role", "main"}});
  Labels c = pool.get({{"gaia.io/app", "web"}, {"gaia.io/role", "db"}});
  CHECK(a.shares_with(b));
  CHECK_FALSE(a.shares_with(c));
  CHECK(a.at("gaia.io/role") == "main");
  CHECK(c.at("gaia.io/role") == "db");
  CHECK(pool.size() == 2);

  // A name twice: the last value, as a JSON object read by nlohmann gives it.
  CHECK(pool.get({{"k", "1"}, {"k", "2"}}).at("k") == "2");
  // "a"+"b\0c" must not be taken for "a\0b"+"c": the separator is part of the key.
  Labels x = pool.get({{"ab", "c"}});
  Labels y = pool.get({{"a", "bc"}});
  CHECK(x != y);
  CHECK(pool.get({}).empty());

  // A shared set changed through one instance stays as it was in the pool.
  Labels changed = pool.get({{"gaia.io/app", "web"}, {"gaia.io/role", "main"}});
  changed.set("gaia.io/role", "edited");
  CHECK(pool.get({{"gaia.io/app", "web"}, {"gaia.io/role", "main"}}).at("gaia.io/role") == "main");

  for (size_t k = 0; k < LabelPool::k_max_entries + 100; ++k) {
    std::string v = std::to_string(k);
    Labels l = pool.get({{"n", v}});
    REQUIRE(l.at("n") == v);
  }
  CHECK(pool.size() == LabelPool::k_max_entries);
}

TEST_CASE("label pool: the instances a load decodes share their role's labels, and decode as nlohmann does") {
  gaia::test::TempDir dir("gaia-labels");
  auto store = SqliteStore::open(dir.path() / "store.db");
  REQUIRE(store);
  SystemClock clock;
  State state(**store, clock);
  std::vector<Instance> made;
  for (int ordinal = 0; ordinal < 3; ++ordinal)
    for (std::string role : {"a", "b"}) {
      Instance i;
      i.tenant = "t";
      i.app = "app";
      i.role = role;
      i.ordinal = ordinal;
      i.labels = Labels{{"gaia.io/app", "app"}, {"gaia.io/role", role}, {"tier", ordinal == 2 ? "odd" : "even"}};
      made.push_back(i);
    }
  REQUIRE(state.update("op-test", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_instances = made;
    return {};
  }));
  auto loaded = state.load();
  REQUIRE(loaded);
  const auto& insts = loaded->snapshot.instances;
  REQUIRE(insts.size() == 6);
  auto of = [&](int ordinal, const std::string& role) -> const Instance& {
    for (const auto& i : insts)
      if (i.ordinal == ordinal && i.role == role) return i;
    FAIL("no instance " << ordinal << "." << role);
    return insts.front();
  };
  CHECK(of(0, "a").labels.shares_with(of(1, "a").labels));
  CHECK_FALSE(of(0, "a").labels.shares_with(of(0, "b").labels));
  CHECK_FALSE(of(0, "a").labels.shares_with(of(2, "a").labels));  // tier differs.
  for (const auto& i : insts) {
    // The fast path's labels are nlohmann's, field for field.
    auto slow = nlohmann::json::parse(nlohmann::json(i).dump()).get<Instance>();
    CHECK(slow.labels == i.labels);
    CHECK(i.labels.at("gaia.io/role") == i.role);
  }
  // Changing one loaded instance's labels changes no other.
  Instance edited = of(0, "a");
  edited.labels.set("tier", "changed");
  CHECK(of(1, "a").labels.at("tier") == "even");
}
