#include "cli/controller_loop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace gaia::cli {

Result<ControllerRun> run_controllers(Session& s, const ControllerOptions& options) {
  ControllerRun run;
  auto st = s.state->update(s.op, [&](const ClusterState& cs, Batch& b) -> Result<void> {
    ControllerContext ctx{to_millis(s.clock.now()), options};
    run.outcome = reconcile(cs, ctx);
    b = run.outcome.batch;
    return {};
  });
  if (!st) return fail(st.error());
  run.state = std::move(*st);
  return run;
}

void print_controller_events(const Globals& g, const Batch& batch) {
  if (g.quiet) return;
  for (const auto& e : batch.events) {
    std::string what = !e.instance.empty() ? e.instance : !e.node.empty() ? e.node : e.app;
    std::string reason = fmt::format("{:<12}", e.reason);
    reason = e.type == "Warning" ? yellow(g, stdout, reason) : green(g, stdout, reason);
    std::printf("  %s %s %s\n", reason.c_str(), what.c_str(), e.message.c_str());
  }
  std::fflush(stdout);
}

Result<FollowResult> follow_controllers(const Globals& g, Session& s, const std::function<bool(const ClusterState&)>& done,
                                        const FollowOptions& options) {
  using Steady = std::chrono::steady_clock;
  auto deadline = Steady::now() + options.timeout;
  FollowResult f;
  auto poll = std::chrono::milliseconds(100);
  for (;;) {
    auto run = run_controllers(s, options.controller);
    if (!run) return fail(run.error());
    ++f.runs;
    if (options.print) print_controller_events(g, run->outcome.batch);
    f.state = std::move(run->state);
    if (done(f.state)) {
      f.done = true;
      return f;
    }
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
