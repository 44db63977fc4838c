#include "cli/common.hpp"

#include "controllers/lifecycle.hpp"

#include "lib/timeline.hpp"
#include "spec/app_spec.hpp"

#include <chrono>
#include <cstdlib>
#include <fmt/format.h>
#include <unistd.h>

namespace gaia::cli {

namespace {

std::vector<std::filesystem::path> split_env_paths(const char* env) {
  std::vector<std::filesystem::path> out;
  if (!env) return out;
  std::string s = env;
  size_t start = 0;
  while (start <= s.size()) {
    size_t colon = s.find(':', start);
    std::string part = s.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!part.empty()) out.emplace_back(part);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string sgr(const Globals& g, std::FILE* s, const char* code, const std::string& text) {
  if (!g.use_color(s)) return text;
  return fmt::format("\033[{}m{}\033[0m", code, text);
}

// GitHub Actions workflow commands need '%', CR and LF escaped in the message.
std::string github_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out += c;
  }
  return out;
}

}  // namespace

std::vector<std::filesystem::path> Globals::repo_paths() const {
  std::vector<std::filesystem::path> out(repo.begin(), repo.end());
  if (out.empty()) out = split_env_paths(std::getenv("GAIA_REPO"));
  return out;
}

std::vector<std::filesystem::path> Globals::jpath_paths() const {
  std::vector<std::filesystem::path> out(jpath.begin(), jpath.end());
  for (auto& p : split_env_paths(std::getenv("GAIA_PATH"))) out.push_back(p);
  return out;
}

bool Globals::use_color(std::FILE* stream) const {
  if (color == "never") return false;
  if (color == "always") return true;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string(term) == "dumb") return false;
  return isatty(fileno(stream)) != 0;
}

namespace {

// Absolute paths below the working directory are shown relative to it, so messages
// read the same as the paths the user typed, and CI annotations point at repo files.
std::string relative_to_cwd(const std::string& file) {
  if (file.empty() || file[0] != '/') return file;
  std::error_code ec;
  std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return file;
  std::filesystem::path rel = std::filesystem::path(file).lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return file;
  return rel.string();
}

}  // namespace

CLI::Validator tenant_validator() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        return spec::is_dns_label(v)
                   ? std::string()
                   : "tenant '" + v + "' is not a DNS label (1-63 of a-z, 0-9, '-', alphanumeric at both ends)";
      },
      "DNS label");
}

int report(const Globals& g, const Diagnostics& input) {
  Diagnostics ds = input;
  for (auto& d : ds) d.location.file = relative_to_cwd(d.location.file);
  if (g.error_format == "github") {
    for (const auto& d : ds) {
      std::string props;
      if (!d.location.file.empty()) props += "file=" + d.location.file;
      if (d.location.line > 0) props += fmt::format(",line={}", d.location.line);
      if (d.location.column > 0) props += fmt::format(",col={}", d.location.column);
      std::string msg = d.path.empty() ? d.message : d.path + ": " + d.message;
      if (!d.hint.empty()) msg += "\nhint: " + d.hint;
      std::fprintf(stderr, "::error %s::%s\n", props.c_str(), github_escape(msg).c_str());
    }
    return k_error;
  }
  std::string text = format_diagnostics(ds);
  if (g.use_color(stderr)) {
    // Colour only the severity word, so the text stays grep-able.
    std::string coloured;
    size_t pos = 0;
    while (true) {
      size_t at = text.find("error: ", pos);
      if (at == std::string::npos) break;
      coloured += text.substr(pos, at - pos) + red(g, stderr, "error") + ": ";
      pos = at + 7;
    }
    coloured += text.substr(pos);
    text = coloured;
  }
  std::fputs(text.c_str(), stderr);
  if (ds.size() > 1) std::fprintf(stderr, "%zu errors\n", ds.size());
  return k_error;
}

int report_error(const Globals& g, const std::string& message, const std::string& hint) {
  return report(g, Diagnostics{Diagnostic{{}, "", message, hint}});
}

bool verbose_at(const Globals& g, int level) { return !g.quiet && g.verbose >= level; }

void log_verbose(const Globals& g, int level, const std::string& message) {
  if (!verbose_at(g, level)) return;
  std::string line = dim(g, stderr, message) + "\n";
  std::fputs(line.c_str(), stderr);
}

namespace {
long long steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

StepTimer::StepTimer(const Globals& g, std::string what, int level)
    : m_g(g), m_what(std::move(what)), m_level(level), m_start_ns(steady_ns()) {}

StepTimer::~StepTimer() { stop(); }

double StepTimer::elapsed_ms() const { return static_cast<double>(steady_ns() - m_start_ns) / 1e6; }

void StepTimer::stop(const std::string& detail) {
  if (m_stopped) return;
  m_stopped = true;
  if (!verbose_at(m_g, m_level)) return;
  log_verbose(m_g, m_level, fmt::format("{}: {:.1f} ms{}", m_what, elapsed_ms(), detail.empty() ? "" : " (" + detail + ")"));
}

std::string bold(const Globals& g, std::FILE* s, const std::string& t) { return sgr(g, s, "1", t); }
std::string green(const Globals& g, std::FILE* s, const std::string& t) { return sgr(g, s, "32", t); }
std::string yellow(const Globals& g, std::FILE* s, const std::string& t) { return sgr(g, s, "33", t); }
std::string red(const Globals& g, std::FILE* s, const std::string& t) { return sgr(g, s, "31", t); }
std::string dim(const Globals& g, std::FILE* s, const std::string& t) { return sgr(g, s, "2", t); }

}  // namespace gaia::cli

namespace gaia::cli {

Result<std::chrono::milliseconds> positive_duration(const std::string& flag, const std::string& text) {
  auto d = parse_duration(text);
  if (!d) return fail(d.error());
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms.count() <= 0)
    return fail(Diagnostic{{}, flag, fmt::format("{} {}: must be positive", flag, text),
                           "write a duration such as 500ms, 2s or 1m"});
  return ms;
}

std::string instance_reason(const Instance& i, int64_t now_ms, const StartGates* gates) {
  if (!i.pending_reason.empty()) return i.pending_reason;
  if (gates && i.state == InstanceState::Placed)
    if (std::string why = gates->reason(i); !why.empty()) return why;
  if (i.state != InstanceState::Failed || i.failure.empty()) return "-";
  if (i.restart_at_ms > now_ms)
    return fmt::format("{}; restarts in {}s", i.failure, (i.restart_at_ms - now_ms + 999) / 1000);
  return i.failure;
}

}  // namespace gaia::cli
