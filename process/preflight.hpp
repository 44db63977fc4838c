#pragma once
// What a user can get wrong about a copy before it is spawned, checked by the process
// backend's `start` (docs/backends.md). A failed check is recorded as the copy's
// failure, with a reason naming the culprit, instead of a process that would die at
// once with a message nobody reads.

#include <expected>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace gaia::process {

// The path of the executable `name` as the app would find it: a name with a '/' is
// taken relative to `work_dir`; a bare name is searched in `path_env` (a PATH value).
// The error names the executable and, for a bare name, the PATH searched.
std::expected<std::string, std::string> find_executable(const std::string& name, const std::string& path_env,
                                                        const std::string& work_dir);

// Whether `address` (IPv4 or IPv6) belongs to this machine: loopback 127.0.0.0/8 and
// ::1 always do; any other address must be configured on an interface.
std::expected<void, std::string> check_local_address(const std::string& address);

// Whether TCP port `port` can be bound on `address`. When it is in use, the error names
// the process holding it when /proc tells ("port 6379 on 127.1.0.2 is held by
// redis-server (pid 4711)").
std::expected<void, std::string> check_port_free(const std::string& address, int port);

// The process listening on (or bound to) TCP `port` on `address` or on a wildcard
// address: "redis-server (pid 4711)", or "" when /proc does not tell.
std::string find_port_holder(const std::string& address, int port);

// The loopback /16 a new process cluster of the store at `store_path` gets by default:
// 127.X.0.0/16 with X from a hash of the path (so the same store always gets the same
// range), skipping ranges where a TCP socket is already bound (another process cluster
// on this machine, a test running beside it), so two clusters on one machine never
// hand out the same address and port. X is never 0 (127.0.0.1 is everybody's).
std::string default_loopback_subnet(const std::string& store_path);
// Its two halves: the second octets of 127.X.Y.Z addresses with a TCP socket in the text
// of /proc/net/tcp, and the choice from the path's hash among the octets not in `used`
// (never 0).
std::set<int> loopback_octets_in_use(std::string_view proc_net_tcp);
std::string pick_loopback_subnet(const std::string& store_path, const std::set<int>& used);

}  // namespace gaia::process
