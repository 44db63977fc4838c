// The gaia executable: parses the command line and runs one subcommand. Exceptions are
// bugs; they are caught once here and reported as such.
#include <cstdio>
#include <exception>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  try {
    return gaia::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaia: internal error: %s\n  hint: this is a bug in gaia; please report it with the command you ran\n", e.what());
    return 1;
  }
}
