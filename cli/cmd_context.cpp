// gaia context [list|show|use|add|remove|current]: named stores (and backends), like
// kubectl contexts. The list lives in $XDG_STATE_HOME/gaia/contexts.json; "default"
// always exists and points at the store in the state directory. A store is an SQLite
// file or an etcd cluster (etcd://HOST:PORT,...); an etcd context also keeps its TLS
// files, user and password file (the path, never the password).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

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
  // etcd only (docs/cli.md "gaia context").
  std::string etcd_ca, etcd_cert, etcd_key, etcd_user, etcd_password_file, etcd_timeout;
  // kubernetes backend only.
  std::string kubeconfig, kube_context, kube_namespace, node_selector;
  bool no_check = false;
  std::string output = "text";
};

std::filesystem::path absolute_path(const std::string& p) {
  if (p.empty()) return {};
  std::error_code ec;
  auto abs = std::filesystem::absolute(p, ec);
  return (ec ? std::filesystem::path(p) : abs).lexically_normal();
}

// The name of the first --etcd-* flag given, or "" when none is.
std::string first_etcd_flag(const ContextArgs& a) {
  const std::pair<const char*, const std::string*> flags[] = {
      {"--etcd-ca", &a.etcd_ca},     {"--etcd-cert", &a.etcd_cert},
      {"--etcd-key", &a.etcd_key},   {"--etcd-user", &a.etcd_user},
      {"--etcd-password-file", &a.etcd_password_file}, {"--etcd-timeout", &a.etcd_timeout}};
  for (const auto& [flag, value] : flags)
    if (!value->empty()) return flag;
  return "";
}

// The connection settings of an etcd context from add's flags, with files made absolute
// (the context is used from any directory).
Result<EtcdSettings> etcd_settings_of(const ContextArgs& a) {
  EtcdSettings e;
  e.ca_file = absolute_path(a.etcd_ca);
  e.cert_file = absolute_path(a.etcd_cert);
  e.key_file = absolute_path(a.etcd_key);
  e.username = a.etcd_user;
  e.password_file = absolute_path(a.etcd_password_file);
  if (!a.etcd_timeout.empty()) {
    auto timeout = positive_duration("--etcd-timeout", a.etcd_timeout);
    if (!timeout) return fail(timeout.error());
    e.request_timeout = *timeout;
  }
  if (auto checked = check_etcd_settings(e); !checked) return fail(checked.error().to_diagnostic());
  return e;
}

// etcds://, or etcd:// with a CA or client certificate (the gateway then uses https://).
bool uses_tls(const StoreLocation& loc, const EtcdSettings& e) {
  return loc.etcd.tls || !e.ca_file.empty() || !e.cert_file.empty();
}

std::chrono::milliseconds effective_timeout(const EtcdSettings& e) {
  return e.request_timeout.count() > 0 ? e.request_timeout : EtcdOptions{}.request_timeout;
}

// "TLS (CA /etc/ca.pem), user gaia": how an etcd context connects, for messages. Paths
// and names only.
std::string etcd_summary(const StoreLocation& loc, const EtcdSettings& e) {
  std::vector<std::string> parts;
  parts.push_back(uses_tls(loc, e) ? (e.ca_file.empty() ? "TLS" : fmt::format("TLS (CA {})", e.ca_file.string())) : "plain HTTP");
  if (!e.cert_file.empty()) parts.push_back(fmt::format("client certificate {}", e.cert_file.string()));
  if (!e.username.empty()) parts.push_back(fmt::format("user {}", e.username));
  return fmt::format("{}", fmt::join(parts, ", "));
}

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

// One context in full: its store, backend, run dir and, for etcd, how it connects.
// Paths and names only: the password stays in its file.
int run_show(const Globals& g, const ContextArgs& a) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  std::string name = a.name.empty() ? f->current : a.name;
  const ContextEntry* c = find_context(*f, name);
  if (!c) return report_error(g, fmt::format("no context named '{}'", name), unknown_hint(*f, name));
  auto location = parse_store_location(c->store);
  bool etcd = location && location->kind == StoreLocation::Kind::Etcd;
  std::string run_dir = run_dir_of(c->store).string();
  if (a.output == "json") {
    nlohmann::json j{{"name", c->name},     {"current", c->name == f->current},
                     {"store", c->store},   {"kind", etcd ? "etcd" : "sqlite"},
                     {"backend", c->backend}, {"run_dir", run_dir}};
    if (etcd) {
      // Absent settings are null, so scripts can test them; never a password.
      auto path = [](const std::filesystem::path& p) { return p.empty() ? nlohmann::json() : nlohmann::json(p.string()); };
      j["etcd"] = {{"endpoints", location->etcd.endpoints},
                   {"tls", uses_tls(*location, c->etcd)},
                   {"ca", path(c->etcd.ca_file)},
                   {"cert", path(c->etcd.cert_file)},
                   {"key", path(c->etcd.key_file)},
                   {"user", c->etcd.username.empty() ? nlohmann::json() : nlohmann::json(c->etcd.username)},
                   {"password_file", path(c->etcd.password_file)},
                   {"timeout_ms", effective_timeout(c->etcd).count()}};
    }
    if (!c->kube.empty())
      j["kubernetes"] = {{"kubeconfig", c->kube.kubeconfig},
                         {"context", c->kube.kube_context.empty() ? nlohmann::json() : nlohmann::json(c->kube.kube_context)},
                         {"namespace", c->kube.namespace_name.empty() ? nlohmann::json() : nlohmann::json(c->kube.namespace_name)}};
    fmt::print("{}\n", j.dump(2));
    return k_ok;
  }
  fmt::print("name:      {}{}\nstore:     {}\nbackend:   {}\nrun dir:   {}\n", c->name,
             c->name == f->current ? " (current)" : "", c->store, c->backend, run_dir);
  if (etcd) {
    fmt::print("etcd:      {} endpoint(s), {}\n", location->etcd.endpoints.size(), etcd_summary(*location, c->etcd));
    if (!c->etcd.key_file.empty()) fmt::print("  key:     {}\n", c->etcd.key_file.string());
    if (!c->etcd.password_file.empty()) fmt::print("  password read from {}\n", c->etcd.password_file.string());
    fmt::print("  timeout: {} ms per request\n", effective_timeout(c->etcd).count());
  }
  if (!c->kube.empty())
    fmt::print("kubernetes: kubeconfig {}{}{}\n", c->kube.kubeconfig,
               c->kube.kube_context.empty() ? "" : ", context " + c->kube.kube_context,
               c->kube.namespace_name.empty() ? "" : ", namespace " + c->kube.namespace_name);
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

// The kubernetes settings of a new context: --kubeconfig is required with --backend
// kubernetes and refused otherwise. Unless --no-check, the API server must answer with
// the kubeconfig's credentials; the line saying so is returned ("" when not checked).
Result<std::string> attach_kube(ContextEntry& entry, const ContextArgs& a) {
  if (a.backend != "kubernetes") {
    if (!a.kubeconfig.empty() || !a.kube_context.empty() || !a.kube_namespace.empty() || !a.node_selector.empty())
      return fail(Diagnostic{{}, "", "--kubeconfig, --kube-context, --namespace and --node-selector are for --backend kubernetes",
                             "add --backend kubernetes"});
    return std::string();
  }
  if (a.kubeconfig.empty())
    return fail(Diagnostic{{}, "", "--backend kubernetes needs --kubeconfig FILE",
                           "the kubeconfig kubectl uses, e.g. --kubeconfig ~/.kube/config"});
  entry.kube.kubeconfig = absolute_path(a.kubeconfig).string();
  entry.kube.kube_context = a.kube_context;
  entry.kube.namespace_name = a.kube_namespace;
  entry.kube.node_selector = a.node_selector;
  // The kubeconfig is read even with --no-check: a file gaia cannot use is an error now,
  // not at the first submit.
  // Only reading here: the owner of the pods does not matter yet.
  auto backend = open_kube_backend(entry, "gaia-check");
  if (!backend) return fail(backend.error());
  if (a.no_check) return std::string();
  auto summary = check_kube_backend(entry, **backend);
  if (!summary) {
    Diagnostics ds = summary.error();
    ds.back().message = fmt::format("context {} not added: {}", a.name, ds.back().message);
    ds.back().hint += "; --no-check adds the context without contacting the API server";
    return fail(ds);
  }
  return *summary;
}

// `context add NAME --store etcd://...`: checks the settings and, unless --no-check,
// that the cluster answers with them (reading only: nothing is created in etcd), then
// saves the canonical URL and the settings.
int add_etcd(const Globals& g, ContextFile& f, const ContextArgs& a, const StoreLocation& location) {
  auto settings = etcd_settings_of(a);
  if (!settings) return report(g, settings.error());
  ContextEntry entry{a.name, location.etcd.canonical(), a.backend, std::move(*settings), {}};
  auto kube = attach_kube(entry, a);
  if (!kube) return report(g, kube.error());
  if (!a.no_check) {
    // Whether etcd answers with these settings; the gaia cluster in it may well be made
    // later, with `gaia cluster create` (opening an etcd store writes nothing).
    auto store = open_store(entry, OpenStoreOptions{.create = true});
    if (!store) {
      Diagnostics ds = store.error();
      ds.back().message = fmt::format("context {} not added: {}", a.name, ds.back().message);
      ds.back().hint += std::string(ds.back().hint.empty() ? "" : "; ") +
                        "--no-check adds the context without contacting etcd";
      return report(g, ds);
    }
  }
  std::string how = etcd_summary(location, entry.etcd);
  f.contexts.push_back(std::move(entry));
  if (auto saved = save_contexts(f); !saved) return report(g, saved.error());
  if (!g.quiet)
    fmt::print("added context {} (store {}, {}, backend {}{}); `gaia context use {}` switches to it\n", a.name,
               location.etcd.canonical(), how, a.backend, a.no_check ? "; not contacted" : "; etcd answered",
               a.name);
  if (!g.quiet && !kube->empty()) fmt::print("  {}\n", *kube);
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
  auto location = parse_store_location(a.store);
  if (!location) return report(g, Diagnostics{location.error().to_diagnostic()});
  if (location->kind == StoreLocation::Kind::Etcd) return add_etcd(g, *f, a, *location);
  if (std::string flag = first_etcd_flag(a); !flag.empty())
    return report_error(g, fmt::format("{} is for an etcd store; --store {} is a file", flag, a.store),
                        "give an etcd URL, e.g. --store etcd://127.0.0.1:2379");
  std::error_code ec;
  std::filesystem::path store = std::filesystem::absolute(a.store, ec);
  if (ec) store = a.store;
  if (std::filesystem::is_directory(store, ec))
    return report_error(g, fmt::format("--store {} is a directory", a.store),
                        fmt::format("give a file path, e.g. {}", (store / "gaia.db").string()));
  ContextEntry entry{a.name, store.lexically_normal().string(), a.backend, {}, {}};
  auto kube = attach_kube(entry, a);
  if (!kube) return report(g, kube.error());
  f->contexts.push_back(std::move(entry));
  if (auto saved = save_contexts(*f); !saved) return report(g, saved.error());
  if (!g.quiet)
    fmt::print("added context {} (store {}, backend {}); `gaia context use {}` switches to it\n", a.name,
               store.lexically_normal().string(), a.backend, a.name);
  if (!g.quiet && !kube->empty()) fmt::print("  {}\n", *kube);
  return k_ok;
}

int run_remove(const Globals& g, const ContextArgs& a) {
  auto f = load_contexts();
  if (!f) return report(g, f.error());
  if (a.name == "default")
    return report_error(g, "the default context cannot be removed", "it needs no file and always exists");
  const ContextEntry* removed = find_context(*f, a.name);
  if (!removed) return report_error(g, fmt::format("no context named '{}'", a.name), unknown_hint(*f, a.name));
  std::string kept = is_etcd_url(removed->store) ? "nothing in etcd is touched" : "its store file is kept";
  std::erase_if(f->contexts, [&](const ContextEntry& c) { return c.name == a.name; });
  bool was_current = f->current == a.name;
  if (was_current) f->current = "default";
  if (auto saved = save_contexts(*f); !saved) return report(g, saved.error());
  // The store is the user's data: removing the name never deletes it.
  if (!g.quiet)
    fmt::print("removed context {} ({}){}\n", a.name, kept, was_current ? "; the current context is now default" : "");
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
      "  gaia context add team --store etcd://10.0.0.1:2379,10.0.0.2:2379\n"
      "  gaia context use staging\n"
      "  gaia --context default get nodes              # one command in another context");
  auto a = std::make_shared<ContextArgs>();

  auto* list = cmd->add_subcommand("list", "List contexts; the current one is marked '*'");
  list->footer("Examples:\n  gaia context list\n  gaia context");
  list->callback([&g, code] { *code = run_list(g); });

  auto* show = cmd->add_subcommand("show", "Show a context: store, backend, run dir, how it reaches etcd");
  show->add_option("NAME", a->name, "Context name (default: the current one)");
  show->add_option("-o,--output", a->output, "text or json")->check(CLI::IsMember({"text", "json"}));
  show->footer("Examples:\n  gaia context show\n  gaia context show team -o json");
  show->callback([&g, a, code] { *code = run_show(g, *a); });

  auto* current = cmd->add_subcommand("current", "Print the current context's name");
  current->footer("Examples:\n  gaia context current");
  current->callback([&g, code] { *code = run_current(g); });

  auto* use = cmd->add_subcommand("use", "Make a context the current one");
  use->add_option("NAME", a->name, "Context name")->required();
  use->footer("Examples:\n  gaia context use staging\n  gaia context use default");
  use->callback([&g, a, code] { *code = run_use(g, *a); });

  auto* add = cmd->add_subcommand("add", "Add a context");
  add->add_option("NAME", a->name, "Context name (a DNS label)")->required();
  add->add_option("--store", a->store,
                  "SQLite store file (created on first use), or etcd://HOST:PORT[,HOST:PORT...] (etcds:// for TLS)")
      ->required()
      ->type_name("PATH");
  add->add_option("--backend", a->backend,
                  "Where instances run for a cluster created in this context: sim (simulated nodes) or process "
                  "(local processes) or kubernetes (pods on an API server, with --kubeconfig); a cluster keeps the "
                  "backend it was created with")
      ->check(CLI::IsMember({"sim", "process", "kubernetes"}))
      ->capture_default_str();
  add->add_option("--etcd-ca", a->etcd_ca, "etcd: CA bundle to verify the members (turns on TLS)")->type_name("FILE");
  add->add_option("--etcd-cert", a->etcd_cert, "etcd: client certificate (PEM), with --etcd-key")->type_name("FILE");
  add->add_option("--etcd-key", a->etcd_key, "etcd: client certificate's key (PEM)")->type_name("FILE");
  add->add_option("--etcd-user", a->etcd_user, "etcd: user to authenticate as, with --etcd-password-file")
      ->type_name("NAME");
  add->add_option("--etcd-password-file", a->etcd_password_file,
                  "etcd: file holding the user's password, read at each use (only its path is stored)")
      ->type_name("FILE");
  add->add_option("--etcd-timeout", a->etcd_timeout, "etcd: bound on each request to a member (default 5s)")
      ->type_name("DURATION");
  add->add_option("--kubeconfig", a->kubeconfig,
                  "kubernetes: the kubeconfig to reach the API server with (only its path is stored)")
      ->type_name("FILE");
  add->add_option("--kube-context", a->kube_context, "kubernetes: the kubeconfig's context (default: its current one)")
      ->type_name("NAME");
  add->add_option("--namespace", a->kube_namespace,
                  "kubernetes: the namespace gaia's pods go to (default: the kube context's, else default)")
      ->type_name("NS");
  add->add_option("--node-selector", a->node_selector,
                  "kubernetes: only the nodes with these labels are gaia's (e.g. pool=gaia); others are left to "
                  "kube-scheduler")
      ->type_name("SELECTOR");
  add->add_flag("--no-check", a->no_check, "etcd, kubernetes: add the context without contacting the cluster");
  add->footer(
      "Examples:\n"
      "  gaia context add staging --store /srv/gaia/staging.db\n"
      "  gaia context add team --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379\n"
      "  gaia context add prod --store etcds://etcd.example:2379 --etcd-ca ca.pem \\\n"
      "      --etcd-user gaia --etcd-password-file ~/.config/gaia/etcd-password\n"
      "  gaia context add k8s --store ~/k8s.db --backend kubernetes --kubeconfig ~/.kube/config --namespace team-a\n"
      "An etcd or kubernetes context is checked at once (reading only); nothing is created there.");
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
