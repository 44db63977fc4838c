// The state kept between processes (StateOptions::state_file, lib/state_file.hpp): a
// process that starts from the file must hold, field for field, the state a fresh read
// of the store gives, through random histories, a store re-created or restored from a
// backup, compacted history, and a damaged or half-written file; and it must not read
// the instances the file holds.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <random>

#include <sys/stat.h>
#include <unistd.h>

#include "lib/codec.hpp"
#include "lib/kept_file.hpp"
#include "lib/sim_backend.hpp"
#include "lib/sim_world_file.hpp"
#include "lib/state.hpp"
#include "lib/state_apply.hpp"
#include "lib/state_file.hpp"
#include "store/sqlite_store.hpp"
#include "tests/support/forwarding_store.hpp"
#include "tests/support/unchained_commit.hpp"
#include "tests/support/state_history.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using gaia::test::dump;
using gaia::test::random_change;

namespace {

StateOptions with_file(const std::filesystem::path& file, const std::string& store_id = "the-store") {
  StateOptions o;
  o.follow_changes = true;
  o.state_file = file;
  o.store_id = store_id;
  o.state_file_min_records = 0;  // The small states of these tests get a file too.
  return o;
}

// What a new process on `store` loads first, and how many instance reads that took.
std::pair<nlohmann::json, int> load_as_new_process(Store& store, const Clock& clock, const StateOptions& options) {
  gaia::test::PrefixReadCounter counted(store, "instances/");
  State process(counted, clock, options);
  auto st = process.load();
  REQUIRE(st);
  return {dump(*st), counted.reads};
}

nlohmann::json fresh(Store& store, const Clock& clock) {
  auto st = State(store, clock).load();
  REQUIRE(st);
  return dump(*st);
}

// A new process on `store` refuses the file: it reads the store and holds what a fresh
// read holds.
void check_read_afresh(Store& store, const Clock& clock, const StateOptions& options) {
  auto [got, reads] = load_as_new_process(store, clock, options);
  CHECK(got == fresh(store, clock));
  CHECK(reads > 0);
}

// Commits random changes through `writer` until `store` is at `revision` or past it.
void write_until(Store& store, State& writer, std::mt19937& rng, int first_step, int64_t revision) {
  for (int step = first_step; store.revision().value() < revision; ++step) random_change(writer, rng, step);
}

// What most cases begin with: a SQLite store in a temp dir, a writer on it, a state file
// for new processes, and random numbers.
struct OneStore {
  gaia::test::TempDir dir;
  std::unique_ptr<SqliteStore> owned;
  ManualClock clock;
  std::filesystem::path file;
  StateOptions options;
  std::mt19937 rng;

  explicit OneStore(unsigned seed, const std::string& file_name = "s.state", SqliteStoreOptions store_options = {})
      : owned(open(dir.path() / "s.db", store_options)),
        file(dir.path() / file_name),
        options(with_file(file)),
        rng(seed) {}
  Store& store() { return *owned; }
  // `count` random commits through `writer`, steps numbered from `first`.
  void changes(State& writer, int first, int count) {
    for (int step = first; step < first + count; ++step) random_change(writer, rng, step);
  }

 private:
  static std::unique_ptr<SqliteStore> open(const std::filesystem::path& path, const SqliteStoreOptions& o) {
    auto store = SqliteStore::open(path, o);
    REQUIRE(store);
    return std::move(*store);
  }
};

std::string random_text(std::mt19937& rng) {
  static const std::string chars = "abcxyz019-./ \"\\\n\t\x01\xc3\xa9";
  std::string s;
  for (size_t n = rng() % 12; n > 0; --n) s += chars[rng() % chars.size()];
  return s;
}

Resources random_resources(std::mt19937& rng) {
  return Resources{static_cast<int64_t>(rng()) - 1000, static_cast<int64_t>(rng()) << 20, static_cast<int64_t>(rng() % 8),
                   static_cast<int64_t>(rng() % 3) * -1};
}

// An instance with every field set at random.
Instance random_instance(std::mt19937& rng, const std::vector<Labels>& label_sets, int k) {
  Instance i;
  i.tenant = random_text(rng);
  i.app = random_text(rng);
  i.role = random_text(rng);
  i.ordinal = k;
  i.node = random_text(rng);
  i.state = static_cast<InstanceState>(rng() % 6);
  i.request = random_resources(rng);
  if (rng() % 2) i.limit = random_resources(rng);
  if (rng() % 2) i.reservation = random_resources(rng);
  i.priority = Priority{static_cast<Band>(rng() % 3), static_cast<int>(rng() % 1001), rng() % 2 == 0};
  i.labels = label_sets[rng() % label_sets.size()];
  i.address = random_text(rng);
  for (size_t n = rng() % 3; n > 0; --n) i.ports[random_text(rng)] = static_cast<int>(rng() % 65536);
  for (size_t n = rng() % 3; n > 0; --n)
    i.volumes.push_back({random_text(rng), random_text(rng), random_text(rng), static_cast<int64_t>(rng()),
                         static_cast<int64_t>(rng() % 5000)});
  i.pending_reason = random_text(rng);
  i.restarts = static_cast<int>(rng() % 9);
  i.migrations = static_cast<int>(rng() % 9);
  i.started_ms = static_cast<int64_t>(rng()) << 8;
  i.restart_at_ms = static_cast<int64_t>(rng());
  i.failure = random_text(rng);
  i.hash = random_text(rng);
  if (rng() % 2) i.usage = random_resources(rng);
  i.throttled = rng() % 2;
  i.internal_failure = rng() % 2;
  i.snapped_back_ms = static_cast<int64_t>(rng());
  i.generation = static_cast<int64_t>(rng() % 100);
  i.exit_code = static_cast<int>(rng() % 256) - 128;
  return i;
}

Node random_node(std::mt19937& rng, int k) {
  Node n;
  n.name = fmt::format("n{:03d}", k);
  n.address = random_text(rng);
  n.instance_subnet = random_text(rng);
  n.capacity = random_resources(rng);
  n.port_min = static_cast<int>(rng() % 1000);
  n.port_max = static_cast<int>(rng() % 100000);
  for (size_t c = rng() % 4; c > 0; --c) n.labels[random_text(rng)] = random_text(rng);
  for (size_t c = rng() % 3; c > 0; --c)
    n.volume_groups.push_back({random_text(rng), random_text(rng), static_cast<int64_t>(rng()), static_cast<int64_t>(rng())});
  for (size_t c = rng() % 3; c > 0; --c)
    n.kept_volumes.push_back({random_text(rng), random_text(rng), random_text(rng), static_cast<int>(rng() % 9),
                              random_text(rng), random_text(rng), static_cast<int64_t>(rng()), static_cast<int64_t>(rng())});
  for (size_t c = rng() % 3; c > 0; --c) n.cached_images.push_back(random_text(rng));
  n.state = static_cast<NodeState>(rng() % 3);
  n.draining = rng() % 2;
  n.down_reason = random_text(rng);
  n.cordon_reason = random_text(rng);
  n.zone = random_text(rng);
  n.rack = random_text(rng);
  n.switch_ = random_text(rng);
  return n;
}

}  // namespace

TEST_CASE("state file: every field of the instances and nodes reads back, labels shared again", "[state][state-file]") {
  std::mt19937 rng(20261129);
  std::vector<Labels> label_sets = {Labels{}, Labels{{"a", "1"}}, Labels{{"gaia.io/app", "web"}, {"x", "\"y\""}}};
  std::vector<Instance> instances;
  for (int k = 0; k < 300; ++k) instances.push_back(random_instance(rng, label_sets, k));
  std::vector<Node> nodes;
  for (int k = 0; k < 40; ++k) nodes.push_back(random_node(rng, k));
  KeyValue seq{"meta/event_seq", "17", 3, 9, 4, 0};
  KeyValue app{"apps/default/web", "{\"name\":\"web\"}", 2, 8, 3, 77};
  std::vector<const KeyValue*> records = {&app, &seq};

  std::string bytes = encode_state_file("store-a", {42, 0xfeedULL, 0xbeefULL}, records, nodes, instances);
  auto head = peek_state_file(bytes);
  REQUIRE(head);
  CHECK(head->revision == 42);
  CHECK(head->fingerprint == 0xfeedULL);
  CHECK(head->history == 0xbeefULL);
  auto back = decode_state_file(bytes, "store-a");
  REQUIRE(back);
  CHECK(back->head.revision == 42);
  CHECK(back->head.fingerprint == 0xfeedULL);
  CHECK(back->head.history == 0xbeefULL);
  REQUIRE(back->records.size() == 2);
  CHECK(back->records[0] == app);
  CHECK(back->records[1] == seq);
  CHECK(nlohmann::json(back->nodes) == nlohmann::json(nodes));
  CHECK(nlohmann::json(back->instances) == nlohmann::json(instances));
  // Field by field too, where JSON leaves a default out.
  for (size_t k = 0; k < instances.size(); ++k) {
    CHECK(back->instances[k].reservation == instances[k].reservation);
    CHECK(back->instances[k].limit == instances[k].limit);
    CHECK(back->instances[k].usage == instances[k].usage);
  }
  // Instances that shared a set of labels share one again (the scheduler's index
  // compares labels by pointer).
  for (size_t a = 0; a < instances.size(); ++a)
    for (size_t b = a + 1; b < std::min(instances.size(), a + 20); ++b)
      CHECK(back->instances[a].labels.shares_with(back->instances[b].labels) ==
            instances[a].labels.shares_with(instances[b].labels));
}

TEST_CASE("state file: a damaged, foreign or other file is refused whole", "[state][state-file]") {
  std::mt19937 rng(7);
  std::vector<Labels> label_sets = {Labels{{"k", "v"}}};
  std::vector<Instance> instances;
  for (int k = 0; k < 20; ++k) instances.push_back(random_instance(rng, label_sets, k));
  std::vector<Node> nodes = {random_node(rng, 0)};
  KeyValue seq{"meta/event_seq", "3", 1, 2, 1, 0};
  std::vector<const KeyValue*> records = {&seq};
  const std::string bytes = encode_state_file("store-a", {9, 1, 2}, records, nodes, instances);
  REQUIRE(decode_state_file(bytes, "store-a"));
  // Each refusal says why (`gaia -v` prints it).
  auto why = [](const std::string& b, const std::string& store) {
    auto got = decode_state_file(b, store);
    REQUIRE_FALSE(got);
    return got.error();
  };
  CHECK(why(bytes, "store-b") == "another store's, at this address (a store made again there since)");
  CHECK(why("", "store-a") == "not a file of its kind (damaged)");
  CHECK(why("GAIASTF\n", "store-a") == "not a file of its kind (damaged)");
  std::string other_build = bytes;
  other_build[8] = static_cast<char>(other_build[8] + 1);  // The format, just past the magic.
  CHECK(why(other_build, "store-a") == "written by another gaia build (another format or layout)");
  CHECK(why(bytes.substr(0, bytes.size() - 1), "store-a").starts_with("damaged: "));
  // Cut anywhere (a writer killed mid-write, a full disk).
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 300) {
    INFO("cut at " << cut);
    CHECK_FALSE(decode_state_file(bytes.substr(0, cut), "store-a"));
  }
  // One bit flipped anywhere.
  for (int k = 0; k < 300; ++k) {
    std::string bad = bytes;
    size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    INFO("bit flipped at " << at);
    CHECK_FALSE(decode_state_file(bad, "store-a"));
  }
  // Bytes after the end.
  CHECK_FALSE(decode_state_file(bytes + "x", "store-a"));
}

TEST_CASE("state file: a new process starts from it, reads only the changes since, and holds what a fresh read holds",
          "[state][state-file]") {
  OneStore s(20261129, "cache/s.state");
  const auto& file = s.file;
  State writer(s.store(), s.clock);
  int from_file = 0;
  for (int step = 0; step < 300; ++step) {
    random_change(writer, s.rng, step);
    if (s.rng() % 4 != 0) continue;
    const bool had_file = std::filesystem::exists(file);
    auto [got, instance_reads] = load_as_new_process(s.store(), s.clock, s.options);
    INFO("step " << step);
    REQUIRE(got == fresh(s.store(), s.clock));
    if (had_file) {
      CHECK(instance_reads == 0);
      ++from_file;
    }
  }
  CHECK(from_file > 30);
  // The folder and the file are the owner's alone: the state holds the apps' documents.
  using std::filesystem::perms;
  CHECK((std::filesystem::status(file).permissions() & (perms::group_all | perms::others_all)) == perms::none);
  CHECK((std::filesystem::status(file.parent_path()).permissions() & (perms::group_all | perms::others_all)) ==
        perms::none);
}

TEST_CASE("state file: a store re-created or restored from a backup is read afresh", "[state][state-file]") {
  gaia::test::TempDir dir;
  ManualClock clock;
  const auto file = dir.path() / "s.state";
  const auto options = with_file(file);
  const auto path = dir.path() / "s.db";
  std::mt19937 rng(11);
  int64_t file_revision = 0;
  {
    auto store = SqliteStore::open(path);
    REQUIRE(store);
    State writer(**store, clock);
    for (int step = 0; step < 10; ++step) random_change(writer, rng, step);
  }
  // The backup, taken here: also a plain copy of the store file, which shares its
  // identity and its history hash so far.
  std::filesystem::copy_file(path, dir.path() / "backup.db");
  {
    auto store = SqliteStore::open(path);
    REQUIRE(store);
    State writer(**store, clock);
    for (int step = 10; step < 20; ++step) random_change(writer, rng, step);
    // A commit with nothing of its own in it (no operation, no time), such as a copy
    // that went its own way may make at the same revision.
    Txn alike;
    alike.puts.push_back({"settings/alike", "1"});
    REQUIRE((*store)->txn(alike).value().succeeded);
    auto [got, reads] = load_as_new_process(**store, clock, options);
    REQUIRE(std::filesystem::exists(file));
    file_revision = peek_state_file(*read_kept_file(file))->revision;

  }

  // The store at `path` deleted, and made again empty or from the backup.
  auto replace_store = [&](bool from_backup) {
    std::filesystem::remove(path);
    if (from_backup) std::filesystem::copy_file(dir.path() / "backup.db", path);
    auto store = SqliteStore::open(path);
    REQUIRE(store);
    return std::move(*store);
  };

  SECTION("re-created: another history up to and past the file's revision") {
    auto store = replace_store(false);
    State writer(*store, clock);
    std::mt19937 other(12);
    write_until(*store, writer, other, 0, file_revision + 3);
    check_read_afresh(*store, clock, options);
  }
  SECTION("restored from the backup, then written to past the file's revision") {
    auto store = replace_store(true);
    State writer(*store, clock);
    std::mt19937 other(13);
    write_until(*store, writer, other, 100, file_revision + 3);
    check_read_afresh(*store, clock, options);
  }
  SECTION("restored from the backup, not yet back at the file's revision") {
    auto store = replace_store(true);
    check_read_afresh(*store, clock, options);
  }
  SECTION("a copy that went its own way, to the same revision, whose last commit is the same") {
    auto store = replace_store(true);
    // To the file's revision by another way, then the same commit: the file's revision
    // and its fingerprint match, the history before it does not.
    State writer(*store, clock);
    std::mt19937 other(14);
    for (int step = 200; store->revision().value() < file_revision - 1; ++step) {
      Batch b;
      b.event("Other", fmt::format("step {}", step));
      auto base = writer.load();
      REQUIRE(base);
      REQUIRE(writer.commit(*base, b, fmt::format("op-other-{}", step)).value());
    }
    REQUIRE(store->revision().value() == file_revision - 1);
    Txn alike;
    alike.puts.push_back({"settings/alike", "1"});
    REQUIRE(store->txn(alike).value().succeeded);
    REQUIRE(store->revision().value() == file_revision);
    // There, or written past the file's revision: the history hash at the file's
    // revision, which the store's ring of them still holds a few revisions on, tells it
    // apart (the store's hash now would, chained over the changes since); further on,
    // past the ring, the hash chained over every change since does.
    const int64_t more = GENERATE(as<int64_t>{}, 0, 3, Store::k_history_kept + 3);
    for (int step = 300; store->revision().value() < file_revision + more; ++step) random_change(writer, other, step);
    CHECK(store->history_mark(file_revision).value().has_value() == (more < Store::k_history_kept));
    check_read_afresh(*store, clock, options);
  }
  SECTION("written to by a gaia that does not chain the history hash") {
    // Its commit leaves the hash as it was: the file is refused after it, and after the
    // next commit of this build too (the ring has a gap, and the hash chained over the
    // changes since, the old one's among them, is not the store's).
    {
      auto store = SqliteStore::open(path);
      REQUIRE(store);
      State writer(**store, clock);
      std::mt19937 again(15);
      write_until(**store, writer, again, 400, file_revision + 2);
      auto [got, reads] = load_as_new_process(**store, clock, options);
      REQUIRE(reads == 0);  // The file is good up to here.
    }
    gaia::test::commit_without_history(path, "settings/old", "1");
    auto store = SqliteStore::open(path);
    REQUIRE(store);
    const auto kept = *read_kept_file(file);
    check_read_afresh(**store, clock, options);
    State writer(**store, clock);
    std::mt19937 after(16);
    random_change(writer, after, 500);
    write_kept_file(file, kept);  // The file from before the old gaia's commit again.
    check_read_afresh(**store, clock, options);
  }
  SECTION("another store under the same file name") {
    auto store = SqliteStore::open(path);
    REQUIRE(store);
    check_read_afresh(**store, clock, with_file(file, "another-store"));
  }
}

TEST_CASE("state file: another history whose commit at the file's revision begins alike is read afresh",
          "[state][state-file]") {
  // Two stores whose commits at one revision begin with the same 40 nodes (records with
  // no time nor operation in them) and end differently, as two `cluster create`s of
  // different sizes do. The second is opened under the first's name, as a store made
  // again at the same path would be if its identity were not checked.
  gaia::test::TempDir dir;
  ManualClock clock;
  const auto options = with_file(dir.path() / "s.state");
  auto a = SqliteStore::open(dir.path() / "a.db");
  auto b = SqliteStore::open(dir.path() / "b.db");
  REQUIRE(a);
  REQUIRE(b);
  for (int extra : {0, 7}) {
    Store& store = extra == 0 ? **a : **b;
    State writer(store, clock);
    auto base = writer.load();
    REQUIRE(base);
    Batch batch;
    for (int k = 0; k < 40 + extra; ++k) {
      Node n;
      n.name = fmt::format("node-{:03d}", k);
      n.capacity.cpu_millis = 8000;
      batch.put_nodes.push_back(n);
    }
    batch.event("ClusterCreated", fmt::format("{} nodes", 40 + extra));
    REQUIRE(writer.commit(*base, batch, "op-create").value());
  }
  REQUIRE((*a)->revision().value() == (*b)->revision().value());
  (void)load_as_new_process(**a, clock, options);
  auto [got, reads] = load_as_new_process(**b, clock, options);
  CHECK(got == fresh(**b, clock));
  CHECK(got["nodes"].size() == 47);
  CHECK(reads > 0);
}

namespace {

// Another process commits while this one reads: once, in the middle of a full load.
class CommitDuringLoad final : public gaia::test::ForwardingStore {
 public:
  CommitDuringLoad(Store& inner, std::function<void()> commit) : ForwardingStore(inner), m_commit(std::move(commit)) {}
  StoreResult<RangeResponse> read(const RangeRequest& r) override {
    if (m_commit && r.key.starts_with("tenants/")) std::exchange(m_commit, nullptr)();
    return ForwardingStore::read(r);
  }

 private:
  std::function<void()> m_commit;
};

}  // namespace

TEST_CASE("state file: a file is written though another process commits while the state is read",
          "[state][state-file]") {
  OneStore s(21);
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 20);
  {
    CommitDuringLoad busy(s.store(), [&] { random_change(writer, s.rng, 100); });
    State process(busy, s.clock, s.options);
    REQUIRE(process.load());
  }
  REQUIRE(std::filesystem::exists(s.file));
  random_change(writer, s.rng, 101);
  auto [got, reads] = load_as_new_process(s.store(), s.clock, s.options);
  CHECK(got == fresh(s.store(), s.clock));
  CHECK(reads == 0);
}

TEST_CASE("state file: history compacted past the file's revision is read afresh", "[state][state-file]") {
  SqliteStoreOptions small;
  small.history_revisions = 5;
  OneStore s(5, "s.state", small);
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 5);
  (void)load_as_new_process(s.store(), s.clock, s.options);
  s.changes(writer, 5, 25);
  check_read_afresh(s.store(), s.clock, s.options);
}

TEST_CASE("state file: a damaged or half-written file is ignored and written again", "[state][state-file]") {
  OneStore s(9);
  const auto& file = s.file;
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 20);
  (void)load_as_new_process(s.store(), s.clock, s.options);
  auto good = read_kept_file(file);
  REQUIRE(good);
  for (int k = 0; k < 3; ++k) {
    std::string bad = *good;
    if (k == 0) bad.resize(bad.size() / 2);  // A writer killed mid-write (or a full disk).
    if (k == 1) bad[bad.size() - 3] ^= 0x10;  // A flipped bit.
    if (k == 2) bad = "not a state file";
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << bad;
    }
    random_change(writer, s.rng, 100 + k);
    check_read_afresh(s.store(), s.clock, s.options);
    // Read afresh, the state was written again, whole.
    auto again = read_kept_file(file);
    REQUIRE(again);
    CHECK(decode_state_file(*again, "the-store"));
  }
}

TEST_CASE("state file: a whole file whose lists are out of key order is refused, its records laid in already or not",
          "[state][state-file]") {
  // Such a file passes every check of its bytes (it was written wrong, not damaged), and
  // its records reach the state while its instances still decode: the refusal must leave
  // nothing of them behind.
  OneStore s(77);
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 40);
  auto st = State(s.store(), s.clock).load();
  REQUIRE(st);
  REQUIRE(st->snapshot.instances.size() >= 2);
  auto head = kept_head(s.store(), st->revision);
  REQUIRE(head);
  auto all = s.store().read(RangeRequest::prefix("", st->revision));
  REQUIRE(all);
  std::vector<KeyValue> records;
  for (const auto& kv : all->kvs)
    if (is_state_record(kv.key)) records.push_back(kv);
  REQUIRE(records.size() >= 2);
  auto write = [&](const std::vector<KeyValue>& rs, const std::vector<Instance>& instances) {
    std::vector<const KeyValue*> refs;
    for (const auto& kv : rs) refs.push_back(&kv);
    write_kept_file(s.file, encode_state_file("the-store", *head, refs, st->snapshot.nodes, instances));
  };
  std::vector<std::string> notes;
  StateOptions options = s.options;
  options.note = [&](const std::string& line) { notes.push_back(line); };

  write(records, st->snapshot.instances);  // As a load writes it: used.
  auto [used, none] = load_as_new_process(s.store(), s.clock, options);
  CHECK(used == fresh(s.store(), s.clock));
  CHECK(none == 0);

  auto swapped_records = records;
  std::swap(swapped_records.front(), swapped_records.back());
  auto swapped_instances = st->snapshot.instances;
  std::swap(swapped_instances.front(), swapped_instances.back());
  for (const auto& [rs, instances] : {std::pair{swapped_records, st->snapshot.instances},
                                      std::pair{records, swapped_instances}}) {
    write(rs, instances);
    notes.clear();
    auto [got, reads] = load_as_new_process(s.store(), s.clock, options);
    CHECK(got == fresh(s.store(), s.clock));
    CHECK(reads > 0);
    REQUIRE_FALSE(notes.empty());
    CHECK_THAT(notes.front(), Catch::Contains("its lists are out of key order (written wrong); reading the store"));
  }
}

TEST_CASE("state file: what is not a plain file at the file's path is refused, without waiting on a pipe",
          "[state][state-file]") {
  gaia::test::TempDir dir;
  const auto pipe = dir.path() / "p.state";
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  std::string why;
  // On a thread of its own, so a read that waits for a writer fails the test rather
  // than hang it.
  auto read = std::async(std::launch::async, [&] { return read_kept_file(pipe, &why); });
  REQUIRE(read.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK_FALSE(read.get());
  CHECK(why == "not read: it is not a plain file");
  const auto folder = dir.path() / "f.state";
  std::filesystem::create_directory(folder);
  CHECK_FALSE(read_kept_file(folder, &why));
  CHECK(why == "not read: it is not a plain file");
  const auto empty = dir.path() / "e.state";
  std::ofstream(empty).flush();
  CHECK_FALSE(read_kept_file(empty, &why));
  CHECK(why == "it is empty");
  // And a state with such a file loads from the store, as with none.
  OneStore s(5, "p2.state");
  REQUIRE(::mkfifo(s.file.c_str(), 0600) == 0);
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 5);
  auto loading = std::async(std::launch::async, [&] { return load_as_new_process(s.store(), s.clock, s.options); });
  REQUIRE(loading.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  auto [got, reads] = loading.get();
  CHECK(got == fresh(s.store(), s.clock));
  CHECK(reads > 0);
}

TEST_CASE("state file: a file a killed writer left is removed by the next writer, a live one's is not",
          "[state][state-file]") {
  gaia::test::TempDir dir;
  const auto file = dir.path() / "s.state";
  // Above the kernel's largest pid (2^22): no such process.
  const auto dead = dir.path() / ".s.state.4194305.0";
  const auto live = dir.path() / fmt::format(".s.state.{}.7", ::getpid());
  const auto other = dir.path() / ".t.state.4194305.0";
  for (const auto& p : {dead, live, other}) std::ofstream(p) << "half a file";
  write_kept_file(file, "whole");
  CHECK(read_kept_file(file) == "whole");
  CHECK_FALSE(std::filesystem::exists(dead));
  CHECK(std::filesystem::exists(live));
  CHECK(std::filesystem::exists(other));
}

TEST_CASE("state file: thousands of timeline events after a file are not read while the store's ring of history "
          "hashes holds the file's revision, and bring it forward after",
          "[state][state-file]") {
  // Checking a file among the store's last k_history_kept revisions takes the store's
  // own history hash there: only the changes of the state's keys since are read, not the
  // timeline's events. Further behind, every change since is read to chain the hash,
  // events too, and a file left behind while only events were written cost each command
  // the read of all of them, more with every command, until it was written again.
  OneStore s(44);
  const auto& file = s.file;
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 10);
  (void)load_as_new_process(s.store(), s.clock, s.options);
  const int64_t first = peek_state_file(*read_kept_file(file))->revision;
  auto events = [&](size_t count) {
    REQUIRE(writer.update("op-events", [&](const ClusterState&, Batch& b) -> Result<void> {
      for (size_t k = 0; k < count; ++k) b.event("Note", fmt::format("event {}", k));
      return {};
    }));
  };
  auto load_counted = [&] {
    gaia::test::ChangesReadCounter counted(s.store());
    auto [got, reads] = load_as_new_process(counted, s.clock, s.options);
    CHECK(got == fresh(s.store(), s.clock));
    CHECK(reads == 0);  // The file was used.
    return std::pair(counted.whole, counted.changes);
  };
  events(k_kept_reread_after + 100);
  s.changes(writer, 10, 2);
  {
    auto [whole, changes] = load_counted();
    CHECK(whole == 0);
    CHECK(changes > 0);
    CHECK(changes < 100);  // The state's changes only: the two commits' sequence keys and what they changed.
  }
  CHECK(peek_state_file(*read_kept_file(file))->revision == first);  // Nothing to bring forward.
  // Past the ring: the hash is chained over every change since, thousands of events too.
  for (int64_t k = 0; k < Store::k_history_kept; ++k) events(1);
  {
    auto [whole, changes] = load_counted();
    CHECK(whole == 1);
    CHECK(changes > k_kept_reread_after);
  }
  CHECK(peek_state_file(*read_kept_file(file))->revision == s.store().revision().value());
  // And the file brought forward is used again, reading only what came after it.
  events(10);
  auto [whole, changes] = load_counted();
  CHECK(whole == 0);
  CHECK(changes < 10);
}

TEST_CASE("kept changes: a read kept whole serves a reader that skips the events, not the other way round",
          "[state][state-file]") {
  // A file past the ring of history hashes is checked over every change (a whole read);
  // one within it skips the timeline's events. The second loader of a command takes the
  // first one's read only when that holds every change it needs.
  OneStore s(77);
  State writer(s.store(), s.clock);
  s.changes(writer, 0, 5);
  const int64_t from = s.store().revision().value();
  s.changes(writer, 5, 5);  // Each random change writes events too.
  const int64_t upto = s.store().revision().value();
  auto count_events = [](std::span<const Event> changes) {
    return std::count_if(changes.begin(), changes.end(),
                         [](const Event& e) { return e.kv.key.starts_with(k_timeline_prefix); });
  };
  {
    KeptChanges shared(2);
    gaia::test::ChangesReadCounter counted(s.store());
    auto whole = shared.read(counted, from, upto);
    REQUIRE(whole);
    CHECK(count_events(whole->changes()) > 0);
    auto skipping = shared.read(counted, from, upto, k_timeline_prefix);
    REQUIRE(skipping);
    CHECK(counted.reads == 1);  // Served from the whole read: its events are the caller's to pass over.
    CHECK(shared.reused() == 1);
    CHECK(skipping->changes().size() == whole->changes().size());
  }
  {
    KeptChanges shared(2);
    gaia::test::ChangesReadCounter counted(s.store());
    auto skipping = shared.read(counted, from, upto, k_timeline_prefix);
    REQUIRE(skipping);
    CHECK(count_events(skipping->changes()) == 0);
    auto whole = shared.read(counted, from, upto);
    REQUIRE(whole);
    CHECK(counted.reads == 2);  // The events it needs were never read: it reads for itself.
    CHECK(counted.whole == 1);
    CHECK(shared.reused() == 0);
    CHECK(count_events(whole->changes()) > 0);
  }
}

TEST_CASE("state file: the state's and the world's files share one read of the changes since them",
          "[state][state-file]") {
  OneStore s(1129);
  Store& store = s.store();
  ManualClock& clock = s.clock;
  const auto state_path = s.file, world_path = s.dir.path() / "s.world";
  State writer(store, clock);
  SimBackend sim(&store);
  std::mt19937& rng = s.rng;
  int64_t generation = 0;
  auto write = [&](int steps) {
    for (int k = 0; k < steps; ++k) {
      random_change(writer, rng, static_cast<int>(generation));
      StartSpec start;
      start.instance.tenant = "t";
      start.instance.app = "a";
      start.instance.role = "r";
      start.instance.ordinal = static_cast<int>(rng() % 20);
      start.instance.node = fmt::format("n{}", rng() % 3);
      start.instance.generation = ++generation;
      REQUIRE(sim.start({start}, generation));
    }
  };
  // Instances enough that the state replays past k_kept_rewrite_after while the world
  // replays none of them: one file is written again, and the other must follow it.
  auto bulk = [&] {
    REQUIRE(writer.update("op-bulk", [&](const ClusterState&, Batch& b) -> Result<void> {
      for (size_t k = 0; k <= k_kept_rewrite_after; ++k) {
        Instance i;
        i.tenant = "bulk";
        i.app = fmt::format("b{}", generation);
        i.role = "r";
        i.ordinal = static_cast<int>(k);
        b.put_instances.push_back(i);
      }
      return {};
    }));
  };
  // One command's loads, the state's and the world's: in that order, the other, or at
  // once, as a CLI session's read-ahead threads may make them.
  struct Seen {
    nlohmann::json state;
    std::vector<std::string> copies;
    bool operator==(const Seen&) const = default;
  };
  enum class Order { StateFirst, WorldFirst, AtOnce };
  int writes = 0, uses = 0;  // Files written and used by a command, as -v tells them.
  auto count_writes = [&](const std::string& line) {
    writes += line.find(": writing, at revision") != std::string::npos;
    uses += line.find(": used, at revision") != std::string::npos;
  };
  auto command = [&](Store& on, bool with_files, Order order) {
    auto shared = with_files ? std::make_shared<KeptChanges>(2) : nullptr;
    StateOptions options = with_files ? with_file(state_path) : StateOptions{};
    options.kept_changes = shared;
    options.note = count_writes;
    SimWorldFileOptions world;
    if (with_files) world = SimWorldFileOptions{world_path, "the-store", 0, count_writes, shared};
    Seen seen;
    {
      State state(on, clock, options);
      SimBackend backend(&on, world);
      auto load_state = [&] {
        auto st = state.load();
        REQUIRE(st);
        seen.state = dump(*st);
      };
      auto load_world = [&] {
        auto obs = backend.observe(1000);
        REQUIRE(obs);
        for (const auto& c : obs->copies) seen.copies.push_back(fmt::format("{}@{}#{}", c.instance, c.node, c.generation));
      };
      if (order == Order::StateFirst) {
        load_state();
        load_world();
      } else if (order == Order::WorldFirst) {
        load_world();
        load_state();
      } else {
        auto other = std::async(std::launch::async, [&] { backend.prefetch(); });
        load_state();
        other.get();
        load_world();
      }
    }
    return std::make_pair(seen, shared ? shared->reused() : 0);
  };
  write(10);
  (void)command(store, true, Order::StateFirst);  // Both files written, at one revision.
  REQUIRE(std::filesystem::exists(state_path));
  REQUIRE(std::filesystem::exists(world_path));
  auto revision_of = [](const std::filesystem::path& p) -> int64_t {
    auto bytes = read_kept_file(p);
    if (!bytes) return -1;
    if (auto head = peek_state_file(*bytes)) return head->revision;
    if (auto head = peek_sim_world(*bytes)) return head->revision;
    return -1;
  };
  int suffixes = 0;  // Commands whose second loader took only the end of the first's read.
  for (int round = 0; round < 30; ++round) {
    const auto order = static_cast<Order>(round % 3);
    INFO("round " << round << ", order " << static_cast<int>(order));
    write(3);
    // Now and then one file is lost (a user cleaning up, a crash before its write), or
    // one alone is due to be written again (it replayed much): the files go to
    // different revisions for a while.
    const bool upset = round % 5 == 1 || round % 5 == 3;
    if (round % 5 == 1) std::filesystem::remove(round % 2 ? state_path : world_path);
    if (round % 5 == 3) bulk();
    const int64_t state_at = revision_of(state_path), world_at = revision_of(world_path);
    gaia::test::ChangesReadCounter counted(store);
    writes = uses = 0;
    auto [got, reused] = command(counted, true, order);
    if (state_at >= 0 && world_at >= 0) CHECK(uses == 2);  // Neither refused, whoever came first.
    CHECK(got == command(store, false, Order::StateFirst).first);
    // The loader that comes second reuses the first one's read when its file is at the
    // first one's revision or newer.
    const bool second_newer = state_at >= 0 && world_at >= 0 &&
                              (order == Order::StateFirst   ? world_at >= state_at
                               : order == Order::WorldFirst ? state_at >= world_at
                                                            : state_at == world_at);
    if (second_newer) {
      CHECK(counted.reads == 1);
      CHECK(reused == 1);
      suffixes += state_at != world_at;
    }
    CHECK(counted.reads <= 2);
    // Files are written only when one is lost or due: never to chase the other (a rule
    // that did wrote files after every command).
    if (!upset) CHECK(writes == 0);
    // One written because it replayed much, the other loading after it: the other is
    // written at the same revision in the same command.
    if (round % 5 == 3 && order == Order::StateFirst) CHECK(revision_of(state_path) == revision_of(world_path));
  }
  CHECK(suffixes > 0);
}
