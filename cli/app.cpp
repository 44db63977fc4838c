#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace gaia::cli {

int run(int argc, char** argv) {
  CLI::App app{"gaia: use a whole cluster as one computer"};
  app.set_version_flag("--version", "gaia 0.1.0");
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}

}  // namespace gaia::cli
