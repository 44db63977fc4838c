#pragma once
// Running the real gaia binary from a benchmark (bench_get.cpp, bench_submit_cli.cpp).
#include <filesystem>
#include <string>
#include <vector>

namespace gaia::bench {

struct ChildRun {
  double ms = 0;           // Wall time from the spawn to the exit.
  double peak_rss_mb = 0;  // The command's peak RSS; -1 when /usr/bin/time is missing.
  int exit_code = 0;       // 128 + the signal when it was killed.
};

// Runs `argv` with `env` (stdin from /dev/null, stdout into `out`, stderr into `err`)
// and waits for it.
ChildRun run_child(std::vector<std::string> argv, const std::vector<std::string>& env,
                   const std::filesystem::path& out, const std::filesystem::path& err);

// This process's environment without the variables named by `drop` (prefixes such as
// "XDG_STATE_HOME="), for a child pointed at a store of the benchmark's own.
std::vector<std::string> environment_without(const std::vector<std::string>& drop);

// Lines in a file.
size_t count_lines(const std::filesystem::path& p);

}  // namespace gaia::bench
