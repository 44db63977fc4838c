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

  void trace(int level, const std::string& line) const {
    if (log) log(level, line);
  }
};

}  // namespace gaia::ops
