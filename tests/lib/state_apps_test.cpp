// State::load_apps, what `gaia get apps` reads: the apps as a full load has them, and the
// serving instances of each counted from a scan of the instance records that must agree
// with decoding them, on every store and for records the scan does not follow.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "lib/codec.hpp"
#include "lib/state.hpp"
#include "store/etcd_store.hpp"
#include "store/memory_store.hpp"
#include "store/sqlite_store.hpp"
#include "tests/store/etcd_server.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;

namespace {

AppRecord listed_app(const std::string& tenant, const std::string& name) {
  AppRecord a;
  a.tenant = tenant;
  a.name = name;
  a.version = "1.0.0";
  Role role;
  role.name = "web";
  role.replicas = 3;
  a.workload.roles.push_back(role);
  return a;
}

Instance listed_instance(const std::string& tenant, const std::string& app, int ordinal, InstanceState state) {
  Instance i;
  i.tenant = tenant;
  i.app = app;
  i.role = "web";
  i.ordinal = ordinal;
  i.state = state;
  if (state != InstanceState::Pending) i.node = "n1";
  return i;
}

// The view a full load gives, for comparison.
nlohmann::json apps_dump(const AppsState& s) {
  nlohmann::json j;
  for (const auto& [id, a] : s.apps) j["apps"][id] = a;
  j["serving"] = s.serving;
  j["revision"] = s.revision;
  return j;
}

// Apps in two tenants with instances in every state, and raw records that a scan of
// the first fields could misread: a label named `state`, escapes, another key order,
// a missing or unknown state.
void fill_listing(Store& store) {
  SystemClock clock;
  State state(store, clock);
  auto written = state.update("op-test", [](const ClusterState&, Batch& b) -> Result<void> {
    b.put_apps = {listed_app("default", "web"), listed_app("default", "db"), listed_app("other", "web")};
    b.put_instances = {listed_instance("default", "web", 0, InstanceState::Running),
                       listed_instance("default", "web", 1, InstanceState::Succeeded),
                       listed_instance("default", "web", 2, InstanceState::Failed),
                       listed_instance("default", "db", 0, InstanceState::Placed),
                       listed_instance("default", "db", 1, InstanceState::Terminating),
                       listed_instance("other", "web", 0, InstanceState::Running)};
    // A pending instance whose label is called state and says Running.
    Instance tricky = listed_instance("default", "db", 2, InstanceState::Pending);
    tricky.labels = {{"state", "Running"}, {"quote", "a \"b\" \\"}};
    tricky.pending_reason = "waits for \"capacity\"";
    b.put_instances.push_back(tricky);
    return {};
  });
  REQUIRE(written);
  // Written as other writers (or older gaia) might: keys in another order with spaces,
  // an escaped app name, no state at all, and a state this gaia does not know.
  REQUIRE(store.put("instances/3.web.web.default",
                    R"({ "state" : "Running", "ordinal": 3, "role": "web", "app": "web", "tenant": "default" })"));
  REQUIRE(store.put("instances/4.web.web.default",
                    R"({"tenant":"default","app":"w\u0065b","role":"web","ordinal":4,"state":"Running"})"));
  REQUIRE(store.put("instances/5.web.web.default", R"({"tenant":"default","app":"web","role":"web","ordinal":5})"));
  REQUIRE(store.put("instances/6.web.web.default",
                    R"({"tenant":"default","app":"web","role":"web","ordinal":6,"state":"Sleeping"})"));
}

void check_listing(Store& store) {
  fill_listing(store);
  SystemClock clock;
  State state(store, clock);
  auto apps = state.load_apps();
  REQUIRE(apps);
  auto full = state.load();
  REQUIRE(full);
  CHECK(apps_dump(*apps) == apps_dump(apps_state_of(*full)));
  CHECK(apps->apps.size() == 3);
  // web: Running, Succeeded, the reordered record and the escaped one; not Failed, the
  // one without a state or the unknown state.
  CHECK(apps->serving_count("default/web") == 4);
  CHECK(apps->serving_count("default/db") == 0);
  CHECK(apps->serving_count("other/web") == 1);
  CHECK(apps->serving.count("default/db") == 0);
  CHECK(apps->revision == full->revision);
  CHECK(apps->apps.at("default/web").status == full->apps.at("default/web").status);
}

}  // namespace

TEST_CASE("load_apps counts serving instances as a full load does (SQLite)") {
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "store.db", SqliteStoreOptions{});
  REQUIRE(store);
  check_listing(**store);
}

TEST_CASE("load_apps counts serving instances as a full load does (memory)") {
  auto store = MemoryStore::open();
  check_listing(*store);
}

TEST_CASE("load_apps counts serving instances as a full load does (etcd)") {
  testing::EtcdServer server;
  EtcdOptions options;
  options.endpoints = {server.endpoint()};
  auto store = EtcdStore::open(options);
  REQUIRE(store);
  check_listing(**store);
}

TEST_CASE("load_apps reads the app status key and reports a record that does not decode") {
  auto memory = MemoryStore::open();
  Store& store = *memory;
  SystemClock clock;
  State state(store, clock);
  REQUIRE(state.update("op-test", [](const ClusterState&, Batch& b) -> Result<void> {
    b.put_apps = {listed_app("default", "web")};
    return {};
  }));
  AppStatus ready;
  ready.status = "Ready";
  REQUIRE(store.put(keys::app_status("default", "web"), nlohmann::json(ready).dump()));
  auto apps = state.load_apps();
  REQUIRE(apps);
  CHECK(apps->apps.at("default/web").status == "Ready");

  REQUIRE(store.put("instances/0.web.web.default", R"({"tenant":"default","app":"web","state":)"));
  auto broken = state.load_apps();
  REQUIRE_FALSE(broken);
  CHECK(broken.error().front().message.find("corrupt record") != std::string::npos);
}

TEST_CASE("load_apps reads instances in pages at one revision") {
  // More instances than one page (20,000 where the store has no page size of its own).
  gaia::test::TempDir dir;
  auto store = SqliteStore::open(dir.path() / "store.db", SqliteStoreOptions{});
  REQUIRE(store);
  SystemClock clock;
  State state(**store, clock);
  REQUIRE(state.update("op-test", [](const ClusterState&, Batch& b) -> Result<void> {
    b.put_apps = {listed_app("default", "web"), listed_app("default", "db")};
    for (int k = 0; k < 20500; ++k)
      b.put_instances.push_back(listed_instance("default", k % 2 ? "web" : "db", k,
                                                k % 5 == 0 ? InstanceState::Pending : InstanceState::Running));
    return {};
  }));
  auto apps = state.load_apps();
  REQUIRE(apps);
  // Of 10,250 instances each, every fifth k is pending: 2,050 of db's (even k), 2,050
  // of web's.
  CHECK(apps->serving_count("db") == 0);
  CHECK(apps->serving_count("default/db") == 10250 - 2050);
  CHECK(apps->serving_count("default/web") == 10250 - 2050);
}
