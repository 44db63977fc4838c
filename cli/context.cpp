#include "cli/context.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fmt/ranges.h>
#include <fmt/format.h>
#include <fstream>
#include <random>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/interrupt.hpp"
#include "cli/render_flags.hpp"
#include "cli/timed_store.hpp"
#include "lib/sim_backend.hpp"
#include "kube/kube_backend.hpp"
#include "kube/kube_objects.hpp"
#include "kube/kubeconfig.hpp"
#include "lib/hash.hpp"
#include "process/process_backend.hpp"
#include "lib/timeline.hpp"
#include "net/http.hpp"
#include "store/etcd_store.hpp"
#include "store/sqlite_store.hpp"

namespace gaia::cli {

namespace fs = std::filesystem;

fs::path state_dir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return fs::path(x) / "gaia";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".local" / "state" / "gaia";
  return fs::path(".gaia");
}

fs::path context_file_path() { return state_dir() / "contexts.json"; }

namespace {

// libcurl is opened on first use (net/curl_library.hpp). Without it every store and
// backend but etcd and Kubernetes works; those say so at once, where a request failing
// would be retried as if the server were down.
Result<void> need_http(const std::string& what) {
  std::string why;
  if (http::available(&why)) return {};
  return fail(Diagnostic{{}, "", fmt::format("{}: {}", what, why),
                         "bash scripts/setup.sh --main installs libcurl4 with the rest of what gaia needs"});
}

ContextEntry default_context() { return ContextEntry{"default", (state_dir() / "gaia.db").string(), "sim", {}, {}}; }

// The "etcd" object of a context in contexts.json: paths and names, never a password.
nlohmann::json etcd_settings_json(const EtcdSettings& e) {
  nlohmann::json j = nlohmann::json::object();
  if (!e.ca_file.empty()) j["ca"] = e.ca_file.string();
  if (!e.cert_file.empty()) j["cert"] = e.cert_file.string();
  if (!e.key_file.empty()) j["key"] = e.key_file.string();
  if (!e.username.empty()) j["user"] = e.username;
  if (!e.password_file.empty()) j["password_file"] = e.password_file.string();
  if (e.request_timeout.count() > 0) j["timeout_ms"] = e.request_timeout.count();
  return j;
}

EtcdSettings etcd_settings_from(const nlohmann::json& j) {
  EtcdSettings e;
  if (!j.is_object()) return e;
  e.ca_file = j.value("ca", "");
  e.cert_file = j.value("cert", "");
  e.key_file = j.value("key", "");
  e.username = j.value("user", "");
  e.password_file = j.value("password_file", "");
  e.request_timeout = std::chrono::milliseconds(j.value("timeout_ms", int64_t{0}));
  return e;
}

}  // namespace

Result<ContextFile> load_contexts() {
  ContextFile f;
  fs::path p = context_file_path();
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    f.contexts.push_back(default_context());
    return f;
  }
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    auto j = nlohmann::json::parse(ss.str());
    f.current = j.value("current", "default");
    for (const auto& c : j.value("contexts", nlohmann::json::array()))
    {
      ContextEntry entry{c.value("name", ""), c.value("store", ""), c.value("backend", "sim"),
                         etcd_settings_from(c.value("etcd", nlohmann::json::object())), {}};
      const auto kube = c.value("kubernetes", nlohmann::json::object());
      entry.kube.kubeconfig = kube.value("kubeconfig", "");
      entry.kube.kube_context = kube.value("context", "");
      entry.kube.namespace_name = kube.value("namespace", "");
      entry.kube.node_selector = kube.value("node_selector", "");
      f.contexts.push_back(std::move(entry));
    }
  } catch (const std::exception& e) {
    return fail(Diagnostic{{p.string()}, "", fmt::format("cannot parse the contexts file: {}", e.what()),
                           "fix or delete it; the default context needs no file"});
  }
  bool has_default = false;
  for (const auto& c : f.contexts) has_default |= c.name == "default";
  if (!has_default) f.contexts.insert(f.contexts.begin(), default_context());
  return f;
}

Result<void> save_contexts(const ContextFile& f) {
  nlohmann::json j = {{"current", f.current}, {"contexts", nlohmann::json::array()}};
  for (const auto& c : f.contexts) {
    nlohmann::json entry = {{"name", c.name}, {"store", c.store}, {"backend", c.backend}};
    if (!c.etcd.empty()) entry["etcd"] = etcd_settings_json(c.etcd);
    if (!c.kube.empty())
      entry["kubernetes"] = {{"kubeconfig", c.kube.kubeconfig}, {"context", c.kube.kube_context},
                             {"namespace", c.kube.namespace_name}, {"node_selector", c.kube.node_selector}};
    j["contexts"].push_back(std::move(entry));
  }
  fs::path p = context_file_path();
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  // Write then rename, so a killed process never leaves half a file.
  fs::path tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out) return fail(Diagnostic{{tmp.string()}, "", "cannot write the contexts file", ""});
  }
  fs::rename(tmp, p, ec);
  if (ec) return fail(Diagnostic{{p.string()}, "", fmt::format("cannot replace the contexts file: {}", ec.message()), ""});
  return {};
}

Result<ContextEntry> resolve_context(const Globals& g) {
  auto contexts = load_contexts();
  if (!contexts) return fail(contexts.error());
  std::string wanted = g.context.empty() ? contexts->current : g.context;
  const ContextEntry* found = nullptr;
  for (const auto& c : contexts->contexts)
    if (c.name == wanted) found = &c;
  if (!found) {
    std::vector<std::string> names;
    for (const auto& c : contexts->contexts) names.push_back(c.name);
    return fail(Diagnostic{{}, "", fmt::format("no context named '{}'", wanted),
                           fmt::format("known contexts: {}; create one with `gaia context add`", fmt::join(names, ", "))});
  }
  ContextEntry context = *found;
  if (!g.store.empty()) context.store = g.store;
  else if (const char* env = std::getenv("GAIA_STORE"); env && *env) context.store = env;
  return context;
}

ops::Workspace Session::workspace() const {
  ops::Workspace ws{*store, *state, clock, op, render_cache_dir(), {}};
  ws.backend = backend.get();
  if (globals) ws.log = [g = globals](int level, const std::string& line) { log_verbose(*g, level, line); };
  // Crash tests kill a real gaia at a named point between two commits (ops/workspace.hpp).
  if (const char* at = std::getenv("GAIA_TEST_KILL_AT"); at && *at)
    ws.crash_point = [at = std::string(at)](std::string_view point) {
      if (point == at) ::kill(::getpid(), SIGKILL);
    };
  return ws;
}

Result<void> check_backend_name(const std::string& name) {
  if (name == "sim" || name == "process" || name == "kubernetes") return {};
  return fail(Diagnostic{{}, "", fmt::format("unknown backend '{}'", name),
                         "use sim (simulated nodes), process (local processes) or kubernetes (pods on an API server)"});
}

Result<std::string> kube_owner_of(Store& store) {
  auto recorded = store.get(std::string("settings/") + keys::k_kube_owner_setting);
  if (!recorded) return fail(recorded.error().to_diagnostic());
  if (*recorded) {
    try {
      return nlohmann::json::parse((*recorded)->value).get<std::string>();
    } catch (const std::exception& e) {
      return fail(Diagnostic{{}, "settings/kubernetes_owner", fmt::format("corrupt record in the store: {}", e.what()), ""});
    }
  }
  std::random_device rd;
  return fmt::format("gaia-{:08x}{:08x}", rd(), rd());
}

Result<std::unique_ptr<Backend>> open_kube_backend(const ContextEntry& context, const std::string& owner) {
  if (context.kube.empty())
    return fail(Diagnostic{{}, "", fmt::format("context {} has no kubeconfig for the kubernetes backend", context.name),
                           fmt::format("gaia context add NAME --store {} --backend kubernetes --kubeconfig FILE",
                                       context.store)});
  auto config = kube::load_kubeconfig(context.kube.kubeconfig, context.kube.kube_context);
  if (!config) return fail(config.error());
  kube::KubeBackendOptions options;
  options.namespace_name = !context.kube.namespace_name.empty() ? context.kube.namespace_name
                           : !config->namespace_name.empty()   ? config->namespace_name
                                                               : "default";
  options.node_selector = context.kube.node_selector;
  // Which store the pods belong to: two stores sharing a cluster never touch each
  // other's pods.
  options.owner = owner;
  if (auto http = need_http(fmt::format("context {}: the Kubernetes backend", context.name)); !http)
    return fail(http.error());
  auto client = std::make_shared<kube::Client>(std::move(*config));
  return std::unique_ptr<Backend>(std::make_unique<kube::KubeBackend>(std::move(client), std::move(options)));
}

Result<std::string> check_kube_backend(const ContextEntry& context, Backend& backend) {
  auto* kb = dynamic_cast<kube::KubeBackend*>(&backend);
  if (!kb) return fail(Diagnostic{{}, "", "not a kubernetes backend", ""});
  auto summary = kb->check();
  if (!summary)
    return fail(Diagnostic{{context.kube.kubeconfig}, "",
                           fmt::format("context {}: the Kubernetes API server did not accept gaia: {}", context.name,
                                       summary.error().message),
                           "check the kubeconfig's server, certificate-authority and credentials (kubectl --kubeconfig "
                           "FILE get nodes uses the same)"});
  return *summary;
}

Result<std::vector<StorageClass>> kube_storage_classes(const ContextEntry& context, Backend& backend,
                                                       const std::vector<Node>& nodes, std::string* note) {
  auto* kb = dynamic_cast<kube::KubeBackend*>(&backend);
  if (!kb) return fail(Diagnostic{{}, "", "not a kubernetes backend", ""});
  auto objects = kb->storage_class_objects(note);
  if (!objects)
    return fail(Diagnostic{{context.kube.kubeconfig}, "",
                           fmt::format("context {}: reading the cluster's storage classes: {}", context.name,
                                       objects.error().message),
                           "kubectl get storageclasses reads the same list; try again once the API server answers"});
  return kube::storage_classes_of(*objects, nodes);
}

std::filesystem::path run_dir_of(const std::string& store) {
  if (is_etcd_url(store)) {
    // The same cluster however its endpoints are ordered; a URL that does not parse
    // (the command fails on opening it anyway) is hashed as written.
    auto url = parse_etcd_url(store);
    std::string hash = content_hash(url ? url->identity() : store).substr(0, 16);
    return state_dir() / fmt::format("etcd-{}.run", hash);
  }
  std::filesystem::path p(store);
  return p.parent_path() / (p.filename().string() + ".run");
}

std::string store_origin(const Globals& g) {
  if (!g.store.empty()) return "--store";
  if (const char* env = std::getenv("GAIA_STORE"); env && *env) return "GAIA_STORE";
  return "";
}

namespace {

// "no store at PATH": which command makes one, and the stores the contexts name, since a
// typo in --store or GAIA_STORE is the usual cause.
Diagnostic missing_store(const ContextEntry& context, const OpenStoreOptions& options, const std::string& what,
                         const std::string& why) {
  std::string named_by = options.origin.empty() ? fmt::format("the store of context {}", context.name)
                                                : fmt::format("named by {}", options.origin);
  std::vector<std::string> known;
  if (auto contexts = load_contexts())
    for (const auto& c : contexts->contexts)
      if (c.store != context.store) known.push_back(fmt::format("{} ({})", c.name, c.store));
  std::string hint = fmt::format(
      "only `gaia cluster create` makes a store (`gaia --store {} cluster create ...`), and `gaia store restore "
      "FILE` brings one back from a backup",
      context.store);
  if (!options.origin.empty()) hint += fmt::format("; check the path given by {}", options.origin);
  if (!known.empty()) hint += fmt::format("; the contexts' stores: {}", fmt::join(known, ", "));
  return Diagnostic{{}, "", fmt::format("no store at {} ({}): {}", what, named_by, why), hint};
}

// Whether this user may write the store file (and the folder its -wal and -shm files
// go to when they are not there yet).
bool may_write(const std::filesystem::path& file) {
  if (::access(file.c_str(), W_OK) != 0) return false;
  std::filesystem::path folder = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  if (::access(folder.c_str(), W_OK) == 0) return true;
  std::string wal = file.string() + "-wal", shm = file.string() + "-shm";
  return ::access(wal.c_str(), W_OK) == 0 && ::access(shm.c_str(), W_OK) == 0;
}

// A gaia cluster was created in an etcd store when either record of a commit is there:
// the backend chosen at `gaia cluster create`, or the timeline's sequence.
Result<bool> etcd_cluster_exists(Store& store) {
  for (std::string key : {std::string("settings/") + keys::k_backend_setting, std::string(keys::k_seq)}) {
    auto kv = store.get(key);
    if (!kv) return fail(kv.error().to_diagnostic());
    if (*kv) return true;
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<Store>> open_store(const ContextEntry& context, const OpenStoreOptions& options) {
  auto location = parse_store_location(context.store);
  if (!location)
    return fail(Diagnostic{{}, "", fmt::format("context {}: {}", context.name, location.error().message),
                           location.error().hint});
  if (location->kind == StoreLocation::Kind::File) {
    std::error_code ec;
    const bool exists = std::filesystem::exists(location->file, ec);
    if (!exists && !options.create)
      return fail(missing_store(context, options, location->file.string(), "the file does not exist"));
    SqliteStoreOptions sqlite;
    sqlite.create = options.create;
    sqlite.read_only = exists && !std::filesystem::is_directory(location->file, ec) && !may_write(location->file);
    sqlite.reserve_bytes = k_store_reserve_bytes;
    auto store = SqliteStore::open(location->file.string(), sqlite);
    if (!store) return fail(store.error().to_diagnostic());
    return std::unique_ptr<Store>(std::move(*store));
  }
  // Every message below names the URL and the context whose settings were used, never
  // the password: EtcdStore keeps it out of its own messages.
  std::string what = fmt::format("etcd store {} (context {})", location->etcd.canonical(), context.name);
  auto etcd = etcd_options(location->etcd, context.etcd);
  if (!etcd) return fail(Diagnostic{{}, "", fmt::format("{}: {}", what, etcd.error().message), etcd.error().hint});
  if (options.quick) {
    etcd->request_timeout = std::min(etcd->request_timeout, std::chrono::milliseconds(1000));
    etcd->connect_timeout = std::min(etcd->connect_timeout, std::chrono::milliseconds(500));
    etcd->read_retries = 0;
  }
  // A member that accepts connections but does not answer (stopped, overloaded, cut off
  // from the others) fails only its own request, not the whole list: the next member
  // is tried first, once per member, so one stuck member among healthy ones does not
  // stop every command. Members that cannot be reached at all are skipped by the store.
  if (auto http = need_http(what); !http) return fail(http.error());
  std::vector<std::string> timeouts;
  auto store = EtcdStore::open(*etcd);
  for (size_t tried = 1; !store && store.error().code == StoreErrc::Timeout && tried < etcd->endpoints.size(); ++tried) {
    timeouts.push_back(store.error().message);
    std::rotate(etcd->endpoints.begin(), etcd->endpoints.begin() + 1, etcd->endpoints.end());
    store = EtcdStore::open(*etcd);
  }
  if (!store) {
    std::string hint = store.error().hint;
    std::string message = store.error().message;
    // The store's hints speak of options; say which flags of the context set them.
    if (message.find("requires authentication") != std::string::npos)
      hint = "the cluster has authentication enabled: use a context with --etcd-user NAME and "
             "--etcd-password-file FILE (`gaia context add`)";
    else if (message.find("were rejected") != std::string::npos)
      hint = fmt::format("check the user and the password in {} (the context's --etcd-password-file)",
                         context.etcd.password_file.string());
    if (store.error().code == StoreErrc::Timeout) {
      timeouts.push_back(message);
      message = fmt::format("{}", fmt::join(timeouts, "; "));
      hint = fmt::format("a member that accepts connections but does not answer may be stopped, overloaded or "
                         "without quorum: check `etcdctl endpoint health`; the bound ({} ms) is set by "
                         "`gaia context add --etcd-timeout`",
                         etcd->request_timeout.count());
    }
    return fail(Diagnostic{{}, "", fmt::format("cannot open the {}: {}", what, message), hint});
  }
  if (!options.create) {
    auto exists = etcd_cluster_exists(**store);
    if (!exists) return fail(exists.error());
    if (!*exists)
      return fail(missing_store(context, options, location->etcd.canonical(),
                                "etcd answers, but no gaia cluster was ever created in it"));
  }
  return std::unique_ptr<Store>(std::move(*store));
}

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("gaia") : p;
}

Result<std::unique_ptr<Session>> open_session(const Globals& g, const SessionOptions& session_options) {
  auto context = resolve_context(g);
  if (!context) return fail(context.error());
  auto s = std::make_unique<Session>();
  s->context = std::move(*context);
  s->globals = &g;
  if (auto known = check_backend_name(s->context.backend); !known) return fail(known.error());
  StepTimer open_timer(g, fmt::format("store {} opened", s->context.store));
  auto store = open_store(s->context, OpenStoreOptions{.create = session_options.create_store,
                                                       .quick = false,
                                                       .origin = store_origin(g)});
  if (!store) return fail(store.error());
  if (auto* sqlite = dynamic_cast<SqliteStore*>(store->get())) s->read_only = sqlite->read_only();
  open_timer.stop(fmt::format("context {}{}", s->context.name, s->read_only ? "; read-only" : ""));
  // With -v every read and commit is timed; without it the store is used as it is.
  if (verbose_at(g, 1)) s->store = std::make_unique<TimedStore>(g, std::move(*store));
  else s->store = std::move(*store);
  // The retention set with `gaia events --retention` binds every process using the store.
  StateOptions options;
  // Every load after the first costs only what changed since (lib/state.hpp): a
  // command's load, commit and load again reads the store once, and long-running loops
  // follow changes instead of re-reading everything each pass.
  options.follow_changes = true;
  // And the first load starts from the state the last command on this store left in the
  // user's cache folder, reading only what changed since (lib/state_file.hpp).
  // The file is named for the store's address made absolute (two stores both called
  // gaia.db in two folders are two stores), and holds the store's identity besides: a
  // store re-created at that address is another store. A store without an identity
  // gets no file.
  if (auto dir = state_cache_dir(); !dir.empty()) {
    std::string address = s->context.store;
    if (auto location = parse_store_location(address); location && location->kind == StoreLocation::Kind::File) {
      std::error_code ec;
      auto absolute = std::filesystem::weakly_canonical(std::filesystem::absolute(location->file, ec), ec);
      if (!ec) address = absolute.string();
    }
    if (auto identity = s->store->identity(); identity && !identity->empty()) {
      options.state_file = dir / (content_hash(address) + ".state");
      options.store_id = address + "\n" + *identity;
      // -v says whether the command started from the file, and if not, why.
      if (verbose_at(g, 1)) options.note = [&g](const std::string& line) { log_verbose(g, 1, line); };
      // The changes since the files are read once for both (a backend other than the
      // sim has no world file: it counts as done below).
      options.kept_changes = std::make_shared<KeptChanges>(2);
    } else {
      log_verbose(g, 1, "state file: none for this store, which has no identity to tell it from another at its address");
    }
  }
  auto retention = load_event_retention(*s->store);
  if (!retention) return fail(retention.error());
  if (*retention) options.event_retention = **retention;
  s->state = std::make_unique<State>(*s->store, s->clock, options);
  // The one place a backend implementation is picked (docs/backends.md). The sim keeps
  // its simulated world in the same store, under sim/.
  // The cluster remembers the backend it was created for (settings/backend, written by
  // `gaia cluster create`); the context's backend only chooses it for a new cluster.
  auto recorded = s->store->get(std::string("settings/") + keys::k_backend_setting);
  if (!recorded) return fail(recorded.error().to_diagnostic());
  if (*recorded) {
    try {
      s->backend_name = nlohmann::json::parse((*recorded)->value).get<std::string>();
    } catch (const std::exception& e) {
      return fail(Diagnostic{{}, "settings/backend", fmt::format("corrupt record in the store: {}", e.what()), ""});
    }
  } else {
    s->backend_name = s->context.backend;
  }
  if (auto known = check_backend_name(s->backend_name); !known) return fail(known.error());
  if (s->backend_name == "kubernetes") {
    auto owner = kube_owner_of(*s->store);
    if (!owner) return fail(owner.error());
    auto kb = open_kube_backend(s->context, *owner);
    if (!kb) return fail(kb.error());
    s->backend = std::move(*kb);
    if (options.kept_changes) options.kept_changes->done();  // No world file to read.
  } else if (s->backend_name == "process") {
    ProcessOptions po;
    po.shim_command = {self_executable().string(), "__shim"};
    s->backend = std::make_unique<ProcessBackend>(run_dir_of(s->context.store), po);
    if (options.kept_changes) options.kept_changes->done();  // No world file to read.
  } else {
    // Its world, like the state, is kept for the next command on this store.
    SimWorldFileOptions file;
    if (!options.state_file.empty()) {
      file.path = options.state_file;
      file.path.replace_extension(".world");
      file.store_id = options.store_id;
      file.note = options.note;
      file.kept_changes = options.kept_changes;
    }
    s->backend = std::make_unique<SimBackend>(s->store.get(), std::move(file));
  }
  s->op = new_operation_id(s->clock);
  log_verbose(g, 1, fmt::format("operation {}", s->op));
  return s;
}

std::optional<Result<ClusterState>> load_for_watch(const Globals& g, Session& s, std::string& outage) {
  auto state = s.state->load();
  if (!state && is_transient(state.error())) {
    std::string why = format_diagnostics(state.error());
    if (why != outage && !g.quiet) fmt::print(stderr, "warning: the store cannot be reached; retrying:\n{}", why);
    outage = why;
    nap(std::chrono::milliseconds(500));
    return std::nullopt;
  }
  if (state) outage.clear();
  return state;
}

void keep_until_exit(const Globals& g, Session& s) {
  if (s.state)
    if (auto kept = s.state->release_kept()) g.keep_until_exit.push_back(std::move(kept));
  if (auto* sim = dynamic_cast<SimBackend*>(s.backend.get()))
    if (auto world = sim->release_world()) g.keep_until_exit.push_back(std::move(world));
}

}  // namespace gaia::cli
