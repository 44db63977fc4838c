// The gaia executable: parses the command line and runs one subcommand. Exceptions are
// bugs; they are caught once here and reported as such.
#include <cstdio>
#include <exception>
#include <string_view>

#include "cli/app.hpp"
#include "process/shim.hpp"

int main(int argc, char** argv) {
  try {
    // The supervisor of one process-backend copy (process/shim.hpp): gaia starts itself
    // as `gaia __shim COPY_DIR`, so one binary is all a machine needs. Not a CLI11
    // subcommand: it is no command for users, and it must not parse flags.
    if (argc >= 2 && std::string_view(argv[1]) == "__shim") return gaia::process::shim_main(argc - 1, argv + 1);
    return gaia::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gaia: internal error: %s\n  hint: this is a bug in gaia; please report it with the command you ran\n", e.what());
    return 1;
  }
}
