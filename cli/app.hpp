#pragma once
#include <CLI/CLI.hpp>

#include "cli/common.hpp"

namespace gaia::cli {
// Builds the whole command tree on `app`, binding flags to `g` and exit codes to
// `code`. run() uses it, and so do the tests that walk the tree (completions, docs).
void build_app(CLI::App& app, Globals& g, int& code);
// Builds the command tree, parses argv and runs the chosen subcommand. Returns the
// process exit code (0 ok, 1 error, 2 usage, 3 changes for diff-style commands).
int run(int argc, char** argv);
}  // namespace gaia::cli
