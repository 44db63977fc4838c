// Shell completion: the model walked from the real command tree, the checked-in
// completions/ files (never stale), and the generated scripts driven by the real shells:
// bash through a COMP_WORDS simulation, zsh with its completion builtins replaced by
// recorders, fish through `complete -C`. The zsh and fish cases skip, saying so, when the
// shell is not installed (scripts/setup.sh installs both).
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/app.hpp"
#include "cli/completion.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::cli;
using gaia::test::RunResult;
using gaia::test::Scratch;
namespace fs = std::filesystem;

namespace {

struct Tree {
  CLI::App app;
  Globals g;
  int code = 0;
  Tree() { build_app(app, g, code); }
};

const CommandSpec* find(const CommandSpec& root, const std::string& path) {
  for (const auto* c : flatten(root))
    if (c->path == path) return c;
  return nullptr;
}

const OptionSpec* option(const CommandSpec& c, const std::string& name) {
  for (const auto& o : c.options)
    if (std::ranges::find(o.names, name) != o.names.end()) return &o;
  return nullptr;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

bool has_shell(const std::string& shell) {
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/local/bin/"})
    if (fs::exists(std::string(dir) + shell)) return true;
  return false;
}

std::string shell_path(const std::string& shell) {
  for (const char* dir : {"/usr/bin/", "/bin/", "/usr/local/bin/"})
    if (fs::exists(std::string(dir) + shell)) return std::string(dir) + shell;
  return shell;
}

// A scratch with a 3-node cluster and one submitted app, so names can complete.
void make_cluster(const Scratch& s) {
  REQUIRE(s.gaia({"cluster", "create", "--nodes", "3", "--cpu", "8", "--memory", "32Gi"}).code == 0);
  gaia::test::write_app(s, "small", "small", "1.0.0");
  REQUIRE(s.gaia({"submit", "small"}).code == 0);
}

// Words offered by bash for the command line `words` (the last one is being completed;
// "=" is its own word, as bash splits --flag=value).
std::vector<std::string> bash_complete(const Scratch& s, const std::vector<std::string>& words,
                                       const std::map<std::string, std::string>& env = {}) {
  std::string array = fmt::format("'{}'", GAIA_BINARY);
  for (const auto& w : words) array += " '" + w + "'";
  std::string script = fmt::format(
      "source ./gaia.bash\nCOMP_WORDS=({})\nCOMP_CWORD={}\n_gaia\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n", array,
      words.size());
  s.write("complete.sh", script);
  RunResult r = s.run("/bin/bash", {"--norc", "--noprofile", "complete.sh"}, env);
  INFO("bash stderr: " << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  return lines(r.out);
}

bool contains_word(const std::vector<std::string>& v, const std::string& x) { return std::ranges::find(v, x) != v.end(); }

}  // namespace

TEST_CASE("completion model: walked from the real command tree", "[completion]") {
  Tree t;
  CommandSpec root = describe_commands(t.app);
  REQUIRE(find(root, "submit") != nullptr);
  REQUIRE(find(root, "node label") != nullptr);
  REQUIRE(find(root, "context use") != nullptr);
  CHECK(find(root, "__complete") == nullptr);  // Hidden.
  REQUIRE(find(root, "completion") != nullptr);

  // IsMember choices are read back from CLI11.
  const OptionSpec* color = option(root, "--color");
  REQUIRE(color != nullptr);
  CHECK(color->values.encode() == "choices auto always never");
  const CommandSpec* get = find(root, "get");
  CHECK(option(*get, "-o")->values.encode() == "choices wide json yaml");
  CHECK(option(*get, "-A")->values.kind == ValueSource::Kind::flag);
  CHECK(find(root, "completion")->positionals.at(0).values.encode() == "choices bash zsh fish");

  // Global flags fall through to subcommands; a subcommand's own flag hides the global.
  const CommandSpec* submit = find(root, "submit");
  CHECK(option(*submit, "--store") != nullptr);
  CHECK(std::ranges::count_if(submit->options, [](const OptionSpec& o) {
          return std::ranges::find(o.names, "--tenant") != o.names.end();
        }) == 1);
  CHECK(option(*submit, "--tenant")->description.find("deploy") != std::string::npos);

  // Store names, from the rule table, for the arguments that take them.
  CHECK(find(root, "node cordon")->positionals.at(0).values.encode() == "names nodes");
  CHECK(find(root, "node cordon")->positionals.at(0).many);
  CHECK(find(root, "explain")->positionals.at(0).values.encode() == "names instances");
  CHECK(find(root, "delete")->positionals.at(0).values.encode() == "names apps");
  CHECK(option(root, "--context")->values.encode() == "names contexts");
  CHECK(option(root, "--tenant")->values.encode() == "names tenants");
  CHECK(option(*find(root, "explain"), "--node")->values.encode() == "names nodes");
  // The first argument of `describe` picks what the second names.
  const CommandSpec* describe = find(root, "describe");
  CHECK(describe->positionals.at(0).values.encode() == "choices node app instance");
  REQUIRE(describe->by_first.size() == 3);
  CHECK(describe->by_first[0].first == "node");
  CHECK(describe->by_first[0].position == 1);
  CHECK(describe->by_first[0].values.encode() == "names nodes");
  // Files and folders by the value name CLI11 shows.
  CHECK(option(*find(root, "cluster create"), "--file")->values.kind == ValueSource::Kind::files);
  CHECK(submit->positionals.at(0).values.kind == ValueSource::Kind::dirs);
  CHECK(option(root, "--repo")->values.kind == ValueSource::Kind::dirs);
}

TEST_CASE("completions/: the checked-in scripts are what `gaia completion` prints", "[completion]") {
  // GAIA_UPDATE_GOLDEN=1 rewrites them, like any golden file.
  Scratch s;
  fs::path dir = fs::path(GAIA_SOURCE_DIR) / "completions";
  const std::vector<std::pair<std::string, std::string>> files = {
      {"bash", "gaia.bash"}, {"zsh", "_gaia"}, {"fish", "gaia.fish"}};
  for (const auto& [shell, file] : files) {
    RunResult r = s.gaia({"completion", shell});
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    const char* update = std::getenv("GAIA_UPDATE_GOLDEN");
    if (update && std::string(update) == "1") {
      std::ofstream(dir / file, std::ios::binary | std::ios::trunc) << r.out;
      continue;
    }
    INFO(file << " is stale: regenerate with GAIA_UPDATE_GOLDEN=1 (or build/cli/gaia completion " << shell << ")");
    CHECK(gaia::test::read_text_file(dir / file) == r.out);
  }
  // The build writes fresh copies next to the binary, for scripts/build.sh to install.
  fs::path built = fs::path(GAIA_BINARY).parent_path().parent_path() / "completions";
  for (const auto& [shell, file] : files) {
    INFO(built / file);
    CHECK(gaia::test::read_text_file(built / file) == s.gaia({"completion", shell}).out);
  }
  CHECK(s.gaia({"completion", "tcsh"}).code == 2);
}

TEST_CASE("gaia __complete: store names, quietly", "[completion]") {
  Scratch s;
  // No store yet: nothing printed, success, and no store created.
  RunResult none = s.gaia({"__complete", "nodes"});
  CHECK(none.code == 0);
  CHECK(none.out.empty());
  CHECK(none.err.empty());
  CHECK_FALSE(fs::exists(s.dir() / "state" / "gaia" / "gaia.db"));
  CHECK(s.gaia({"--store", "missing.db", "__complete", "apps"}).out.empty());
  CHECK_FALSE(fs::exists(s.dir() / "missing.db"));
  // A file that is not a store: still quiet.
  s.write("junk.db", "not sqlite at all");
  RunResult junk = s.gaia({"--store", "junk.db", "__complete", "nodes"});
  CHECK(junk.code == 0);
  CHECK(junk.out.empty());
  CHECK(junk.err.empty());

  make_cluster(s);
  CHECK(s.gaia({"__complete", "nodes"}).out == "node-1\nnode-2\nnode-3\n");
  CHECK(s.gaia({"__complete", "nodes", "node-2"}).out == "node-2\n");
  CHECK(s.gaia({"__complete", "apps"}).out == "small\n");
  CHECK(s.gaia({"--tenant", "other", "__complete", "apps"}).out.empty());
  CHECK(s.gaia({"__complete", "instances"}).out == "0.web.small.default\n");
  CHECK(s.gaia({"__complete", "tenants"}).out == "default\n");
  CHECK(s.gaia({"__complete", "contexts"}).out == "default\n");
  CHECK(s.gaia({"__complete", "bogus"}).out.empty());
  CHECK(s.gaia({"__complete", "bogus"}).code == 0);
  // Hidden from the help.
  CHECK(s.gaia({"--help"}).out.find("__complete") == std::string::npos);
}

TEST_CASE("bash completion: commands, flags, choices and store names", "[completion][bash]") {
  Scratch s;
  s.write("gaia.bash", s.gaia({"completion", "bash"}).out);
  make_cluster(s);
  fs::create_directories(s.dir() / "specs" / "web");

  CHECK(bash_complete(s, {"su"}) == std::vector<std::string>{"submit"});
  auto top = bash_complete(s, {""});
  CHECK(contains_word(top, "get"));
  CHECK(contains_word(top, "completion"));
  CHECK_FALSE(contains_word(top, "__complete"));
  CHECK(bash_complete(s, {"node", "cor"}) == std::vector<std::string>{"cordon"});
  CHECK(bash_complete(s, {"get", "-o", ""}) == std::vector<std::string>{"wide", "json", "yaml"});
  CHECK(bash_complete(s, {"get", "--output", "=", "j"}) == std::vector<std::string>{"json"});
  CHECK(bash_complete(s, {"--color", "=", ""}) == std::vector<std::string>{"auto", "always", "never"});
  CHECK(bash_complete(s, {"completion", ""}) == std::vector<std::string>{"bash", "zsh", "fish"});
  CHECK(bash_complete(s, {"get", ""}) == std::vector<std::string>{"nodes", "apps", "instances"});
  // Flags: the command's own and the global ones.
  auto flags = bash_complete(s, {"submit", "--t"});
  CHECK(contains_word(flags, "--tenant"));
  CHECK(contains_word(flags, "--timeout"));
  CHECK(contains_word(bash_complete(s, {"node", "cordon", "--"}), "--store"));
  // Names from the store, by the rule table.
  CHECK(bash_complete(s, {"node", "cordon", ""}) == std::vector<std::string>{"node-1", "node-2", "node-3"});
  CHECK(bash_complete(s, {"node", "cordon", "node-1", "node-"}) ==
        std::vector<std::string>{"node-1", "node-2", "node-3"});
  CHECK(bash_complete(s, {"get", "nodes", "node-3"}) == std::vector<std::string>{"node-3"});
  CHECK(bash_complete(s, {"describe", "node", ""}) == std::vector<std::string>{"node-1", "node-2", "node-3"});
  CHECK(bash_complete(s, {"describe", "app", ""}) == std::vector<std::string>{"small"});
  CHECK(bash_complete(s, {"explain", "0"}) == std::vector<std::string>{"0.web.small.default"});
  CHECK(bash_complete(s, {"delete", ""}) == std::vector<std::string>{"small"});
  CHECK(bash_complete(s, {"explain", "0.web.small.default", "--node", "node-2"}) ==
        std::vector<std::string>{"node-2"});
  CHECK(bash_complete(s, {"--context", ""}) == std::vector<std::string>{"default"});
  // A flag's value is not a positional: the node still comes first.
  CHECK(bash_complete(s, {"-v", "--tenant", "default", "delete", "s"}) == std::vector<std::string>{"small"});
  // --tenant typed on the line selects the apps.
  CHECK(bash_complete(s, {"--tenant", "other", "delete", ""}).empty());
  // --store typed on the line is used; a missing store completes to nothing, silently.
  CHECK(bash_complete(s, {"--store", "nowhere.db", "node", "cordon", ""}).empty());
  CHECK_FALSE(fs::exists(s.dir() / "nowhere.db"));
  // Folders for app directories.
  CHECK(bash_complete(s, {"submit", "spe"}) == std::vector<std::string>{"specs"});
  // Free text offers nothing rather than something wrong.
  CHECK(bash_complete(s, {"init", ""}).empty());
}

TEST_CASE("zsh completion: parses, and offers what bash offers", "[completion][zsh]") {
  if (!has_shell("zsh")) {
    WARN("zsh is not installed: skipping the zsh completion test (scripts/setup.sh installs it)");
    return;
  }
  Scratch s;
  s.write("_gaia", s.gaia({"completion", "zsh"}).out);
  RunResult syntax = s.run(shell_path("zsh"), {"-n", "_gaia"});
  INFO(syntax.err);
  CHECK(syntax.code == 0);
  make_cluster(s);
  // The completion builtins only work inside a completion widget, so they are replaced
  // by functions that print what they were given; the script runs unchanged.
  auto complete = [&](const std::vector<std::string>& words) {
    std::string array = fmt::format("'{}'", GAIA_BINARY);
    for (const auto& w : words) array += " '" + w + "'";
    s.write("run.zsh", fmt::format(
                           "compdef() {{ :; }}\n"
                           "compadd() {{ while [[ $1 == -* && $1 != -- ]]; do shift; done; [[ $1 == -- ]] && shift;"
                           " print -rl -- \"$@\"; }}\n"
                           "_describe() {{ local name=${{@[-1]}}; local -a items; items=(\"${{(@P)name}}\");"
                           " print -rl -- \"${{items[@]%%:*}}\"; }}\n"
                           "_files() {{ print -r -- FILES \"$@\"; }}\n"
                           "compset() {{ :; }}\n"
                           "source ./_gaia\n"
                           "words=({})\nCURRENT={}\n_gaia\n",
                           array, words.size() + 1));
    RunResult r = s.run(shell_path("zsh"), {"-f", "run.zsh"});
    INFO("zsh stderr: " << r.err);
    CHECK(r.err.empty());
    return lines(r.out);
  };
  CHECK(contains_word(complete({"no"}), "node"));
  CHECK(contains_word(complete({"node", "cor"}), "cordon"));
  CHECK(complete({"get", "-o", ""}) == std::vector<std::string>{"wide", "json", "yaml"});
  CHECK(complete({"--color=a"}) == std::vector<std::string>{"auto", "always", "never"});
  CHECK(complete({"node", "cordon", ""}) == std::vector<std::string>{"node-1", "node-2", "node-3"});
  CHECK(complete({"describe", "instance", ""}) == std::vector<std::string>{"0.web.small.default"});
  CHECK(contains_word(complete({"submit", "--"}), "--wait"));
  CHECK(complete({"submit", ""}) == std::vector<std::string>{"FILES -/"});

  // And once through the real completion system: an interactive zsh on a pseudo-terminal
  // (zsh/zpty) with compinit, the script on $fpath, and TAB typed. Each read waits for
  // its pattern; the outer timeout ends a hang.
  fs::create_directories(s.dir() / "fpath");
  fs::copy_file(s.dir() / "_gaia", s.dir() / "fpath" / "_gaia");
  fs::create_directories(s.dir() / "bin");
  fs::create_symlink(GAIA_BINARY, s.dir() / "bin" / "gaia");
  s.write("interactive.zsh", fmt::format(
                                 "zmodload zsh/zpty\n"
                                 "zpty z 'PATH={0}/bin:$PATH TERM=dumb zsh -f -i'\n"
                                 "zpty -w z 'PS1=\"> \"; fpath=({0}/fpath $fpath); autoload -U compinit;"
                                 " compinit -u -d {0}/.zcompdump'\n"
                                 "zpty -w -n z $'gaia node cor\\t'\n"
                                 "zpty -r z out '*cordon *' && print subcommand\n"
                                 "zpty -w -n z $'\\C-u'\n"
                                 "zpty -w -n z $'gaia --col\\t'\n"
                                 "zpty -r z out '*--color *' && print flag\n"
                                 "zpty -w -n z $'\\C-u'\n"
                                 "zpty -w -n z $'gaia describe node \\t\\t'\n"
                                 "zpty -r z out '*node-1*node-2*node-3*' && print names\n"
                                 "zpty -d z\n",
                                 s.dir().string()));
  RunResult live = s.run("/usr/bin/timeout", {"60", shell_path("zsh"), "-f", "interactive.zsh"});
  INFO("interactive zsh: " << live.out << live.err);
  CHECK(live.out == "subcommand\nflag\nnames\n");
}

TEST_CASE("fish completion: parses, and offers what bash offers", "[completion][fish]") {
  if (!has_shell("fish")) {
    WARN("fish is not installed: skipping the fish completion test (scripts/setup.sh installs it)");
    return;
  }
  Scratch s;
  s.write("gaia.fish", s.gaia({"completion", "fish"}).out);
  RunResult syntax = s.run(shell_path("fish"), {"--no-execute", "gaia.fish"});
  INFO(syntax.err);
  CHECK(syntax.code == 0);
  make_cluster(s);
  // `complete -C` asks fish what it would offer; the script is registered for the real
  // binary's path so the names come from it.
  fs::path bin = s.dir() / "bin";
  fs::create_directories(bin);
  fs::create_symlink(GAIA_BINARY, bin / "gaia");
  auto complete = [&](const std::string& line) {
    RunResult r = s.run(shell_path("fish"), {"--no-config", "-c", "source gaia.fish; complete -C'" + line + "'"},
                        {{"PATH", bin.string() + ":/usr/bin:/bin"}});
    INFO("fish stderr: " << r.err);
    CHECK(r.err.empty());
    std::vector<std::string> words;
    for (const auto& l : lines(r.out)) words.push_back(l.substr(0, l.find('\t')));
    return words;
  };
  CHECK(complete("gaia su") == std::vector<std::string>{"submit"});
  CHECK(contains_word(complete("gaia node "), "cordon"));
  auto outputs = complete("gaia get -o ");
  CHECK(std::set<std::string>(outputs.begin(), outputs.end()) == std::set<std::string>{"wide", "json", "yaml"});
  CHECK(complete("gaia get --output=j") == std::vector<std::string>{"--output=json"});
  CHECK(complete("gaia node cordon ") == std::vector<std::string>{"node-1", "node-2", "node-3"});
  CHECK(complete("gaia describe app ") == std::vector<std::string>{"small"});
  CHECK(contains_word(complete("gaia submit --"), "--wait"));
}
