#pragma once
// cgroup v2 for the process backend (docs/backends.md, "Usage and limits"). Each copy's
// app runs in a cgroup of its own, made by its supervisor before the app runs:
//
//   <cgroup2 mount>/<ancestor of gaia's own cgroup>/gaia/gaia-<copy>-<hash>/
//
// which gives exact membership (a process that calls setsid and double-forks is still
// a member, so it is still counted and still stopped), CPU usage (cpu.stat usage_usec,
// always present in v2), and, where the memory and cpu controllers can be enabled in
// the parent's cgroup.subtree_control, memory usage (memory.current) and the role's
// limits (memory.max, cpu.max). What a copy got is written to cgroup.json in its copy
// dir, so every gaia process reads the same facts. Where no cgroup can be made (no
// cgroup2 mount, no permission), usage is read from /proc and limits are not enforced.
//
// The parsers take strings and touch no file, so they are tested without a cgroup.

#include <chrono>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lib/workload.hpp"

namespace gaia::process::cgroup {

inline constexpr const char* k_cgroup_file = "cgroup.json";  // In the copy dir.
inline constexpr int64_t k_cpu_period_usec = 100'000;         // The kernel's default period.

// ---- Parsers (pure) ----

// A cgroup2 mount as /proc/self/mountinfo shows it: where it is mounted, and which
// cgroup of the hierarchy is its root ("/" unless a subtree was bind-mounted).
struct Mount {
  std::filesystem::path mount_point;
  std::string root;
  bool operator==(const Mount&) const = default;
};

// Every cgroup2 mount of a /proc/self/mountinfo text (octal escapes like \040 decoded).
std::vector<Mount> parse_cgroup2_mounts(std::string_view mountinfo);
// The v2 cgroup of a /proc/PID/cgroup text: "0::/user.slice/x.scope" gives
// "/user.slice/x.scope". Nothing when there is no "0::" line.
std::optional<std::string> parse_v2_path(std::string_view proc_cgroup);
// `path` relative to a mount whose root is `root` ("/a/b" under "/a" is "b", "/" under
// "/" is ""), or nothing when the cgroup is outside what the mount shows.
std::optional<std::string> relative_to_root(std::string_view path, std::string_view root);
// usage_usec of a cpu.stat text.
std::optional<uint64_t> parse_usage_usec(std::string_view cpu_stat);
// The names of a cgroup.controllers or cgroup.subtree_control text ("cpu io memory").
std::set<std::string> parse_controllers(std::string_view text);
// The pids of a cgroup.procs text, one a line.
std::vector<int> parse_pids(std::string_view cgroup_procs);
// "populated" of a cgroup.events text.
std::optional<bool> parse_populated(std::string_view cgroup_events);
// cpu.max for a CPU request in millicores: 500 -> "50000 100000", 0 -> "max 100000".
// The kernel refuses a quota under 1000 us, so a tiny request gets that much.
std::string cpu_max_text(int64_t cpu_millis);
// memory.max for a memory request in bytes: the number, or "max" when 0.
std::string memory_max_text(int64_t bytes);
// The name of a copy's cgroup: "gaia-" and the instance, node and generation made safe
// for a path (at most 200 characters), then a hash of `unique` (the copy dir and its
// supervisor), so a copy started again in the same dir never reuses an older cgroup.
std::string copy_cgroup_name(std::string_view instance, std::string_view node, int64_t generation,
                             std::string_view unique);
// Whether `path` has the shape of a copy's cgroup (<...>/gaia/gaia-*): only such a
// directory is ever killed or removed, so a corrupt cgroup.json cannot name another.
bool is_copy_cgroup_path(const std::filesystem::path& path);

// ---- The machine ----

// Where copies' cgroups can be made, and which controllers they get.
struct Support {
  std::filesystem::path mount;   // The cgroup2 mount used; empty when there is none.
  std::filesystem::path parent;  // The gaia dir copies' cgroups are made in; empty when none is usable.
  bool memory = false, cpu = false;  // Controllers enabled for the copies' cgroups.
  std::string problem;  // Why a limit is not enforced; empty when both are.
};

// Finds a cgroup2 mount and a parent dir gaia may write, trying <ancestor>/gaia for
// gaia's own cgroup and each of its ancestors up to the mount root (the deepest first),
// and enables cpu and memory in the subtree_control along the way where they are
// offered. The first dir that gets both controllers wins, else the first usable one.
// Idempotent: the supervisor of every copy calls it before making the copy's cgroup.
Support prepare_parent();

// The warning for `support`, "" when memory and cpu limits are both enforced.
// `enabled` is false when ProcessOptions turned cgroups off.
std::string limits_warning(const Support& support, bool enabled);

// The limits warning of this machine the first time it is asked for in this process
// (prepare_parent is run then), "" every later time and when there is nothing to warn.
std::string take_limits_warning(bool enabled);
// Makes the next take_limits_warning report again: for tests, which run many backends
// in one process.
void forget_limits_warning();

// ---- One copy's cgroup ----

// cgroup.json: what a copy's supervisor made. Written before the app runs, always
// (with an empty path when the copy has no cgroup), so every gaia process reads the
// same facts.
struct CopyCgroup {
  std::string path;           // The cgroup dir; "" when the copy has none.
  bool memory_limit = false;  // memory.max was written (memory.current is readable).
  bool cpu_limit = false;     // cpu.max was written.
  std::string memory_max, cpu_max;  // What was written.
  std::string problem;        // Why a limit is not enforced, or why there is no cgroup.
};
void to_json(nlohmann::json& j, const CopyCgroup& c);
void from_json(const nlohmann::json& j, CopyCgroup& c);

// Makes the cgroup `name` under support.parent and writes the limits of `request` the
// controllers allow. An error when support.parent is empty or mkdir fails.
std::expected<CopyCgroup, std::string> create(const Support& support, const std::string& name,
                                              const Resources& request);
// The cgroup of the copy in `copy_dir`, when cgroup.json names one of copy-cgroup shape.
std::optional<CopyCgroup> read_record(const std::filesystem::path& copy_dir);

struct Usage {
  std::optional<uint64_t> cpu_usec;        // cpu.stat usage_usec: every member, past ones too.
  std::optional<int64_t> memory_bytes;     // memory.current, where the controller is enabled.
};
Usage read_usage(const std::filesystem::path& cgroup);
// The pids in cgroup.procs; nothing when the cgroup is gone or unreadable.
std::optional<std::vector<int>> members(const std::filesystem::path& cgroup);
// Sends `signal` to every member. Each is pinned by a pidfd and then seen again in
// cgroup.procs before it is signalled, so a pid the kernel handed to another process
// in between is never signalled.
void signal_members(const std::filesystem::path& cgroup, int signal);
// SIGKILLs every member: cgroup.kill where the kernel has it (it also catches processes
// forked meanwhile), else signal_members(SIGKILL) until none is left (a few rounds).
void kill_all(const std::filesystem::path& cgroup);
// Waits until nothing runs in the cgroup (zombies do not count). False on timeout.
bool await_empty(const std::filesystem::path& cgroup, std::chrono::milliseconds timeout);
// Kills what is left, waits for it and removes the cgroup. Success when it is gone
// (or was never there).
std::expected<void, std::string> remove(const std::filesystem::path& cgroup,
                                        std::chrono::milliseconds timeout = std::chrono::milliseconds(1000));
// The removal of a copy: removes the cgroup its cgroup.json names, if any. Errors are
// left for the next removal to retry.
void remove_copy_cgroup(const std::filesystem::path& copy_dir);

}  // namespace gaia::process::cgroup
