#pragma once
// Stopping the long-running commands (controller run, agent run, events -f, logs -f):
// SIGINT and SIGTERM set a flag the command's loop checks between passes, so it
// finishes what it is doing (resigns, releases its lock) and exits 0. A signal handler
// may only touch a lock-free flag, hence this one process-wide flag.

#include <chrono>

namespace gaia::cli {

// Installs the handlers (without SA_RESTART, so a sleep is cut short) and clears the
// flag. `with_sigpipe`: a closed pipe downstream (`gaia logs -f | head`) stops too.
void catch_stop_signals(bool with_sigpipe = false);

// Whether a stop signal arrived since catch_stop_signals.
bool stop_requested();

// Sleeps up to `d`, returning early once a stop was requested.
void nap(std::chrono::milliseconds d);

}  // namespace gaia::cli
