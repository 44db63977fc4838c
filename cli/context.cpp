#include "cli/context.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/render_flags.hpp"
#include "cli/timed_store.hpp"
#include "lib/sim_backend.hpp"
#include "process/process_backend.hpp"
#include "store/sqlite_store.hpp"
#include "lib/timeline.hpp"

namespace gaia::cli {

namespace fs = std::filesystem;

fs::path state_dir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x) return fs::path(x) / "gaia";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".local" / "state" / "gaia";
  return fs::path(".gaia");
}

fs::path context_file_path() { return state_dir() / "contexts.json"; }

namespace {

ContextEntry default_context() { return ContextEntry{"default", (state_dir() / "gaia.db").string(), "sim"}; }

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
      f.contexts.push_back({c.value("name", ""), c.value("store", ""), c.value("backend", "sim")});
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
  for (const auto& c : f.contexts) j["contexts"].push_back({{"name", c.name}, {"store", c.store}, {"backend", c.backend}});
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
  if (name == "sim" || name == "process") return {};
  return fail(Diagnostic{{}, "", fmt::format("unknown backend '{}'", name),
                         "use sim (simulated nodes) or process (local processes)"});
}

std::filesystem::path run_dir_of(const std::string& store) {
  std::filesystem::path p(store);
  return p.parent_path() / (p.filename().string() + ".run");
}

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path("gaia") : p;
}

Result<std::unique_ptr<Session>> open_session(const Globals& g) {
  auto context = resolve_context(g);
  if (!context) return fail(context.error());
  auto s = std::make_unique<Session>();
  s->context = std::move(*context);
  s->globals = &g;
  if (auto known = check_backend_name(s->context.backend); !known) return fail(known.error());
  StepTimer open_timer(g, fmt::format("store {} opened", s->context.store));
  auto store = SqliteStore::open(s->context.store);
  if (!store) return fail(store.error().to_diagnostic());
  open_timer.stop(fmt::format("context {}", s->context.name));
  // With -v every read and commit is timed; without it the store is used as it is.
  if (verbose_at(g, 1)) s->store = std::make_unique<TimedStore>(g, std::move(*store));
  else s->store = std::move(*store);
  // The retention set with `gaia events --retention` binds every process using the store.
  StateOptions options;
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
  if (s->backend_name == "process") {
    ProcessOptions po;
    po.shim_command = {self_executable().string(), "__shim"};
    s->backend = std::make_unique<ProcessBackend>(run_dir_of(s->context.store), po);
  } else {
    s->backend = std::make_unique<SimBackend>(s->store.get());
  }
  s->op = new_operation_id(s->clock);
  log_verbose(g, 1, fmt::format("operation {}", s->op));
  return s;
}

}  // namespace gaia::cli
