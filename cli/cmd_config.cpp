// gaia config get|set|unset|list|history: the config center in the store (global, or per
// tenant; a tenant's value beats the global one). A set or unset re-renders exactly the
// apps whose recorded reads it changes, follows the dependency chain to the dependents
// whose imported outputs change, and rolls their instances out in batches keeping
// min_available (ops/propagate.hpp); --dry-run prints that impact chain and writes
// nothing.
#include <fmt/format.h>

#include <memory>
#include <set>

#include "cli/context.hpp"
#include "cli/propagation_view.hpp"
#include "cli/secret_flags.hpp"
#include "cli/table.hpp"
#include "lib/timeline.hpp"
#include "ops/center_changes.hpp"
#include "ops/propagate.hpp"
#include "lib/utf8.hpp"
#include "render/overrides.hpp"
#include "spec/suggest.hpp"

namespace gaia::cli {

namespace {

using json = nlohmann::json;

struct ConfigArgs {
  std::vector<std::string> args;
  std::string tenant;
  bool global = false;
  bool as_string = false;
  bool dry_run = false;
  bool wait = false;
  bool show_secrets = false;  // get, list, history: values of secret keys in clear.
  std::string timeout = "5m";
  std::string output = "text";

  std::string scope() const { return tenant.empty() ? std::string(k_global_scope) : tenant; }
};

// Prints the problems and returns the usage exit code: malformed arguments are usage
// errors, and nothing was read or written.
int usage(const Globals& g, const Diagnostics& ds) {
  report(g, ds);
  return k_usage;
}

Diagnostics key_problems(const std::vector<std::string>& keys) {
  Diagnostics out;
  for (const auto& k : keys)
    if (std::string p = config_key_problem(k); !p.empty())
      out.push_back(Diagnostic{{}, "", fmt::format("bad config key '{}': {}", k, p),
                               "keys are dotted paths such as web.replicas or hdfs.namenode.heap"});
  return out;
}

std::string value_text(const json& v, bool pretty) {
  if (v.is_string()) return v.get<std::string>();
  return pretty && (v.is_object() || v.is_array()) ? v.dump(2) : v.dump();
}

// Known keys in `scope` (for "did you mean").
std::vector<std::string> scope_keys(const StoreConfigSource& centers, const std::string& scope) {
  std::vector<std::string> out;
  for (const auto& e : centers.entries())
    if (e.scope == scope) out.push_back(e.key);
  return out;
}

int no_key(const Globals& g, const std::string& key, const std::string& scope, const std::vector<std::string>& known) {
  std::string hint;
  if (auto close = spec::did_you_mean(key, known)) hint = fmt::format("did you mean '{}'?", *close);
  else hint = "`gaia config list` shows the keys set";
  return report_error(g, fmt::format("no config key '{}' ({})", key, ops::scope_name(scope)), hint);
}

// The secret keys to mask in what a command prints (lib/secrets.hpp): those of the
// deployed apps, or none with --show-secrets (the `secrets.` convention included).
struct Masking {
  bool show = false;
  SecretKeys keys;

  json value(const std::string& key, const json& v) const { return show ? v : keys.mask(key, v); }
  std::string text(const std::string& key, const json& v, bool pretty = false) const {
    return value_text(value(key, v), pretty);
  }
};

Result<Masking> masking(const Globals& g, Session& s, const ConfigArgs& a) {
  Masking m;
  m.show = a.show_secrets;
  if (m.show) return m;
  auto state = s.state->load();
  if (!state) return fail(state.error());
  m.keys = deployed_secret_keys(g, s, *state);
  return m;
}

// Runs a set or unset: the change with its propagation, then prints it. Values are
// always masked here: a set is no place to ask for a value.
int run_change(const Globals& g, Session& s, const ConfigArgs& a, const std::vector<ConfigEdit>& edits,
               const StoreConfigSource& centers) {
  auto change = ops::config_change(a.scope(), edits, centers);
  auto outcome = ops::apply_center_change(s.workspace(), change, a.dry_run);
  if (!outcome) return report(g, outcome.error());
  const SecretKeys& secrets = outcome->propagation.secrets;
  if (a.output == "json") {
    json j = propagation_json(*outcome);
    json changes = json::array();
    for (const auto& e : edits) {
      const ConfigEntry* was = centers.find(a.scope(), e.key);
      changes.push_back({{"key", e.key},
                         {"value", !e.value ? json() : secrets.mask(e.key, *e.value)},
                         {"unset", !e.value.has_value()},
                         {"was", !was ? json() : secrets.mask(e.key, was->value)}});
    }
    j["scope"] = a.scope();
    j["changes"] = changes;
    if (!a.dry_run) j["op"] = s.op;
    fmt::print("{}\n", j.dump(2));
    return a.wait ? wait_for_change(g, s, *outcome, a.timeout, false) : k_ok;
  }
  if (g.quiet) return a.wait ? wait_for_change(g, s, *outcome, a.timeout, false) : k_ok;
  for (const auto& e : edits) {
    const ConfigEntry* was = centers.find(a.scope(), e.key);
    std::string old_text = was ? secrets.text(e.key, was->value) : "unset";
    std::string what = e.value ? fmt::format("{} = {}", e.key, secrets.text(e.key, *e.value)) : e.key + " unset";
    fmt::print("{}config {} ({}; was {})\n", a.dry_run ? "would set " : "", what, ops::scope_name(a.scope()), old_text);
  }
  fmt::print("{}", format_propagation(g, *outcome));
  if (a.dry_run) fmt::print("dry run: nothing was written\n");
  else fmt::print("operation {} (see `gaia events --op {}`)\n", s.op, s.op);
  return a.wait ? wait_for_change(g, s, *outcome, a.timeout, true) : k_ok;
}

// A bad --timeout is a usage error found before anything is written.
bool bad_timeout(const Globals& g, const ConfigArgs& a) {
  if (!a.wait) return false;
  auto d = parse_duration(a.timeout);
  if (d && d->count() > 0) return false;
  report_error(g, fmt::format("--timeout {}: not a positive duration", a.timeout), "write a duration such as 30s, 5m or 1h");
  return true;
}

int run_set(const Globals& g, const ConfigArgs& a) {
  if (bad_timeout(g, a)) return k_usage;
  // KEY VALUE (two words, the first without '='), or KEY=VALUE...
  std::vector<std::pair<std::string, std::string>> pairs;
  Diagnostics errors;
  if (a.args.size() == 2 && a.args[0].find('=') == std::string::npos) {
    pairs.emplace_back(a.args[0], a.args[1]);
  } else {
    for (const auto& arg : a.args) {
      auto eq = arg.find('=');
      if (eq == std::string::npos) {
        errors.push_back(Diagnostic{{}, "", fmt::format("'{}' is not KEY=VALUE", arg),
                                    "write KEY=VALUE (several at once), or KEY VALUE for one key"});
        continue;
      }
      pairs.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
    }
  }
  std::vector<std::string> keys;
  for (const auto& [k, v] : pairs) keys.push_back(k);
  auto bad = key_problems(keys);
  errors.insert(errors.end(), bad.begin(), bad.end());
  std::set<std::string> seen;
  for (const auto& k : keys)
    if (!seen.insert(k).second)
      errors.push_back(Diagnostic{{}, k, fmt::format("key '{}' is given twice", k), "give each key once"});
  if (!errors.empty()) return usage(g, errors);
  std::vector<ConfigEdit> edits;
  for (const auto& [k, text] : pairs) {
    if (a.as_string) {
      // Stored as a JSON string, which holds only UTF-8.
      if (std::string problem = utf8_problem(text); !problem.empty()) {
        errors.push_back(Diagnostic{{}, k, fmt::format("the value of '{}' is {}", k, problem),
                                    "check the terminal's or the script's encoding; values must be UTF-8"});
        continue;
      }
      edits.push_back(ConfigEdit{k, json(text)});
      continue;
    }
    auto v = render::parse_override_value(text, k);
    if (!v) {
      // The parser names --set as where the value came from; here it is this command's.
      for (Diagnostic d : v.error()) {
        d.location = {};
        errors.push_back(std::move(d));
      }
      continue;
    }
    edits.push_back(ConfigEdit{k, *v});
  }
  if (!errors.empty()) return usage(g, errors);

  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto centers = StoreConfigSource::load(*(*session)->store);
  if (!centers) return report(g, centers.error());
  // Setting a key to the value it has is not a change: nothing to write or re-render.
  std::vector<ConfigEdit> changed;
  for (const auto& e : edits) {
    const ConfigEntry* cur = centers->find(a.scope(), e.key);
    if (!cur || cur->value != *e.value) changed.push_back(e);
  }
  if (changed.empty()) {
    if (a.output == "json") fmt::print("{}\n", json{{"scope", a.scope()}, {"changed", false}}.dump(2));
    else if (!g.quiet) fmt::print("config unchanged: every key already has that value ({})\n", ops::scope_name(a.scope()));
    return k_ok;
  }
  return run_change(g, **session, a, changed, *centers);
}

int run_unset(const Globals& g, const ConfigArgs& a) {
  if (bad_timeout(g, a)) return k_usage;
  auto bad = key_problems(a.args);
  if (!bad.empty()) return usage(g, bad);
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto centers = StoreConfigSource::load(*(*session)->store);
  if (!centers) return report(g, centers.error());
  std::vector<ConfigEdit> edits;
  for (const auto& k : a.args) {
    if (!centers->find(a.scope(), k)) return no_key(g, k, a.scope(), scope_keys(*centers, a.scope()));
    edits.push_back(ConfigEdit{k, std::nullopt});
  }
  return run_change(g, **session, a, edits, *centers);
}

int run_get(const Globals& g, const ConfigArgs& a) {
  const std::string& key = a.args.at(0);
  auto bad = key_problems({key});
  if (!bad.empty()) return usage(g, bad);
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto centers = StoreConfigSource::load(*(*session)->store);
  if (!centers) return report(g, centers.error());
  // A tenant sees its own keys over the global ones, as its renders do.
  std::vector<ConfigLayer> layers = centers->config_layers(a.scope());
  if (a.tenant.empty()) layers.resize(1);
  auto resolved = resolve_config(layers);
  auto it = resolved.find(key);
  if (it == resolved.end()) {
    std::vector<std::string> known;
    for (const auto& [k, v] : resolved) known.push_back(k);
    return no_key(g, key, a.scope(), known);
  }
  const ConfigValue& v = it->second;
  std::string from = v.source.starts_with("center:") ? v.source.substr(7) : v.source;
  auto mask = masking(g, **session, a);
  if (!mask) return report(g, mask.error());
  if (a.output == "json") {
    fmt::print("{}\n", json{{"key", key},
                            {"scope", a.scope()},
                            {"value", mask->value(key, v.value)},
                            {"revision", v.revision},
                            {"from", from == k_global_scope ? "global" : from}}
                           .dump(2));
    return k_ok;
  }
  fmt::print("{}\n", mask->text(key, v.value, true));
  if (g.verbose > 0)
    fmt::print(stderr, "from {} (revision {})\n", from == k_global_scope ? "global" : "tenant " + from, v.revision);
  return k_ok;
}

int run_list(const Globals& g, const ConfigArgs& a) {
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto centers = StoreConfigSource::load(*(*session)->store);
  if (!centers) return report(g, centers.error());
  std::vector<const ConfigEntry*> shown;
  for (const auto& e : centers->entries()) {
    bool global = e.scope == k_global_scope;
    if (a.global && !global) continue;
    if (!a.tenant.empty() && !global && e.scope != a.tenant) continue;
    shown.push_back(&e);
  }
  // With --tenant, a global key the tenant also sets is not what its renders read.
  auto note = [&](const ConfigEntry& e) -> std::string {
    if (a.tenant.empty() || e.scope != k_global_scope) return "";
    for (const auto& t : centers->entries()) {
      if (t.scope != a.tenant) continue;
      if (t.key == e.key) return "overridden by tenant";
      if (config_keys_overlap(t.key, e.key)) return "partly overridden by tenant";
    }
    return "";
  };
  auto mask = masking(g, **session, a);
  if (!mask) return report(g, mask.error());
  if (a.output == "json") {
    json out = json::array();
    for (const auto* e : shown) {
      json j = {{"scope", e->scope}, {"key", e->key}, {"value", mask->value(e->key, e->value)},
                {"revision", e->revision}};
      if (std::string n = note(*e); !n.empty()) j["note"] = n;
      out.push_back(std::move(j));
    }
    fmt::print("{}\n", out.dump(2));
    return k_ok;
  }
  if (shown.empty()) {
    fmt::print("no config keys{} (set one with `gaia config set KEY=VALUE`)\n",
               a.global ? " in the global scope" : a.tenant.empty() ? "" : " for tenant " + a.tenant);
    return k_ok;
  }
  Table t({"SCOPE", "KEY", "VALUE", "REVISION", "NOTE"});
  for (const auto* e : shown)
    t.add_row({e->scope == k_global_scope ? "global" : e->scope, e->key, mask->text(e->key, e->value),
               std::to_string(e->revision), note(*e).empty() ? "-" : note(*e)});
  fmt::print("{}", t.render(table_options_for(stdout)));
  return k_ok;
}

int run_history(const Globals& g, const ConfigArgs& a) {
  const std::string& key = a.args.at(0);
  auto bad = key_problems({key});
  if (!bad.empty()) return usage(g, bad);
  auto session = open_session(g);
  if (!session) return report(g, session.error());
  auto history = config_history(*(*session)->store, a.scope(), key);
  if (!history) return report(g, history.error());
  if (history->empty()) {
    auto centers = StoreConfigSource::load(*(*session)->store);
    if (!centers) return report(g, centers.error());
    return no_key(g, key, a.scope(), scope_keys(*centers, a.scope()));
  }
  auto mask = masking(g, **session, a);
  if (!mask) return report(g, mask.error());
  if (a.output == "json") {
    json out = json::array();
    for (const auto& h : *history)
      out.push_back({{"revision", h.revision},
                     {"time", h.time},
                     {"op", h.op},
                     {"unset", !h.value.has_value()},
                     {"value", !h.value ? json() : mask->value(key, *h.value)}});
    fmt::print("{}\n", out.dump(2));
    return k_ok;
  }
  Table t({"REVISION", "TIME", "OPERATION", "VALUE"});
  for (const auto& h : *history)
    t.add_row({std::to_string(h.revision), h.time.empty() ? "-" : h.time, h.op.empty() ? "-" : h.op,
               h.value ? mask->text(key, *h.value) : "<unset>"});
  fmt::print("{}", t.render(table_options_for(stdout)));
  return k_ok;
}

void add_wait(CLI::App* cmd, ConfigArgs& a) {
  cmd->add_flag("--wait", a.wait, "Wait until the re-rendered apps run their new workload everywhere");
  cmd->add_option("--timeout", a.timeout, "How long --wait waits (e.g. 30s, 5m)")->capture_default_str();
}

void add_scope(CLI::App* cmd, ConfigArgs& a) {
  auto* tenant = cmd->add_option("--tenant", a.tenant, "The tenant's scope (its values beat the global ones)")
                     ->type_name("TENANT")
                     ->check(tenant_validator());
  auto* global = cmd->add_flag("--global", a.global, "The global scope (the default)");
  tenant->excludes(global);
}

}  // namespace

void register_config(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("config", "Read and change the config center (global or per tenant)");
  cmd->require_subcommand(1);
  cmd->footer(
      "Renders read the center with gaia.config('key', default); a tenant's value beats the global one.\n"
      "A set or unset re-renders the apps that read the key and, down the dependency chain, the\n"
      "dependents whose imported outputs change, rolling their instances in batches (--dry-run: show only).\n"
      "Examples:\n"
      "  gaia config set web.replicas=5 --dry-run\n"
      "  gaia config get web.replicas --tenant shop\n"
      "  gaia config history web.replicas");

  auto get = std::make_shared<ConfigArgs>();
  auto* c_get = cmd->add_subcommand("get", "Print a key's value (as the scope's renders read it)");
  c_get->add_option("KEY", get->args, "Dotted key, e.g. web.replicas (a parent gives the whole object)")
      ->required()
      ->expected(1);
  add_scope(c_get, *get);
  add_show_secrets(c_get, get->show_secrets);
  c_get->add_option("-o,--output", get->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  c_get->footer("Examples:\n  gaia config get web.replicas\n  gaia config get web --tenant shop -o json\n"
                "  gaia config get web.session_secret --show-secrets   # a secret key prints <secret> without it");
  c_get->callback([&g, code, get] { *code = run_get(g, *get); });

  auto set = std::make_shared<ConfigArgs>();
  auto* c_set = cmd->add_subcommand("set", "Set keys, re-render the apps reading them and roll them out");
  c_set->add_option("ARGS", set->args, "KEY=VALUE... or KEY VALUE")->required();
  add_scope(c_set, *set);
  c_set->add_flag("--string", set->as_string, "Store values as strings (5 stays \"5\")");
  c_set->add_flag("--dry-run", set->dry_run, "Show the impact chain (apps re-rendered, dependents, rollouts); write nothing");
  c_set->add_option("-o,--output", set->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  add_wait(c_set, *set);
  c_set->footer(
      "Values are typed like --set: 5 and 2.5 are numbers, true/false booleans, null, {...} and [...] JSON,\n"
      "anything else a string ('\"5\"' or --string for the string \"5\").\n"
      "Examples:\n"
      "  gaia config set web.replicas=5\n"
      "  gaia config set web.replicas 5 --dry-run        # which apps and dependents it touches\n"
      "  gaia config set hdfs.replication=2 --tenant analytics\n"
      "  gaia config set web.banner 'hello world' --string");
  c_set->callback([&g, code, set] { *code = run_set(g, *set); });

  auto unset = std::make_shared<ConfigArgs>();
  auto* c_unset = cmd->add_subcommand("unset", "Remove keys (readers fall back to the global value or their default)");
  c_unset->add_option("KEY", unset->args, "Keys to remove")->required();
  add_scope(c_unset, *unset);
  c_unset->add_flag("--dry-run", unset->dry_run, "Show the impact chain; write nothing");
  c_unset->add_option("-o,--output", unset->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  add_wait(c_unset, *unset);
  c_unset->footer("Examples:\n  gaia config unset web.replicas\n  gaia config unset hdfs.replication --tenant analytics");
  c_unset->callback([&g, code, unset] { *code = run_unset(g, *unset); });

  auto list = std::make_shared<ConfigArgs>();
  auto* c_list = cmd->add_subcommand("list", "List the keys set (all scopes, or one)");
  add_scope(c_list, *list);
  add_show_secrets(c_list, list->show_secrets);
  c_list->add_option("-o,--output", list->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  c_list->footer("Examples:\n  gaia config list\n  gaia config list --tenant shop   # the tenant's keys and the global ones");
  c_list->callback([&g, code, list] { *code = run_list(g, *list); });

  auto history = std::make_shared<ConfigArgs>();
  auto* c_history = cmd->add_subcommand("history", "Show a key's past values (the last 100 writes)");
  c_history->add_option("KEY", history->args, "Dotted key")->required()->expected(1);
  add_scope(c_history, *history);
  add_show_secrets(c_history, history->show_secrets);
  c_history->add_option("-o,--output", history->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  c_history->footer("Examples:\n  gaia config history web.replicas\n  gaia config history hdfs.replication --tenant analytics -o json");
  c_history->callback([&g, code, history] { *code = run_history(g, *history); });
}

}  // namespace gaia::cli
