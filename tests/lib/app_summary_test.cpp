// The app summaries every commit keeps (lib/app_summary.hpp): after any sequence of
// commits they hold what a listing made from the apps and their instances shows, on
// every store; a write that did not keep them makes readers take the full path until
// the next commit writes them all again; a summary record decodes the same by both
// decoders.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <random>

#include "lib/app_summary.hpp"
#include "lib/state.hpp"
#include "lib/timeline.hpp"
#include "store/etcd_store.hpp"
#include "store/memory_store.hpp"
#include "store/sqlite_store.hpp"
#include "tests/store/etcd_server.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;

namespace {

const std::vector<InstanceState> k_states = {InstanceState::Pending,  InstanceState::Placed,     InstanceState::Running,
                                             InstanceState::Succeeded, InstanceState::Failed, InstanceState::Terminating};

AppRecord summary_app(const std::string& tenant, const std::string& name, std::mt19937& rng) {
  AppRecord a;
  a.tenant = tenant;
  a.name = name;
  a.version = fmt::format("1.{}.0", rng() % 3);
  if (rng() % 3 == 0) a.app = "base";
  a.spec_dir = rng() % 2 ? "/specs/" + name : "";
  if (rng() % 2) a.dependencies = {"zk", "other/hdfs"};
  a.workload.priority.level = static_cast<int>(rng() % 200);
  for (const char* role : {"web", "db"}) {
    Role r;
    r.name = role;
    r.replicas = static_cast<int>(rng() % 4);
    a.workload.roles.push_back(r);
  }
  if (rng() % 4 == 0) a.scale["web"] = static_cast<int>(rng() % 6);
  a.status = rng() % 2 ? "Ready" : "Deploying";
  return a;
}

Instance summary_instance(const std::string& tenant, const std::string& app, int ordinal, std::mt19937& rng) {
  Instance i;
  i.tenant = tenant;
  i.app = app;
  i.role = rng() % 2 ? "web" : "db";
  i.ordinal = ordinal;
  i.state = k_states[rng() % k_states.size()];
  if (i.state != InstanceState::Pending) i.node = fmt::format("n{}", rng() % 3);
  return i;
}

// What the summaries must say: made from a listing of the apps and their instances.
std::vector<AppSummary> expected(State& state, const std::string& tenant_prefix) {
  auto apps = state.load_apps();
  REQUIRE(apps);
  std::vector<AppSummary> out;
  for (auto& s : app_summaries_of(*apps))
    if (tenant_prefix.empty() || (s.tenant + "/").starts_with(tenant_prefix)) out.push_back(std::move(s));
  return out;
}

std::string dump(const std::optional<std::vector<AppSummary>>& s) {
  if (!s) return "(not kept)";
  return nlohmann::json(*s).dump(1);
}

// One random change, as commands make them: new apps, spec and status changes, scales,
// deletes with and without their instances, instances created, moved between states and
// deleted.
void random_step(State& state, std::mt19937& rng) {
  auto done = state.update("op-test", [&](const ClusterState& st, Batch& b) -> Result<void> {
    std::vector<const AppRecord*> apps;
    for (const auto& [id, a] : st.apps) apps.push_back(&a);
    switch (rng() % 7) {
      case 0: {
        std::string tenant = rng() % 3 ? "default" : "team";
        b.put_apps.push_back(summary_app(tenant, fmt::format("app{}", rng() % 12), rng));
        break;
      }
      case 1:
        if (!apps.empty()) {
          AppRecord a = *apps[rng() % apps.size()];
          a.status = a.status == "Ready" ? "Degraded" : "Ready";
          b.put_apps.push_back(a);
        }
        break;
      case 2:
        if (!apps.empty()) {
          AppRecord a = *apps[rng() % apps.size()];
          a.scale["db"] = static_cast<int>(rng() % 5);
          a.version = "2.0.0";
          b.put_apps.push_back(a);
        }
        break;
      case 3:
        if (!apps.empty()) {
          const AppRecord& a = *apps[rng() % apps.size()];
          b.delete_apps.push_back({a.tenant, a.name});
          if (rng() % 2)
            for (const auto& i : st.snapshot.instances)
              if (i.tenant == a.tenant && i.app == a.name) b.delete_instances.push_back(i.key());
        }
        break;
      case 4:
        if (!apps.empty()) {
          const AppRecord& a = *apps[rng() % apps.size()];
          for (int k = 0, n = static_cast<int>(rng() % 4); k < n; ++k)
            b.put_instance(summary_instance(a.tenant, a.name, static_cast<int>(rng() % 6), rng));
        }
        break;
      case 5:
        for (const auto& i : st.snapshot.instances)
          if (rng() % 3 == 0) {
            Instance moved = i;
            moved.state = k_states[rng() % k_states.size()];
            b.put_instance(moved);
          }
        break;
      default:
        for (const auto& i : st.snapshot.instances)
          if (rng() % 4 == 0) b.delete_instances.push_back(i.key());
        break;
    }
    if (b.empty()) b.event("Tick", "nothing else changed");
    return {};
  });
  REQUIRE(done);
}

void check_random_commits(Store& store, unsigned seed, int steps) {
  SystemClock clock;
  State state(store, clock);
  std::mt19937 rng(seed);
  for (int step = 0; step < steps; ++step) {
    random_step(state, rng);
    for (const std::string prefix : {"", "default/", "team/"}) {
      auto kept = read_app_summaries(store, prefix);
      REQUIRE(kept);
      INFO("seed " << seed << ", step " << step << ", prefix '" << prefix << "'");
      REQUIRE(*kept);
      REQUIRE(dump(*kept) == dump(expected(state, prefix)));
    }
  }
}

// A memory store after `steps` random commits.
struct Committed {
  std::unique_ptr<Store> memory = MemoryStore::open();
  Store& store = *memory;
  SystemClock clock;
  State state{store, clock};
  std::mt19937 rng;

  Committed(unsigned seed, int steps) : rng(seed) {
    for (int k = 0; k < steps; ++k) random_step(state, rng);
  }

  // What the summaries say, which must be kept.
  std::vector<AppSummary> kept() {
    auto read = read_app_summaries(store, "");
    REQUIRE(read);
    REQUIRE(*read);
    return **read;
  }

  bool not_kept() {
    auto read = read_app_summaries(store, "");
    REQUIRE(read);
    return !read->has_value();
  }

  void tick() {
    auto done = state.update("op-test", [](const ClusterState&, Batch& b) -> Result<void> {
      b.event("Tick", "nothing");
      return {};
    });
    REQUIRE(done);
  }
};

}  // namespace

TEST_CASE("app summaries hold what the apps and instances say after random commits (memory)") {
  for (unsigned seed : {1u, 2u, 3u}) {
    auto store = MemoryStore::open();
    check_random_commits(*store, seed, 120);
  }
}

TEST_CASE("app summaries hold what the apps and instances say after random commits (SQLite)") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "store.db", SqliteStoreOptions{});
  REQUIRE(store);
  check_random_commits(**store, 7, 80);
}

TEST_CASE("app summaries hold what the apps and instances say after random commits (etcd)") {
  testing::EtcdServer server;
  EtcdOptions options;
  options.endpoints = {server.endpoint()};
  auto store = EtcdStore::open(options);
  REQUIRE(store);
  check_random_commits(**store, 11, 40);
}

TEST_CASE("summaries a writer did not keep are not read, and the next commit writes them all again") {
  Committed c(5, 30);
  REQUIRE(!c.kept().empty());

  // An older gaia commits as this one does, guarded by the sequence, but writes no
  // summary: here it deletes an app (its summary stays behind) and adds another.
  auto st = c.state.load();
  REQUIRE(st);
  const AppRecord& gone = st->apps.begin()->second;
  Txn old;
  old.compares.push_back({keys::k_seq, st->seq_revision});
  old.deletes.push_back({keys::app(gone.tenant, gone.name)});
  old.deletes.push_back({keys::app_status(gone.tenant, gone.name)});
  AppRecord added = summary_app("default", "added-by-old", c.rng);
  old.puts.push_back({keys::app(added.tenant, added.name), nlohmann::json(added).dump()});
  old.puts.push_back({keys::k_seq, std::to_string(st->seq + 1)});
  auto wrote = c.store.txn(old);
  REQUIRE(wrote);
  REQUIRE(wrote->succeeded);
  CHECK(c.not_kept());  // Readers take the full path.

  // Any commit, even one that touches no app, writes every summary again and deletes
  // the one of the app that is gone.
  c.tick();
  CHECK(dump(c.kept()) == dump(expected(c.state, "")));
  auto leftover = c.store.get(keys::app_summary(gone.tenant, gone.name));
  REQUIRE(leftover);
  CHECK_FALSE(*leftover);
}

TEST_CASE("a commit racing a marker delete conflicts instead of calling stale summaries kept") {
  Committed c(9, 10);
  auto base = c.state.load();
  REQUIRE(base);
  // What a quarantine does beside moving its record: the marker goes, the sequence stays.
  REQUIRE(c.store.del(keys::k_apps_summary_marker));
  Batch b;
  b.event("Tick", "nothing");
  auto committed = c.state.commit(*base, b, "op-test");
  REQUIRE(committed);
  CHECK_FALSE(*committed);
  CHECK(c.not_kept());
}

TEST_CASE("a change of event retention keeps the summaries kept") {
  Committed c(13, 10);
  REQUIRE(set_event_retention(c.state, 5, "op-test"));
  CHECK(dump(c.kept()) == dump(expected(c.state, "")));
}

TEST_CASE("a summary record that does not decode sends readers to the apps") {
  Committed c(17, 10);
  auto st = c.state.load();
  REQUIRE(st);
  REQUIRE(!st->apps.empty());
  const AppRecord& a = st->apps.begin()->second;
  REQUIRE(c.store.put(keys::app_summary(a.tenant, a.name), "{not json"));
  CHECK(c.not_kept());
  auto bad = decode_app_summary(KeyValue{keys::app_summary(a.tenant, a.name), "{not json"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().front().path == keys::app_summary(a.tenant, a.name));
}

TEST_CASE("the fast summary decoder agrees with nlohmann on random and mutated records") {
  std::mt19937 rng(21);
  int fast_taken = 0;
  for (int k = 0; k < 3000; ++k) {
    AppSummary s = app_summary(summary_app(k % 2 ? "default" : "t", fmt::format("a{}", k), rng),
                               static_cast<int>(rng() % 100));
    std::string text = nlohmann::json(s).dump();
    if (k % 3 == 1) {
      // A mutation: a byte changed, dropped or doubled somewhere.
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text[at] = "\"{}[],:0a\\ \xc3"[rng() % 12]; break;
        case 1: text.erase(at, 1); break;
        default: text.insert(at, 1, text[at]); break;
      }
    } else if (k % 3 == 2) {
      // Shapes another writer may use: unknown keys, escapes, UTF-8, floats, nulls.
      auto j = nlohmann::json::parse(text);
      switch (rng() % 5) {
        case 0: j["extra"] = {{"x", 1}}; break;
        case 1: j["version"] = "1.0\n\"beta\""; break;
        case 2: j["status"] = "Prêt"; break;
        case 3: j["desired"] = 2.0; break;
        default: j["spec_dir"] = nullptr; break;
      }
      text = j.dump();
    }
    KeyValue kv{"summary/apps/x/y", text};
    auto got = decode_app_summary(kv);
    std::optional<AppSummary> slow;
    try {
      slow = nlohmann::json::parse(text).get<AppSummary>();
    } catch (const std::exception&) {
    }
    INFO(text);
    REQUIRE(got.has_value() == slow.has_value());
    if (got) {
      CHECK(*got == *slow);
      ++fast_taken;
    }
  }
  CHECK(fast_taken > 1500);
}
