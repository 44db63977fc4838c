// State::load_shared and update_shared (lib/state.hpp): the kept state handed out
// without a copy must never change under its holder, while a refresh nobody else sees
// is applied in place (the reason they exist: a copy of a large cluster costs tens of ms).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

#include "lib/clock.hpp"
#include "lib/codec.hpp"
#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::test::TempDir;

namespace {

Node shared_test_node(const std::string& name) {
  Node n;
  n.name = name;
  n.capacity = Resources{4000, 8LL << 30, 0, 0};
  return n;
}

Result<ClusterState> add_node(State& state, const std::string& name) {
  return state.update("op-test", [&](const ClusterState&, Batch& b) -> Result<void> {
    b.put_nodes.push_back(shared_test_node(name));
    return {};
  });
}

// A store with a following State (this process) and a plain one (another process).
struct SharedFixture {
  TempDir dir;
  std::unique_ptr<SqliteStore> store = open_store(dir);
  SystemClock clock;
  State state{*store, clock, following()};
  State other{*store, clock};

  static std::unique_ptr<SqliteStore> open_store(const TempDir& d) {
    auto opened = SqliteStore::open(d.path() / "store.db");
    if (!opened) throw std::runtime_error(opened.error().to_string());
    return std::move(*opened);
  }
  static StateOptions following() {
    StateOptions o;
    o.follow_changes = true;
    return o;
  }
};

std::vector<std::string> node_names(const ClusterState& st) {
  std::vector<std::string> out;
  for (const auto& n : st.snapshot.nodes) out.push_back(n.name);
  return out;
}

}  // namespace

TEST_CASE("state: a shared state never changes under its holder while later loads see the changes",
          "[lib][state][shared]") {
  SharedFixture f;
  State& state = f.state;
  State& other = f.other;
  REQUIRE(add_node(state, "n1"));

  auto held = state.load_shared();
  REQUIRE(held);
  const nlohmann::json before = (*held)->snapshot.nodes;
  int64_t revision = (*held)->revision;

  REQUIRE(add_node(other, "n2"));
  auto now = state.load_shared();
  REQUIRE(now);
  CHECK(node_names(**now) == std::vector<std::string>{"n1", "n2"});
  CHECK(now->get() != held->get());
  // The holder's state is as it was.
  CHECK(nlohmann::json((*held)->snapshot.nodes) == before);
  CHECK((*held)->revision == revision);
  CHECK(node_names(**held) == std::vector<std::string>{"n1"});
  // A copy from load() is the same state.
  auto copy = state.load();
  REQUIRE(copy);
  CHECK(node_names(*copy) == std::vector<std::string>{"n1", "n2"});
}

TEST_CASE("state: with no other holder a refresh is applied to the kept state itself", "[lib][state][shared]") {
  SharedFixture f;
  State& state = f.state;
  State& other = f.other;
  REQUIRE(add_node(state, "n1"));
  auto first = state.load_shared();
  REQUIRE(first);
  const ClusterState* kept = first->get();
  first->reset();
  REQUIRE(add_node(other, "n2"));
  auto second = state.load_shared();
  REQUIRE(second);
  CHECK(second->get() == kept);
  CHECK(node_names(**second) == std::vector<std::string>{"n1", "n2"});
}

TEST_CASE("state: update_shared decides on the current state and returns the state after its commit",
          "[lib][state][shared]") {
  SharedFixture f;
  State& state = f.state;
  State& other = f.other;
  REQUIRE(add_node(state, "n1"));
  auto held = state.load_shared();  // Held across the update: the update must not change it.
  REQUIRE(held);
  REQUIRE(add_node(other, "n2"));
  std::vector<std::string> decided_on;
  auto after = state.update_shared("op-test", [&](const ClusterState& st, Batch& b) -> Result<void> {
    decided_on = node_names(st);
    b.put_nodes.push_back(shared_test_node("n3"));
    return {};
  });
  REQUIRE(after);
  CHECK(decided_on == std::vector<std::string>{"n1", "n2"});
  CHECK(node_names(**after) == std::vector<std::string>{"n1", "n2", "n3"});
  CHECK(node_names(**held) == std::vector<std::string>{"n1"});
  // Nothing to do: the state as it is, nothing written.
  auto rev = f.store->revision();
  REQUIRE(rev);
  auto same = state.update_shared("op-test", [](const ClusterState&, Batch&) -> Result<void> { return {}; });
  REQUIRE(same);
  CHECK((*same)->revision == *rev);
  CHECK(node_names(**same) == std::vector<std::string>{"n1", "n2", "n3"});
}
