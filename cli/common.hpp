#pragma once
// State shared by every subcommand: global flags, where to read specs from, and how to
// print diagnostics. Subcommands live one per file (cmd_*.cpp) and register themselves
// through the functions declared at the bottom.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <memory>
#include <vector>

#include "lib/cluster.hpp"
#include "lib/error.hpp"

namespace gaia {
class StartGates;  // controllers/lifecycle.hpp
}

namespace gaia::cli {

// Exit codes, documented in docs/cli.md.
// `gaia diff` exits k_changes (2) when there are changes, like diff(1), and reports its
// usage errors as k_error (usage_exit_code), so its 2 always means "changes".
enum Exit : int { k_ok = 0, k_error = 1, k_usage = 2, k_changes = 2 };

struct Globals {
  std::vector<std::string> repo;    // --repo, repeatable; else GAIA_REPO (':'-separated).
  std::vector<std::string> jpath;   // -J, repeatable; GAIA_PATH entries are appended.
  std::string tenant = "default";   // --tenant
  std::string store;                // --store PATH (else GAIA_STORE, else the context's)
  std::string context;              // --context NAME (else the current one)
  std::string color = "auto";       // --color auto|always|never (NO_COLOR wins over auto)
  std::string error_format = "text";  // --error-format text|github
  bool quiet = false;
  int verbose = 0;

  // What a command read and decided, once it is done with it, left for the kernel to
  // take back when the process exits (cli::run never frees it): freeing the state of a
  // 50,000-instance cluster one allocation at a time took 40 ms, a sixteenth of a
  // submit. Only plain data goes here, nothing that must be closed or flushed (the
  // store closes as usual). Not a flag: mutable so commands given `const Globals&`
  // can hand things over.
  mutable std::vector<std::shared_ptr<const void>> keep_until_exit;

  // Resolved once after parsing.
  std::vector<std::filesystem::path> repo_paths() const;
  std::vector<std::filesystem::path> jpath_paths() const;
  bool use_color(std::FILE* stream) const;
};

// Checks a --tenant value is a DNS label, so a typo is a usage error (exit 2) rather
// than names like "0.web.app.Bad Tenant.gaia" further down. Every --tenant uses it.
CLI::Validator tenant_validator();

// A duration flag that must be positive ("500ms", "2s", "1m"), in milliseconds; the
// error names the flag.
Result<std::chrono::milliseconds> positive_duration(const std::string& flag, const std::string& text);

// Prints diagnostics to stderr in the chosen format; returns k_error for convenience.
int report(const Globals& g, const Diagnostics& ds);
// "error: ..." line for a failure with no location.
int report_error(const Globals& g, const std::string& message, const std::string& hint = "");

// -v and -vv: what the command does and how long it takes, on stderr. Level 1 (-v):
// operation id, store open, reads and commits, render, total time; level 2 (-vv): every
// store transaction and controller pass. --quiet silences them.
bool verbose_at(const Globals& g, int level);
void log_verbose(const Globals& g, int level, const std::string& message);

// Measures one step and logs "<what>: 12.3 ms" at `level` when it goes out of scope
// (or when stop() is called, with extra detail appended).
class StepTimer {
 public:
  StepTimer(const Globals& g, std::string what, int level = 1);
  ~StepTimer();
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;
  double elapsed_ms() const;
  void stop(const std::string& detail = "");

 private:
  const Globals& m_g;
  std::string m_what;
  int m_level;
  long long m_start_ns;
  bool m_stopped = false;
};

// Colour helpers: wrap text in an SGR sequence when colour is on.
std::string bold(const Globals& g, std::FILE* s, const std::string& text);
std::string green(const Globals& g, std::FILE* s, const std::string& text);
std::string yellow(const Globals& g, std::FILE* s, const std::string& text);
std::string red(const Globals& g, std::FILE* s, const std::string& text);
std::string dim(const Globals& g, std::FILE* s, const std::string& text);

// Subcommand registration. Each sets a callback on its CLI::App that stores the exit
// code into `*code`.
void register_init(CLI::App& app, Globals& g, int* code);
void register_validate(CLI::App& app, Globals& g, int* code);
void register_render(CLI::App& app, Globals& g, int* code);
void register_deps(CLI::App& app, Globals& g, int* code);
void register_events(CLI::App& app, Globals& g, int* code);
void register_explain(CLI::App& app, Globals& g, int* code);
void register_context(CLI::App& app, Globals& g, int* code);
void register_cluster(CLI::App& app, Globals& g, int* code);
void register_node(CLI::App& app, Globals& g, int* code);
void register_get(CLI::App& app, Globals& g, int* code);
void register_describe(CLI::App& app, Globals& g, int* code);
void register_plan(CLI::App& app, Globals& g, int* code);
void register_submit(CLI::App& app, Globals& g, int* code);
void register_delete(CLI::App& app, Globals& g, int* code);
void register_export(CLI::App& app, Globals& g, int* code);
void register_status(CLI::App& app, Globals& g, int* code);
void register_endpoints(CLI::App& app, Globals& g, int* code);
void register_apply(CLI::App& app, Globals& g, int* code);
void register_diff(CLI::App& app, Globals& g, int* code);
// Exit code of a command-line parse error: k_usage, except k_error for `gaia diff`,
// whose 2 means "there are changes" (cmd_diff.cpp).
int usage_exit_code(const CLI::App& app);
// `gaia completion SHELL` and the hidden `gaia __complete KIND PREFIX` (cmd_completion.cpp).
void register_completion(CLI::App& app, Globals& g, int* code);
void register_scale(CLI::App& app, Globals& g, int* code);
void register_migrate(CLI::App& app, Globals& g, int* code);
void register_drain(CLI::App& app, Globals& g, int* code);
void register_rebalance(CLI::App& app, Globals& g, int* code);
// `gaia map` (cmd_map.cpp): the cluster as a grid of nodes by rack.
void register_map(CLI::App& app, Globals& g, int* code);
// `gaia node fail|recover` (cmd_migrate.cpp), added to the `node` command.
void register_node_faults(CLI::App* node, Globals& g, int* code);
void register_controller(CLI::App& app, Globals& g, int* code);
void register_agent(CLI::App& app, Globals& g, int* code);
void register_logs(CLI::App& app, Globals& g, int* code);
void register_config(CLI::App& app, Globals& g, int* code);
void register_label(CLI::App& app, Globals& g, int* code);
void register_sim(CLI::App& app, Globals& g, int* code);
// `gaia store check|backup|restore` (cmd_store.cpp).
void register_store(CLI::App& app, Globals& g, int* code);
// The REASON column of an instance: why it waits (for a node, or, when `gates` is given,
// bound but held back by its start gates), or why it failed (with the next restart when
// one is due), "-" when there is nothing to say.
std::string instance_reason(const Instance& i, int64_t now_ms, const StartGates* gates = nullptr);

// `gaia controller options` and its older name `gaia sim options` (cmd_sim.cpp).
void register_controller_options(CLI::App* parent, Globals& g, int* code);
// `gaia sim compact` (cmd_sim_compact.cpp).
void register_sim_compact(CLI::App* sim, Globals& g, int* code);
void register_sim_replay(CLI::App* sim, Globals& g, int* code);

}  // namespace gaia::cli
