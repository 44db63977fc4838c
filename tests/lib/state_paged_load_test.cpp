// A full load reads the instance records, and the sim backend its copies, in pages, so
// a command's own thread can read between them (lib/state.cpp load_all,
// lib/sim_backend.cpp load_world). Every page is read at the first one's revision: a
// write between two pages must not show in a load that began before it, and the next
// load sees it whole.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <utility>

#include "lib/clock.hpp"
#include "lib/sim_backend.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/support/forwarding_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;

namespace {

// Runs `between` once, before the second read of a range that starts past `prefix`
// (the second page of a paged read).
class PagingWriter final : public test::ForwardingStore {
 public:
  PagingWriter(Store& inner, std::string prefix) : ForwardingStore(inner), m_prefix(std::move(prefix)) {}
  StoreResult<RangeResponse> read(const RangeRequest& r) override {
    if (r.key.starts_with(m_prefix)) {
      ++reads;
      if (reads == 2 && between) std::exchange(between, nullptr)();
    }
    return inner().read(r);
  }
  std::function<void()> between;
  int reads = 0;

 private:
  std::string m_prefix;
};

Instance make_instance(int ordinal, const std::string& node) {
  Instance i;
  i.tenant = "t0";
  i.app = "big";
  i.role = "main";
  i.ordinal = ordinal;
  i.node = node;
  i.state = InstanceState::Running;
  i.generation = 1;
  i.request = Resources{10, 1 << 20, 0, 0};
  return i;
}

constexpr int k_count = 20000;  // More than two pages of 8,192.

// k_count instances in the store, all on n1.
void fill_instances(State& writer) {
  REQUIRE(writer.update("op-fill", [&](const ClusterState&, Batch& b) -> Result<void> {
    for (int k = 0; k < k_count; ++k) b.put_instances.push_back(make_instance(k, "n1"));
    return {};
  }));
}

// k_count copies running in the sim backend's records of `store`, all on n1.
void start_copies(Store& store) {
  SimBackend sim(&store);
  std::vector<StartSpec> starts;
  for (int k = 0; k < k_count; ++k) {
    StartSpec s;
    s.instance = make_instance(k, "n1");
    starts.push_back(s);
  }
  REQUIRE(sim.start(starts, 1000));
}

// A fresh SQLite store in a temp dir, and the clock of the States that use it.
struct TestStore {
  explicit TestStore(const std::string& name) : dir(name) {
    auto opened = SqliteStore::open(dir.path() / "gaia.db");
    REQUIRE(opened);
    store = std::move(*opened);
  }
  test::TempDir dir;
  std::unique_ptr<SqliteStore> store;
  ManualClock clock;
};

}  // namespace

TEST_CASE("paged load: a write between two pages of the instances is not in the load that began before it",
          "[state][paged]") {
  TestStore t("gaia-paged-load");
  State writer(*t.store, t.clock);
  fill_instances(writer);
  auto before = writer.load();
  REQUIRE(before);

  PagingWriter paging(*t.store, "instances/");
  paging.between = [&] {
    // Moves an instance of every page and adds one: all of it, or none of it.
    REQUIRE(writer.update("op-between", [&](const ClusterState&, Batch& b) -> Result<void> {
      for (int k : {0, 9000, 17000}) b.put_instances.push_back(make_instance(k, "n2"));
      b.put_instances.push_back(make_instance(k_count, "n2"));
      return {};
    }));
  };
  State reader(paging, t.clock);
  auto loaded = reader.load();
  REQUIRE(loaded);
  CHECK(paging.reads >= 3);  // It did read in pages, and the write came between two.
  CHECK_FALSE(paging.between);
  REQUIRE(loaded->snapshot.instances.size() == before->snapshot.instances.size());
  int on_n2 = 0;
  for (const auto& i : loaded->snapshot.instances) on_n2 += i.node == "n2";
  CHECK(on_n2 == 0);
  CHECK(loaded->revision == before->revision);

  // The next load sees the write whole.
  State again(*t.store, t.clock);
  auto after = again.load();
  REQUIRE(after);
  CHECK(after->snapshot.instances.size() == static_cast<size_t>(k_count + 1));
  on_n2 = 0;
  for (const auto& i : after->snapshot.instances) on_n2 += i.node == "n2";
  CHECK(on_n2 == 4);
}

TEST_CASE("paged load: the sim backend's world is read at one revision across its pages", "[state][paged][sim]") {
  TestStore t("gaia-paged-sim");
  start_copies(*t.store);

  PagingWriter paging(*t.store, "sim/copies/");
  paging.between = [&] {
    // Another process starts one more copy meanwhile.
    SimBackend other(t.store.get());
    StartSpec s;
    s.instance = make_instance(k_count, "n2");
    REQUIRE(other.start({s}, 2000));
  };
  SimBackend reader(&paging);
  auto first = reader.observe(3000);
  REQUIRE(first);
  CHECK(paging.reads >= 3);
  CHECK(first->copies.size() == static_cast<size_t>(k_count));
  // Its next observation brings the new copy in from the store's changes.
  auto second = reader.observe(3000);
  REQUIRE(second);
  CHECK(second->copies.size() == static_cast<size_t>(k_count + 1));
}

// Found by a review: the pages after the first are read at its revision, which the
// store may compact meanwhile (etcd's auto-compaction, a SQLite store that writes lean on
// a full disk); the read then starts over at the current revision, as a full load does,
// instead of failing the observation.
TEST_CASE("paged load: the sim backend starts its read over when the store compacts between two pages",
          "[state][paged][sim]") {
  TestStore t("gaia-paged-sim-compact");
  start_copies(*t.store);

  PagingWriter paging(*t.store, "sim/copies/");
  bool compacted = false;
  paging.between = [&] {
    SimBackend other(t.store.get());
    StartSpec s;
    s.instance = make_instance(k_count, "n2");
    REQUIRE(other.start({s}, 2000));
    auto now = t.store->revision();
    REQUIRE(now);
    compacted = t.store->compact(*now).has_value();
  };
  SimBackend reader(&paging);
  auto first = reader.observe(3000);
  REQUIRE(compacted);
  REQUIRE(first);
  CHECK(first->copies.size() == static_cast<size_t>(k_count + 1));
}

namespace {

// Answers the second page of a range past `prefix` once with `code`, as a store
// compacted or restored from a backup between two pages would.
class FailingPage final : public test::ForwardingStore {
 public:
  FailingPage(Store& inner, std::string prefix, StoreErrc code)
      : ForwardingStore(inner), m_prefix(std::move(prefix)), m_code(code) {}
  StoreResult<RangeResponse> read(const RangeRequest& r) override {
    if (r.key.starts_with(m_prefix) && ++reads == 2)
      return std::unexpected(StoreError{m_code, "the page's revision is not there", "", 0});
    return inner().read(r);
  }
  int reads = 0;

 private:
  std::string m_prefix;
  StoreErrc m_code;
};

}  // namespace

TEST_CASE("paged load: a page whose revision is gone or not yet there starts the load over", "[state][paged]") {
  TestStore t("gaia-paged-retry");
  State writer(*t.store, t.clock);
  fill_instances(writer);
  for (StoreErrc code : {StoreErrc::Compacted, StoreErrc::FutureRevision}) {
    FailingPage failing(*t.store, "instances/", code);
    State reader(failing, t.clock);
    auto loaded = reader.load();
    INFO((loaded ? std::string() : format_diagnostics(loaded.error())));
    REQUIRE(loaded);
    CHECK(failing.reads > 2);  // Read again after the failed page.
    CHECK(loaded->snapshot.instances.size() == static_cast<size_t>(k_count));
  }
}
