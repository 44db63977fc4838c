#pragma once
namespace gaia::cli {
// Builds the command tree, parses argv and runs the chosen subcommand. Returns the
// process exit code (0 ok, 1 error, 2 usage, 3 changes for diff-style commands).
int run(int argc, char** argv);
}  // namespace gaia::cli
