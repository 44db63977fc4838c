#pragma once
// Runs the real gaia binary (GAIA_BINARY) with arguments, capturing stdout, stderr and
// the exit code, in a scratch directory with its own state and cache dirs so tests never
// see a user's state or each other's.

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace gaia::test {

struct RunResult {
  int code = -1;
  std::string out;
  std::string err;
};

class Scratch {
 public:
  Scratch() {
    std::random_device rd;
    m_dir = std::filesystem::temp_directory_path() /
            ("gaia-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(m_dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(m_dir, ec);
  }
  const std::filesystem::path& dir() const { return m_dir; }
  std::filesystem::path write(const std::string& rel, const std::string& content) const {
    auto p = m_dir / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // Runs gaia with `args`; `env` adds or overrides variables (an empty value unsets).
  RunResult gaia(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) const {
    return run(GAIA_BINARY, args, env);
  }

  RunResult run(const std::string& exe, const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) const {
    auto out_path = m_dir / (".out" + std::to_string(m_counter));
    auto err_path = m_dir / (".err" + std::to_string(m_counter++));
    pid_t pid = ::fork();
    if (pid == 0) {
      int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(o, 1);
      ::dup2(e, 2);
      int in = ::open("/dev/null", O_RDONLY);
      ::dup2(in, 0);
      if (::chdir(m_dir.c_str()) != 0) ::_exit(127);
      ::setenv("XDG_STATE_HOME", (m_dir / "state").c_str(), 1);
      ::setenv("XDG_CACHE_HOME", (m_dir / "cache").c_str(), 1);
      ::setenv("NO_COLOR", "1", 1);
      ::unsetenv("GAIA_REPO");
      ::unsetenv("GAIA_PATH");
      ::unsetenv("GAIA_STORE");
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
    int status = 0;
    ::waitpid(pid, &status, 0);
    RunResult r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = slurp(out_path);
    r.err = slurp(err_path);
    return r;
  }

  static std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::filesystem::path m_dir;
  mutable int m_counter = 0;
};

inline std::string examples_dir() { return std::string(GAIA_SOURCE_DIR) + "/examples"; }

}  // namespace gaia::test
