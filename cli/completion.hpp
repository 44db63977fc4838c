#pragma once
// Shell completion generated from the real command tree. `describe_commands` walks the
// CLI11 tree once (subcommands, their flags, the choices of IsMember-checked values,
// positional arguments) into a plain model; the three emitters turn that model into a
// bash, zsh or fish script. Nothing about gaia's commands is written by hand in the
// scripts: a command another file registers shows up in them on the next build.
//
// Names that live in the store (apps, instances, nodes, tenants, contexts) are not in
// the scripts: they call the hidden `gaia __complete KIND PREFIX`, which reads the
// store quietly. Which argument wants which names is the small table in completion.cpp
// (k_name_rules), keyed by command path.

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cli/common.hpp"

namespace gaia::cli {

// Where the words of an option value or a positional argument come from.
struct ValueSource {
  enum class Kind { flag, text, choices, files, dirs, names };
  Kind kind = Kind::text;
  std::vector<std::string> choices;  // Kind::choices
  std::string names;                 // Kind::names: apps, instances, nodes, tenants or contexts

  // The one-word form the scripts read: "flag", "text", "files", "dirs",
  // "choices a b c", "names nodes".
  std::string encode() const;
};

struct OptionSpec {
  std::vector<std::string> names;  // "-o", "--output"
  std::string description;
  ValueSource values;  // Kind::flag when the option takes no value.
};

struct PositionalSpec {
  std::string name;
  ValueSource values;
  bool many = false;  // Takes every remaining argument.
};

struct CommandSpec {
  std::string name;         // "" for the root.
  std::string path;         // "node label"; "" for the root.
  std::string description;
  std::vector<OptionSpec> options;  // Its own, then the inherited global ones.
  std::vector<PositionalSpec> positionals;
  // For commands whose first argument picks a kind (`get nodes NAME`): when the first
  // argument is `first`, where argument `position` (-1: every one after the first)
  // comes from.
  struct ByFirst {
    std::string first;
    int position = -1;
    ValueSource values;
  };
  std::vector<ByFirst> by_first;
  std::vector<CommandSpec> subcommands;  // Hidden ones (empty group) are left out.
};

// The model of `root` and everything under it.
CommandSpec describe_commands(const CLI::App& root);

// Every command in the tree, root first, depth first.
std::vector<const CommandSpec*> flatten(const CommandSpec& root);

// The kinds `gaia __complete` knows.
bool is_name_kind(std::string_view kind);

// The completion scripts. `program` is the command the scripts are registered for.
std::string bash_script(const CommandSpec& root, const std::string& program = "gaia");
std::string zsh_script(const CommandSpec& root, const std::string& program = "gaia");
std::string fish_script(const CommandSpec& root, const std::string& program = "gaia");

// Names of `kind` from the store of the context `g` selects, starting with `prefix`,
// sorted, one per element. Never fails: a missing or unreadable store gives nothing,
// and nothing is created.
std::vector<std::string> complete_names(const Globals& g, std::string_view kind, std::string_view prefix);

}  // namespace gaia::cli
