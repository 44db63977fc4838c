#include "cli/progress.hpp"

#include "controllers/lifecycle.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "cli/table.hpp"

namespace gaia::cli {

namespace {

ProgressLine::Mode mode_for(const Globals& g, std::FILE* out, bool enabled) {
  if (!enabled || g.quiet) return ProgressLine::Mode::off;
  const char* term = std::getenv("TERM");
  bool dumb = term && std::string(term) == "dumb";
  return isatty(fileno(out)) && !dumb ? ProgressLine::Mode::terminal : ProgressLine::Mode::plain;
}

}  // namespace

ProgressLine::ProgressLine(const Globals& g, std::FILE* out, bool enabled)
    : ProgressLine(mode_for(g, out, enabled), out, table_options_for(out).max_width) {}

ProgressLine::ProgressLine(Mode mode, std::FILE* out, size_t width)
    : m_mode(mode), m_out(out), m_width(width), m_start(std::chrono::steady_clock::now()) {}

ProgressLine::~ProgressLine() { clear(); }

void ProgressLine::update(const std::string& status) {
  m_status = status;
  if (m_mode == Mode::terminal) {
    draw();
  } else if (m_mode == Mode::plain && status != m_last_plain) {
    std::fprintf(m_out, "  %s\n", status.c_str());
    std::fflush(m_out);
    m_last_plain = status;
  }
}

void ProgressLine::print(const std::string& line) {
  if (m_mode == Mode::off) return;
  bool redraw = m_shown;
  clear();
  std::fprintf(m_out, "%s\n", line.c_str());
  if (redraw) draw();
  std::fflush(m_out);
}

void ProgressLine::clear() {
  if (m_mode != Mode::terminal || !m_shown) return;
  std::fputs("\r\033[K", m_out);
  std::fflush(m_out);
  m_shown = false;
}

void ProgressLine::draw() {
  if (m_status.empty()) return;
  auto waited = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - m_start);
  std::string text = fmt::format("waiting {}s: {}", waited.count(), m_status);
  // One column short of the width: writing the last column wraps on some terminals,
  // and a wrapped line can no longer be rewritten with '\r'.
  if (m_width > 1) text = truncate_to_width(text, m_width - 1);
  std::fprintf(m_out, "\r%s\033[K", text.c_str());
  std::fflush(m_out);
  m_shown = true;
}

std::string reason_label(const Waiting& w) {
  const std::string& r = w.reason;
  if (auto at = r.find("nodes fit: "); at != std::string::npos) {
    // "<n> <Filter> (detail), ..." -- the first entry rejected the most nodes.
    std::string rest = r.substr(at + 11);
    size_t space = rest.find(' ');
    if (space != std::string::npos) {
      std::string name = rest.substr(space + 1);
      name = name.substr(0, name.find_first_of(" ,;("));
      if (!name.empty()) return name;
    }
  }
  if (r.find("nodes fit") != std::string::npos) return "NoNodes";
  if (r.starts_with("preempted by")) return "Preempted";
  if (r.starts_with("waiting for dependency")) return "Dependency";
  if (r.starts_with("waiting for role")) return "StartOrder";
  if (r.starts_with("waiting for node")) return "NodeDown";
  if (w.state != "Pending" && !w.state.empty()) return w.state;
  std::string first = r.substr(0, r.find_first_of(";:("));
  while (!first.empty() && first.back() == ' ') first.pop_back();
  return first.empty() ? "Pending" : truncate_to_width(first, 32);
}

std::string progress_summary(size_t running, size_t total, const std::vector<Waiting>& waiting) {
  std::string out = fmt::format("{}/{} instance{} running", running, total, total == 1 ? "" : "s");
  if (waiting.empty()) return out;
  std::map<std::string, size_t> counts;
  for (const auto& w : waiting) ++counts[reason_label(w)];
  std::vector<std::pair<std::string, size_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (size_t i = 0; i < sorted.size() && i < 3; ++i) parts.push_back(fmt::format("{} {}", sorted[i].second, sorted[i].first));
  if (sorted.size() > 3) parts.push_back("...");
  return out + fmt::format(" ({} waiting: {})", waiting.size(), fmt::join(parts, ", "));
}

std::string progress_summary(const ClusterState& state, const std::function<bool(const Instance&)>& keep) {
  size_t running = 0, total = 0;
  std::vector<Waiting> waiting;
  StartGates gates(state);
  for (const auto& i : state.snapshot.instances) {
    if (keep && !keep(i)) continue;
    ++total;
    if (serving(i)) {
      ++running;
      continue;
    }
    std::string reason = i.pending_reason;
    if (reason.empty() && i.node.empty()) reason = "not scheduled yet";
    // A bound instance may be held by its start gates (dependencies, `after:`).
    if (reason.empty() && i.state == InstanceState::Placed) reason = gates.reason(i);
    if (reason.empty()) reason = "starting";
    waiting.push_back({std::string(instance_state_name(i.state)), std::move(reason)});
  }
  return progress_summary(running, total, waiting);
}

}  // namespace gaia::cli
