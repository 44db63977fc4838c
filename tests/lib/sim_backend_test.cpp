// The sim backend's kept world (lib/sim_backend.hpp): a SimBackend keeps the copies it
// read and brings them up to date from the store's changes, so what it observes must
// always equal what a fresh one reads from the store, whoever wrote meanwhile, through a
// compaction of the history it needs, and past a corrupt record once that is mended.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <random>

#include "lib/kept_file.hpp"
#include "lib/sim_backend.hpp"
#include "lib/sim_world_file.hpp"
#include "store/sqlite_store.hpp"
#include "tests/support/forwarding_store.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::test::TempDir;

namespace {

Instance sim_instance(int n, const std::string& node, int64_t generation) {
  Instance i;
  i.tenant = "default";
  i.app = "svc";
  i.role = "main";
  i.ordinal = n;
  i.node = node;
  i.generation = generation;
  i.request = Resources{500, 1 << 20, 0, 0};
  return i;
}

StartSpec start_of(const Instance& i) {
  StartSpec s;
  s.instance = i;
  return s;
}

// What a backend observes, in a form two observations compare in; with `all`, also
// when each copy started and whether its failure was gaia's own.
std::vector<std::string> seen(SimBackend& sim, bool all = false) {
  auto obs = sim.observe(1000);
  REQUIRE(obs);
  std::vector<std::string> out;
  for (const auto& c : obs->copies)
    out.push_back(fmt::format("{}@{}#{} {} {} {}", c.instance, c.node, c.generation, copy_phase_name(c.phase),
                              c.exit_code, c.reason) +
                  (all ? fmt::format(" {} {}", c.started_ms, c.internal) : std::string()));
  std::sort(out.begin(), out.end());
  return out;
}

// A world file in `dir` for the store "the-store", written however few copies it holds.
SimWorldFileOptions small_world_file(const TempDir& dir) { return {dir.path() / "s.world", "the-store", 0}; }

std::unique_ptr<SqliteStore> open_sim_store(const TempDir& dir) {
  auto store = SqliteStore::open(dir.path() / "store.db");
  REQUIRE(store);
  return std::move(*store);
}

}  // namespace

TEST_CASE("sim backend: two processes on one store see each other's starts and stops and failures",
          "[lib][sim_backend]") {
  TempDir dir;
  auto store = open_sim_store(dir);
  SimBackend a(store.get()), b(store.get());
  CHECK(seen(a).empty());  // Both keep an empty world now.
  CHECK(seen(b).empty());
  REQUIRE(a.start({start_of(sim_instance(0, "n1", 1)), start_of(sim_instance(1, "n2", 1))}, 10));
  CHECK(seen(b) == std::vector<std::string>{"0.main.svc.default@n1#1 Running 0 ", "1.main.svc.default@n2#1 Running 0 "});
  REQUIRE(b.stop({StopSpec{"0.main.svc.default", "n1", 1}}, 20));
  CHECK(seen(a) == std::vector<std::string>{"1.main.svc.default@n2#1 Running 0 "});
  REQUIRE(a.end_copy("1.main.svc.default", 3, "", false));
  CHECK(seen(b) == std::vector<std::string>{"1.main.svc.default@n2#1 Exited 3 "});
  REQUIRE(b.lose_copy("1.main.svc.default"));
  CHECK(seen(a).empty());
}

TEST_CASE("sim backend: a kept world equals a fresh read after any sequence of writes from either side",
          "[lib][sim_backend]") {
  TempDir dir;
  auto store = open_sim_store(dir);
  SimBackend a(store.get()), b(store.get());
  std::mt19937 rng(20261127);
  std::map<int, int64_t> generation;  // Ordinal -> the generation last started.
  for (int step = 0; step < 300; ++step) {
    SimBackend& who = rng() % 2 ? a : b;
    int n = static_cast<int>(rng() % 12);
    std::string key = sim_instance(n, "", 0).key();
    switch (rng() % 5) {
      case 0:
      case 1: {
        int64_t g = ++generation[n];
        REQUIRE(who.start({start_of(sim_instance(n, fmt::format("n{}", rng() % 4), g))}, step));
        break;
      }
      case 2: {
        auto obs = who.observe(step);
        REQUIRE(obs);
        for (const auto& c : obs->copies)
          if (c.instance == key) REQUIRE(who.stop({StopSpec{key, c.node, c.generation}}, step));
        break;
      }
      case 3:
        (void)who.end_copy(key, static_cast<int>(rng() % 3), rng() % 2 ? "" : "crashed", false);
        break;
      default:
        (void)who.lose_copy(key);
        break;
    }
    if (step % 7 == 0) {
      // Now and then the history behind both kept worlds is discarded.
      auto rev = store->revision();
      REQUIRE(rev);
      REQUIRE(store->compact(*rev));
    }
    SimBackend fresh(store.get());
    auto want = seen(fresh);
    CHECK(seen(a) == want);
    CHECK(seen(b) == want);
  }
}

TEST_CASE("sim backend: a corrupt copy record is reported and forgotten once mended", "[lib][sim_backend]") {
  TempDir dir;
  auto store = open_sim_store(dir);
  SimBackend sim(store.get());
  REQUIRE(sim.start({start_of(sim_instance(0, "n1", 1))}, 10));
  CHECK(seen(sim).size() == 1);
  // Broken behind its back: the change reaches the kept world through the history.
  REQUIRE(store->put("sim/copies/0.main.svc.default", "{not json"));
  auto broken = sim.observe(20);
  REQUIRE_FALSE(broken);
  CHECK(broken.error().code == BackendErrc::Unavailable);
  CHECK_THAT(broken.error().message, Catch::Contains("corrupt sim/copies/0.main.svc.default"));
  // Still broken on a full read.
  CHECK_FALSE(sim.observe(30));
  REQUIRE(store->del("sim/copies/0.main.svc.default"));
  CHECK(seen(sim).empty());
  REQUIRE(sim.start({start_of(sim_instance(0, "n2", 2))}, 40));
  CHECK(seen(sim) == std::vector<std::string>{"0.main.svc.default@n2#2 Running 0 "});
}

namespace {

// nlohmann's answer for a copy record, or nothing when it rejects it.
std::optional<nlohmann::json> slow_copies(const std::string& text) {
  try {
    return nlohmann::json(nlohmann::json::parse(text).get<std::vector<SimCopy>>());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<nlohmann::json> fast_copies(const std::string& text) {
  try {
    return nlohmann::json(decode_sim_copies(text));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

SimCopy random_copy(std::mt19937& rng) {
  static const std::vector<std::string> names = {"", "a", "svc", "n00012", "t\"q", "é", "x y", "role-0"};
  SimCopy c;
  c.node = names[rng() % names.size()];
  c.generation = static_cast<int64_t>(rng() % 5);
  c.phase = static_cast<CopyPhase>(rng() % 4);
  c.exit_code = rng() % 3 ? 0 : static_cast<int>(rng() % 256);
  c.reason = rng() % 2 ? "" : names[rng() % names.size()];
  c.internal = rng() % 2;
  c.started_ms = (static_cast<int64_t>(rng()) << 10);
  c.tenant = names[rng() % names.size()];
  c.app = names[rng() % names.size()];
  c.role = names[rng() % names.size()];
  c.ordinal = static_cast<int>(rng() % 1000);
  c.request = Resources{static_cast<int64_t>(rng() % 8000), static_cast<int64_t>(rng()) << 8, 0, 0};
  if (rng() % 3 == 0) c.limit = Resources{static_cast<int64_t>(rng() % 8000), static_cast<int64_t>(rng()), 1, 0};
  return c;
}

}  // namespace

TEST_CASE("sim backend: copy records decode as from_json does, mutated ones too", "[lib][sim_backend]") {
  std::mt19937 rng(5);
  static const std::string alphabet = "{}[]\":,0123456789-.eE ntrufalsx\\";
  for (int n = 0; n < 3000; ++n) {
    std::vector<SimCopy> copies;
    for (size_t k = rng() % 3; k > 0; --k) copies.push_back(random_copy(rng));
    std::string text = nlohmann::json(copies).dump();
    INFO(text);
    auto want = slow_copies(text);
    REQUIRE(want);
    CHECK(fast_copies(text) == want);
    for (int k = 1 + static_cast<int>(rng() % 2); k > 0 && !text.empty(); --k) {
      size_t at = rng() % text.size();
      if (rng() % 2) text[at] = alphabet[rng() % alphabet.size()];
      else text.erase(at, 1);
    }
    INFO(text);
    CHECK(fast_copies(text) == slow_copies(text));
  }
  // What only the slow path follows, and a record it rejects (no node).
  for (std::string text : {R"([{"node":"n1","phase":"Sleeping"}])", R"([{"node":"n1","colour":1}])",
                           R"([{"node":"n1","ordinal":1.5}])", R"([{"generation":1}])", R"({"node":"n1"})"}) {
    INFO(text);
    CHECK(fast_copies(text) == slow_copies(text));
  }
}

namespace {

}  // namespace

TEST_CASE("sim backend: the world file reads back every copy, and refuses a damaged or foreign file",
          "[lib][sim_backend][state-file]") {
  std::mt19937 rng(29);
  SimWorld world;
  for (int k = 0; k < 200; ++k) {
    auto& copies = world[fmt::format("{}.r.a.t", k)];
    for (size_t n = rng() % 3; n > 0; --n) copies.push_back(random_copy(rng));
  }
  const std::string bytes = encode_sim_world("store-a", {12, 34}, world);
  auto back = decode_sim_world(bytes, "store-a");
  REQUIRE(back);
  CHECK(back->head.revision == 12);
  CHECK(back->head.fingerprint == 34);
  CHECK(back->world == world);
  CHECK_FALSE(decode_sim_world(bytes, "store-b"));
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 200) CHECK_FALSE(decode_sim_world(bytes.substr(0, cut), "store-a"));
  for (int k = 0; k < 200; ++k) {
    std::string bad = bytes;
    size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    CHECK_FALSE(decode_sim_world(bad, "store-a"));
  }
}

TEST_CASE("sim backend: a new process starts from the world file and sees what a fresh read sees",
          "[lib][sim_backend][state-file]") {
  TempDir dir;
  auto store = open_sim_store(dir);
  const SimWorldFileOptions file = small_world_file(dir);
  SimBackend writer(store.get());
  std::mt19937 rng(20261129);
  std::map<int, int64_t> generation;
  int from_file = 0;
  for (int step = 0; step < 200; ++step) {
    int n = static_cast<int>(rng() % 30);
    std::string key = sim_instance(n, "", 0).key();
    switch (rng() % 4) {
      case 0:
      case 1:
        REQUIRE(writer.start({start_of(sim_instance(n, fmt::format("n{}", rng() % 4), ++generation[n]))}, step));
        break;
      case 2:
        (void)writer.end_copy(key, static_cast<int>(rng() % 3), rng() % 2 ? "" : "crashed", rng() % 2);
        break;
      default:
        (void)writer.lose_copy(key);
        break;
    }
    if (rng() % 3 != 0) continue;
    const bool had_file = std::filesystem::exists(file.path);
    gaia::test::PrefixReadCounter counted(*store, "sim/copies/");
    std::vector<std::string> got;
    {
      SimBackend process(&counted, file);
      got = seen(process, true);
    }
    SimBackend fresh(store.get());
    INFO("step " << step);
    REQUIRE(got == seen(fresh, true));
    if (had_file) {
      CHECK(counted.reads == 0);
      ++from_file;
    }
  }
  CHECK(from_file > 30);

  // Under another store's name, or after the history it needs was compacted, the file
  // is not used.
  REQUIRE(writer.start({start_of(sim_instance(99, "n1", 1))}, 500));
  auto rev = store->revision();
  REQUIRE(rev);
  REQUIRE(store->compact(*rev));
  for (const auto& options : {SimWorldFileOptions{file.path, "another-store", 0}, file}) {
    gaia::test::PrefixReadCounter counted(*store, "sim/copies/");
    SimBackend process(&counted, options);
    SimBackend fresh(store.get());
    CHECK(seen(process, true) == seen(fresh, true));
    CHECK(counted.reads > 0);
  }
}

TEST_CASE("sim backend: thousands of timeline events after a world file are not read while the store's ring of "
          "history hashes holds its revision, and bring it forward after",
          "[lib][sim_backend][state-file]") {
  // As the state file (tests/lib/state_file_test.cpp): a file among the store's last
  // revisions is checked against the store's history hash there, without reading the
  // events since; further behind, every change since is read to chain the hash, and a
  // file left behind while only events were written was read further behind with every
  // command, until it was written again.
  TempDir dir;
  auto store = open_sim_store(dir);
  const SimWorldFileOptions file = small_world_file(dir);
  {
    SimBackend writer(store.get());
    for (int n = 0; n < 5; ++n) REQUIRE(writer.start({start_of(sim_instance(n, "n1", 1))}, n));
  }
  auto file_revision = [&] { return peek_sim_world(*read_kept_file(file.path))->revision; };
  size_t written = 0;
  auto events = [&](size_t count) {
    Txn txn;
    for (size_t k = 0; k < count; ++k) txn.puts.push_back({fmt::format("events/{:08}", written++), "{}"});
    auto wrote = store->txn(txn);
    REQUIRE(wrote);
    REQUIRE(wrote->succeeded);
  };
  {
    SimBackend process(store.get(), file);
    (void)seen(process);
  }
  const int64_t first = file_revision();
  // Loads the world through a new process, from the file, and returns what it saw and
  // the reads of the changes since the file (of every key, and changes read).
  auto load_counted = [&] {
    gaia::test::ChangesReadCounter changes(*store);
    gaia::test::PrefixReadCounter counted(changes, "sim/copies/");
    SimBackend process(&counted, file);
    auto got = seen(process, true);
    CHECK(counted.reads == 0);  // The file was used.
    SimBackend fresh(store.get());
    CHECK(got == seen(fresh, true));
    return std::pair(changes.whole, changes.changes);
  };
  events(k_kept_reread_after + 100);
  {
    auto [whole, changes] = load_counted();
    CHECK(whole == 0);
    CHECK(changes == 0);
  }
  CHECK(file_revision() == first);  // Nothing to bring forward.
  for (int64_t k = 0; k < Store::k_history_kept; ++k) events(1);
  {
    auto [whole, changes] = load_counted();
    CHECK(whole == 1);
    CHECK(changes > k_kept_reread_after);
  }
  CHECK(file_revision() == store->revision().value());
  events(10);
  auto [whole, changes] = load_counted();
  CHECK(whole == 0);
  CHECK(changes == 0);
  CHECK(file_revision() == store->revision().value() - 1);
}
