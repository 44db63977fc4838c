#include "process/cgroup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <thread>

namespace gaia::process::cgroup {

namespace fs = std::filesystem;

namespace {

// Lines of `text`, without their line ends.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string_view> words_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    if (j > i) out.push_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

template <class T>
std::optional<T> number(std::string_view s) {
  T v{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      auto d = s.substr(i + 1, 3);
      if (std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>((d[0] - '0') * 64 + (d[1] - '0') * 8 + (d[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::string safe_part(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  return out;
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Reads a small file whole; nothing when it cannot be opened.
std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One write(2) of `text`: cgroup files take a value per write and report a refusal
// as the write's error.
std::expected<void, std::string> write_text(const fs::path& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  ssize_t n = ::write(fd, text.data(), text.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(text.size()))
    return std::unexpected(
        fmt::format("cannot write `{}` to {}: {}", text, path.string(), std::strerror(n < 0 ? err : EIO)));
  return {};
}

// Enables `wanted` controllers in dir's cgroup.subtree_control where dir offers them,
// each on its own so one refusal does not stop the other. Failures are left to the
// caller, which reads back what is enabled.
void enable_controllers(const fs::path& dir, std::initializer_list<const char*> wanted) {
  auto offered = parse_controllers(read_text(dir / "cgroup.controllers").value_or(""));
  auto enabled = parse_controllers(read_text(dir / "cgroup.subtree_control").value_or(""));
  for (const char* c : wanted)
    if (offered.count(c) && !enabled.count(c)) (void)write_text(dir / "cgroup.subtree_control", fmt::format("+{}", c));
}

// Removes copies' cgroups in `parent` that are empty and older than `min_age`: those of
// copies whose supervisor and app were killed together (kill -9 of everything, a run
// dir deleted under its copies), which no removal will ever name again. A live copy's
// cgroup is empty only between its mkdir and the app joining it, a moment after; an
// ended copy's is removed by its supervisor or its removal, for which a cgroup gone
// already is fine. So an empty one that old belongs to nobody.
void remove_abandoned(const fs::path& parent, std::chrono::seconds min_age) {
  std::error_code ec;
  const auto now = std::chrono::system_clock::now();
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    if (!e.is_directory() || !e.path().filename().string().starts_with("gaia-")) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    auto made = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_mtim.tv_sec));
    if (now - made < min_age) continue;
    if (parse_populated(read_text(e.path() / "cgroup.events").value_or("")) != false) continue;
    ::rmdir(e.path().c_str());  // Fails harmlessly if a process joined meanwhile.
  }
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

}  // namespace

// ---- Parsers ----

std::vector<Mount> parse_cgroup2_mounts(std::string_view mountinfo) {
  // "36 25 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw": the fields
  // before " - " are ID, parent, dev, root, mount point, options and optional fields;
  // the file system type comes right after the separator.
  std::vector<Mount> out;
  for (auto line : lines_of(mountinfo)) {
    auto f = words_of(line);
    auto sep = std::find(f.begin(), f.end(), std::string_view("-"));
    if (sep == f.end() || sep - f.begin() < 6 || sep + 1 == f.end() || *(sep + 1) != "cgroup2") continue;
    out.push_back({fs::path(unescape_octal(f[4])), unescape_octal(f[3])});
  }
  return out;
}

std::optional<std::string> parse_v2_path(std::string_view proc_cgroup) {
  for (auto line : lines_of(proc_cgroup))
    if (line.starts_with("0::")) return std::string(line.substr(3));
  return std::nullopt;
}

std::optional<std::string> relative_to_root(std::string_view path, std::string_view root) {
  if (!path.starts_with("/")) return std::nullopt;
  // A cgroup outside the reader's cgroup namespace shows as "/../x": not reachable.
  for (const auto& part : fs::path(path))
    if (part == "..") return std::nullopt;
  while (root.size() > 1 && root.ends_with("/")) root.remove_suffix(1);
  while (path.size() > 1 && path.ends_with("/")) path.remove_suffix(1);
  if (root == "/") return std::string(path.substr(1));
  if (path == root) return std::string();
  if (path.starts_with(root) && path.size() > root.size() && path[root.size()] == '/')
    return std::string(path.substr(root.size() + 1));
  return std::nullopt;
}

std::optional<uint64_t> parse_usage_usec(std::string_view cpu_stat) {
  for (auto line : lines_of(cpu_stat)) {
    auto w = words_of(line);
    if (w.size() == 2 && w[0] == "usage_usec") return number<uint64_t>(w[1]);
  }
  return std::nullopt;
}

std::set<std::string> parse_controllers(std::string_view text) {
  std::set<std::string> out;
  for (auto w : words_of(text)) out.emplace(w);
  return out;
}

std::vector<int> parse_pids(std::string_view cgroup_procs) {
  std::vector<int> out;
  for (auto line : lines_of(cgroup_procs))
    if (auto pid = number<int>(line); pid && *pid > 0) out.push_back(*pid);
  return out;
}

std::optional<bool> parse_populated(std::string_view cgroup_events) {
  for (auto line : lines_of(cgroup_events)) {
    auto w = words_of(line);
    if (w.size() == 2 && w[0] == "populated") {
      if (w[1] == "0") return false;
      if (w[1] == "1") return true;
    }
  }
  return std::nullopt;
}

std::string cpu_max_text(int64_t cpu_millis) {
  // A request beyond any machine (10^9 cores) means no limit rather than an overflow.
  if (cpu_millis <= 0 || cpu_millis > 1'000'000'000'000) return fmt::format("max {}", k_cpu_period_usec);
  int64_t quota = std::max<int64_t>(cpu_millis * k_cpu_period_usec / 1000, 1000);
  return fmt::format("{} {}", quota, k_cpu_period_usec);
}

std::string memory_max_text(int64_t bytes) { return bytes <= 0 ? "max" : std::to_string(bytes); }

std::string copy_cgroup_name(std::string_view instance, std::string_view node, int64_t generation,
                             std::string_view unique) {
  std::string readable = fmt::format("{}-{}-g{}", safe_part(instance), safe_part(node), generation);
  if (readable.size() > 200) readable.resize(200);
  return fmt::format("gaia-{}-{:016x}", readable, fnv1a(unique));
}

bool is_copy_cgroup_path(const fs::path& path) {
  return path.is_absolute() && path.lexically_normal() == path && path.filename().string().starts_with("gaia-") &&
         path.parent_path().filename() == "gaia";
}

// ---- The machine ----

Support prepare_parent() {
  Support out;
  auto mounts = parse_cgroup2_mounts(read_text("/proc/self/mountinfo").value_or(""));
  if (mounts.empty()) {
    out.problem = "no cgroup v2 hierarchy is mounted";
    return out;
  }
  const std::string own = parse_v2_path(read_text("/proc/self/cgroup").value_or("")).value_or("/");
  // The mount that shows our own cgroup; else the first one, from its root.
  const Mount* mount = &mounts.front();
  std::string rel;
  for (const auto& m : mounts) {
    if (auto r = relative_to_root(own, m.root)) {
      mount = &m;
      rel = *r;
      break;
    }
  }
  out.mount = mount->mount_point;
  const auto offered = parse_controllers(read_text(out.mount / "cgroup.controllers").value_or(""));

  struct Candidate {
    Support support;
    bool made = false;
  };
  std::vector<Candidate> usable;
  std::string first_error;
  for (fs::path r = rel;; r = r.parent_path()) {
    const fs::path dir = r.empty() ? out.mount : out.mount / r;
    const fs::path gaia = dir / "gaia";
    bool made = ::mkdir(gaia.c_str(), 0755) == 0;
    if (!made && errno != EEXIST) {
      if (first_error.empty())
        first_error = fmt::format("cannot create a cgroup under {}: {}", dir.string(), std::strerror(errno));
    } else if (::access((dir / "cgroup.procs").c_str(), W_OK) != 0) {
      // The app moves from gaia's own cgroup into gaia/<copy>: the kernel wants write
      // access to cgroup.procs of their common ancestor, which is `dir`.
      if (first_error.empty())
        first_error = fmt::format("cannot move processes under {}: {}", dir.string(), std::strerror(errno));
      if (made) ::rmdir(gaia.c_str());
    } else {
      // The no-internal-process rule: a controller can only be enabled in a cgroup's
      // subtree_control when that cgroup holds no process itself (the root excepted),
      // so `dir` may refuse (gaia's own cgroup usually does); gaia itself never holds
      // a process and always can, given `dir` passes the controllers down.
      enable_controllers(dir, {"cpu", "memory"});
      enable_controllers(gaia, {"cpu", "memory"});
      auto enabled = parse_controllers(read_text(gaia / "cgroup.subtree_control").value_or(""));
      Candidate c{{out.mount, gaia, enabled.count("memory") > 0, enabled.count("cpu") > 0, ""}, made};
      usable.push_back(std::move(c));
      if (usable.back().support.memory && usable.back().support.cpu) break;
    }
    if (r.empty()) break;
  }
  if (usable.empty()) {
    out.problem = first_error;
    return out;
  }
  // The deepest with both controllers, else with the most of them.
  auto score = [](const Support& s) { return int(s.memory) + int(s.cpu); };
  size_t best = 0;
  for (size_t i = 1; i < usable.size(); ++i)
    if (score(usable[i].support) > score(usable[best].support)) best = i;
  for (size_t i = 0; i < usable.size(); ++i)
    if (i != best && usable[i].made) ::rmdir(usable[i].support.parent.c_str());
  Support chosen = usable[best].support;
  remove_abandoned(chosen.parent, std::chrono::minutes(10));
  std::vector<std::string> problems, not_offered, refused;
  for (const char* c : {"memory", "cpu"}) {
    bool on = std::string_view(c) == "memory" ? chosen.memory : chosen.cpu;
    if (on) continue;
    (offered.count(c) ? refused : not_offered).push_back(c);
  }
  if (!not_offered.empty())
    problems.push_back(fmt::format("cgroup v2 at {} offers no {} controller", chosen.mount.string(),
                                   join(not_offered, " or ")));
  if (!refused.empty())
    problems.push_back(fmt::format("the {} controller{} of cgroup v2 cannot be enabled for {}", join(refused, " and "),
                                   refused.size() > 1 ? "s" : "", chosen.parent.string()));
  chosen.problem = join(problems, "; ");
  return chosen;
}

std::string limits_warning(const Support& support, bool enabled) {
  if (!enabled) return "memory and cpu limits are not enforced: cgroups are turned off (usage is read from /proc)";
  if (support.parent.empty())
    return fmt::format("memory and cpu limits are not enforced: {} (usage is read from /proc)", support.problem);
  if (!support.memory && !support.cpu)
    return fmt::format(
        "memory and cpu limits are not enforced: {} (cpu usage is read from each copy's cgroup, memory usage from "
        "/proc)",
        support.problem);
  if (!support.memory)
    return fmt::format("memory limits are not enforced: {} (memory usage is read from /proc)", support.problem);
  if (!support.cpu) return fmt::format("cpu limits are not enforced: {}", support.problem);
  return {};
}

namespace {
std::atomic<bool> g_limits_warning_taken{false};
}  // namespace

std::string take_limits_warning(bool enabled) {
  if (g_limits_warning_taken.exchange(true)) return {};
  return limits_warning(enabled ? prepare_parent() : Support{}, enabled);
}

void forget_limits_warning() { g_limits_warning_taken = false; }

// ---- One copy's cgroup ----

void to_json(nlohmann::json& j, const CopyCgroup& c) {
  j = nlohmann::json{{"path", c.path},       {"memory_limit", c.memory_limit}, {"cpu_limit", c.cpu_limit},
                     {"memory_max", c.memory_max}, {"cpu_max", c.cpu_max},   {"problem", c.problem}};
}

void from_json(const nlohmann::json& j, CopyCgroup& c) {
  c.path = j.value("path", std::string{});
  c.memory_limit = j.value("memory_limit", false);
  c.cpu_limit = j.value("cpu_limit", false);
  c.memory_max = j.value("memory_max", std::string{});
  c.cpu_max = j.value("cpu_max", std::string{});
  c.problem = j.value("problem", std::string{});
}

std::expected<CopyCgroup, std::string> create(const Support& support, const std::string& name,
                                              const Resources& request) {
  if (support.parent.empty()) return std::unexpected(support.problem.empty() ? "no cgroup parent" : support.problem);
  const fs::path path = support.parent / name;
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (errno != EEXIST)
      return std::unexpected(fmt::format("cannot create cgroup {}: {}", path.string(), std::strerror(errno)));
    // Names are unique per supervisor, so this is a leftover: usable only when empty.
    auto m = members(path);
    if (!m || !m->empty()) return std::unexpected(fmt::format("cgroup {} exists and is in use", path.string()));
  }
  CopyCgroup c;
  c.path = path.string();
  std::vector<std::string> problems{support.problem};
  if (support.memory) {
    std::string text = memory_max_text(request.memory_bytes);
    if (auto r = write_text(path / "memory.max", text)) {
      c.memory_limit = true;
      c.memory_max = text;
    } else {
      problems.push_back(r.error());
    }
  }
  if (support.cpu) {
    std::string text = cpu_max_text(request.cpu_millis);
    if (auto r = write_text(path / "cpu.max", text)) {
      c.cpu_limit = true;
      c.cpu_max = text;
    } else {
      problems.push_back(r.error());
    }
  }
  c.problem = join(problems, "; ");
  return c;
}

std::optional<CopyCgroup> read_record(const fs::path& copy_dir) {
  auto text = read_text(copy_dir / k_cgroup_file);
  if (!text) return std::nullopt;
  try {
    auto c = nlohmann::json::parse(*text).get<CopyCgroup>();
    if (c.path.empty() || !is_copy_cgroup_path(c.path)) return std::nullopt;
    return c;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

Usage read_usage(const fs::path& cgroup) {
  Usage u;
  if (auto s = read_text(cgroup / "cpu.stat")) u.cpu_usec = parse_usage_usec(*s);
  if (auto m = read_text(cgroup / "memory.current")) {
    auto w = words_of(*m);
    if (w.size() == 1) u.memory_bytes = number<int64_t>(w[0]);
  }
  return u;
}

std::optional<std::vector<int>> members(const fs::path& cgroup) {
  auto text = read_text(cgroup / "cgroup.procs");
  if (!text) return std::nullopt;
  return parse_pids(*text);
}

void signal_members(const fs::path& cgroup, int signal) {
  auto pids = members(cgroup);
  if (!pids || pids->empty()) return;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  std::vector<std::pair<int, int>> pinned;  // pid, pidfd
  bool have_pidfd = true;
  for (int pid : *pids) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) pinned.emplace_back(pid, fd);
    else if (errno == ENOSYS) have_pidfd = false;
  }
  if (have_pidfd) {
    // Pinned first, read again after: a pid still listed now is the pinned process, or
    // a new process that is itself a member; either way one of ours.
    auto again = members(cgroup).value_or(std::vector<int>{});
    std::set<int> now(again.begin(), again.end());
    for (auto [pid, fd] : pinned) {
      if (now.count(pid)) ::syscall(SYS_pidfd_send_signal, fd, signal, nullptr, 0);
      ::close(fd);
    }
    return;
  }
  for (auto [pid, fd] : pinned) ::close(fd);
#endif
  // Without pidfds (kernels before 5.3) a pid read a moment ago is the best there is.
  for (int pid : *pids) ::kill(pid, signal);
}

void kill_all(const fs::path& cgroup) {
  if (write_text(cgroup / "cgroup.kill", "1")) return;
  // Before cgroup.kill (Linux 5.14): a member may fork while the others are signalled,
  // so signal again until nobody is left, a bounded number of times.
  for (int round = 0; round < 20; ++round) {
    auto m = members(cgroup);
    if (!m || m->empty()) return;
    signal_members(cgroup, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool await_empty(const fs::path& cgroup, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::optional<bool> populated;
    if (auto e = read_text(cgroup / "cgroup.events")) populated = parse_populated(*e);
    else if (auto m = members(cgroup)) populated = !m->empty();
    else return true;  // The cgroup is gone.
    if (populated == false) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::expected<void, std::string> remove(const fs::path& cgroup, std::chrono::milliseconds timeout) {
  std::error_code ec;
  if (!fs::exists(cgroup, ec)) return {};
  if (auto m = members(cgroup); m && !m->empty()) {
    kill_all(cgroup);
    await_empty(cgroup, timeout);
  }
  if (::rmdir(cgroup.c_str()) != 0 && errno != ENOENT)
    return std::unexpected(fmt::format("cannot remove cgroup {}: {}", cgroup.string(), std::strerror(errno)));
  return {};
}

void remove_copy_cgroup(const fs::path& copy_dir) {
  if (auto c = read_record(copy_dir)) (void)remove(c->path);
}

}  // namespace gaia::process::cgroup
