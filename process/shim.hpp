#pragma once
// The supervisor of one copy in the process backend (docs/backends.md). `start` runs
// it as `<shim command> <copy dir>` (gaia-shim, or the hidden `gaia __shim`); it
// detaches at once, so the caller only waits for a fork, and then for the whole life of
// the app it:
//
// - makes the copy's cgroup where it can (process/cgroup.hpp) and writes cgroup.json;
// - spawns the copy's command in its own process group and in that cgroup, in work/,
//   with the copy's env;
// - writes pids.json (itself and the app, each by pid and start time);
// - copies the app's stdout and stderr into output.log, rotating it at its bound;
// - on SIGTERM (a stop) sends SIGTERM to the app's group and cgroup, and SIGKILL after
//   the grace period of stop.json (or copy.json);
// - when the app exits, kills what remains of its group and cgroup, removes the
//   cgroup and writes exit.json.
//
// Being its own session, it survives the gaia process that started it; any gaia
// process reads the files to learn what it does.

#include <filesystem>

namespace gaia::process {

// Runs the supervisor of the copy in `copy_dir`. Returns in the calling process right
// after forking the detached supervisor (0, or 1 when the fork failed); the supervisor
// itself returns when the app has ended and exit.json is written.
int run_shim(const std::filesystem::path& copy_dir);

// The command line entry: `argv[1]` is the copy dir. For gaia-shim's main and the
// CLI's hidden subcommand.
int shim_main(int argc, char** argv);

}  // namespace gaia::process
