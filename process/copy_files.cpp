#include "process/copy_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "lib/codec.hpp"

namespace gaia::process {

void to_json(nlohmann::json& j, const CopyConfig& c) {
  j = nlohmann::json{{"instance", c.instance},     {"node", c.node},           {"generation", c.generation},
                     {"command", c.command},       {"env", c.env},             {"grace_ms", c.grace_ms},
                     {"address", c.address},       {"ports", c.ports},         {"health", c.health},
                     {"started_ms", c.started_ms}, {"log_max_bytes", c.log_max_bytes}, {"log_keep", c.log_keep}};
  j["resources"] = c.resources;
  j["cgroup"] = c.cgroup;
}

void from_json(const nlohmann::json& j, CopyConfig& c) {
  c.instance = j.at("instance").get<std::string>();
  c.node = j.at("node").get<std::string>();
  c.generation = j.at("generation").get<int64_t>();
  c.command = j.at("command").get<std::vector<std::string>>();
  c.env = j.value("env", std::map<std::string, std::string>{});
  c.grace_ms = j.value("grace_ms", int64_t{10'000});
  c.address = j.value("address", std::string{});
  c.ports = j.value("ports", std::map<std::string, int>{});
  c.health = j.value("health", HealthCheck{});
  c.started_ms = j.value("started_ms", int64_t{0});
  c.log_max_bytes = j.value("log_max_bytes", uint64_t{10 << 20});
  c.log_keep = j.value("log_keep", 1);
  c.resources = j.value("resources", Resources{});
  c.cgroup = j.value("cgroup", true);
}

void to_json(nlohmann::json& j, const CopyPids& p) {
  j = nlohmann::json{{"shim_pid", p.shim_pid},     {"shim_start", p.shim_start}, {"child_pid", p.child_pid},
                     {"child_pgid", p.child_pgid}, {"child_start", p.child_start}};
}

void from_json(const nlohmann::json& j, CopyPids& p) {
  p.shim_pid = j.at("shim_pid").get<int>();
  p.shim_start = j.at("shim_start").get<uint64_t>();
  p.child_pid = j.value("child_pid", 0);
  p.child_pgid = j.value("child_pgid", 0);
  p.child_start = j.value("child_start", uint64_t{0});
}

void to_json(nlohmann::json& j, const CopyExit& e) {
  j = nlohmann::json{{"ended_ms", e.ended_ms}, {"reason", e.reason}};
  if (e.exit_code) j["exit_code"] = *e.exit_code;
  if (e.signal) j["signal"] = e.signal;
  if (e.stopped) j["stopped"] = true;
  if (e.never_started) j["never_started"] = true;
}

void from_json(const nlohmann::json& j, CopyExit& e) {
  if (j.contains("exit_code")) e.exit_code = j.at("exit_code").get<int>();
  e.signal = j.value("signal", 0);
  e.ended_ms = j.value("ended_ms", int64_t{0});
  e.reason = j.value("reason", std::string{});
  e.stopped = j.value("stopped", false);
  e.never_started = j.value("never_started", false);
}

void to_json(nlohmann::json& j, const StopRequest& s) {
  j = nlohmann::json{{"grace_ms", s.grace_ms}, {"reason", s.reason}, {"requested_ms", s.requested_ms}};
}

void from_json(const nlohmann::json& j, StopRequest& s) {
  s.grace_ms = j.value("grace_ms", int64_t{10'000});
  s.reason = j.value("reason", std::string{});
  s.requested_ms = j.value("requested_ms", int64_t{0});
}

std::expected<void, std::string> write_file_atomic(const std::filesystem::path& path, const std::string& text) {
  // The temporary name carries the pid, so two processes writing the same file at once
  // never write into one temporary file; the last rename wins whole.
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(fmt::format("cannot write {}: {}", tmp.string(), std::strerror(errno)));
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return std::unexpected(fmt::format("cannot write {}: {}", tmp.string(), err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return std::unexpected(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(), err));
  }
  return {};
}

template <class T>
std::expected<std::optional<T>, std::string> read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int err = errno;
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::optional<T>{};
    return std::unexpected(fmt::format("cannot read {}: {}", path.string(), std::strerror(err)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return std::optional<T>(nlohmann::json::parse(ss.str()).get<T>());
  } catch (const std::exception& e) {
    return std::unexpected(fmt::format("corrupt {}: {}", path.string(), e.what()));
  }
}

template std::expected<std::optional<CopyConfig>, std::string> read_json(const std::filesystem::path&);
template std::expected<std::optional<CopyPids>, std::string> read_json(const std::filesystem::path&);
template std::expected<std::optional<CopyExit>, std::string> read_json(const std::filesystem::path&);
template std::expected<std::optional<StopRequest>, std::string> read_json(const std::filesystem::path&);
template std::expected<std::optional<nlohmann::json>, std::string> read_json(const std::filesystem::path&);

std::vector<CopyDir> list_copies(const std::filesystem::path& instance_dir) {
  std::vector<CopyDir> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(instance_dir, ec)) {
    // Names starting with a dot are the lock and copies being created.
    if (!entry.is_directory() || entry.path().filename().string().starts_with(".")) continue;
    auto config = read_json<CopyConfig>(entry.path() / k_copy_file);
    if (!config || !*config) continue;
    out.push_back({entry.path(), std::move(**config)});
  }
  std::sort(out.begin(), out.end(), [](const CopyDir& a, const CopyDir& b) {
    if (a.config.started_ms != b.config.started_ms) return a.config.started_ms > b.config.started_ms;
    if (a.config.generation != b.config.generation) return a.config.generation > b.config.generation;
    return a.dir.filename() > b.dir.filename();
  });
  return out;
}

std::string signal_name(int signal) {
  // sigabbrev_np is glibc's table of names without the SIG prefix.
  const char* abbrev = ::sigabbrev_np(signal);
  if (!abbrev) return fmt::format("signal {}", signal);
  return fmt::format("SIG{}", abbrev);
}

std::string describe_exit(std::optional<int> exit_code, int signal) {
  if (signal) return fmt::format("killed by signal {} ({})", signal, signal_name(signal));
  return fmt::format("exited with code {}", exit_code.value_or(0));
}

void note_change(const std::filesystem::path& copy_dir) {
  const auto path = copy_dir.parent_path().parent_path() / k_changes_file;
  // O_APPEND: concurrent writers (supervisors, gaia processes) each add their byte.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;  // A missed note costs latency only: the next pass reads everything.
  [[maybe_unused]] auto n = ::write(fd, "c", 1);
  ::close(fd);
}

ChangeMarker change_marker(const std::filesystem::path& run_dir) {
  struct stat st {};
  if (::stat((run_dir / k_changes_file).c_str(), &st) != 0) return {};
  return {static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size)};
}

void trim_changes(const std::filesystem::path& run_dir, uint64_t bound) {
  if (change_marker(run_dir).size > bound) ::truncate((run_dir / k_changes_file).c_str(), 0);
}

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::expected<FileLock, std::string> FileLock::acquire(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    std::string err = std::strerror(errno);
    ::close(fd);
    return std::unexpected(fmt::format("cannot lock {}: {}", path.string(), err));
  }
  return FileLock(fd);
}

FileLock::~FileLock() {
  if (m_fd >= 0) ::close(m_fd);  // Closing the last descriptor releases the flock.
}

}  // namespace gaia::process
