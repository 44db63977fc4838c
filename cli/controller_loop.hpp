#pragma once
// Showing what the controllers do. The runs themselves are ops/runner.hpp; this file
// prints their events and, while a command waits (`--wait`), a progress line, through
// the runner's callbacks.

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/context.hpp"
#include "cli/progress.hpp"
#include "ops/runner.hpp"

namespace gaia::cli {

// One line per event of `batch` ("  Scheduled  0.web.web.default  placed on n3 ...").
void print_controller_events(const Globals& g, const Batch& batch);

// The event lines print_controller_events prints, without printing them.
std::vector<std::string> controller_event_lines(const Globals& g, const Batch& batch);

struct FollowOptions {
  std::chrono::milliseconds timeout{300'000};
  bool print = true;  // Progress on stdout: events, and a status line (cli/progress.hpp).
  ControllerOptions controller;
  // The status line while waiting; default: how many instances of the store run and
  // why the others wait.
  std::function<std::string(const ClusterState&)> status;
  // The lines shown for a run's events; default: controller_event_lines.
  std::function<std::vector<std::string>(const Batch&)> lines;
};

// The progress of one wait: event lines above a status line that refreshes in place.
// options() are the runner's options with callbacks that feed it; the status line is
// cleared when this goes out of scope, so destroy it before printing what timed out.
class FollowProgress {
 public:
  FollowProgress(const Globals& g, FollowOptions view);
  FollowProgress(const FollowProgress&) = delete;
  FollowProgress& operator=(const FollowProgress&) = delete;

  ops::FollowOptions options();

 private:
  const Globals& m_g;
  FollowOptions m_view;
  ProgressLine m_progress;
};

// Runs the controllers until `done(state)` holds or the timeout passes (ops/runner.hpp),
// showing what they did when `print` is set.
Result<ops::FollowResult> follow_controllers(const Globals& g, Session& s,
                                             const std::function<bool(const ClusterState&)>& done,
                                             const FollowOptions& options);

}  // namespace gaia::cli
