#pragma once
// Contexts (like kubectl's): a name for a store and a backend. The default context is an
// SQLite file in the user's state directory and the `sim` backend, so a fresh install
// works with no server. `--store PATH` / GAIA_STORE override the context's store.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "lib/backend.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "lib/store.hpp"
#include "ops/workspace.hpp"

namespace gaia::cli {

struct ContextEntry {
  std::string name;
  std::string store;    // Path of the SQLite file.
  std::string backend = "sim";
};

struct ContextFile {
  std::string current = "default";
  std::vector<ContextEntry> contexts;
};

// $XDG_STATE_HOME/gaia (or ~/.local/state/gaia).
std::filesystem::path state_dir();
std::filesystem::path context_file_path();
Result<ContextFile> load_contexts();
Result<void> save_contexts(const ContextFile& f);

// An open store with the State facade on top; what every cluster command uses.
struct Session {
  ContextEntry context;
  std::unique_ptr<Store> store;
  SystemClock clock;
  std::unique_ptr<State> state;
  std::unique_ptr<Backend> backend;  // Where instances run: the cluster's backend.
  std::string backend_name;          // "sim" or "process".
  std::string op;  // Operation id of this command.
  const Globals* globals = nullptr;  // The command's flags (for -v logging); set by open_session.

  // What the workflows of ops/ act on: this session's store, state, clock and current
  // operation id, the render cache folder, and -v logging through the globals. Built
  // on each call, so a changed `op` (a new pass of `gaia controller run`) is seen.
  ops::Workspace workspace() const;
};

// The context a command uses: --context, else the current one, with its store replaced
// by --store or GAIA_STORE when given. Opens nothing.
Result<ContextEntry> resolve_context(const Globals& g);

// "sim" and "process" are known; anything else is an error with a hint.
Result<void> check_backend_name(const std::string& name);

// Where the process backend keeps the copies and the agent of the store at `store`
// (its path plus ".run": gaia.db -> gaia.db.run/).
std::filesystem::path run_dir_of(const std::string& store);

// This gaia binary (from /proc/self/exe), which also serves as the copies' supervisor.
std::filesystem::path self_executable();

// Opens the store of the current context (or --store / GAIA_STORE).
Result<std::unique_ptr<Session>> open_session(const Globals& g);

}  // namespace gaia::cli
