#include "cli/controller_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "cli/progress.hpp"
#include "controllers/controller_options.hpp"
#include "ops/cycle.hpp"

namespace gaia::cli {

Result<ControllerRun> run_controllers(Session& s, const ControllerOptions& options) {
  ControllerRun run;
  // -vv: one line per controller run (each command's inline run, each --wait poll).
  static const Globals k_silent;
  StepTimer timer(s.globals ? *s.globals : k_silent, "controllers", 2);
  // Options stored with `gaia sim options` apply to every run, over the caller's.
  auto current = s.state->load();
  if (!current) return fail(current.error());
  ops::CycleOptions copts;
  copts.controller = stored_controller_options(*current, options);
  auto cycle = ops::run_cycle(*s.state, *s.backend, s.clock, s.op, copts);
  if (!cycle) return fail(cycle.error());
  run.outcome.batch = std::move(cycle->batch);
  run.outcome.passes = cycle->rounds;
  run.outcome.converged = cycle->converged;
  run.outcome.wake_at_ms = cycle->wake_at_ms;
  run.outcome.active = std::move(cycle->active);
  run.held = std::move(cycle->held);
  auto st = std::optional<ClusterState>(std::move(cycle->state));
  if (s.globals)
    timer.stop(fmt::format("{} pass(es), {} event(s){}", run.outcome.passes, run.outcome.batch.events.size(),
                           run.outcome.active.empty() ? "" : fmt::format(" from {}", fmt::join(run.outcome.active, ", "))));
  run.state = std::move(*st);
  return run;
}

std::vector<std::string> controller_event_lines(const Globals& g, const Batch& batch) {
  std::vector<std::string> lines;
  for (const auto& e : batch.events) {
    std::string what = !e.instance.empty() ? e.instance : !e.node.empty() ? e.node : e.app;
    std::string reason = fmt::format("{:<12}", e.reason);
    reason = e.type == "Warning" ? yellow(g, stdout, reason) : green(g, stdout, reason);
    lines.push_back(fmt::format("  {} {} {}", reason, what, e.message));
  }
  return lines;
}

void print_controller_events(const Globals& g, const Batch& batch) {
  if (g.quiet) return;
  for (const auto& line : controller_event_lines(g, batch)) std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

Result<FollowResult> follow_controllers(const Globals& g, Session& s, const std::function<bool(const ClusterState&)>& done,
                                        const FollowOptions& options) {
  using Steady = std::chrono::steady_clock;
  auto deadline = Steady::now() + options.timeout;
  FollowResult f;
  ProgressLine progress(g, stdout, options.print);
  auto poll = std::chrono::milliseconds(100);
  for (;;) {
    auto run = run_controllers(s, options.controller);
    if (!run) return fail(run.error());
    ++f.runs;
    for (const auto& line : controller_event_lines(g, run->outcome.batch)) progress.print(line);
    f.state = std::move(run->state);
    if (done(f.state)) {
      f.done = true;
      return f;
    }
    progress.update(options.status ? options.status(f.state) : progress_summary(f.state));
    auto now = Steady::now();
    if (now >= deadline) return f;
    // Sleep until a controller's timer is due, but poll meanwhile: another process may
    // add nodes or free capacity at any moment.
    auto sleep = poll;
    if (run->outcome.wake_at_ms > 0) {
      auto until = std::chrono::milliseconds(run->outcome.wake_at_ms - to_millis(s.clock.now()));
      sleep = std::clamp(until, std::chrono::milliseconds(1), poll);
    }
    sleep = std::min(sleep, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
    std::this_thread::sleep_for(std::max(sleep, std::chrono::milliseconds(1)));
    poll = std::min(poll * 2, std::chrono::milliseconds(1000));
  }
}

}  // namespace gaia::cli
