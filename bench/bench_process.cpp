// Process backend benchmarks: process-start-1k, process-idle-1k, process-stack-ready.
//
//  process-start-1k     one ProcessBackend starts 1,000 copies of `true` in 10 batches of
//                       100, back to back, then observes the way the agent does (observe,
//                       then Backend::wait for news) until every copy is observed Exited
//                       with code 0; then the same with cgroups off, so their cost
//                       shows. Baseline in the same run: the sim backend starting the
//                       same 1,000 copies, in memory and over a SQLite store (what a CLI
//                       cluster uses).
//  process-idle-1k      1,000 copies of `sleep 600` under their supervisors (gaia-shim):
//                       20 observations of all of them (wall and this process's CPU),
//                       5 idle Backend::wait(1 s) (what an agent does between passes), the
//                       supervisors' own CPU over 10 idle seconds, their memory (VmRSS and
//                       RssAnon from /proc/PID/status), then a stop of all of them until
//                       none is observed, checked against /proc. Side figure: the RSS of
//                       the supervisor the CLI uses (`gaia __shim`) over 50 copies.
//                       Baseline: 20 observations of 1,000 sim copies.
//  process-stack-ready  the real `gaia` binary in a fresh state dir: `gaia submit
//                       examples/local/hits --wait` (kv = redis-server, hits = busybox
//                       httpd x2, with health checks) on a process cluster of 2 nodes,
//                       against the same submit on a sim cluster; 3 runs each, taking
//                       turns, median reported. While the process submit runs, the ports
//                       of its copies are probed every 10 ms, so the time the stack first
//                       serves is known apart from the time gaia reports it ready.
//
// The cases start real processes, so each one ends by checking /proc that none it
// started is left, and kills any that is (by pid and start time, never by name), also
// when the case fails half-way: a benchmark must not leave 1,000 sleeps behind.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "bench/bench_util.hpp"
#include "lib/sim_backend.hpp"
#include "process/cgroup.hpp"
#include "process/copy_files.hpp"
#include "process/proc.hpp"
#include "process/process_backend.hpp"
#include "store/sqlite_store.hpp"

extern char** environ;

namespace gaia::bench {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr int k_copies = 1000;
constexpr int k_batch = 100;

// ---------------------------------------------------------------------------------
// Processes the cases started, found again through the run dir.

// One process named in a pids.json (or agent.pid): pid and start time, since a pid alone
// may have been handed to somebody else by now.
struct Named {
  int pid = 0;
  uint64_t start = 0;
  bool supervisor = false;  // Its session (setsid) holds the app and what the app started.
};

std::vector<Named> named_processes(const fs::path& run_dir) {
  std::vector<Named> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename() != process::k_pids_file) continue;
    auto pids = process::read_json<process::CopyPids>(it->path());
    if (!pids || !*pids) continue;
    const auto& p = **pids;
    if (p.shim_pid > 0) out.push_back({p.shim_pid, p.shim_start, true});
    if (p.child_pid > 0) out.push_back({p.child_pid, p.child_start, false});
  }
  return out;
}

// The live processes among `named`, plus every live member of a live supervisor's
// session (the supervisor's pid is its session id, which the kernel does not hand out
// again while the session has members).
std::vector<process::ProcStat> live_processes(const std::vector<Named>& named) {
  std::set<std::pair<int, uint64_t>> wanted, supervisors;
  for (const auto& n : named) (n.supervisor ? supervisors : wanted).insert({n.pid, n.start});
  std::vector<process::ProcStat> table = process::scan_processes();
  std::set<int> sessions;
  for (const auto& p : table)
    if (p.state != 'Z' && supervisors.contains({p.pid, p.start_time})) sessions.insert(p.pid);
  std::vector<process::ProcStat> out;
  for (auto& p : table)
    if (p.state != 'Z' && (wanted.contains({p.pid, p.start_time}) || sessions.contains(p.session) ||
                           supervisors.contains({p.pid, p.start_time})))
      out.push_back(std::move(p));
  return out;
}

// SIGKILLs whatever of `named` still runs, each process checked again by pid and start
// time right before its signal, and waits up to 5 s for them to go. Returns how many
// were found alive at first.
size_t kill_leftovers(const std::vector<Named>& named) {
  auto live = live_processes(named);
  const size_t found = live.size();
  for (int round = 0; round < 50 && !live.empty(); ++round) {
    for (const auto& p : live)
      if (process::process_alive(p.pid, p.start_time)) ::kill(p.pid, SIGKILL);
    std::this_thread::sleep_for(100ms);
    live = live_processes(named);
  }
  return found;
}

// The copy cgroups (process/cgroup.hpp) that the run dir's copies name and that still
// exist: a supervisor removes its copy's cgroup when the copy ends.
std::vector<fs::path> live_cgroups(const fs::path& run_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename() != process::cgroup::k_cgroup_file) continue;
    auto cg = process::cgroup::read_record(it->path().parent_path());
    if (cg && !cg->path.empty() && fs::exists(cg->path)) out.emplace_back(cg->path);
  }
  return out;
}

// What the copies of a run dir got, from the first cgroup.json: "cgroup per copy
// (memory limit, cpu limit)" or "none: <why>", so the figures say what was measured.
std::string cgroup_mode(const fs::path& run_dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename() != process::cgroup::k_cgroup_file) continue;
    auto j = process::read_json<nlohmann::json>(it->path());
    if (!j || !*j) continue;
    const auto& c = **j;
    if (c.value("path", std::string()).empty()) return "none: " + c.value("problem", std::string());
    std::string limits = fmt::format("memory limit {}, cpu limit {}", c.value("memory_limit", false) ? "yes" : "no",
                                     c.value("cpu_limit", false) ? "yes" : "no");
    std::string problem = c.value("problem", std::string());
    return fmt::format("cgroup per copy ({}){}", limits, problem.empty() ? "" : ": " + problem);
  }
  return "unknown (no cgroup.json)";
}

// Kills what a run dir's copies left running when it goes out of scope, so a case that
// throws half-way leaves nothing behind. Declared after the TempDir holding the run dir,
// so it runs while the pids.json files still exist. `extra` names processes outside the
// run dir's copies (the agent).
class Reaper {
 public:
  explicit Reaper(fs::path run_dir) : m_run_dir(std::move(run_dir)) {}
  ~Reaper() {
    auto named = named_processes(m_run_dir);
    named.insert(named.end(), extra.begin(), extra.end());
    if (size_t n = kill_leftovers(named); n > 0)
      fmt::print(stderr, "gaia-bench: killed {} process(es) left under {}\n", n, m_run_dir.string());
    for (const auto& cg : live_cgroups(m_run_dir))
      if (auto r = process::cgroup::remove(cg); !r)
        fmt::print(stderr, "gaia-bench: cannot remove the cgroup {}: {}\n", cg.string(), r.error());
  }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  std::vector<Named> extra;

 private:
  fs::path m_run_dir;
};

// ---------------------------------------------------------------------------------
// Driving a backend.

StartSpec make_spec(int ordinal, const std::vector<std::string>& command) {
  StartSpec s;
  Instance& i = s.instance;
  i.tenant = "bench";
  i.app = "proc";
  i.role = "r";
  i.ordinal = ordinal;
  i.node = "n1";
  i.generation = 1;
  i.address = "127.0.0.1";
  i.request = Resources{100, 64 << 20, 0, 0};
  s.role.name = "r";
  s.role.command = command;
  return s;
}

StopSpec stop_spec_of(const StartSpec& s) {
  return StopSpec{s.instance.key(), s.instance.node, s.instance.generation, 10'000ms, "bench"};
}

std::vector<std::vector<StartSpec>> batches_of(int count, const std::vector<std::string>& command) {
  std::vector<std::vector<StartSpec>> out;
  for (int i = 0; i < count; ++i) {
    if (i % k_batch == 0) out.emplace_back();
    out.back().push_back(make_spec(i, command));
  }
  return out;
}

int64_t now_ms() { return process::wall_clock_ms(); }

Observation observe_or_throw(Backend& b) {
  auto obs = b.observe(now_ms());
  if (!obs) throw std::runtime_error(fmt::format("{} observe: {}", b.name(), obs.error().to_string()));
  return std::move(*obs);
}

// Starts (or stops) the batches; throws on any per-copy error. Returns each call's wall ms.
template <class Spec>
std::vector<double> act(Backend& b, const std::vector<std::vector<Spec>>& batches) {
  std::vector<double> ms;
  for (const auto& batch : batches) {
    BackendResult<std::vector<ActionResult>> r;
    if constexpr (std::is_same_v<Spec, StartSpec>) ms.push_back(time_ms([&] { r = b.start(batch, now_ms()); }));
    else ms.push_back(time_ms([&] { r = b.stop(batch, now_ms()); }));
    if (!r) throw std::runtime_error(fmt::format("{}: {}", b.name(), r.error().to_string()));
    for (const auto& a : *r)
      if (a.error) throw std::runtime_error(fmt::format("{} {}: {}", b.name(), a.instance, a.error->to_string()));
  }
  return ms;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

size_t count_phase(const Observation& o, CopyPhase phase) {
  size_t n = 0;
  for (const auto& c : o.copies) n += c.phase == phase;
  return n;
}

struct Watched {
  double ms = 0;  // From the caller's timer.
  int observes = 0;
  std::vector<double> observe_ms;
  Observation last;
};

// Observes, then waits for news the way the agent does (Backend::wait, which looks at the
// run dir every 100 ms), until `done` holds for an observation. Throws after `timeout`.
template <class Done>
Watched watch_until(Backend& b, const Timer& since, Done done, std::chrono::seconds timeout, const std::string& what) {
  Watched w;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    w.observe_ms.push_back(time_ms([&] { w.last = observe_or_throw(b); }));
    ++w.observes;
    if (done(w.last)) {
      w.ms = since.elapsed_ms();
      return w;
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw std::runtime_error(fmt::format("{} not reached within {} s: {} copies observed, {} running, {} exited, {} failed",
                                           what, timeout.count(), w.last.copies.size(),
                                           count_phase(w.last, CopyPhase::Running), count_phase(w.last, CopyPhase::Exited),
                                           count_phase(w.last, CopyPhase::Failed)));
    b.wait(1000ms);
  }
}

std::vector<std::string> shim_command() { return {GAIA_SHIM_PATH}; }

// "VmRSS:" or "RssAnon:" of /proc/PID/status in KiB; 0 when the process is gone.
int64_t status_kb(int pid, std::string_view field) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field)) return std::stoll(line.substr(field.size()));
  return 0;
}

struct Memory {
  int64_t vm_rss_kb = 0, rss_anon_kb = 0;
  int counted = 0;
};

// Memory of the live processes among `named` (supervisors or apps, as `supervisors` says).
Memory memory_of(const std::vector<Named>& named, bool supervisors) {
  Memory m;
  for (const auto& n : named) {
    if (n.supervisor != supervisors || !process::process_alive(n.pid, n.start)) continue;
    m.vm_rss_kb += status_kb(n.pid, "VmRSS:");
    m.rss_anon_kb += status_kb(n.pid, "RssAnon:");
    ++m.counted;
  }
  return m;
}

void add_memory(Figures& f, const std::string& prefix, const Memory& m) {
  f[prefix + "count"] = m.counted;
  f[prefix + "vm_rss_total_mb"] = round3(static_cast<double>(m.vm_rss_kb) / 1024.0);
  f[prefix + "vm_rss_mean_kb"] = m.counted ? round3(static_cast<double>(m.vm_rss_kb) / m.counted) : 0.0;
  f[prefix + "rss_anon_total_mb"] = round3(static_cast<double>(m.rss_anon_kb) / 1024.0);
  f[prefix + "rss_anon_mean_kb"] = m.counted ? round3(static_cast<double>(m.rss_anon_kb) / m.counted) : 0.0;
}

// CPU time in ms of the live processes among `named` of one kind, from the first field
// of /proc/PID/schedstat (nanoseconds on the CPU): the utime and stime of /proc/PID/stat
// count whole clock ticks per process, too coarse for 1,000 supervisors that each wake
// for microseconds at a time.
double cpu_ms_of(const std::vector<Named>& named, bool supervisors) {
  uint64_t ns = 0;
  for (const auto& n : named) {
    if (n.supervisor != supervisors || !process::process_alive(n.pid, n.start)) continue;
    std::ifstream in(fmt::format("/proc/{}/schedstat", n.pid));
    uint64_t run_ns = 0;
    if (in >> run_ns) ns += run_ns;
  }
  return static_cast<double>(ns) / 1e6;
}

std::unique_ptr<SqliteStore> open_store(const fs::path& path) {
  auto s = SqliteStore::open(path);
  if (!s) throw std::runtime_error("cannot open the SQLite store " + path.string());
  return std::move(*s);
}

// Sim baseline of process-start-1k: the same 1,000 copies started in the same batches,
// then observed once (a sim copy is Running as soon as start returns, and never ends).
void sim_start_figures(Figures& f, const std::string& prefix, Backend& sim) {
  const auto batches = batches_of(k_copies, {"true"});
  Timer since;
  const double cpu0 = cpu_ms();
  auto start_ms = act(sim, batches);
  Observation o = observe_or_throw(sim);
  const double all_ms = since.elapsed_ms();
  if (count_phase(o, CopyPhase::Running) != static_cast<size_t>(k_copies))
    throw std::runtime_error(fmt::format("{}: {} of {} copies running", prefix, count_phase(o, CopyPhase::Running), k_copies));
  f[prefix + "start_ms"] = round3(sum(start_ms));
  f[prefix + "starts_per_s"] = round3(k_copies / (sum(start_ms) / 1000.0));
  f[prefix + "all_observed_ms"] = round3(all_ms);
  f[prefix + "cpu_ms"] = round3(cpu_ms() - cpu0);
}

// ---------------------------------------------------------------------------------
// process-start-1k

// 1,000 copies of `true` in one fresh run dir, with cgroups as `mode` says: figures
// under `prefix`.
void process_start_figures(Figures& f, const std::string& prefix, const fs::path& run_dir, CgroupMode mode) {
  ProcessBackend backend(run_dir, ProcessOptions{.shim_command = shim_command(), .cgroups = mode});
  const auto batches = batches_of(k_copies, {"true"});
  Timer since;
  const double cpu0 = cpu_ms();
  auto start_ms = act(backend, batches);
  const double start_cpu = cpu_ms() - cpu0;
  auto w = watch_until(
      backend, since,
      [](const Observation& o) {
        return o.copies.size() == static_cast<size_t>(k_copies) &&
               count_phase(o, CopyPhase::Exited) == static_cast<size_t>(k_copies);
      },
      120s, "all copies exited");
  for (const auto& c : w.last.copies)
    if (c.exit_code != 0) throw std::runtime_error(fmt::format("{} exited with {}: {}", c.instance, c.exit_code, c.reason));

  f[prefix + "cgroups"] = cgroup_mode(run_dir);
  f[prefix + "start_ms"] = round3(sum(start_ms));
  f[prefix + "starts_per_s"] = round3(k_copies / (sum(start_ms) / 1000.0));
  add_latency(f, start_ms, prefix + "start_batch_");
  // This process and the short-lived first half of each supervisor (the shim forks the
  // supervisor away and exits; start() waits for that exit). The supervisors proper
  // are not its children and are not counted.
  f[prefix + "start_cpu_ms_per_copy"] = round3(start_cpu / k_copies);
  f[prefix + "all_exited_ms"] = round3(w.ms);
  f[prefix + "observes_until_exited"] = w.observes;
  f[prefix + "observe_last_ms"] = round3(w.observe_ms.back());
  f[prefix + "cpu_ms"] = round3(cpu_ms() - cpu0);

  // Every supervisor ended by itself when its `true` did; /proc must agree, and every
  // copy's cgroup must be gone.
  const size_t left = live_processes(named_processes(run_dir)).size();
  const size_t cgroups_left = live_cgroups(run_dir).size();
  f[prefix + "left_running"] = left;
  f[prefix + "cgroups_left"] = cgroups_left;
  if (left > 0) throw std::runtime_error(fmt::format("{} processes still run after every copy exited", left));
  if (cgroups_left > 0) throw std::runtime_error(fmt::format("{} copy cgroups left after every copy exited", cgroups_left));
}

Figures run_start_1k() {
  Figures f;
  TempDir tmp("gaia-bench-start");
  Reaper reaper(tmp.path() / "run");
  Reaper reaper_off(tmp.path() / "run-nocg");
  f["copies"] = k_copies;
  f["batch"] = k_batch;
  f["command"] = "true";
  f["shim"] = GAIA_SHIM_PATH;

  // The default (cgroups where gaia may make them), then the same with cgroups off, so
  // their cost shows.
  process_start_figures(f, "", tmp.path() / "run", CgroupMode::Auto);
  process_start_figures(f, "nocgroup_", tmp.path() / "run-nocg", CgroupMode::Off);

  // Baselines, in the same process right after: the sim in memory and over SQLite.
  {
    SimBackend sim;
    sim_start_figures(f, "sim_memory_", sim);
  }
  {
    auto store = open_store(tmp.path() / "sim.db");
    SimBackend sim(store.get());
    sim_start_figures(f, "sim_sqlite_", sim);
  }
  return f;
}

// ---------------------------------------------------------------------------------
// process-idle-1k

// Observation figures of 20 observations: wall p50/p99 and this process's CPU each.
void add_observe_figures(Figures& f, const std::string& prefix, Backend& b, size_t expect_running) {
  std::vector<double> wall, cpu;
  for (int r = 0; r < 20; ++r) {
    const double c0 = cpu_ms();
    Observation o;
    wall.push_back(time_ms([&] { o = observe_or_throw(b); }));
    cpu.push_back(cpu_ms() - c0);
    if (count_phase(o, CopyPhase::Running) != expect_running)
      throw std::runtime_error(fmt::format("{}: {} of {} copies observed running", prefix,
                                           count_phase(o, CopyPhase::Running), expect_running));
  }
  add_latency(f, wall, prefix + "observe_");
  f[prefix + "observe_cpu_mean_ms"] = round3(mean(cpu));
}

// Starts `count` copies of `sleep 600` and waits until all are observed Running.
Watched start_sleepers(Figures& f, const std::string& prefix, ProcessBackend& b, int count) {
  const auto batches = batches_of(count, {"sleep", "600"});
  Timer since;
  auto start_ms = act(b, batches);
  f[prefix + "start_ms"] = round3(sum(start_ms));
  f[prefix + "starts_per_s"] = round3(count / (sum(start_ms) / 1000.0));
  add_latency(f, start_ms, prefix + "start_batch_");
  f[prefix + "start_first_batch_ms"] = round3(start_ms.front());
  f[prefix + "start_last_batch_ms"] = round3(start_ms.back());
  auto w = watch_until(
      b, since,
      [count](const Observation& o) { return count_phase(o, CopyPhase::Running) == static_cast<size_t>(count); }, 120s,
      "all copies running");
  f[prefix + "all_running_ms"] = round3(w.ms);
  return w;
}

// Stops every copy and waits until none is observed; then /proc must show none of them.
void stop_all(Figures& f, const std::string& prefix, ProcessBackend& b, int count) {
  std::vector<std::vector<StopSpec>> batches;
  for (const auto& batch : batches_of(count, {"sleep", "600"})) {
    batches.emplace_back();
    for (const auto& s : batch) batches.back().push_back(stop_spec_of(s));
  }
  const auto named = named_processes(b.run_dir());
  Timer since;
  auto stop_ms = act(b, batches);
  auto w = watch_until(b, since, [](const Observation& o) { return o.copies.empty(); }, 60s, "all copies gone");
  f[prefix + "stop_ms"] = round3(sum(stop_ms));
  f[prefix + "all_gone_ms"] = round3(w.ms);
  const size_t left = live_processes(named).size();
  const size_t cgroups_left = live_cgroups(b.run_dir()).size();
  f[prefix + "left_running"] = left;
  f[prefix + "cgroups_left"] = cgroups_left;
  if (left > 0) throw std::runtime_error(fmt::format("{}: {} processes still run after the stop", prefix, left));
  if (cgroups_left > 0) throw std::runtime_error(fmt::format("{}: {} copy cgroups left after the stop", prefix, cgroups_left));
}

Figures run_idle_1k() {
  Figures f;
  TempDir tmp("gaia-bench-idle");
  const fs::path run_dir = tmp.path() / "run";
  const fs::path cli_run_dir = tmp.path() / "run-cli";
  Reaper reaper(run_dir);
  Reaper cli_reaper(cli_run_dir);
  f["copies"] = k_copies;
  f["command"] = "sleep 600";
  f["shim"] = GAIA_SHIM_PATH;

  ProcessBackend backend(run_dir, ProcessOptions{.shim_command = shim_command()});
  start_sleepers(f, "", backend, k_copies);
  f["cgroups"] = cgroup_mode(run_dir);
  const auto named = named_processes(run_dir);
  // What each supervisor used from its exec until all copies ran (its start-up: loading,
  // the cgroup, spawning the app, writing its files), before any idle time counts much.
  f["supervisor_cpu_ms_mean_at_ready"] = round3(cpu_ms_of(named, true) / k_copies);

  // What observing costs the observer: 20 observations of all 1,000 copies (the first
  // of a fresh object has no earlier CPU reading; the others compute usage too).
  add_observe_figures(f, "", backend, k_copies);

  // What an agent pays between passes while nothing happens: Backend::wait looks at the
  // run dir every 100 ms (a fingerprint of every copy's files and processes). Five
  // waits of 1 s each, right after an observation, must all time out.
  {
    observe_or_throw(backend);
    const double c0 = cpu_ms();
    Timer waited;
    int news = 0;
    for (int r = 0; r < 5; ++r) news += backend.wait(1000ms) ? 1 : 0;
    f["idle_wait_s"] = round3(waited.elapsed_ms() / 1000.0);
    f["idle_wait_cpu_ms_per_s"] = round3((cpu_ms() - c0) / (waited.elapsed_ms() / 1000.0));
    f["idle_wait_news"] = news;
  }

  // What supervising costs while nothing happens: the supervisors' and the apps' own CPU
  // over 10 idle seconds, from /proc (they are not this process's children).
  const double shim0 = cpu_ms_of(named, true), app0 = cpu_ms_of(named, false);
  Timer idle;
  std::this_thread::sleep_for(10s);
  const double idle_s = idle.elapsed_ms() / 1000.0;
  const double shim1 = cpu_ms_of(named, true), app1 = cpu_ms_of(named, false);
  f["idle_window_s"] = round3(idle_s);
  f["supervisors_idle_cpu_ms_per_s"] = round3((shim1 - shim0) / idle_s);
  f["apps_idle_cpu_ms_per_s"] = round3((app1 - app0) / idle_s);

  add_memory(f, "supervisors_", memory_of(named, true));
  add_memory(f, "apps_", memory_of(named, false));
  f["observer_peak_rss_mb"] = peak_rss_mb();

  stop_all(f, "", backend, k_copies);

  // The CLI's supervisor is the gaia binary itself (`gaia __shim`): its memory per copy,
  // over 50 copies.
  {
    constexpr int k_cli_copies = 50;
    ProcessBackend cli(cli_run_dir, ProcessOptions{.shim_command = {GAIA_CLI_PATH, "__shim"}});
    Figures side;
    start_sleepers(side, "", cli, k_cli_copies);
    add_memory(f, "cli_shim_supervisors_", memory_of(named_processes(cli_run_dir), true));
    stop_all(side, "", cli, k_cli_copies);
    f["cli_shim_left_running"] = side["left_running"];
    f["cli_shim_cgroups_left"] = side["cgroups_left"];
  }

  // Baseline: observing 1,000 sim copies, in memory and over SQLite.
  {
    SimBackend sim;
    act(sim, batches_of(k_copies, {"sleep", "600"}));
    add_observe_figures(f, "sim_memory_", sim, k_copies);
  }
  {
    auto store = open_store(tmp.path() / "sim.db");
    SimBackend sim(store.get());
    act(sim, batches_of(k_copies, {"sleep", "600"}));
    add_observe_figures(f, "sim_sqlite_", sim, k_copies);
  }
  return f;
}

// ---------------------------------------------------------------------------------
// process-stack-ready: the real gaia binary.

struct Ran {
  int exit_code = -1;
  double ms = 0;
};

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Runs `argv` with `env` in `cwd`, stdout and stderr appended to `log`, and waits for it
// (killing it after `timeout`). The wall time is from the spawn to its exit. While it
// runs, `on_tick` (when set) is called every 10 ms with the time since the spawn.
Ran run_command(const std::vector<std::string>& argv, const std::vector<std::string>& env, const fs::path& cwd,
                const fs::path& log, std::chrono::seconds timeout,
                const std::function<void(double)>& on_tick = nullptr) {
  {
    std::ofstream out(log, std::ios::app);
    out << "$";
    for (const auto& a : argv) out << " " << a;
    out << "\n";
  }
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  Ran r;
  Timer t;
  pid_t pid = 0;
  int err = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw std::runtime_error(fmt::format("cannot run {}: {}", argv[0], std::strerror(err)));
  // A pidfd becomes readable when the child exits, so the exit is seen at once rather
  // than at the next tick.
  const int fd = pidfd_open(pid);
  int status = 0;
  bool timed_out = false;
  for (;;) {
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 10);
    } else {
      std::this_thread::sleep_for(10ms);
    }
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (t.elapsed_ms() > static_cast<double>(timeout.count()) * 1000.0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    if (on_tick) on_tick(t.elapsed_ms());
  }
  r.ms = t.elapsed_ms();
  if (fd >= 0) ::close(fd);
  if (timed_out)
    throw std::runtime_error(
        fmt::format("{} timed out after {} s (see {})", fmt::join(argv, " "), timeout.count(), log.string()));
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// Whether a TCP connection to address:port is accepted now (loopback: connect answers
// at once, accepted or refused).
bool accepts(const std::string& address, int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::inet_pton(AF_INET, address.c_str(), &a.sin_addr) == 1 &&
            ::connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

// Whether `expected` copies of the run dir are live (no stop asked for) and every port
// of every one of them accepts connections: the stack serves, whatever gaia knows yet.
bool stack_serves(const fs::path& run_dir, size_t expected) {
  size_t serving = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->path().filename() != process::k_copy_file) continue;
    const fs::path dir = it->path().parent_path();
    if (fs::exists(dir / process::k_stop_file) || fs::exists(dir / process::k_removed_file)) continue;
    auto c = process::read_json<process::CopyConfig>(it->path());
    if (!c || !*c || (*c)->ports.empty()) return false;
    for (const auto& [name, port] : (*c)->ports)
      if (!accepts((*c)->address, port)) return false;
    ++serving;
  }
  return serving == expected;
}

std::string last_lines(const fs::path& p, size_t n) {
  std::ifstream in(p);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "\n    " + lines[i];
  return out;
}

// This process's environment with the state, cache and repository of one run: nothing
// of the user's own gaia state or settings reaches the child.
std::vector<std::string> child_env(const fs::path& home) {
  static const std::set<std::string> dropped = {"XDG_STATE_HOME", "XDG_CACHE_HOME", "GAIA_REPO", "GAIA_PATH",
                                                "GAIA_STORE",     "GAIA_TEST_KILL_AT", "NO_COLOR", "TERM", "COLUMNS"};
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (!dropped.contains(std::string(kv.substr(0, kv.find('='))))) env.emplace_back(kv);
  }
  env.push_back("XDG_STATE_HOME=" + (home / "state").string());
  env.push_back("XDG_CACHE_HOME=" + (home / "cache").string());
  env.push_back(fmt::format("GAIA_REPO={}/examples/local", GAIA_SOURCE_DIR));
  env.push_back("NO_COLOR=1");
  env.push_back("TERM=dumb");
  return env;
}

struct StackRun {
  double create_ms = 0, submit_ms = 0, cleanup_ms = 0;
  // When all 3 copies first accepted connections on all their ports, seen from outside
  // every 10 ms while the submit ran (process only; -1 when not seen before it returned).
  double serving_ms = -1;
  size_t left_killed = 0;
  size_t cgroups_left = 0;
};

// The agent's pid and start time from <run dir>/agent.pid, if it runs.
std::optional<Named> agent_of(const fs::path& run_dir) {
  auto j = process::read_json<nlohmann::json>(run_dir / "agent.pid");
  if (!j || !*j) return std::nullopt;
  return Named{(*j)->value("pid", 0), (*j)->value("start", uint64_t{0}), false};
}

// One submit of hits (and kv) on a fresh cluster of `backend`, then its clean-up.
StackRun stack_run(const std::string& backend) {
  StackRun out;
  TempDir home("gaia-bench-stack");
  const fs::path run_dir = home.path() / "state" / "gaia" / "gaia.db.run";
  Reaper reaper(run_dir);
  const auto env = child_env(home.path());
  const fs::path log = home.path() / "commands.log";
  const fs::path cwd = GAIA_SOURCE_DIR;
  auto gaia = [&](std::vector<std::string> args, const std::function<void(double)>& on_tick = nullptr) {
    args.insert(args.begin(), GAIA_CLI_PATH);
    Ran r = run_command(args, env, cwd, log, 120s, on_tick);
    if (r.exit_code != 0)
      throw std::runtime_error(fmt::format("`{}` on {} exited with {}:{}", fmt::join(args, " "), backend, r.exit_code,
                                           last_lines(log, 15)));
    return r;
  };

  std::vector<std::string> create = {"cluster", "create", "--nodes", "2"};
  // Not the default subnet 127.64.0.0/16, so a demo cluster on the same machine cannot
  // hold the ports this one's instances get.
  if (backend == "process") create.insert(create.end(), {"--backend", "process", "--subnet", "127.77.0.0/16"});
  out.create_ms = gaia(create).ms;
  if (backend == "process") {
    if (auto a = agent_of(run_dir)) reaper.extra.push_back(*a);
  }

  std::function<void(double)> probe;
  if (backend == "process")
    probe = [&](double ms) {
      if (out.serving_ms < 0 && stack_serves(run_dir, 3)) out.serving_ms = ms;
    };
  out.submit_ms = gaia({"submit", (cwd / "examples/local/hits").string(), "--wait", "--timeout", "60s"}, probe).ms;
  if (backend == "process") {
    // What --wait called ready must be running: redis-server once, busybox httpd twice.
    std::map<std::string, int> apps;
    for (const auto& p : live_processes(named_processes(run_dir))) ++apps[p.comm];
    if (apps["redis-server"] != 1 || apps["busybox"] != 2)
      throw std::runtime_error(fmt::format("after submit --wait: {} redis-server and {} busybox processes, want 1 and 2",
                                           apps["redis-server"], apps["busybox"]));
    if (out.serving_ms < 0 && stack_serves(run_dir, 3)) out.serving_ms = out.submit_ms;
  }

  Timer cleanup;
  gaia({"delete", "hits"});
  gaia({"delete", "kv"});
  if (backend == "process") {
    gaia({"agent", "stop"});
    // The deletes asked the supervisors to stop (SIGTERM, grace 10 s); wait until they
    // are gone rather than killing them, so the clean-up time is honest.
    auto named = named_processes(run_dir);
    named.insert(named.end(), reaper.extra.begin(), reaper.extra.end());
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (!live_processes(named).empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    out.left_killed = kill_leftovers(named);
    out.cgroups_left = live_cgroups(run_dir).size();
  }
  out.cleanup_ms = cleanup.elapsed_ms();
  return out;
}

Figures run_stack_ready() {
  Figures f;
  constexpr int k_runs = 3;
  f["runs"] = k_runs;
  f["app"] = "examples/local/hits (kv 7.0.0: redis-server x1; hits 1.0.0: busybox httpd x2)";
  std::map<std::string, std::vector<double>> create, submit, cleanup;
  std::vector<double> serving;
  size_t killed = 0, cgroups_left = 0;
  for (int r = 0; r < k_runs; ++r) {
    // Taking turns, so drifting load hits both backends alike.
    for (const std::string backend : {r % 2 == 0 ? "process" : "sim", r % 2 == 0 ? "sim" : "process"}) {
      StackRun s = stack_run(backend);
      create[backend].push_back(s.create_ms);
      submit[backend].push_back(s.submit_ms);
      cleanup[backend].push_back(s.cleanup_ms);
      if (backend == "process") serving.push_back(round3(s.serving_ms));
      killed += s.left_killed;
      cgroups_left += s.cgroups_left;
    }
  }
  for (const std::string backend : {"process", "sim"}) {
    const std::string p = backend + "_";
    // Nearest rank at 50% of 3 samples is the middle one: the median.
    f[p + "submit_ready_median_ms"] = round3(percentile(submit[backend], 50));
    std::vector<double> each;
    for (double x : submit[backend]) each.push_back(round3(x));
    f[p + "submit_ready_ms"] = each;
    f[p + "cluster_create_median_ms"] = round3(percentile(create[backend], 50));
    f[p + "cleanup_median_ms"] = round3(percentile(cleanup[backend], 50));
  }
  // Processes that outlived the deletes and the agent stop by 15 s and had to be killed.
  // The stack served (every port accepted) this long after the submit began; the rest
  // of process_submit_ready_ms is gaia noticing (health checks, --wait's polling).
  f["process_serving_ms"] = serving;
  f["process_serving_median_ms"] = percentile(serving, 50);
  f["leftovers_killed"] = killed;
  f["cgroups_left"] = cgroups_left;
  if (killed > 0) throw std::runtime_error(fmt::format("{} processes outlived the clean-up and were killed", killed));
  if (cgroups_left > 0) throw std::runtime_error(fmt::format("{} copy cgroups outlived the clean-up", cgroups_left));
  return f;
}

const Registration k_start{"process-start-1k",
                           "process backend: 1,000 copies of `true` started in batches of 100 until all are observed "
                           "Exited, vs the sim backend",
                           &run_start_1k};
const Registration k_idle{"process-idle-1k",
                          "process backend: 1,000 idle supervised `sleep 600`: observe cost, supervisor CPU and memory, "
                          "stop of all, vs sim observe",
                          &run_idle_1k};
const Registration k_stack{"process-stack-ready",
                           "gaia submit examples/local/hits --wait on a 2-node process cluster (redis-server, busybox "
                           "httpd) vs a sim cluster, real gaia binary, median of 3",
                           &run_stack_ready};

}  // namespace
}  // namespace gaia::bench
