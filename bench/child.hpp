#pragma once
// Running the real gaia binary from a benchmark (bench_get.cpp, bench_submit_cli.cpp).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite_store.hpp"

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

// This process's environment for a gaia child on the benchmark's own store: the default
// context's store and the render cache under `home` (XDG_STATE_HOME=home/state,
// XDG_CACHE_HOME=home/cache), no colour, and no GAIA_STORE or COLUMNS of the caller's.
std::vector<std::string> gaia_environment(const std::filesystem::path& home);

// The SQLite store the default context of `home` opens (gaia_environment), with the
// store's defaults; throws when it cannot be opened.
std::unique_ptr<SqliteStore> open_home_store(const std::filesystem::path& home);

// Lines in a file.
size_t count_lines(const std::filesystem::path& p);

}  // namespace gaia::bench
