#pragma once
// Progress while a command waits (`--wait`): on a terminal one status line that rewrites
// itself in place ("waiting: 12/40 instances running (3 pending: 3 ResourceFit) 4s"),
// with event lines printed above it; to a pipe or file, plain lines, a status line only
// when the status changes (so logs stay short and diffable); nothing with --quiet or
// when the command prints machine-readable output.

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cli/common.hpp"
#include "lib/state.hpp"

namespace gaia::cli {

class ProgressLine {
 public:
  enum class Mode { off, plain, terminal };

  // Terminal when `out` is a tty (and TERM is not dumb), plain otherwise; off when
  // `enabled` is false or --quiet was given.
  ProgressLine(const Globals& g, std::FILE* out, bool enabled = true);
  // An explicit mode and width (0: no limit), for tests.
  ProgressLine(Mode mode, std::FILE* out, size_t width);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  Mode mode() const { return m_mode; }
  // Sets the status. Terminal: redrawn in place, with the time waited so far. Plain:
  // printed as a line when it differs from the last one printed.
  void update(const std::string& status);
  // A line that stays (an event): printed above the status line.
  void print(const std::string& line);
  // Removes the status line from the terminal (plain output keeps its lines).
  void clear();

 private:
  void draw();

  Mode m_mode;
  std::FILE* m_out;
  size_t m_width;
  std::string m_status, m_last_plain;
  bool m_shown = false;
  std::chrono::steady_clock::time_point m_start;
};

// An instance the wait is not done with: its state and why.
struct Waiting {
  std::string state, reason;
};

// The short name of a reason, for grouping: the filter that rejected the most nodes
// ("0/6 nodes fit: 6 ResourceFit (cpu)" -> "ResourceFit"), "Dependency", "StartOrder",
// "Preempted", "NodeDown", the state for instances that are not pending, else the
// reason's first clause.
std::string reason_label(const Waiting& w);

// "12/40 instances running (3 pending: 2 ResourceFit, 1 Dependency)"; the three most
// common reasons, most common first.
std::string progress_summary(size_t running, size_t total, const std::vector<Waiting>& waiting);

// The summary over the instances of `state` that `keep` selects (all when empty).
std::string progress_summary(const ClusterState& state, const std::function<bool(const Instance&)>& keep = {});

}  // namespace gaia::cli
