#pragma once
// Submissions one after another from a process that stays up (a scheduler daemon, a
// pipeline replaying a queue of submissions; submit-e2e-5k's stream), each planned on the
// state the one before leaves and committed with its events. The next submission is
// planned while the last one commits, on the other core: kube-scheduler's "assume, then
// bind asynchronously". What is planned on top of a commit that then fails is never
// committed: a conflict (another writer) or a store error stops the stream, and every
// submission after the one that failed is reported as not committed, so the caller
// loads again and submits those again. Nothing is ever written on a base the store did
// not have.
//
// The state is carried from one submission to the next without reading it back: each
// commit's revision is stamped on the state it left (ClusterState::stamp_commit), and the
// planner keeps the scheduler's index and the addresses in use (SubmitPlanner).

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"

namespace gaia {

// What became of one submission.
struct StreamCommit {
  size_t index = 0;         // Its position in the stream, from 0.
  // Its batch is in the store, or decided: a journaled commit that failed after its
  // commit point is applied whole by the next reader of the store.
  bool committed = false;
  double plan_ms = 0;       // Planning it (SubmitPlanner).
  double commit_ms = 0;     // Committing it, fsynced (State::commit); 0 if never tried.
  size_t placed = 0, pending = 0, events = 0;
  std::string op;           // The operation id it was committed under.
};

// The State (and its store) is the stream's while it runs: its commits come from a thread
// of their own, so nothing else may use that State until finish().
class SubmitStream {
 public:
  // Starts from `start`, a state loaded from `state`'s store. `op_of(index)` names each
  // submission's operation.
  SubmitStream(State& state, ClusterState start, std::function<std::string(size_t)> op_of,
               const ScheduleTuning& tuning = {});
  // Waits for the commits in flight (finish() unless called).
  ~SubmitStream();
  SubmitStream(const SubmitStream&) = delete;
  SubmitStream& operator=(const SubmitStream&) = delete;

  // Plans `apps` on what the submissions so far leave and queues its commit. Returns the
  // outcome as planned, its reports and totals (its batch went to the commit and its
  // `after` stays with the stream); an error once an earlier commit failed, and then
  // nothing more is planned or committed. finish() tells which commits went through.
  Result<SubmitOutcome> submit(const std::vector<AppToDeploy>& apps);

  // Waits for every queued commit. Returns one entry per submission, in order, or the
  // first failure (conflict or store error) with the entries telling which committed.
  struct Finished {
    std::vector<StreamCommit> commits;
    std::optional<Diagnostics> failure;  // Why the stream stopped, if it did.
    // The state the last committed submission left, stamped. After a journaled commit
    // its `revision` is the commit point's, which the chunks applied after it exceed.
    ClusterState last;
  };
  Finished finish();

 private:
  struct Job {
    size_t index = 0;
    Batch batch;
    std::unique_ptr<ClusterState> after;  // What the batch leaves: the next job's base.
  };
  void commit_loop();
  // Puts on the committer's base what the commits so far wrote beyond their batches.
  void stamp_base();

  State& m_state;
  std::function<std::string(size_t)> m_op_of;
  SubmitPlanner m_planner;
  // The base of the next commit (the last committed state), the committer's. The next
  // plan reads the last planned state (m_planned_from, owned by a queued job or by the
  // committer): the committer stamps a state only once it is no longer planned from, so
  // the two threads never share a state being written.
  std::unique_ptr<ClusterState> m_base;
  bool m_first = true;

  std::mutex m_mutex;
  std::condition_variable m_wake, m_done_cv;
  std::deque<Job> m_queue;
  std::vector<std::unique_ptr<ClusterState>> m_spares;  // Committed bases, for the planner.
  std::vector<std::unique_ptr<ClusterState>> m_dropped;  // Planned states never committed.
  std::vector<StreamCommit> m_commits;
  ClusterState* m_planned_from = nullptr;  // The last plan's `after`: the next plan's state.
  std::optional<Diagnostics> m_failure;
  std::exception_ptr m_bug;  // An exception of the committer, rethrown on this thread.
  std::optional<int64_t> m_stamp;  // The last commit's, for the base of the next one.
  // The creation and update stamps of every app record the stream's commits wrote.
  std::map<std::string, State::CommitReceipt::AppStamp> m_app_stamps;
  bool m_stop = false, m_finished = false;
  std::thread m_committer;
};

}  // namespace gaia
