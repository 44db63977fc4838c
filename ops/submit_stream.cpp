#include "ops/submit_stream.hpp"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace gaia {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

SubmitStream::SubmitStream(State& state, ClusterState start, std::function<std::string(size_t)> op_of,
                           const ScheduleTuning& tuning)
    : m_state(state),
      m_op_of(std::move(op_of)),
      m_planner(tuning),
      m_base(std::make_unique<ClusterState>(std::move(start))),
      m_committer([this] { commit_loop(); }) {
  m_planned_from = m_base.get();
}

SubmitStream::~SubmitStream() {
  // A destructor must not throw: a bug of the committer not collected by finish() has
  // nowhere to go but away.
  if (!m_finished) {
    try {
      finish();
    } catch (...) {
    }
  }
}

Result<SubmitOutcome> SubmitStream::submit(const std::vector<AppToDeploy>& apps) {
  std::unique_ptr<ClusterState> spare;
  size_t index = 0;
  {
    std::unique_lock lock(m_mutex);
    // One submission waits while one commits: planning further ahead would only hold
    // more states (60 MB each at 50,000 instances) that a failure throws away.
    m_done_cv.wait(lock, [&] { return m_queue.empty() || m_failure || m_bug; });
    if (m_bug) std::rethrow_exception(m_bug);
    if (m_failure) {
      Diagnostics d = *m_failure;
      d.push_back(Diagnostic{{}, "", "the stream stopped at that failure: nothing after it was committed",
                             "load the state again and submit what was not committed", "stream.stopped"});
      return fail(std::move(d));
    }
    if (m_finished) throw std::logic_error("SubmitStream::submit after finish()");
    if (!m_spares.empty()) {
      spare = std::move(m_spares.back());
      m_spares.pop_back();
    }
    index = m_commits.size();
  }
  if (spare) m_planner.give_back(std::move(*spare));
  StreamCommit c;
  c.index = index;
  c.op = m_op_of(index);
  auto started = std::chrono::steady_clock::now();
  SubmitOutcome out;
  try {
    out = m_first ? m_planner.plan(*m_planned_from, apps) : m_planner.plan_next(*m_planned_from, apps);
  } catch (...) {
    // The planner dropped what it kept; the state planned from is still the last one.
    m_first = true;
    throw;
  }
  m_first = false;
  c.plan_ms = ms_since(started);
  c.placed = out.placed;
  c.pending = out.pending;
  c.events = out.batch.events.size();
  Job job;
  job.index = index;
  job.batch = std::move(out.batch);
  job.after = std::make_unique<ClusterState>(std::move(out.after));
  ClusterState* planned = job.after.get();
  {
    std::lock_guard lock(m_mutex);
    // The entry first, as the committer looks a job's entry up: a job queued without one
    // must never be, so a failed queueing takes the entry back.
    m_commits.push_back(std::move(c));
    try {
      m_queue.push_back(std::move(job));
    } catch (...) {
      m_commits.pop_back();
      m_first = true;  // The planned state is gone with the job: plan afresh next time.
      throw;
    }
    m_planned_from = planned;
  }
  m_wake.notify_one();
  return out;
}

void SubmitStream::commit_loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(m_mutex);
      m_wake.wait(lock, [&] { return !m_queue.empty() || m_stop; });
      if (m_queue.empty()) return;
      job = std::move(m_queue.front());
      m_queue.pop_front();
      // The planner may go on with the next submission now.
      m_done_cv.notify_all();
      if (m_failure || m_bug) {
        // Planned on a commit that failed: never written. Its state may be what the
        // planner reads at this moment, so it lives until finish().
        m_dropped.push_back(std::move(job.after));
        continue;
      }
    }
    std::unique_ptr<ClusterState> old;
    std::optional<Diagnostics> failure;
    double commit_ms = 0;
    bool committed = false;
    try {
      // The base was last planned from before this job was queued, so it is this
      // thread's alone now: it takes what the commits before wrote and the plans did not
      // know (the revisions, the apps' creation and update stamps).
      stamp_base();
      State::CommitReceipt receipt;
      std::string op;
      {
        std::lock_guard lock(m_mutex);
        op = m_commits[job.index].op;
      }
      auto started = std::chrono::steady_clock::now();
      auto r = m_state.commit(*m_base, std::move(job.batch), op, &receipt);
      commit_ms = ms_since(started);
      // A journaled commit that failed after its commit point is decided all the same
      // (the next reader of the store applies the rest): it counts as committed, and
      // the stream stops on the error.
      const bool decided = r ? *r && receipt.revision != 0 : receipt.revision != 0;
      if (!r) failure = r.error();
      if (decided) {
        committed = true;
        m_stamp = receipt.revision;
        for (auto& a : receipt.apps) {
          std::string id = a.tenant + "/" + a.name;
          m_app_stamps[id] = std::move(a);
        }
        old = std::move(m_base);
        m_base = std::move(job.after);
      } else if (r && !*r) {
        failure = Diagnostics{Diagnostic{
            {}, "", fmt::format("submission {} of the stream conflicted: the store changed since it was planned", job.index + 1),
            "another writer committed meanwhile; load the state again and submit what was not committed",
            "stream.conflict"}};
      } else if (r) {
        throw std::logic_error("SubmitStream: a commit went through without a revision");
      }
    } catch (...) {
      std::lock_guard lock(m_mutex);
      m_bug = std::current_exception();
    }
    std::unique_ptr<ClusterState> extra;
    {
      std::lock_guard lock(m_mutex);
      auto& c = m_commits[job.index];
      c.committed = committed;
      c.commit_ms = commit_ms;
      if (failure && !m_failure) m_failure = std::move(failure);
      if (job.after) m_dropped.push_back(std::move(job.after));  // Not committed: see above.
      // The old base's memory is the planner's next working copy; one spare is enough.
      if (old) {
        if (m_spares.empty()) m_spares.push_back(std::move(old));
        else extra = std::move(old);
      }
    }
    m_done_cv.notify_all();
    extra.reset();  // Freed outside the lock.
  }
}

void SubmitStream::stamp_base() {
  if (!m_stamp) return;
  m_base->stamp_commit(*m_stamp);
  // Every state of the stream was planned from one these stamps were not on yet (the
  // planner had moved on before each commit ended), so each takes all of them.
  for (const auto& [id, s] : m_app_stamps) {
    auto it = m_base->apps.find(id);
    if (it == m_base->apps.end()) continue;
    it->second.created = s.created;
    it->second.updated = s.updated;
    it->second.op = s.op;
  }
}

SubmitStream::Finished SubmitStream::finish() {
  {
    std::lock_guard lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  if (m_committer.joinable()) m_committer.join();
  m_finished = true;
  if (m_bug) std::rethrow_exception(m_bug);
  Finished f;
  f.commits = m_commits;
  f.failure = m_failure;
  stamp_base();
  f.last = std::move(*m_base);
  m_dropped.clear();
  return f;
}

}  // namespace gaia
