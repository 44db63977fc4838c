#pragma once
// The one helper header of the end-to-end tests of the gaia binary (tests/cli/):
// - Scratch: a scratch directory in which gaia (GAIA_BINARY) runs with its own state and
//   cache dirs, so tests never see a user's state or each other's; runs wait for the
//   exit code and capture stdout and stderr, or start in the background (spawn).
// - ok / expect_exit, StoreCli (commands against one store file, which the test can
//   read back), json_lines;
// - small app specs written into the scratch dir, the examples copied next to them, and
//   outputs made comparable with golden files (the scratch directory's path differs on
//   every run, so it is replaced by "<scratch>").

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lib/clock.hpp"
#include "store/sqlite_store.hpp"
#include "lib/state.hpp"
#include "tests/golden_util.hpp"
#include "tests/temp_dir.hpp"

namespace gaia::test {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

// The exit code of a child as a shell reports it (128 + signal when killed).
inline int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Kills and reaps a spawned child when the test leaves its scope without having waited
// for it (a failed REQUIRE), so no gaia process outlives its test. wait() is wait_exit
// for the guarded child.
class KillOnExit {
 public:
  explicit KillOnExit(pid_t pid) : m_pid(pid) {}
  ~KillOnExit() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, nullptr, 0);
  }
  KillOnExit(const KillOnExit&) = delete;
  KillOnExit& operator=(const KillOnExit&) = delete;
  int wait() {
    int code = wait_exit(m_pid);
    m_pid = 0;
    return code;
  }

 private:
  pid_t m_pid;
};

class Scratch {
 public:
  const std::filesystem::path& dir() const { return m_tmp.path(); }
  std::filesystem::path write(const std::string& rel, const std::string& content) const {
    return m_tmp.write(rel, content);
  }

  // Runs gaia with `args`; `env` adds or overrides variables (an empty value unsets).
  RunResult gaia(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) const {
    return run(GAIA_BINARY, args, env);
  }

  // Runs any program the same way (a shell driving completions, `script`).
  RunResult run(const std::string& exe, const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) const {
    std::string tag = ".run" + std::to_string(m_counter++);
    RunResult r;
    r.code = wait_exit(start(exe, args, env, tag));
    r.out = slurp(dir() / (tag + ".out"));
    r.err = slurp(dir() / (tag + ".err"));
    return r;
  }

  // Starts gaia with `args` without waiting for it (wait_exit(pid) does): its stdout and
  // stderr go to <dir>/<tag>.out and <dir>/<tag>.err, or nowhere when `tag` is empty.
  pid_t spawn(const std::vector<std::string>& args, const std::string& tag = "") const {
    return start(GAIA_BINARY, args, {}, tag);
  }

  static std::string slurp(const std::filesystem::path& p) { return read_text_file(p); }

 private:
  pid_t start(const std::string& exe, const std::vector<std::string>& args,
              const std::map<std::string, std::string>& env, const std::string& tag) const {
    pid_t pid = ::fork();
    if (pid != 0) return pid;
    int o = tag.empty() ? ::open("/dev/null", O_WRONLY)
                        : ::open((dir() / (tag + ".out")).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = tag.empty() ? ::open("/dev/null", O_WRONLY)
                        : ::open((dir() / (tag + ".err")).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (::chdir(dir().c_str()) != 0) ::_exit(127);
    ::setenv("XDG_STATE_HOME", (dir() / "state").c_str(), 1);
    ::setenv("XDG_CACHE_HOME", (dir() / "cache").c_str(), 1);
    ::setenv("NO_COLOR", "1", 1);
    ::unsetenv("GAIA_REPO");
    ::unsetenv("GAIA_PATH");
    ::unsetenv("GAIA_STORE");
    ::unsetenv("GAIA_RENDER_MALLOC");
    for (const auto& [k, v] : env) {
      if (v.empty()) ::unsetenv(k.c_str());
      else ::setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(exe.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }

  TempDir m_tmp{"gaia-test"};
  mutable int m_counter = 0;
};

// Polls `done` every `every` until it is true or `limit` has passed; returns whether it
// became true. For what a test waits on from another process (an agent, a watch, a
// kubelet): the condition is checked once more at the deadline.
template <class F>
bool eventually(F&& done, std::chrono::milliseconds limit = std::chrono::seconds(30),
                std::chrono::milliseconds every = std::chrono::milliseconds(50)) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

// The exit code of `pid` once it exits within `limit`; otherwise it is killed, reaped,
// and -1 returned.
inline int exit_within(pid_t pid, std::chrono::milliseconds limit) {
  int status = 0;
  auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

// A command's stdout parsed as JSON (the test fails, showing the output, if it is not).
inline nlohmann::json parsed(const RunResult& r) {
  INFO(r.out);
  nlohmann::json j;
  REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
  return j;
}

// The ordinals of `app`'s instances, sorted.
inline std::vector<int> ordinals(const gaia::ClusterState& st, const std::string& app) {
  std::vector<int> out;
  for (const auto& i : st.snapshot.instances)
    if (i.app == app) out.push_back(i.ordinal);
  std::sort(out.begin(), out.end());
  return out;
}

// The instance `key` of `st`, which must exist.
inline const gaia::Instance& instance(const gaia::ClusterState& st, const std::string& key) {
  const gaia::Instance* i = st.find_instance(key);
  REQUIRE(i);
  return *i;
}

// Whether `part` occurs in `text` (a command's output, a log file).
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline std::string examples_dir() { return std::string(GAIA_SOURCE_DIR) + "/examples"; }

// Runs gaia in `s` and requires exit code `code`; on failure shows the command and both
// outputs.
inline RunResult expect_exit(const Scratch& s, int code, const std::vector<std::string>& args) {
  RunResult r = s.gaia(args);
  INFO("gaia " << fmt::format("{}", fmt::join(args, " ")) << "\nexit " << r.code << "\nstdout: " << r.out
               << "\nstderr: " << r.err);
  REQUIRE(r.code == code);
  return r;
}

inline RunResult ok(const Scratch& s, const std::vector<std::string>& args) { return expect_exit(s, 0, args); }

// One JSON value per non-empty line (`-o json` of events, `--follow` output).
inline std::vector<nlohmann::json> json_lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    INFO("line: " << line);
    REQUIRE_NOTHROW(out.push_back(nlohmann::json::parse(line)));
  }
  return out;
}

// The default store file of the tests that name one: <scratch>/store.db.
inline std::string store_path(const Scratch& s) { return (s.dir() / "store.db").string(); }

// Reads a store the way gaia does, from the test process.
inline gaia::ClusterState load_state(const std::string& store) {
  auto st = gaia::SqliteStore::open(store);
  REQUIRE(st);
  gaia::SystemClock clock;
  gaia::State state(**st, clock);
  auto loaded = state.load();
  REQUIRE(loaded);
  return *loaded;
}

inline int64_t store_revision(const std::string& store) {
  auto st = gaia::SqliteStore::open(store);
  REQUIRE(st);
  auto r = (*st)->revision();
  REQUIRE(r);
  return *r;
}

// gaia against one store file (`--store STORE` before the arguments), which the test
// can read back with load() and revision().
struct StoreCli {
  explicit StoreCli(const Scratch& scratch) : s(scratch) {}
  const Scratch& s;
  std::string store = store_path(s);

  RunResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), {"--store", store});
    return s.gaia(args);
  }
  RunResult expect(int code, std::vector<std::string> args) const {
    args.insert(args.begin(), {"--store", store});
    return expect_exit(s, code, args);
  }
  RunResult ok(const std::vector<std::string>& args) const { return expect(0, args); }
  gaia::ClusterState load() const { return load_state(store); }
  int64_t revision() const { return store_revision(store); }
};

// Copies the repository's examples/ into `s` as `examples/`, so commands can name them
// with a relative path and their messages do not depend on where the source tree is.
inline void copy_examples(const Scratch& s) {
  std::filesystem::copy(examples_dir(), s.dir() / "examples", std::filesystem::copy_options::recursive);
}

// A minimal valid main.jsonnet: one role, no outputs.
inline std::string one_role_main() {
  return "function(config, deps, app) {\n"
         "  roles: { web: { image: 'nginx:1.25', resources: { cpu: '1', memory: '1Gi' } } },\n"
         "  outputs: {},\n"
         "}\n";
}

// Writes an app directory `dir` (relative to the scratch dir) with the three spec
// files. `deps_yaml` is appended to app.yaml verbatim (e.g. a dependencies: block).
inline void write_app(const Scratch& s, const std::string& dir, const std::string& name, const std::string& version,
                      const std::string& deps_yaml = "", const std::string& config = "{}\n",
                      const std::string& main = one_role_main()) {
  s.write(dir + "/app.yaml", "name: " + name + "\nversion: " + version + "\n" + deps_yaml);
  s.write(dir + "/config.jsonnet", config);
  s.write(dir + "/main.jsonnet", main);
}

// An app whose main.jsonnet has `prelude` before the function and returns one output x
// whose value is `expr`: the shape used for hostile templates.
inline void write_output_app(const Scratch& s, const std::string& dir, const std::string& prelude,
                             const std::string& expr) {
  std::string name = std::filesystem::path(dir).filename().string();
  write_app(s, dir, name, "1.0.0", "outputs: [x]\n", "{}\n",
            prelude + "\nfunction(config, deps, app) { roles: {}, outputs: { x: " + expr + " } }\n");
}

inline void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// Replaces the scratch directory (as given and with symbolic links resolved, since the
// spec repository reports canonical paths) by "<scratch>".
inline std::string normalise(const Scratch& s, std::string text) {
  std::error_code ec;
  std::string canonical = std::filesystem::weakly_canonical(s.dir(), ec).string();
  std::string given = s.dir().string();
  if (canonical.size() >= given.size()) {
    replace_all(text, canonical, "<scratch>");
    replace_all(text, given, "<scratch>");
  } else {
    replace_all(text, given, "<scratch>");
    replace_all(text, canonical, "<scratch>");
  }
  return text;
}

// Runs gaia in `s`, expects exit code `code` and compares the normalised stderr with
// tests/golden/cli/<name>.err. Returns the result for further checks.
inline RunResult expect_error_golden(const Scratch& s, const std::string& name, const std::vector<std::string>& args,
                                     int code = 1) {
  RunResult r = s.gaia(args);
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.code == code);
  check_golden("cli/" + name + ".err", normalise(s, r.err));
  return r;
}

}  // namespace gaia::test
