#pragma once
// What every workflow of ops/ acts on: the store of record, the State facade over it,
// the clock, and the operation id that ties a command to every event it causes. The CLI
// opens the store and builds one per command (cli/context.hpp); a test builds one over a
// temporary SQLite file and a manual clock, so no workflow needs the CLI to run.

#include <filesystem>
#include <functional>
#include <string>

#include "lib/backend.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "lib/store.hpp"

namespace gaia::ops {

struct Workspace {
  Store& store;
  State& state;
  const Clock& clock;
  // Operation id of the command; every commit a workflow makes carries it, so
  // `gaia events --op` shows what a command and the controllers it triggered did.
  std::string op;
  // Where renders are cached (render/cache.hpp). Empty: no cache. The CLI passes the
  // user's cache folder; the libraries never read the environment themselves.
  std::filesystem::path render_cache_dir;
  // Timing and detail lines for -v (level 1) and -vv (level 2). May be empty; the
  // caller decides whether a level is shown.
  std::function<void(int level, const std::string& line)> log;

  // Where instances run (the context's backend); the runner observes it and asks it to
  // start and stop copies. Set by whoever builds the workspace.
  Backend* backend = nullptr;

  // Called at the points where a crash leaves work half done (between two commits of one
  // command), with the point's name. The CLI sets it only when the environment asks for a
  // crash at a named point (GAIA_TEST_KILL_AT), so the tests can kill a real gaia process
  // exactly there; otherwise it is empty and costs nothing.
  std::function<void(std::string_view point)> crash_point = {};

  void crash_if(std::string_view point) const {
    if (crash_point) crash_point(point);
  }

  void trace(int level, const std::string& line) const {
    if (log) log(level, line);
  }
};

}  // namespace gaia::ops
