// gaia completion bash|zsh|fish: prints the completion script, generated from the
// command tree this very binary parses with. The hidden `gaia __complete KIND [PREFIX]`
// is what the scripts call for names that live in the store.
#include <fmt/format.h>

#include "cli/completion.hpp"

namespace gaia::cli {

namespace {

struct CompletionArgs {
  std::string shell;
  std::string kind, prefix;
};

}  // namespace

void register_completion(CLI::App& app, Globals& g, int* code) {
  auto a = std::make_shared<CompletionArgs>();
  auto* cmd = app.add_subcommand("completion", "Print the shell completion script (bash, zsh or fish)");
  cmd->footer(
      "Examples:\n"
      "  source <(gaia completion bash)                     # this bash session\n"
      "  gaia completion bash > /usr/share/bash-completion/completions/gaia\n"
      "  gaia completion zsh > \"${fpath[1]}/_gaia\"          # then start a new zsh\n"
      "  gaia completion fish > ~/.config/fish/completions/gaia.fish\n"
      "Commands, flags, flag choices, and the names of apps, instances, nodes, tenants and contexts\n"
      "(read from the store of the current context) complete. scripts/build.sh installs them.");
  cmd->add_option("SHELL", a->shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  // The root is walked when the command runs, so every command registered after this
  // one is in the script too.
  CLI::App* root = &app;
  cmd->callback([root, a, code] {
    CommandSpec tree = describe_commands(*root);
    std::string script = a->shell == "bash"  ? bash_script(tree)
                         : a->shell == "zsh" ? zsh_script(tree)
                                             : fish_script(tree);
    std::fputs(script.c_str(), stdout);
    *code = k_ok;
  });

  // Hidden (empty group): it is plumbing for the scripts, not a command for people.
  auto* names = app.add_subcommand("__complete", "Print store names for shell completion, one a line");
  names->group("");
  names->add_option("KIND", a->kind, "apps, instances, nodes, tenants or contexts")->required();
  names->add_option("PREFIX", a->prefix, "Only names starting with this");
  names->callback([&g, a, code] {
    // Never an error: a completion that prints messages would garble the command line.
    for (const auto& n : complete_names(g, a->kind, a->prefix)) std::printf("%s\n", n.c_str());
    *code = k_ok;
  });
}

}  // namespace gaia::cli
