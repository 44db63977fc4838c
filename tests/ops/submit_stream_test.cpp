// A stream of submissions planned while the one before commits (ops/submit_stream.hpp),
// on a real SQLite store: the store must end as the same submissions committed one after
// another would leave it, and a commit that fails (another writer) must stop the stream
// with nothing planned after it written.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <utility>

#include "lib/app_summary.hpp"
#include "lib/codec.hpp"
#include "lib/journal.hpp"
#include "ops/submit_stream.hpp"
#include "tests/ops/ops_fixture.hpp"
#include "tests/support/forwarding_store.hpp"

namespace gaia::test {
namespace {

// Submission k: app a<k> of 3 replicas, depending on the app before it now and then.
std::vector<std::vector<AppToDeploy>> stream_submissions(int count) {
  std::vector<std::vector<AppToDeploy>> out;
  for (int k = 0; k < count; ++k) {
    std::vector<std::string> deps;
    if (k % 2 == 1) deps.push_back(fmt::format("a{}", k - 1));
    out.push_back({fixture_app(fmt::format("a{}", k), {fixture_role("r", 3, res(500, 1))}, deps)});
  }
  return out;
}

// The instances as stored, in key order.
std::vector<std::string> stream_instance_records(const ClusterState& st) {
  std::vector<std::string> out;
  for (const auto& i : st.snapshot.instances) out.push_back(i.key() + " " + nlohmann::json(i).dump());
  std::sort(out.begin(), out.end());
  return out;
}

// The timeline without the times and operation ids, which differ between runs.
std::vector<std::string> stream_timeline(State& state) {
  auto events = state.events_after(0);
  REQUIRE(events);
  std::vector<std::string> out;
  for (const auto& e : *events) out.push_back(fmt::format("{} {} {} {} {}", e.seq, e.reason, e.app, e.instance, e.message));
  return out;
}

// Counts transactions and, once armed, runs `after_commit` right after the n-th one that
// succeeds from then on.
class StreamRacingStore final : public ForwardingStore {
 public:
  explicit StreamRacingStore(Store& inner) : ForwardingStore(inner) {}
  StoreResult<TxnResult> txn(const Txn& t) override {
    if (fail_next) {
      fail_next = false;
      return std::unexpected(StoreError{StoreErrc::Unavailable, "the connection dropped", "", 0});
    }
    auto r = inner().txn(t);
    if (r && r->succeeded && after_commit && --countdown == 0) std::exchange(after_commit, nullptr)();
    // Armed: the transaction after the n-th journal commit point fails, as a writer whose
    // connection drops while it applies the chunks.
    if (r && r->succeeded && points_left > 0)
      for (const auto& p : t.puts)
        if (p.key == k_journal_key && --points_left == 0) fail_next = true;
    return r;
  }
  int points_left = 0;
  bool fail_next = false;
  TxnLimits txn_limits() const override { return limits; }
  std::function<void()> after_commit;
  int countdown = 0;
  TxnLimits limits;
};

size_t stream_committed_count(const SubmitStream::Finished& f) {
  return static_cast<size_t>(std::count_if(f.commits.begin(), f.commits.end(), [](const auto& c) { return c.committed; }));
}

void stream_leaves_store_as_sequential(bool journaled) {
  OpsFixture streamed, sequential;
  streamed.add_nodes(4);
  sequential.add_nodes(4);
  StreamRacingStore store(streamed.store());
  // Small transactions: every commit goes through the journal, as on etcd.
  if (journaled) store.limits.max_ops = 8;
  State state(store, streamed.clock());
  auto subs = stream_submissions(6);
  // The first app again in a later submission, in a new version: an update within the
  // stream, whose record must keep when it was created.
  subs[4].push_back(subs[0].front());
  subs[4].back().record.version = "2.0.0";
  subs[4].back().record.workload.hash = "h-second";

  SubmitStream stream(state, streamed.load(), [](size_t k) { return fmt::format("op-stream-{}", k); });
  size_t placed = 0;
  for (const auto& apps : subs) {
    auto out = stream.submit(apps);
    REQUIRE(out);
    placed += out->placed;
  }
  auto finished = stream.finish();
  REQUIRE_FALSE(finished.failure);
  REQUIRE(finished.commits.size() == subs.size());
  CHECK(stream_committed_count(finished) == subs.size());
  CHECK(placed >= 18);

  for (const auto& apps : subs) {
    auto r = sequential.state().update("op-seq", [&](const ClusterState& st, Batch& b) -> Result<void> {
      b = plan_submit(st, apps).batch;
      return {};
    });
    REQUIRE(r);
  }
  ClusterState loaded = streamed.load();
  CHECK(stream_instance_records(loaded) == stream_instance_records(sequential.load()));
  CHECK(stream_timeline(streamed.state()) == stream_timeline(sequential.state()));
  // The state the stream hands back is the store's, revisions included: a commit on it
  // goes through, so nothing was written that it does not know of.
  CHECK(stream_instance_records(finished.last) == stream_instance_records(loaded));
  CHECK(finished.last.seq == loaded.seq);
  // Every app record as stored says when it was created and updated, the same in the
  // state handed back; the updated app keeps its creation.
  REQUIRE(loaded.apps.size() == 6);
  for (const auto& [id, a] : loaded.apps) {
    INFO(id);
    CHECK_FALSE(a.created.empty());
    CHECK_FALSE(a.updated.empty());
    CHECK_FALSE(a.op.empty());
    const AppRecord* carried = finished.last.find_app(a.tenant, a.name);
    REQUIRE(carried);
    CHECK(carried->created == a.created);
    CHECK(carried->updated == a.updated);
    CHECK(carried->op == a.op);
  }
  CHECK(loaded.find_app("default", "a0")->op == "op-stream-4");
  auto summaries = read_app_summaries(streamed.store(), "");
  REQUIRE(summaries);
  REQUIRE(*summaries);
  for (const auto& s : **summaries) CHECK_FALSE(s.created.empty());
  Batch more;
  more.event("Probe", "after the stream");
  auto again = streamed.state().commit(finished.last, std::move(more), "op-after");
  REQUIRE(again);
  CHECK(*again);
}

}  // namespace

TEST_CASE("submit stream: the store ends as the submissions committed one after another leave it",
          "[ops][submit-stream]") {
  SECTION("one transaction per commit") { stream_leaves_store_as_sequential(false); }
  SECTION("journaled commits (a store with small transactions)") { stream_leaves_store_as_sequential(true); }
}

TEST_CASE("submit stream: another writer's commit stops the stream, and nothing planned after it is written",
          "[ops][submit-stream]") {
  OpsFixture f;
  f.add_nodes(4);
  StreamRacingStore store(f.store());
  State state(store, f.clock());
  State other(f.store(), f.clock());
  // Right after the stream's second commit, another process adds a node.
  store.countdown = 2;
  // (Runs on the stream's committer thread: Catch2's assertions are checked after.)
  bool other_wrote = false;
  store.after_commit = [&] {
    auto r = other.update("op-other", [](const ClusterState&, Batch& b) -> Result<void> {
      Node n = fixture_node("late", 9, 8000, 32);
      b.put_nodes.push_back(n);
      return {};
    });
    other_wrote = r.has_value();
  };
  auto subs = stream_submissions(6);
  SubmitStream stream(state, f.load(), [](size_t k) { return fmt::format("op-stream-{}", k); });
  // Whether a later submit already sees the failure depends on timing; if it does, it
  // says why it refuses.
  for (const auto& apps : subs) {
    auto out = stream.submit(apps);
    if (!out) {
      CHECK(out.error().back().code == "stream.stopped");
      break;
    }
  }
  auto finished = stream.finish();
  REQUIRE(other_wrote);
  REQUIRE(finished.failure);
  CHECK(finished.failure->front().code == "stream.conflict");
  // The first two went in; the third met the other writer's node; none after it was tried.
  REQUIRE(finished.commits.size() >= 3);
  CHECK(finished.commits[0].committed);
  CHECK(finished.commits[1].committed);
  for (size_t k = 2; k < finished.commits.size(); ++k) CHECK_FALSE(finished.commits[k].committed);
  CHECK(stream_committed_count(finished) == 2);

  // The store holds exactly the two committed submissions and the other writer's node.
  ClusterState loaded = f.load();
  CHECK(loaded.find_node("late") != nullptr);
  CHECK(loaded.find_app("default", "a0") != nullptr);
  CHECK(loaded.find_app("default", "a1") != nullptr);
  for (int k = 2; k < 6; ++k) CHECK(loaded.find_app("default", fmt::format("a{}", k)) == nullptr);
  CHECK(loaded.snapshot.instances.size() == 6);
  // Loaded again, what was not committed goes through.
  SubmitStream fresh(state, f.load(), [](size_t k) { return fmt::format("op-retry-{}", k); });
  auto retried = fresh.submit(subs[2]);
  REQUIRE(retried);
  CHECK(retried->placed == 3);
  CHECK_FALSE(fresh.finish().failure);
}

TEST_CASE("submit stream: a journaled commit that fails after its commit point counts as committed and stops the stream",
          "[ops][submit-stream]") {
  OpsFixture f;
  f.add_nodes(4);
  StreamRacingStore store(f.store());
  store.limits.max_ops = 8;
  store.points_left = 2;  // The second submission's commit point goes through, then the connection drops.
  State state(store, f.clock());
  auto subs = stream_submissions(4);
  SubmitStream stream(state, f.load(), [](size_t k) { return fmt::format("op-stream-{}", k); });
  for (const auto& apps : subs)
    if (!stream.submit(apps)) break;
  auto finished = stream.finish();
  REQUIRE(finished.failure);
  REQUIRE(finished.commits.size() >= 2);
  CHECK(finished.commits[0].committed);
  CHECK(finished.commits[1].committed);
  for (size_t k = 2; k < finished.commits.size(); ++k) CHECK_FALSE(finished.commits[k].committed);
  // The next reader applies the rest of the decided commit: the store then holds the two
  // submissions, as the state the stream hands back does.
  ClusterState loaded = f.load();
  CHECK(loaded.find_app("default", "a1") != nullptr);
  CHECK(loaded.find_app("default", "a2") == nullptr);
  CHECK(stream_instance_records(finished.last) == stream_instance_records(loaded));
}

}  // namespace gaia::test
