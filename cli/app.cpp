#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/common.hpp"
#include "lib/version.hpp"
#include "spec/app_spec.hpp"

namespace gaia::cli {

void build_app(CLI::App& app, Globals& g, int& code) {
  app.name("gaia");
  app.description("gaia: use a whole cluster as one computer");
  app.set_version_flag("--version", fmt::format("gaia {}", gaia::version()));
  app.require_subcommand(1);
  // Global flags may come before or after the command (`gaia deps DIR --repo R`).
  app.fallthrough(true);
  app.add_option("--repo", g.repo, "Spec repository folder (repeatable; default $GAIA_REPO, else the spec's parent)")
      ->type_name("DIR");
  app.add_option("-J,--jpath", g.jpath, "Extra Jsonnet library folder (repeatable; $GAIA_PATH is appended)")
      ->type_name("DIR");
  app.add_option("--tenant", g.tenant, "Tenant to resolve and render in")
      ->capture_default_str()
      ->check(tenant_validator());
  app.add_option("--store", g.store, "Store: SQLite file or etcd://HOST:PORT[,...] (default: $GAIA_STORE, else the context's)")->type_name("PATH");
  app.add_option("--context", g.context, "Context to use instead of the current one")->type_name("NAME");
  app.add_option("--color", g.color, "Colour output: auto (terminal, not with NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--error-format", g.error_format, "text, or github (workflow annotations)")
      ->check(CLI::IsMember({"text", "github"}));
  app.add_flag("-q,--quiet", g.quiet, "Print only errors and requested output");
  app.add_flag("-v,--verbose", g.verbose, "More detail on stderr (repeatable)");

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
  register_export(app, g, &code);
  register_status(app, g, &code);
  register_endpoints(app, g, &code);
  register_apply(app, g, &code);
  register_diff(app, g, &code);
  register_scale(app, g, &code);
  register_migrate(app, g, &code);
  register_drain(app, g, &code);
  register_rebalance(app, g, &code);
  register_map(app, g, &code);
  register_controller(app, g, &code);
  register_agent(app, g, &code);
  register_logs(app, g, &code);
  register_config(app, g, &code);
  register_label(app, g, &code);
  register_sim(app, g, &code);
  register_store(app, g, &code);
  register_completion(app, g, &code);
  // Set last: CLI11 copies a parent's footer into the subcommands created after it.
  app.footer(
      "Examples:\n"
      "  gaia init hello && gaia validate hello\n"
      "  gaia cluster create -f examples/clusters/bigdata-50.yaml\n"
      "  gaia submit examples/web --wait\n"
      "  gaia get instances -o wide\n"
      "  gaia map --watch                           # nodes by rack, coloured by allocation\n"
      "  source <(gaia completion bash)             # tab completion for this shell\n"
      "Run `gaia COMMAND --help` for a command's flags and examples; docs/cli.md has them all.\n"
      "Exit codes: 0 ok, 1 error, 2 usage; see docs/cli.md for the commands that add more.");
}

int run(int argc, char** argv) {
  CLI::App app;
  Globals g;
  int code = k_ok;
  build_app(app, g, code);
  // A bare `gaia` is someone finding out what it does, not a mistake: the help on stdout
  // and success, as git and kubectl do. Flags without a command remain a usage error.
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stdout);
    return k_ok;
  }
  StepTimer total(g, "total");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? k_ok : usage_exit_code(app);
  }
  total.stop(fmt::format("exit {}", code));
  // Deliberately never freed: the process ends now, and the kernel takes the memory
  // back at once (Globals::keep_until_exit).
  if (!g.keep_until_exit.empty()) (void)new std::vector<std::shared_ptr<const void>>(std::move(g.keep_until_exit));
  return code;
}

}  // namespace gaia::cli
