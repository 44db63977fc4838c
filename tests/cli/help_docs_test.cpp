// Every command is documented: it has an "Examples:" footer in its --help (its own, not
// one inherited from its parent), and docs/cli.md mentions it ("## gaia NAME" for a
// command, "gaia NAME SUB" somewhere for a subcommand). The real command tree is walked,
// so a command added without examples or docs fails here.
#include <catch2/catch.hpp>

#include <functional>

#include "cli/app.hpp"
#include "tests/cli/e2e_util.hpp"
#include "tests/golden_util.hpp"

using namespace gaia::cli;

namespace {

struct Command {
  std::string path;
  const CLI::App* app;
  const CLI::App* parent;
};

std::vector<Command> visible_commands(const CLI::App& root) {
  std::vector<Command> out;
  std::function<void(const CLI::App&, const std::string&)> walk = [&](const CLI::App& app, const std::string& path) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); })) {
      if (sub->get_group().empty()) continue;  // Hidden.
      std::string p = path.empty() ? sub->get_name() : path + " " + sub->get_name();
      out.push_back({p, sub, &app});
      walk(*sub, p);
    }
  };
  walk(root, "");
  return out;
}

}  // namespace

TEST_CASE("every command has its own Examples footer", "[help][docs]") {
  CLI::App app;
  Globals g;
  int code = 0;
  build_app(app, g, code);
  CHECK(app.get_footer().find("Examples:") != std::string::npos);
  auto commands = visible_commands(app);
  REQUIRE(commands.size() > 20);
  for (const auto& c : commands) {
    INFO("gaia " << c.path << " --help");
    CHECK(c.app->get_footer().find("Examples:") != std::string::npos);
    // CLI11 copies a parent's footer into subcommands created after it is set.
    CHECK(c.app->get_footer() != c.parent->get_footer());
  }
}

TEST_CASE("every command is documented in docs/cli.md", "[help][docs]") {
  CLI::App app;
  Globals g;
  int code = 0;
  build_app(app, g, code);
  std::string docs = gaia::test::read_text_file(std::string(GAIA_SOURCE_DIR) + "/docs/cli.md");
  REQUIRE_FALSE(docs.empty());
  for (const auto& c : visible_commands(app)) {
    INFO("gaia " << c.path << " is not documented in docs/cli.md");
    if (c.path.find(' ') == std::string::npos) CHECK(docs.find("\n## gaia " + c.path) != std::string::npos);
    else CHECK(docs.find("gaia " + c.path) != std::string::npos);
  }
}

TEST_CASE("help: --help prints the examples and exits 0, for nested commands too", "[help][e2e]") {
  gaia::test::Scratch s;
  for (std::vector<std::string> args : {std::vector<std::string>{"--help"}, {"node", "cordon", "--help"},
                                        {"context", "use", "--help"}, {"completion", "--help"}}) {
    auto r = s.gaia(args);
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(r.out.find("Examples:") != std::string::npos);
  }
  // The usage line names the program, not the path it was started from.
  CHECK(s.gaia({"--help"}).out.find("Usage: gaia ") != std::string::npos);
}
