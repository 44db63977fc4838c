#include "process/process_backend.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/process.hpp>
#include <cstdlib>
#include <fmt/format.h>
#include <stdexcept>
#include <thread>

#include "process/cgroup.hpp"
#include "process/copy_files.hpp"
#include "process/health.hpp"
#include "process/preflight.hpp"
#include "process/proc.hpp"

namespace gaia {

namespace bp = boost::process;
namespace fs = std::filesystem;
using namespace gaia::process;

namespace {

BackendError unavailable(std::string message) {
  return BackendError{BackendErrc::Unavailable, "process backend: " + std::move(message)};
}

enum class Liveness {
  Preparing,  // The supervisor has not reported yet, or has not spawned the app yet.
  Running,    // The supervisor runs and so does the app.
  Ended,      // exit.json says how it ended.
  Lost,       // The supervisor is gone without writing exit.json.
};

// Everything the files and the process table say about one copy.
struct CopyState {
  fs::path dir;
  CopyConfig config;
  std::optional<CopyPids> pids;
  std::optional<CopyExit> exit;
  bool stop_requested = false;
  bool removed = false;
  std::string unhealthy;  // Why its health check failed for good; "" when it did not.
  Liveness live = Liveness::Preparing;
  std::string lost_reason;
  std::vector<const ProcStat*> group;  // Live processes of the app's group (its cgroup's, when it has one).
  std::optional<cgroup::CopyCgroup> cgroup;  // The app's cgroup (cgroup.json), when it has one.
};

int64_t mtime_ms(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return 0;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
}

CopyState read_state(CopyDir copy, const ProcessTable& procs, const ProcessOptions& options) {
  CopyState s;
  s.dir = std::move(copy.dir);
  s.config = std::move(copy.config);
  s.removed = fs::exists(s.dir / k_removed_file);
  s.stop_requested = fs::exists(s.dir / k_stop_file);
  if (auto p = read_json<CopyPids>(s.dir / k_pids_file); p && *p) s.pids = **p;
  if (auto e = read_json<CopyExit>(s.dir / k_exit_file); e && *e) s.exit = **e;
  if (auto u = read_json<nlohmann::json>(s.dir / k_unhealthy_file); u && *u)
    s.unhealthy = (*u)->value("reason", std::string("health check failed"));
  s.cgroup = cgroup::read_record(s.dir);
  // A cgroup lists its members exactly, including what left the app's group (setsid,
  // a double fork); once it is gone (its supervisor removes it at the end) the group
  // is all there is to look at.
  if (auto m = s.cgroup ? cgroup::members(s.cgroup->path) : std::nullopt) s.group = procs.find_all(*m);
  else if (s.pids) s.group = procs.group(s.pids->child_pgid, s.pids->child_start, s.pids->shim_pid);
  if (s.exit) {
    s.live = Liveness::Ended;
  } else if (!s.pids) {
    // The supervisor writes pids.json first thing; give it a while (a loaded machine).
    auto age = wall_clock_ms() - mtime_ms(s.dir / k_copy_file);
    if (age > options.supervisor_start_timeout.count()) {
      s.live = Liveness::Lost;
      s.lost_reason = "its supervisor never started";
    }
  } else if (!procs.alive(s.pids->shim_pid, s.pids->shim_start) && !process_alive(s.pids->shim_pid, s.pids->shim_start)) {
    // The table was read before this copy's files: a supervisor that started since is
    // missing from it but alive, so it is asked for again before being called dead.
    // Read exit.json again: the supervisor may have written it and ended since.
    if (auto e = read_json<CopyExit>(s.dir / k_exit_file); e && *e) {
      s.exit = **e;
      s.live = Liveness::Ended;
    } else {
      s.live = Liveness::Lost;
      s.lost_reason = "its supervisor died";
    }
  } else if (s.pids->child_pid > 0) {
    s.live = Liveness::Running;
  }
  return s;
}

// The phase and reason of a copy as its files tell; health checks come on top.
ObservedCopy base_observation(const CopyState& s) {
  ObservedCopy o;
  o.instance = s.config.instance;
  o.node = s.config.node;
  o.generation = s.config.generation;
  o.started_ms = s.config.started_ms;
  switch (s.live) {
    case Liveness::Preparing: o.phase = CopyPhase::Starting; break;
    case Liveness::Running: o.phase = s.config.health.type.empty() ? CopyPhase::Running : CopyPhase::Starting; break;
    case Liveness::Lost:
      // Not the app's fault: the copy was lost under it.
      o.phase = CopyPhase::Failed;
      o.internal = true;
      o.reason = s.lost_reason;
      break;
    case Liveness::Ended: {
      const CopyExit& e = *s.exit;
      o.reason = e.reason;
      if (e.never_started) {
        o.phase = CopyPhase::Failed;
      } else if (e.signal) {
        o.phase = CopyPhase::Failed;
        o.exit_code = 128 + e.signal;  // As a shell reports it.
      } else {
        o.phase = CopyPhase::Exited;
        o.exit_code = e.exit_code.value_or(0);
      }
      break;
    }
  }
  if (!s.unhealthy.empty() && o.live()) {
    o.phase = CopyPhase::Failed;
    o.reason = s.unhealthy;
  }
  return o;
}

std::vector<fs::path> instance_dirs(const fs::path& run_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec))
    if (e.is_directory() && !e.path().filename().string().starts_with(".")) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A node name as a path component.
std::string safe_name(std::string s) {
  if (s.empty()) return "local";
  for (char& c : s)
    if (c == '/' || c == '\0') c = '_';
  return s;
}

// Marks a copy removed and prunes the instance's older removed copies. The caller
// holds the instance lock.
void mark_removed(const fs::path& dir, int keep_removed) {
  // A removed copy has no cgroup left (usually its supervisor removed it already).
  cgroup::remove_copy_cgroup(dir);
  if (auto r = write_file_atomic(dir / k_removed_file, fmt::format("{}\n", wall_clock_ms())); !r) return;
  note_change(dir);
  int kept = 0;
  for (const auto& c : list_copies(dir.parent_path())) {
    if (!fs::exists(c.dir / k_removed_file)) continue;
    if (++kept <= keep_removed) continue;
    std::error_code ec;
    cgroup::remove_copy_cgroup(c.dir);  // In case an earlier removal could not.
    fs::remove_all(c.dir, ec);
  }
}

std::string path_env_of(const std::map<std::string, std::string>& env) {
  auto it = env.find("PATH");
  if (it != env.end()) return it->second;
  const char* p = std::getenv("PATH");
  return p ? p : "";
}

// What a user can get wrong, checked before spawning: the error is the copy's reason.
std::expected<void, std::string> preflight(const CopyConfig& c, const fs::path& work) {
  if (auto exe = find_executable(c.command[0], path_env_of(c.env), work.string()); !exe)
    return std::unexpected(fmt::format("cannot run `{}`: {}", c.command[0], exe.error()));
  if (auto r = check_local_address(c.address); !r) return r;
  for (const auto& [name, port] : c.ports)
    if (auto r = check_port_free(c.address, port); !r)
      return std::unexpected(fmt::format("port `{}`: {}", name, r.error()));
  return {};
}

}  // namespace

ProcessBackend::ProcessBackend(fs::path run_dir, ProcessOptions options)
    : m_run_dir(std::move(run_dir)), m_options(std::move(options)) {
  if (m_options.shim_command.empty()) throw std::invalid_argument("ProcessBackend: the shim command is empty");
}

fs::path ProcessBackend::copy_dir(const std::string& instance, const std::string& node, int64_t generation) const {
  return m_run_dir / instance / fmt::format("{}-g{}", safe_name(node), generation);
}

BackendResult<Observation> ProcessBackend::observe(int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  note_limits();
  // The marker before reading anything: a change made while this observation reads is
  // news to the next wait(), never lost between the reading and the marker.
  trim_changes(m_run_dir, 1 << 20);
  m_last_marker = change_marker(m_run_dir);
  std::error_code ec;
  if (!fs::exists(m_run_dir, ec)) return Observation{};  // Nothing was ever started here.
  if (!fs::is_directory(m_run_dir, ec)) return std::unexpected(unavailable(m_run_dir.string() + " is not a directory"));
  const ProcessTable procs = ProcessTable::scan();
  const auto now = std::chrono::steady_clock::now();
  Observation obs;
  std::map<std::string, HealthState> health;
  std::map<std::string, CpuSample> cpu;
  for (const auto& instance_dir : instance_dirs(m_run_dir)) {
    for (auto& copy : list_copies(instance_dir)) {
      CopyState s = read_state(std::move(copy), procs, m_options);
      if (s.removed) continue;
      const std::string key = s.dir.string();
      // A stopped copy is reported until nothing of it runs, so a stateful instance
      // never has two live copies; then it is gone.
      if (s.stop_requested && (s.live == Liveness::Ended || (s.live == Liveness::Lost && s.group.empty()))) {
        if (auto l = FileLock::acquire(instance_dir / k_lock_file)) mark_removed(s.dir, m_options.keep_removed);
        continue;
      }
      ObservedCopy o = base_observation(s);
      if (s.live == Liveness::Running && s.unhealthy.empty() && !s.config.health.type.empty()) {
        HealthState h = m_health.count(key) ? m_health[key] : HealthState{};
        HealthCheck check = s.config.health;
        int period = check.period_s > 0 ? check.period_s : m_options.health_period_s;
        int threshold = check.failure_threshold > 0 ? check.failure_threshold : m_options.health_failure_threshold;
        if (check.timeout_s <= 0) s.config.health.timeout_s = m_options.health_timeout_s;
        // A copy being stopped is not checked any more: failing checks while it shuts
        // down must not make it look gone while it still runs.
        if (now_ms >= h.next_check_ms && !s.stop_requested) {
          auto r = run_health_check(s.config, s.dir / k_work_dir);
          // Until the first pass, checks come faster than the period (at most every
          // 250 ms), so a copy that becomes ready is seen ready within a fraction of a
          // second, not a whole period later.
          h.next_check_ms = now_ms + (r || h.passed_once ? int64_t{period} * 1000 : std::min<int64_t>(250, period * 1000));
          if (r) {
            h.passed_once = true;
            h.failures = 0;
          } else {
            h.last_error = r.error();
            // Failures while it starts up are expected: only a copy that was ready
            // counts them.
            if (h.passed_once) ++h.failures;
          }
        }
        if (h.passed_once && h.failures >= threshold) {
          // Written down, so every gaia process reports the same failure from now on.
          o.phase = CopyPhase::Failed;
          o.reason = fmt::format("health check {} {} failed {} times: {}", check.type, check.target, h.failures,
                                 h.last_error);
          write_json_atomic(s.dir / k_unhealthy_file, nlohmann::json{{"reason", o.reason}});
          note_change(s.dir);
        } else {
          o.phase = h.passed_once ? CopyPhase::Running : CopyPhase::Starting;
          if (!s.stop_requested && (obs.wake_at_ms == 0 || h.next_check_ms < obs.wake_at_ms))
            obs.wake_at_ms = h.next_check_ms;
        }
        health[key] = h;
      }
      if (o.live() && !s.group.empty()) {
        uint64_t ticks = 0;
        int64_t rss = 0;
        for (const ProcStat* p : s.group) {
          ticks += p->utime + p->stime;
          rss += p->rss_pages * page_size();
        }
        uint64_t usec = ticks * 1'000'000 / static_cast<uint64_t>(clock_ticks_per_second());
        // With a cgroup, usage_usec counts every member, ended ones too, and
        // memory.current (where the memory controller is on) what the kernel charges
        // the copy; the members' resident memory stands in without it.
        if (s.cgroup) {
          auto cg = cgroup::read_usage(s.cgroup->path);
          if (cg.cpu_usec) usec = *cg.cpu_usec;
          if (cg.memory_bytes) rss = *cg.memory_bytes;
        }
        // CPU is a rate: it needs an earlier reading of this object.
        if (auto it = m_cpu.find(key); it != m_cpu.end()) {
          auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.at).count();
          if (ms > 0) {
            // Without a cgroup, processes of the group that ended since take their ticks with them.
            int64_t delta = usec >= it->second.usec ? static_cast<int64_t>(usec - it->second.usec) : 0;
            Resources u;
            u.memory_bytes = rss;
            u.cpu_millis = delta / ms;  // Microseconds of CPU per millisecond are millicores.
            o.usage = u;
          }
        }
        cpu[key] = {usec, now};
      }
      obs.copies.push_back(std::move(o));
    }
  }
  // Only what is still reported is remembered: removed copies are forgotten.
  m_health = std::move(health);
  m_cpu = std::move(cpu);
  m_wake_at_ms = obs.wake_at_ms;
  return obs;
}

std::optional<BackendError> ProcessBackend::start_one(const StartSpec& spec, int64_t now_ms) {
  const Instance& i = spec.instance;
  const std::string key = i.key();
  if (spec.role.command.empty())
    return BackendError{BackendErrc::Rejected,
                        fmt::format("{}: role {} has no command: the process backend runs commands, not images", key,
                                    spec.role.name)};
  const fs::path instance_dir = m_run_dir / key;
  std::error_code ec;
  fs::create_directories(instance_dir, ec);
  if (ec) return unavailable(fmt::format("cannot create {}: {}", instance_dir.string(), ec.message()));
  // Two gaia processes starting the same copy at once: the second finds it made.
  auto lock = FileLock::acquire(instance_dir / k_lock_file);
  if (!lock) return unavailable(lock.error());
  const fs::path dir = copy_dir(key, i.node, i.generation);
  if (fs::exists(dir)) {
    if (!fs::exists(dir / k_removed_file)) {
      // A copy being stopped is not this start's copy (an instance deleted and created
      // again under the same key): it must end first, or the new instance would be
      // handed a dying process. Retried by the next cycle.
      if (fs::exists(dir / k_stop_file))
        return BackendError{BackendErrc::Unavailable,
                            fmt::format("{} on {}: its previous copy is still stopping", key, i.node)};
      return std::nullopt;  // Started already.
    }
    // The same copy again after it was stopped: the old one keeps its logs aside.
    fs::path aside = dir;
    aside += fmt::format(".{}", mtime_ms(dir / k_removed_file));
    fs::rename(dir, aside, ec);
    if (ec) return unavailable(fmt::format("cannot move {} aside: {}", dir.string(), ec.message()));
  }

  CopyConfig c;
  c.instance = key;
  c.node = i.node;
  c.generation = i.generation;
  c.command = spec.role.command;
  c.env = spec.role.env;
  for (const auto& [k, v] : spec.env) c.env[k] = v;  // gaia's env wins over the role's.
  c.env["GAIA_CONFIG"] = fs::absolute(dir / k_work_dir / k_config_file).string();
  c.grace_ms = std::max<int64_t>(spec.role.grace_period_ms, 0);
  c.address = i.address.empty() ? "127.0.0.1" : i.address;
  c.ports = i.ports;
  // The cgroup caps the copy at the role's limits (its requests unless it declares
  // limits); the scheduler reserved the requests.
  c.resources = spec.role.limit();
  c.cgroup = m_options.cgroups != CgroupMode::Off;
  c.health = spec.role.health;
  if (c.health.period_s <= 0) c.health.period_s = m_options.health_period_s;
  if (c.health.timeout_s <= 0) c.health.timeout_s = m_options.health_timeout_s;
  if (c.health.failure_threshold <= 0) c.health.failure_threshold = m_options.health_failure_threshold;
  c.started_ms = now_ms;
  c.log_max_bytes = m_options.log_max_bytes;
  c.log_keep = m_options.log_keep;

  // Made under a temporary name and renamed whole, so a copy dir always has its
  // copy.json (a crash half-way leaves only the temporary, replaced next time).
  const fs::path tmp = instance_dir / ("." + dir.filename().string() + ".tmp");
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp / k_work_dir, ec);
  if (ec) return unavailable(fmt::format("cannot create {}: {}", tmp.string(), ec.message()));
  if (auto r = write_file_atomic(tmp / k_work_dir / k_config_file, spec.config.dump(2) + "\n"); !r)
    return unavailable(r.error());
  if (auto r = write_json_atomic(tmp / k_copy_file, c); !r) return unavailable(r.error());
  fs::rename(tmp, dir, ec);
  if (ec) return unavailable(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  note_change(dir);

  if (auto r = preflight(c, dir / k_work_dir); !r) {
    // Recorded as the copy's failure: the controllers see the reason and back off.
    CopyExit e;
    e.never_started = true;
    e.reason = r.error();
    e.ended_ms = wall_clock_ms();
    if (auto w = write_json_atomic(dir / k_exit_file, e); !w) return unavailable(w.error());
    note_change(dir);
    return std::nullopt;
  }

  auto spawn_failed = [&](const std::string& why) {
    // Not the copy's failure but the backend's: forget the copy so a retry makes it anew.
    fs::remove_all(dir, ec);
    return unavailable(fmt::format("cannot start the supervisor of {}: {}", key, why));
  };
  const char* path = std::getenv("PATH");
  auto shim = find_executable(m_options.shim_command[0], path ? path : "", m_run_dir.string());
  if (!shim) return spawn_failed(shim.error());
  std::vector<std::string> args(m_options.shim_command.begin() + 1, m_options.shim_command.end());
  args.push_back(fs::absolute(dir).string());
  try {
    // The shim forks its detached supervisor and exits: this waits for the fork only.
    bp::child child(bp::exe = *shim, bp::args = args, bp::std_in < bp::null,
                    (bp::std_out & bp::std_err) > (dir / k_shim_log_file).string());
    child.wait();
    if (child.exit_code() != 0)
      return spawn_failed(fmt::format("it exited with code {} (see {})", child.exit_code(),
                                      (dir / k_shim_log_file).string()));
  } catch (const bp::process_error& e) {
    return spawn_failed(e.code().message());
  }
  return std::nullopt;
}

BackendResult<std::vector<ActionResult>> ProcessBackend::start(const std::vector<StartSpec>& specs, int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  note_limits();
  std::error_code ec;
  fs::create_directories(m_run_dir, ec);
  if (ec) return std::unexpected(unavailable(fmt::format("cannot create {}: {}", m_run_dir.string(), ec.message())));
  std::vector<ActionResult> out;
  for (const auto& s : specs) out.push_back({s.instance.key(), s.instance.node, start_one(s, now_ms)});
  return out;
}

std::optional<BackendError> ProcessBackend::stop_one(const StopSpec& spec, int64_t now_ms,
                                                     const ProcessTable& procs) {
  const fs::path dir = copy_dir(spec.instance, spec.node, spec.generation);
  if (!fs::exists(dir / k_copy_file) || fs::exists(dir / k_removed_file)) return std::nullopt;  // Gone already.
  auto lock = FileLock::acquire(dir.parent_path() / k_lock_file);
  if (!lock) return unavailable(lock.error());
  // stop.json first, pids.json after: a supervisor that had not written pids.json yet
  // finds stop.json when it looks, and one that had is signalled below.
  auto config = read_json<CopyConfig>(dir / k_copy_file);
  if (!config || !*config) return unavailable(config ? "copy.json vanished" : config.error());
  if (!fs::exists(dir / k_stop_file)) {
    StopRequest r{spec.grace ? spec.grace->count() : (*config)->grace_ms, spec.reason, now_ms};
    if (auto w = write_json_atomic(dir / k_stop_file, r); !w) return unavailable(w.error());
    note_change(dir);
  }
  CopyState s = read_state({dir, **config}, procs, m_options);
  switch (s.live) {
    case Liveness::Ended: mark_removed(dir, m_options.keep_removed); break;
    case Liveness::Running:
    case Liveness::Preparing:
      // The supervisor enforces the grace: SIGTERM to the app's group now, SIGKILL later.
      // The table was read for the whole batch (and the lock above may have waited):
      // the supervisor is checked again, by pid and start time, right before the signal.
      if (s.pids && process_alive(s.pids->shim_pid, s.pids->shim_start)) ::kill(s.pids->shim_pid, SIGTERM);
      break;
    case Liveness::Lost:
      // Nobody enforces a grace for a copy whose supervisor died: what is left goes now,
      // each member checked again by pid and start time rather than the group number.
      // With a cgroup, every member goes, including what left the app's group.
      if (s.cgroup) cgroup::kill_all(s.cgroup->path);
      for (const ProcStat* m : s.group)
        if (process_alive(m->pid, m->start_time)) ::kill(m->pid, SIGKILL);
      break;
  }
  return std::nullopt;
}

BackendResult<std::vector<ActionResult>> ProcessBackend::stop(const std::vector<StopSpec>& specs, int64_t now_ms) {
  std::lock_guard lock(m_mutex);
  std::vector<ActionResult> out;
  // One look at the process table for the batch: a stop only signals, so a process
  // that ends meanwhile is at worst signalled in vain.
  const ProcessTable procs = ProcessTable::scan();
  for (const auto& s : specs) out.push_back({s.instance, s.node, stop_one(s, now_ms, procs)});
  return out;
}

bool ProcessBackend::wait(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    {
      std::lock_guard lock(m_mutex);
      if (change_marker(m_run_dir) != m_last_marker) return true;
      if (m_wake_at_ms != 0 && wall_clock_ms() >= m_wake_at_ms) return true;
    }
    auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(left, m_options.poll_interval));
  }
}

std::vector<CopyInfo> ProcessBackend::copies_of(const std::string& instance) {
  std::lock_guard lock(m_mutex);
  std::vector<CopyInfo> out;
  const ProcessTable procs = ProcessTable::scan();
  for (auto& copy : list_copies(m_run_dir / instance)) {
    CopyState s = read_state(std::move(copy), procs, m_options);
    ObservedCopy o = base_observation(s);
    if (auto it = m_health.find(s.dir.string()); it != m_health.end() && o.phase == CopyPhase::Starting &&
                                                 s.live == Liveness::Running && it->second.passed_once)
      o.phase = CopyPhase::Running;
    CopyInfo c;
    c.instance = s.config.instance;
    c.node = s.config.node;
    c.generation = s.config.generation;
    c.dir = s.dir;
    c.log = s.dir / k_log_file;
    c.previous_log = s.dir / (std::string(k_log_file) + ".1");
    c.phase = o.phase;
    c.removed = s.removed;
    c.exit_code = o.exit_code;
    c.reason = o.reason;
    c.started_ms = s.config.started_ms;
    c.ended_ms = s.exit ? s.exit->ended_ms : 0;
    out.push_back(std::move(c));
  }
  return out;
}

void ProcessBackend::note_limits() {
  if (auto w = cgroup::take_limits_warning(m_options.cgroups != CgroupMode::Off); !w.empty())
    m_warnings.push_back(std::move(w));
}

std::vector<std::string> ProcessBackend::take_warnings() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_warnings, {});
}

}  // namespace gaia
