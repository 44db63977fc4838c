#include "cli/completion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "cli/context.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"

namespace gaia::cli {

namespace {

// Which arguments take names from the store. `command` is the command path; `first`,
// when set, is the value the first argument must have for the row to apply (`get
// nodes NAME...`, `describe node NAME`); `position` is the argument's index (-1: every
// argument from there on). Commands not present in the tree are simply not matched, so
// the table may name commands before they exist.
struct NameRule {
  std::string_view command;
  std::string_view first;
  int position;
  std::string_view kind;
};

constexpr NameRule k_name_rules[] = {
    {"delete", "", 0, "apps"},
    {"endpoints", "", 0, "apps"},
    {"scale", "", 0, "apps"},
    {"explain", "", 0, "instances"},
    {"migrate", "", 0, "instances"},
    {"drain", "", -1, "nodes"},
    {"node remove", "", -1, "nodes"},
    {"node cordon", "", -1, "nodes"},
    {"node uncordon", "", -1, "nodes"},
    {"node label", "", -1, "nodes"},
    {"node fail", "", -1, "nodes"},
    {"node recover", "", -1, "nodes"},
    {"context use", "", 0, "contexts"},
    {"context show", "", 0, "contexts"},
    {"context remove", "", 0, "contexts"},
    {"describe", "node", 1, "nodes"},
    {"describe", "app", 1, "apps"},
    {"describe", "instance", 1, "instances"},
    {"get", "nodes", -1, "nodes"},
    {"get", "apps", -1, "apps"},
    {"get", "instances", -1, "instances"},
    {"label set", "node", 1, "nodes"},
    {"label set", "app", 1, "apps"},
    {"label set", "tenant", 1, "tenants"},
    {"label unset", "node", 1, "nodes"},
    {"label unset", "app", 1, "apps"},
    {"label unset", "tenant", 1, "tenants"},
    {"label list", "node", 1, "nodes"},
    {"label list", "app", 1, "apps"},
    {"label list", "tenant", 1, "tenants"},
    {"sim fail", "", 0, "instances"},
};

// Option values that are store names, by the option's value name (type_name) or, for
// options that keep CLI11's generic TEXT, by the option's long name.
struct OptionNameRule {
  std::string_view match;  // "--context" (a long name) or "NODE" (a value name)
  std::string_view kind;
};

constexpr OptionNameRule k_option_rules[] = {
    {"--context", "contexts"}, {"--tenant", "tenants"},     {"TENANT", "tenants"},       {"NODE", "nodes"},
    {"NODES", "nodes"},        {"APP", "apps"},             {"APPS", "apps"},            {"INSTANCE", "instances"},
    {"INSTANCES", "instances"}, {"CONTEXT", "contexts"},
};

constexpr std::string_view k_kinds[] = {"apps", "instances", "nodes", "tenants", "contexts"};

// The value name CLI11 shows for an option ("FILE"), without the validator text it
// appends after ':' ("TEXT:{a,b}").
std::string value_name(const CLI::Option& o) {
  std::string t = o.get_type_name();
  return t.substr(0, t.find(':'));
}

// The choices of an IsMember check, read back from the description CLI11 builds for it
// ("{auto,always,never}" inside the type name). Empty when there is none.
std::vector<std::string> member_choices(const CLI::Option& o) {
  std::string t = o.get_type_name();
  size_t open = t.find(":{");
  if (open == std::string::npos) return {};
  size_t close = t.find('}', open);
  if (close == std::string::npos) return {};
  std::vector<std::string> out;
  std::string body = t.substr(open + 2, close - open - 2);
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string item = body.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

ValueSource names_source(std::string_view kind) {
  ValueSource v;
  v.kind = ValueSource::Kind::names;
  v.names = std::string(kind);
  return v;
}

// Where an option's or positional's words come from: its IsMember choices, a store
// name per the rules above, files or folders by its value name, else free text.
ValueSource source_of(const CLI::Option& o, const std::string& display_name) {
  ValueSource v;
  if (!o.get_positional() && o.get_expected_max() == 0) {
    v.kind = ValueSource::Kind::flag;
    return v;
  }
  if (auto choices = member_choices(o); !choices.empty()) {
    v.kind = ValueSource::Kind::choices;
    v.choices = std::move(choices);
    return v;
  }
  std::string type = value_name(o);
  for (const auto& r : k_option_rules) {
    bool by_long = r.match.starts_with("--") && std::ranges::find(o.get_lnames(), r.match.substr(2)) != o.get_lnames().end();
    if (by_long || (!r.match.starts_with("--") && !o.get_positional() && type == r.match)) return names_source(r.kind);
  }
  std::string what = o.get_positional() ? display_name : type;
  if (what == "DIR") v.kind = ValueSource::Kind::dirs;
  else if (what == "FILE" || what == "PATH") v.kind = ValueSource::Kind::files;
  return v;
}

std::string join_path(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + " " + name;
}

CommandSpec describe(const CLI::App& app, const std::string& path, const std::vector<OptionSpec>& inherited) {
  CommandSpec c;
  c.name = path.empty() ? "" : app.get_name();
  c.path = path;
  c.description = app.get_description();
  std::set<std::string> seen;
  int index = 0;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // Hidden.
    if (o->get_positional() && !o->nonpositional()) {
      PositionalSpec p;
      p.name = o->get_name();
      p.values = source_of(*o, p.name);
      p.many = o->get_items_expected_max() > 1;
      for (const auto& r : k_name_rules)
        if (r.command == path && r.first.empty() && (r.position == index || r.position == -1))
          p.values = names_source(r.kind);
      c.positionals.push_back(std::move(p));
      ++index;
      continue;
    }
    OptionSpec s;
    for (const auto& n : o->get_snames()) s.names.push_back("-" + n);
    for (const auto& n : o->get_lnames()) s.names.push_back("--" + n);
    if (s.names.empty()) continue;
    s.description = o->get_description();
    s.values = source_of(*o, "");
    for (const auto& n : s.names) seen.insert(n);
    c.options.push_back(std::move(s));
  }
  // Global flags fall through to every subcommand, so they complete everywhere; a
  // subcommand's own flag of the same name (its --tenant) hides the global one.
  for (const auto& o : inherited) {
    bool shadowed = std::ranges::any_of(o.names, [&](const std::string& n) { return seen.contains(n); });
    if (!shadowed) c.options.push_back(o);
  }
  // Rows keyed by the first argument: its words are the rows' values.
  for (const auto& r : k_name_rules) {
    if (r.command != path || r.first.empty()) continue;
    c.by_first.push_back({std::string(r.first), r.position, names_source(r.kind)});
    if (!c.positionals.empty() && c.positionals[0].values.kind == ValueSource::Kind::text) {
      c.positionals[0].values.kind = ValueSource::Kind::choices;
    }
    if (!c.positionals.empty() && c.positionals[0].values.kind == ValueSource::Kind::choices &&
        std::ranges::find(c.positionals[0].values.choices, std::string(r.first)) == c.positionals[0].values.choices.end())
      c.positionals[0].values.choices.push_back(std::string(r.first));
  }
  std::vector<OptionSpec> down = c.options;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return !a->get_name().empty(); })) {
    if (sub->get_group().empty()) continue;  // Hidden, like `__complete`.
    c.subcommands.push_back(describe(*sub, join_path(path, sub->get_name()), down));
  }
  return c;
}

void flatten_into(const CommandSpec& c, std::vector<const CommandSpec*>& out) {
  out.push_back(&c);
  for (const auto& s : c.subcommands) flatten_into(s, out);
}

}  // namespace

std::string ValueSource::encode() const {
  switch (kind) {
    case Kind::flag: return "flag";
    case Kind::text: return "text";
    case Kind::files: return "files";
    case Kind::dirs: return "dirs";
    case Kind::choices: return fmt::format("choices {}", fmt::join(choices, " "));
    case Kind::names: return "names " + names;
  }
  return "text";
}

CommandSpec describe_commands(const CLI::App& root) { return describe(root, "", {}); }

std::vector<const CommandSpec*> flatten(const CommandSpec& root) {
  std::vector<const CommandSpec*> out;
  flatten_into(root, out);
  return out;
}

bool is_name_kind(std::string_view kind) { return std::ranges::find(k_kinds, kind) != std::end(k_kinds); }

std::vector<std::string> complete_names(const Globals& g, std::string_view kind, std::string_view prefix) {
  std::set<std::string> names;
  if (kind == "contexts") {
    if (auto f = load_contexts())
      for (const auto& c : f->contexts) names.insert(c.name);
  } else if (is_name_kind(kind)) {
    auto context = resolve_context(g);
    if (!context) return {};
    // Completion must never create a store (a missing file completes to nothing) nor
    // hang the shell (an etcd that does not answer at once completes to nothing).
    auto store = open_store(*context, OpenStoreOptions{.quick = true});
    if (!store) return {};
    SystemClock clock;
    State state(**store, clock);
    auto st = state.load();
    if (!st) return {};
    if (kind == "nodes") {
      for (const auto& n : st->snapshot.nodes) names.insert(n.name);
    } else if (kind == "tenants") {
      for (const auto& t : st->snapshot.tenants) names.insert(t.name);
      for (const auto& [key, app] : st->apps) names.insert(app.tenant);
    } else if (kind == "apps") {
      // Apps are named relative to --tenant by the commands that take them.
      for (const auto& [key, app] : st->apps)
        if (app.tenant == g.tenant) names.insert(app.name);
    } else if (kind == "instances") {
      // Keys name their tenant, so every tenant's instances are offered.
      for (const auto& i : st->snapshot.instances) names.insert(i.key());
    }
  }
  std::vector<std::string> out;
  for (const auto& n : names)
    if (n.starts_with(prefix)) out.push_back(n);
  return out;
}

}  // namespace gaia::cli
