#pragma once
// Contexts (like kubectl's): a name for a store and a backend. The default context is an
// SQLite file in the user's state directory and the `sim` backend, so a fresh install
// works with no server. A store is a file path or an etcd URL (store/store_url.hpp);
// an etcd context also keeps how to connect (TLS files, user, the path of the password
// file, never the password). `--store` / GAIA_STORE override the context's store and
// keep its connection settings, as kubectl's --server keeps the context's user.

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "lib/backend.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"
#include "lib/store.hpp"
#include "ops/workspace.hpp"
#include "store/store_url.hpp"

namespace gaia::cli {

// How a kubernetes context reaches its API server: a kubeconfig (only its path is kept,
// credentials are read from it at each use), the context in it, and the namespace
// gaia's pods go to (default: the kubeconfig context's namespace, else "default").
struct KubeSettings {
  std::string kubeconfig;
  std::string kube_context;
  std::string namespace_name;
  std::string node_selector;  // Only the nodes it selects are gaia's ("pool=gaia").
  bool empty() const { return kubeconfig.empty(); }
};

struct ContextEntry {
  std::string name;
  std::string store;    // Path of the SQLite file, or an etcd URL.
  std::string backend = "sim";
  EtcdSettings etcd;    // For an etcd store; empty otherwise.
  KubeSettings kube;    // For the kubernetes backend; empty otherwise.
};

struct ContextFile {
  std::string current = "default";
  std::vector<ContextEntry> contexts;
};

// $XDG_STATE_HOME/gaia (or ~/.local/state/gaia).
std::filesystem::path state_dir();
std::filesystem::path context_file_path();
Result<ContextFile> load_contexts();
Result<void> save_contexts(const ContextFile& f);

// An open store with the State facade on top; what every cluster command uses.
struct Session {
  ContextEntry context;
  std::unique_ptr<Store> store;
  SystemClock clock;
  std::unique_ptr<State> state;
  std::unique_ptr<Backend> backend;  // Where instances run: the cluster's backend.
  std::string backend_name;          // "sim" or "process".
  std::string op;  // Operation id of this command.
  bool read_only = false;  // The store is a file this user may read but not write.
  const Globals* globals = nullptr;  // The command's flags (for -v logging); set by open_session.

  // What the workflows of ops/ act on: this session's store, state, clock and current
  // operation id, the render cache folder, and -v logging through the globals. Built
  // on each call, so a changed `op` (a new pass of `gaia controller run`) is seen.
  ops::Workspace workspace() const;
};

// The context a command uses: --context, else the current one, with its store replaced
// by --store or GAIA_STORE when given. Opens nothing.
Result<ContextEntry> resolve_context(const Globals& g);

// "sim", "process" and "kubernetes" are known; anything else is an error with a hint.
Result<void> check_backend_name(const std::string& name);

// Where the process backend keeps the copies and the agent of the store at `store`:
// for a file its path plus ".run" (gaia.db -> gaia.db.run/); for an etcd URL, which
// has no local folder, <state dir>/etcd-<16 hex digits>.run/, keyed by a hash of the
// cluster's sorted endpoints, so every context naming the same cluster shares it.
std::filesystem::path run_dir_of(const std::string& store);

struct OpenStoreOptions {
  // Makes the store when there is none: only `gaia cluster create` and `gaia store
  // restore` do. Otherwise a missing SQLite file, or an etcd cluster in which no gaia
  // cluster was ever created, is an error naming it, so a mistyped --store or
  // GAIA_STORE never turns into an empty cluster that a script then fills. For etcd,
  // where opening writes nothing, it only accepts a cluster with no gaia cluster in it.
  bool create = false;
  // Short etcd timeouts and no retries, for completion, which must not hang a shell.
  bool quick = false;
  // What named the store, for messages ("--store", "GAIA_STORE"); empty: the context.
  std::string origin;
};

// The room a SQLite store keeps on its disk for deletes (docs/store.md "A full disk").
inline constexpr uint64_t k_store_reserve_bytes = 4 << 20;

// Opens the store `context` names: its SQLite file, or its etcd cluster, which must
// answer (nothing is created there by opening it). A SQLite file this user may read
// but not write opens read-only: reading commands work, writes fail saying so. An etcd
// failure names the context, the URL, the endpoints tried and what to check.
Result<std::unique_ptr<Store>> open_store(const ContextEntry& context, const OpenStoreOptions& options = {});

// What named the store of `g`'s command: "--store", "GAIA_STORE", or "" (the context).
std::string store_origin(const Globals& g);

// This gaia binary (from /proc/self/exe), which also serves as the copies' supervisor.
std::filesystem::path self_executable();

// The Kubernetes backend of a context: its kubeconfig read (a missing file, an exec
// plugin, a context that does not exist are errors naming the file), its pods labelled
// with `owner` (kube_owner_of). Contacts nothing.
Result<std::unique_ptr<Backend>> open_kube_backend(const ContextEntry& context, const std::string& owner);
// The storage classes of the kubernetes backend's cluster (kube::storage_classes_of):
// the nodes' local classes and its StorageClass objects as claim classes. `note` says
// when the store may not list StorageClasses.
Result<std::vector<StorageClass>> kube_storage_classes(const ContextEntry& context, Backend& backend,
                                                       const std::vector<Node>& nodes, std::string* note);
// The owner id of the kubernetes cluster in `store` (settings/kubernetes_owner), or a
// new one ("gaia-" and 16 random hex digits) when the store has none yet.
Result<std::string> kube_owner_of(Store& store);
// Asks the API server of a kubernetes context whether it answers with these
// credentials; the summary ("Kubernetes v1.28.0 at https://...: 3 node(s)") or an error
// that says what to check (the token, the certificate authority, the server).
Result<std::string> check_kube_backend(const ContextEntry& context, Backend& backend);

struct SessionOptions {
  // Make the store if there is none (OpenStoreOptions::create): `gaia cluster create`.
  bool create_store = false;
};

// Opens the store of the current context (or --store / GAIA_STORE).
Result<std::unique_ptr<Session>> open_session(const Globals& g, const SessionOptions& options = {});

// Leaves what the session read (the kept state, the sim backend's kept world) to the
// process's exit (Globals::keep_until_exit). The session stays usable: its next load
// reads the store afresh.
void keep_until_exit(const Globals& g, Session& s);

// Hands `value`, and what session `s` read, to the process's exit when it goes out of
// scope: declared after the command's result, so it runs before that is destroyed.
template <class T>
class KeptUntilExit {
 public:
  KeptUntilExit(const Globals& g, Session& s, T& value) : m_g(g), m_s(s), m_value(value) {}
  KeptUntilExit(const KeptUntilExit&) = delete;
  KeptUntilExit& operator=(const KeptUntilExit&) = delete;
  ~KeptUntilExit() {
    try {
      m_g.keep_until_exit.push_back(std::make_shared<T>(std::move(m_value)));
      keep_until_exit(m_g, m_s);
    } catch (const std::bad_alloc&) {
      // Then it is freed as usual.
    }
  }

 private:
  const Globals& m_g;
  Session& m_s;
  T& m_value;
};

// One read of the store for a watch loop (`get -w`, `map --watch`): while the store
// cannot be reached it warns once per distinct cause (kept in `outage`), waits half a
// second and returns nullopt, so the loop goes round again; otherwise the state, or the
// error to report.
std::optional<Result<ClusterState>> load_for_watch(const Globals& g, Session& s, std::string& outage);

}  // namespace gaia::cli
