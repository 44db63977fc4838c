// The CLI at a terminal: the progress line, colour only on a terminal and never with
// NO_COLOR, tables fitted to the terminal's width, --quiet and -v. Terminal cases run
// gaia on a pseudo-terminal through util-linux `script`; they skip, saying so, when it is
// missing.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli/progress.hpp"
#include "cli/table.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::cli;
using gaia::test::RunResult;
using gaia::test::Scratch;
namespace fs = std::filesystem;

namespace {

// Everything written to a stream, read back.
struct Capture {
  std::FILE* f = std::tmpfile();
  ~Capture() { std::fclose(f); }
  std::string text() const {
    std::fflush(f);
    std::rewind(f);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    return out;
  }
};

bool has_script() { return fs::exists("/usr/bin/script"); }

// Runs `gaia ARGS` on a pseudo-terminal (stdout and stderr both the terminal), after
// `setup` (shell commands such as `stty cols 40`). Returns what the terminal showed,
// with the terminal's "\r\n" turned back into "\n".
RunResult on_terminal(const Scratch& s, const std::string& setup, const std::vector<std::string>& args,
                      std::map<std::string, std::string> env = {}) {
  std::string cmd = setup.empty() ? "" : setup + "; ";
  cmd += fmt::format("'{}'", GAIA_BINARY);
  for (const auto& a : args) cmd += " '" + a + "'";
  env.emplace("TERM", "xterm");
  env.emplace("SHELL", "/bin/sh");
  RunResult r = s.run("/usr/bin/script", {"-qec", cmd, "/dev/null"}, env);
  gaia::test::replace_all(r.out, "\r\n", "\n");
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}

void make_long_label_cluster(const Scratch& s) {
  REQUIRE(s.gaia({"cluster", "create", "--nodes", "3", "--cpu", "8", "--memory", "32Gi", "--label",
                  "a-rather-long-label-key=and-an-even-longer-label-value"})
              .code == 0);
}

// An app asking for more cpu than any node has.
void write_huge_app(const Scratch& s) {
  gaia::test::write_app(s, "huge", "huge", "1.0.0", "", "{}\n",
                        "function(config, deps, app) {\n"
                        "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '64', memory: '1Gi' } } },\n"
                        "  outputs: {},\n"
                        "}\n");
}

}  // namespace

TEST_CASE("progress: a terminal rewrites one status line", "[progress]") {
  Capture c;
  {
    ProgressLine p(ProgressLine::Mode::terminal, c.f, 40);
    p.update("1/3 instances running");
    p.print("  placed x");
    p.update("3/3 instances running, and a status far too long for forty columns");
  }
  std::string out = c.text();
  CHECK(out.starts_with("\rwaiting 0s: 1/3 instances running\033[K"));
  // The event clears the status, prints, and redraws the status under it.
  CHECK(out.find("\r\033[K  placed x\n\rwaiting 0s: 1/3 instances running\033[K") != std::string::npos);
  // Cut to the width less one column, so the line never wraps.
  CHECK(out.find("\rwaiting 0s: 3/3 instances running, and…\033[K") != std::string::npos);
  CHECK(display_width("waiting 0s: 3/3 instances running, and…") == 39);
  // Gone when done.
  CHECK(out.ends_with("\r\033[K"));
}

TEST_CASE("progress: plain lines only when the status changes, off prints nothing", "[progress]") {
  Capture plain;
  {
    ProgressLine p(ProgressLine::Mode::plain, plain.f, 0);
    p.update("0/2 instances running");
    p.update("0/2 instances running");
    p.print("  placed a");
    p.update("1/2 instances running");
  }
  CHECK(plain.text() == "  0/2 instances running\n  placed a\n  1/2 instances running\n");
  Capture off;
  {
    ProgressLine p(ProgressLine::Mode::off, off.f, 80);
    p.update("0/2 instances running");
    p.print("  placed a");
  }
  CHECK(off.text().empty());
  // --quiet turns it off whatever the stream.
  Globals quiet;
  quiet.quiet = true;
  CHECK(ProgressLine(quiet, plain.f).mode() == ProgressLine::Mode::off);
  CHECK(ProgressLine(Globals{}, plain.f).mode() == ProgressLine::Mode::plain);
  CHECK(ProgressLine(Globals{}, plain.f, false).mode() == ProgressLine::Mode::off);
}

TEST_CASE("progress: the summary groups why instances wait", "[progress]") {
  CHECK(reason_label({"Pending", "0/6 nodes fit: 6 ResourceFit (cpu)"}) == "ResourceFit");
  CHECK(reason_label({"Pending", "0/6 nodes fit: 4 NodeAffinity, 2 ResourceFit (memory)"}) == "NodeAffinity");
  CHECK(reason_label({"Pending", "waiting for dependency hdfs to be ready"}) == "Dependency");
  CHECK(reason_label({"Placed", "waiting for role coord of app chain to be ready (after)"}) == "StartOrder");
  CHECK(reason_label({"Pending", "preempted by 0.a.b.c on n1"}) == "Preempted");
  // What blocks it now is the filter, not the preemption that started it.
  CHECK(reason_label({"Pending", "preempted by 0.a.b.c on n1; then 0/3 nodes fit: 3 ResourceFit"}) == "ResourceFit");
  CHECK(reason_label({"Pending", "waiting for node node-1 (holds volume data)"}) == "NodeDown");
  CHECK(reason_label({"Failed", "exit code 137"}) == "Failed");
  CHECK(reason_label({"Pending", "replacing an instance of workload 1234"}) == "replacing an instance of worklo…");
  CHECK(progress_summary(2, 2, {}) == "2/2 instances running");
  CHECK(progress_summary(0, 1, {{"Pending", "0/3 nodes fit: 3 ResourceFit (cpu)"}}) ==
        "0/1 instance running (1 waiting: 1 ResourceFit)");
  std::vector<Waiting> many = {{"Pending", "0/3 nodes fit: 3 ResourceFit"},
                               {"Pending", "waiting for dependency a to be ready"},
                               {"Pending", "0/3 nodes fit: 3 ResourceFit"},
                               {"Failed", "crashed"},
                               {"Pending", "waiting for node n (holds volume v)"}};
  CHECK(progress_summary(12, 17, many) == "12/17 instances running (5 waiting: 2 ResourceFit, 1 Dependency, 1 Failed, ...)");
}

TEST_CASE("submit --wait: a status line on a terminal, plain lines to a pipe, nothing with -q", "[progress][e2e]") {
  Scratch s;
  make_long_label_cluster(s);
  write_huge_app(s);
  RunResult piped = s.gaia({"submit", "huge", "--wait", "--timeout", "1s"});
  CHECK(piped.code == 1);
  CHECK(piped.out.find("\r") == std::string::npos);
  // Once, however many polls the second saw.
  std::string status = "  0/1 instance running (1 waiting: 1 ResourceFit)\n";
  CHECK(piped.out.find(status) != std::string::npos);
  CHECK(piped.out.find(status) == piped.out.rfind(status));
  CHECK(piped.err.find("still not running") != std::string::npos);

  RunResult quiet = s.gaia({"-q", "submit", "huge", "--wait", "--timeout", "1s"});
  CHECK(quiet.code == 1);
  CHECK(quiet.out.empty());
  CHECK(quiet.err.find("still not running") != std::string::npos);

  if (!has_script()) {
    WARN("util-linux `script` is missing: skipping the terminal half of this test");
    return;
  }
  RunResult tty = on_terminal(s, "stty cols 120", {"submit", "huge", "--wait", "--timeout", "1s"});
  CHECK(tty.code == 1);
  CHECK(tty.out.find("\rwaiting 0s: 0/1 instance running (1 waiting: 1 ResourceFit)\033[K") != std::string::npos);
  // The status line is cleared before the error is printed.
  CHECK(tty.out.find("\r\033[K") != std::string::npos);
}

TEST_CASE("colour: only on a terminal, never with NO_COLOR", "[color][e2e]") {
  Scratch s;
  const std::string red_error = "\033[31merror\033[0m";
  // Not a terminal: no colour with auto, colour with always.
  CHECK(s.gaia({"validate", "nope"}, {{"NO_COLOR", ""}}).err.find('\033') == std::string::npos);
  CHECK(s.gaia({"--color", "always", "validate", "nope"}).err.find(red_error) != std::string::npos);
  if (!has_script()) {
    WARN("util-linux `script` is missing: skipping the terminal colour cases");
    return;
  }
  RunResult coloured = on_terminal(s, "", {"--color", "auto", "validate", "nope"}, {{"NO_COLOR", ""}});
  CHECK(coloured.code == 1);
  CHECK(coloured.out.find(red_error) != std::string::npos);
  RunResult no_color = on_terminal(s, "", {"--color", "auto", "validate", "nope"}, {{"NO_COLOR", "1"}});
  CHECK(no_color.code == 1);
  CHECK(no_color.out.find("error") != std::string::npos);
  CHECK(no_color.out.find('\033') == std::string::npos);
  CHECK(on_terminal(s, "", {"--color", "never", "validate", "nope"}, {{"NO_COLOR", ""}}).out.find('\033') ==
        std::string::npos);
  CHECK(on_terminal(s, "", {"validate", "nope"}, {{"NO_COLOR", ""}, {"TERM", "dumb"}}).out.find('\033') ==
        std::string::npos);
}

TEST_CASE("tables: fitted to the terminal's width, whole in a pipe", "[table][e2e]") {
  Scratch s;
  make_long_label_cluster(s);
  RunResult piped = s.gaia({"get", "nodes", "-o", "wide"}, {{"COLUMNS", "40"}});
  REQUIRE(piped.code == 0);
  CHECK(piped.out.find("and-an-even-longer-label-value") != std::string::npos);
  CHECK(piped.out.find("…") == std::string::npos);
  if (!has_script()) {
    WARN("util-linux `script` is missing: skipping the terminal width cases");
    return;
  }
  auto check_width = [](const RunResult& r, size_t width, bool cut = true) {
    INFO(r.out);
    CHECK(r.code == 0);
    if (cut) CHECK(r.out.find("…") != std::string::npos);
    for (const auto& line : lines_of(r.out)) CHECK(display_width(line) <= width);
  };
  size_t natural = 0;
  for (const auto& line : lines_of(piped.out)) natural = std::max(natural, display_width(line));
  // Narrower than the table, wider than its columns' readable minimums.
  REQUIRE(natural > 140);
  // The terminal's own size (ioctl)...
  // The labels wrap rather than being cut.
  check_width(on_terminal(s, "stty cols 140", {"get", "nodes", "-o", "wide"}, {{"COLUMNS", "200"}}), 140, false);
  // ... else $COLUMNS, when the terminal reports none.
  check_width(on_terminal(s, "stty cols 0", {"get", "nodes", "-o", "wide"}, {{"COLUMNS", "135"}}), 135, false);
  check_width(on_terminal(s, "stty cols 70", {"events"}), 70, false);
}

TEST_CASE("quiet and verbose: -q prints nothing on success, -v and -vv explain on stderr", "[verbose][e2e]") {
  Scratch s;
  gaia::test::write_app(s, "small", "small", "1.0.0");
  auto quiet = [&](const std::vector<std::string>& args) {
    std::vector<std::string> full = {"-q"};
    full.insert(full.end(), args.begin(), args.end());
    RunResult r = s.gaia(full);
    INFO("gaia " << fmt::format("{}", fmt::join(full, " ")) << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
  };
  quiet({"init", "scaffolded"});
  quiet({"validate", "small"});
  quiet({"cluster", "create", "--nodes", "2", "--cpu", "8", "--memory", "32Gi"});
  quiet({"node", "add", "--nodes", "1"});
  quiet({"node", "label", "node-1", "disk=ssd"});
  quiet({"node", "cordon", "node-3"});
  quiet({"node", "uncordon", "node-3"});
  quiet({"submit", "small", "--wait"});
  quiet({"delete", "small"});
  quiet({"context", "add", "other", "--store", "other.db"});
  quiet({"context", "use", "other"});
  quiet({"context", "use", "default"});
  quiet({"context", "remove", "other"});
  quiet({"node", "remove", "node-3"});
  // Requested output stays.
  CHECK(s.gaia({"-q", "context", "current"}).out == "default\n");
  CHECK_FALSE(s.gaia({"-q", "get", "nodes", "-o", "json"}).out.empty());

  RunResult v = s.gaia({"-v", "submit", "small"});
  REQUIRE(v.code == 0);
  CHECK(v.err.find("operation op-") != std::string::npos);
  CHECK(v.err.find(" opened: ") != std::string::npos);
  CHECK(v.err.find("store: ") != std::string::npos);
  CHECK(v.err.find(" commit(s) in ") != std::string::npos);
  CHECK(v.err.find("total: ") != std::string::npos);
  CHECK(v.err.find("(exit 0)") != std::string::npos);
  CHECK(v.err.find("store txn:") == std::string::npos);  // That is -vv.
  CHECK(v.out.find("total: ") == std::string::npos);      // Never on stdout.

  RunResult vv = s.gaia({"-vv", "node", "add"});
  REQUIRE(vv.code == 0);
  CHECK(vv.err.find("store txn: ") != std::string::npos);
  CHECK(vv.err.find("committed at revision") != std::string::npos);
  // Every controller run, even one that finds nothing to do.
  RunResult vv_submit = s.gaia({"-vv", "submit", "small"});
  REQUIRE(vv_submit.code == 0);
  CHECK(vv_submit.err.find("controllers: ") != std::string::npos);
  CHECK(vv_submit.err.find(" pass(es), ") != std::string::npos);

  // --quiet wins.
  RunResult qv = s.gaia({"-q", "-vv", "node", "add"});
  CHECK(qv.code == 0);
  CHECK(qv.err.empty());
  CHECK(qv.out.empty());
}

namespace {

// The text of the column headed `header` in each row of a terminal table (a wrapped
// cell's lines joined), the column being the table's last.
std::vector<std::string> last_column(const std::string& table, const std::string& header) {
  auto lines = lines_of(table);
  std::vector<std::string> cells;
  if (lines.empty()) return cells;
  size_t at = lines[0].find(header);
  if (at == std::string::npos) return cells;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    if (line.empty()) continue;
    std::string part = line.size() > at ? line.substr(at) : "";
    bool continued = line.substr(0, std::min(at, line.size())).find_first_not_of(' ') == std::string::npos;
    if (continued && !cells.empty()) cells.back() += part;
    else cells.push_back(part);
  }
  return cells;
}

std::string without_spaces(std::string s) {
  std::erase(s, ' ');
  return s;
}

}  // namespace

TEST_CASE("tables: narrow terminals leave out columns, keep names whole and wrap messages", "[table][e2e]") {
  Scratch s;
  make_long_label_cluster(s);
  gaia::test::write_app(s, "small", "small", "1.0.0");
  REQUIRE(s.gaia({"submit", "small"}).code == 0);
  write_huge_app(s);
  REQUIRE(s.gaia({"submit", "huge"}).code <= 1);  // Pending: no node has 64 cores.
  if (!has_script()) {
    WARN("util-linux `script` is missing: skipping the narrow terminal cases");
    return;
  }
  auto events = gaia::test::json_lines(s.gaia({"events", "-o", "json"}).out);
  REQUIRE(events.size() > 5);
  for (size_t width : {60, 80, 200}) {
    INFO("width " << width);
    // The width from the terminal (stty) and, as the tests above show, else $COLUMNS.
    auto run = [&](const std::vector<std::string>& args) {
      RunResult r = width == 80 ? on_terminal(s, "stty cols 0", args, {{"COLUMNS", "80"}})
                                : on_terminal(s, fmt::format("stty cols {}", width), args);
      INFO(fmt::format("gaia {}\n{}", fmt::join(args, " "), r.out));
      CHECK(r.code == 0);
      for (const auto& line : lines_of(r.out)) CHECK(display_width(line) <= width);
      CHECK(r.out.find("…") == std::string::npos);  // Nothing cut: left out or wrapped.
      return r.out;
    };
    std::string instances = run({"get", "instances"});
    CHECK(lines_of(instances)[0].starts_with("NAME"));
    for (const char* name : {"0.web.small.default", "0.web.huge.default"}) CHECK(instances.find(name) != std::string::npos);
    // The pending instance's reason is all there, however it wrapped.
    bool reason_shown = false;
    for (const auto& r : last_column(instances, "REASON")) reason_shown = reason_shown || r.find("cpu") != std::string::npos;
    CHECK(reason_shown);
    // The app and role are in the name: they are the first to go.
    CHECK((lines_of(instances)[0].find("APP") != std::string::npos) == (width == 200));

    std::string apps = run({"get", "apps"});
    for (const char* name : {"small", "huge"}) CHECK(apps.find(name) != std::string::npos);

    std::string nodes = run({"get", "nodes"});
    for (const char* name : {"node-1", "node-2", "node-3"}) CHECK(nodes.find(name) != std::string::npos);
    std::string wide_nodes = run({"get", "nodes", "-o", "wide"});
    CHECK(wide_nodes.find("node-3") != std::string::npos);

    // Events, listed and followed: every object whole, every message whole.
    for (bool follow : {false, true}) {
      INFO("follow " << follow);
      std::vector<std::string> args = {"events"};
      if (follow) args.insert(args.end(), {"-f", "--tail", "-1", "--timeout", "300ms"});
      std::string table = run(args);
      CHECK(table.find("OBJECT") != std::string::npos);
      CHECK((table.find("TIME") != std::string::npos) == (width == 200));
      for (const auto& e : events) {
        CHECK(table.find(e.value("reason", "")) != std::string::npos);
        if (const std::string instance = e.value("instance", ""); !instance.empty())
          CHECK(table.find("instance/" + instance) != std::string::npos);
      }
      auto messages = last_column(table, "MESSAGE");
      REQUIRE(messages.size() == events.size());
      for (size_t i = 0; i < events.size(); ++i)
        CHECK(without_spaces(messages[i]) == without_spaces(events[i].value("message", "")));
    }
  }
}
