// gaia context [list|use|add|remove|current]: named stores (and backends), like kubectl
// contexts. The list lives in $XDG_STATE_HOME/gaia/contexts.json; "default" always
// exists and points at the store in the state directory.
#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "cli/context.hpp"
#include "cli/table.hpp"
#include "spec/app_spec.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

struct ContextArgs {
  std::string name;
  std::string store;
  std::string backend = "sim";
};

ContextEntry* find_context(ContextFile& f, const std::string& name) {
  for (auto& c : f.contexts)
    if (c.name == name) return &c;
  return nullptr;
}

std::string unknown_hint(const ContextFile& f, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& c : f.contexts) names.push_back(c.name);
  if (auto close = spec::did_you_mean(name, names)) return fmt::format("did you mean '{}'?", *close);
  return fmt::format("known contexts: {}; `gaia context add NAME --store PATH` creates one", spec::join_limited(names));
}

int run_list(const Globals& g) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  Table t({"CURRENT", "NAME", "STORE", "BACKEND"});
  for (const auto& c : f->contexts) t.add_row({c.name == f->current ? "*" : "", c.name, c.store, c.backend});
  std::fputs(t.render(table_options_for(stdout)).c_str(), stdout);
  return k_ok;
}

int run_current(const Globals& g) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  fmt::print("{}\n", f->current);
  return k_ok;
}

int run_use(const Globals& g, const ContextArgs& a) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  if (!find_context(*f, a.name)) return report_error(g, fmt::format("no context named '{}'", a.name), unknown_hint(*f, a.name));
  f->current = a.name;
  if (auto saved = save_contexts(*f); !saved) return report(g, saved.error());
  if (!g.quiet) fmt::print("switched to context {}\n", a.name);
  return k_ok;
}

int run_add(const Globals& g, const ContextArgs& a) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  if (std::string problem = spec::dns_label_problem(a.name); !problem.empty())
    return report_error(g, fmt::format("'{}' is not a valid context name: {}", a.name, problem),
                        "context names are DNS labels, e.g. lab-cluster");
  if (find_context(*f, a.name))
    return report_error(g, fmt::format("a context named '{}' already exists", a.name),
                        fmt::format("`gaia context remove {}` first, or pick another name", a.name));
  if (auto known = check_backend_name(a.backend); !known) return report(g, known.error());
  std::error_code ec;
  std::filesystem::path store = std::filesystem::absolute(a.store, ec);
  if (ec) store = a.store;
  if (std::filesystem::is_directory(store, ec))
    return report_error(g, fmt::format("--store {} is a directory", a.store),
                        fmt::format("give a file path, e.g. {}", (store / "gaia.db").string()));
  f->contexts.push_back({a.name, store.lexically_normal().string(), a.backend});
  if (auto saved = save_contexts(*f); !saved) return report(g, saved.error());
  if (!g.quiet)
    fmt::print("added context {} (store {}, backend {}); `gaia context use {}` switches to it\n", a.name,
               store.lexically_normal().string(), a.backend, a.name);
  return k_ok;
}

int run_remove(const Globals& g, const ContextArgs& a) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  if (a.name == "default")
    return report_error(g, "the default context cannot be removed", "it needs no file and always exists");
  if (!find_context(*f, a.name)) return report_error(g, fmt::format("no context named '{}'", a.name), unknown_hint(*f, a.name));
  std::erase_if(f->contexts, [&](const ContextEntry& c) { return c.name == a.name; });
  bool was_current = f->current == a.name;
  if (was_current) f->current = "default";
  if (auto saved = save_contexts(*f); !saved) return report(g, saved.error());
  // The store file is the user's data: removing the name never deletes it.
  if (!g.quiet)
    fmt::print("removed context {} (its store file is kept){}\n", a.name,
               was_current ? "; the current context is now default" : "");
  return k_ok;
}

}  // namespace

void register_context(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("context", "List and switch contexts (a store and a backend)");
  cmd->require_subcommand(0, 1);
  cmd->footer(
      "Without a subcommand: the list of contexts, the current one marked '*'.\n"
      "Examples:\n"
      "  gaia context add staging --store /srv/gaia/staging.db\n"
      "  gaia context use staging\n"
      "  gaia --context default get nodes              # one command in another context");
  auto a = std::make_shared<ContextArgs>();

  auto* list = cmd->add_subcommand("list", "List contexts; the current one is marked '*'");
  list->footer("Examples:\n  gaia context list\n  gaia context");
  list->callback([&g, code] { *code = run_list(g); });

  auto* current = cmd->add_subcommand("current", "Print the current context's name");
  current->footer("Examples:\n  gaia context current");
  current->callback([&g, code] { *code = run_current(g); });

  auto* use = cmd->add_subcommand("use", "Make a context the current one");
  use->add_option("NAME", a->name, "Context name")->required();
  use->footer("Examples:\n  gaia context use staging\n  gaia context use default");
  use->callback([&g, a, code] { *code = run_use(g, *a); });

  auto* add = cmd->add_subcommand("add", "Add a context");
  add->add_option("NAME", a->name, "Context name (a DNS label)")->required();
  add->add_option("--store", a->store, "SQLite store file (created on first use)")->required()->type_name("PATH");
  add->add_option("--backend", a->backend,
                  "Where instances run for a cluster created in this context: sim (simulated nodes) or process "
                  "(local processes); a cluster keeps the backend it was created with")
      ->check(CLI::IsMember({"sim", "process"}))
      ->capture_default_str();
  add->footer("Examples:\n  gaia context add staging --store /srv/gaia/staging.db");
  add->callback([&g, a, code] { *code = run_add(g, *a); });

  auto* remove = cmd->add_subcommand("remove", "Forget a context (its store file is kept)");
  remove->add_option("NAME", a->name, "Context name")->required();
  remove->footer("Examples:\n  gaia context remove staging                   # the store file stays");
  remove->callback([&g, a, code] { *code = run_remove(g, *a); });

  cmd->callback([cmd, &g, code] {
    if (cmd->get_subcommands().empty()) *code = run_list(g);
  });
}

}  // namespace gaia::cli
