#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "spec/app_spec.hpp"

namespace gaia::cli {

int run(int argc, char** argv) {
  CLI::App app{"gaia: use a whole cluster as one computer"};
  app.set_version_flag("--version", "gaia 0.1.0");
  app.require_subcommand(1);
  // Global flags may come before or after the command (`gaia deps DIR --repo R`).
  app.fallthrough(true);
  app.footer("Run `gaia COMMAND --help` for a command's flags and examples. Exit codes: 0 ok, 1 error, 2 usage.");
  Globals g;
  app.add_option("--repo", g.repo, "Spec repository folder (repeatable; default $GAIA_REPO, else the spec's parent)")
      ->type_name("DIR");
  app.add_option("-J,--jpath", g.jpath, "Extra Jsonnet library folder (repeatable; $GAIA_PATH is appended)")
      ->type_name("DIR");
  app.add_option("--tenant", g.tenant, "Tenant to resolve and render in")
      ->capture_default_str()
      ->check(tenant_validator());
  app.add_option("--store", g.store, "SQLite store file (default: $GAIA_STORE, else the context's)")->type_name("PATH");
  app.add_option("--context", g.context, "Context to use instead of the current one")->type_name("NAME");
  app.add_option("--color", g.color, "Colour output: auto (terminal, not with NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--error-format", g.error_format, "text, or github (workflow annotations)")
      ->check(CLI::IsMember({"text", "github"}));
  app.add_flag("-q,--quiet", g.quiet, "Print only errors and requested output");
  app.add_flag("-v,--verbose", g.verbose, "More detail on stderr (repeatable)");

  int code = k_ok;
  register_init(app, g, &code);
  register_validate(app, g, &code);
  register_render(app, g, &code);
  register_deps(app, g, &code);
  register_events(app, g, &code);
  register_explain(app, g, &code);
  register_context(app, g, &code);
  register_cluster(app, g, &code);
  register_node(app, g, &code);
  register_get(app, g, &code);
  register_describe(app, g, &code);
  register_plan(app, g, &code);
  register_submit(app, g, &code);
  register_delete(app, g, &code);
  register_status(app, g, &code);
  register_endpoints(app, g, &code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? k_ok : k_usage;
  }
  return code;
}

}  // namespace gaia::cli
