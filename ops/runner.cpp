#include "ops/runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <thread>

#include "controllers/controller_options.hpp"
#include "ops/cycle.hpp"

namespace gaia::ops {

namespace {

long long steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ReadAhead::ReadAhead(const Workspace& ws, What what) {
  // One thread, the state first: the command needs it first, and two reads at once
  // would only queue for the one connection of an SQLite store. An exception stays in
  // the future, which is waited for and dropped: the command's own read meets the same
  // failure and reports it.
  State* state = what == What::Backend ? nullptr : &ws.state;
  Backend* backend = what == What::State ? nullptr : ws.backend;
  if (!state && !backend) return;
  m_done = std::async(std::launch::async, [state, backend] {
    if (state) state->prefetch();
    if (backend) backend->prefetch();
  });
}

ReadAhead::~ReadAhead() {
  if (m_done.valid()) m_done.wait();
}

Result<ControllerRun> run_controllers(const Workspace& ws, const ControllerOptions& options) {
  ControllerRun run;
  long long start = steady_ns();
  if (!ws.backend) throw std::logic_error("run_controllers: the workspace has no backend");
  // Options stored with `gaia sim options` apply to every run, over the caller's.
  auto current = ws.state.load_shared();
  if (!current) return fail(current.error());
  CycleOptions copts;
  copts.controller = stored_controller_options(**current, options);
  current->reset();
  auto cycle = run_cycle(ws.state, *ws.backend, ws.clock, ws.op, copts);
  std::shared_ptr<const ClusterState> st;
  if (cycle) {
    run.outcome.batch = std::move(cycle->batch);
    run.outcome.passes = cycle->rounds;
    run.outcome.converged = cycle->converged;
    run.outcome.wake_at_ms = cycle->wake_at_ms;
    run.outcome.active = std::move(cycle->active);
    run.held = std::move(cycle->held);
    run.backend_errors = std::move(cycle->errors);
    st = std::move(cycle->state);
  }
  // -vv: one line per controller run (each command's inline run, each --wait poll).
  double ms = static_cast<double>(steady_ns() - start) / 1e6;
  if (!cycle) {
    ws.trace(2, fmt::format("controllers: {:.1f} ms", ms));
    return fail(cycle.error());
  }
  ws.trace(2, fmt::format("controllers: {:.1f} ms ({} pass(es), {} event(s){})", ms, run.outcome.passes,
                          run.outcome.batch.events.size(),
                          run.outcome.active.empty() ? "" : fmt::format(" from {}", fmt::join(run.outcome.active, ", "))));
  run.state = std::move(st);
  return run;
}

Result<Reconciled> commit_and_reconcile(const Workspace& ws,
                                        const std::function<Result<void>(const ClusterState&, Batch&)>& decide) {
  // The controllers observe the backend next: what it needs is read while this thread
  // loads the state, decides and commits. After a submit's own read-ahead (which read
  // it already) this is one check of the store's revision.
  ReadAhead read_ahead(ws, ReadAhead::What::Backend);
  // The state right after the commit is not kept: holding it would make the
  // controllers' first load copy the whole state to apply the commit.
  if (auto committed = ws.state.update_shared(ws.op, decide); !committed) return fail(committed.error());
  // Every mutating command runs the controllers once after its own change; what they do
  // is on the timeline under the command's operation id.
  auto run = run_controllers(ws);
  if (!run) return fail(run.error());
  return Reconciled{std::move(*run)};
}

Result<FollowResult> follow_controllers(const Workspace& ws, const std::function<bool(const ClusterState&)>& done,
                                        const FollowOptions& options) {
  using Steady = std::chrono::steady_clock;
  auto deadline = Steady::now() + options.timeout;
  FollowResult f;
  auto poll = std::chrono::milliseconds(100);
  for (;;) {
    auto run = run_controllers(ws, options.controller);
    if (!run) return fail(run.error());
    ++f.runs;
    if (options.on_run) options.on_run(run->outcome.batch);
    f.state = *run->state;
    if (done(f.state)) {
      f.done = true;
      return f;
    }
    if (options.on_wait) options.on_wait(f.state);
    auto now = Steady::now();
    if (now >= deadline) return f;
    // Sleep until a controller's timer is due, but poll meanwhile: another process may
    // add nodes or free capacity at any moment.
    auto sleep = poll;
    if (run->outcome.wake_at_ms > 0) {
      auto until = std::chrono::milliseconds(run->outcome.wake_at_ms - to_millis(ws.clock.now()));
      sleep = std::clamp(until, std::chrono::milliseconds(1), poll);
    }
    sleep = std::min(sleep, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    std::this_thread::sleep_for(std::max(sleep, std::chrono::milliseconds(1)));
    poll = std::min(poll * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace gaia::ops
