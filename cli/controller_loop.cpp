#include "cli/controller_loop.hpp"

#include <fmt/format.h>

namespace gaia::cli {

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

FollowProgress::FollowProgress(const Globals& g, FollowOptions view)
    : m_g(g), m_view(std::move(view)), m_progress(g, stdout, m_view.print) {}

ops::FollowOptions FollowProgress::options() {
  ops::FollowOptions o;
  o.timeout = m_view.timeout;
  o.controller = m_view.controller;
  o.on_run = [this](const Batch& batch) {
    for (const auto& line : m_view.lines ? m_view.lines(batch) : controller_event_lines(m_g, batch))
      m_progress.print(line);
  };
  o.on_wait = [this](const ClusterState& state) {
    m_progress.update(m_view.status ? m_view.status(state) : progress_summary(state));
  };
  return o;
}

Result<ops::FollowResult> follow_controllers(const Globals& g, Session& s,
                                             const std::function<bool(const ClusterState&)>& done,
                                             const FollowOptions& options) {
  FollowProgress progress(g, options);
  return ops::follow_controllers(s.workspace(), done, progress.options());
}

}  // namespace gaia::cli
