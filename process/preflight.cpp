#include "process/preflight.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "process/proc.hpp"

namespace gaia::process {

namespace fs = std::filesystem;

namespace {

bool is_executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// An address parsed into a sockaddr, for bind and for comparing with /proc/net.
struct ParsedAddress {
  int family = AF_INET;
  in_addr v4{};
  in6_addr v6{};
};

std::optional<ParsedAddress> parse_bind_address(const std::string& address) {
  ParsedAddress a;
  if (::inet_pton(AF_INET, address.c_str(), &a.v4) == 1) return a;
  a.family = AF_INET6;
  if (::inet_pton(AF_INET6, address.c_str(), &a.v6) == 1) return a;
  return std::nullopt;
}

// /proc/net/tcp prints each 32-bit word of an address as the hex of its value in host
// byte order.
bool parse_proc_address(const std::string& hex, int family, ParsedAddress& out) {
  size_t words = family == AF_INET ? 1 : 4;
  if (hex.size() != words * 8) return false;
  uint32_t w[4] = {};
  for (size_t i = 0; i < words; ++i) w[i] = static_cast<uint32_t>(std::stoul(hex.substr(i * 8, 8), nullptr, 16));
  out.family = family;
  if (family == AF_INET) std::memcpy(&out.v4, w, 4);
  else std::memcpy(&out.v6, w, 16);
  return true;
}

bool is_wildcard(const ParsedAddress& a) {
  if (a.family == AF_INET) return a.v4.s_addr == INADDR_ANY;
  return IN6_IS_ADDR_UNSPECIFIED(&a.v6);
}

bool same_address(const ParsedAddress& a, const ParsedAddress& b) {
  if (a.family != b.family) return false;
  if (a.family == AF_INET) return a.v4.s_addr == b.v4.s_addr;
  return std::memcmp(&a.v6, &b.v6, sizeof(in6_addr)) == 0;
}

// The inodes of sockets bound to `port` on `target` or on a wildcard address.
std::vector<std::string> socket_inodes(const ParsedAddress& target, int port) {
  std::vector<std::string> out;
  for (auto [file, family] : {std::pair{"/proc/net/tcp", AF_INET}, std::pair{"/proc/net/tcp6", AF_INET6}}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // The header.
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(ls >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) continue;
      auto colon = local.find(':');
      if (colon == std::string::npos) continue;
      if (static_cast<int>(std::stoul(local.substr(colon + 1), nullptr, 16)) != port) continue;
      ParsedAddress a;
      if (!parse_proc_address(local.substr(0, colon), family, a)) continue;
      // A socket in TIME_WAIT has inode 0: nobody holds it, and bind with SO_REUSEADDR
      // would not have failed for it.
      if (inode == "0") continue;
      bool v6_wildcard_covers_v4 = family == AF_INET6 && is_wildcard(a) && target.family == AF_INET;
      if (same_address(a, target) || (a.family == target.family && is_wildcard(a)) || v6_wildcard_covers_v4)
        out.push_back(inode);
    }
  }
  return out;
}

}  // namespace

std::expected<std::string, std::string> find_executable(const std::string& name, const std::string& path_env,
                                                        const std::string& work_dir) {
  if (name.empty()) return std::unexpected("the command is empty");
  if (name.find('/') != std::string::npos) {
    fs::path p = fs::path(name).is_absolute() ? fs::path(name) : fs::path(work_dir) / name;
    std::error_code ec;
    if (!fs::exists(p, ec)) return std::unexpected(fmt::format("executable `{}` not found", p.string()));
    if (!is_executable_file(p)) return std::unexpected(fmt::format("`{}` is not an executable file", p.string()));
    return p.string();
  }
  std::string not_executable;
  std::istringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    // An empty PATH entry means the current directory, which for the app is its work dir.
    fs::path p = (dir.empty() ? fs::path(work_dir) : fs::path(dir)) / name;
    if (is_executable_file(p)) return p.string();
    std::error_code ec;
    if (not_executable.empty() && fs::is_regular_file(p, ec)) not_executable = p.string();
  }
  if (!not_executable.empty())
    return std::unexpected(fmt::format("`{}` found at {} is not executable", name, not_executable));
  return std::unexpected(fmt::format("executable `{}` not found on PATH ({})", name, path_env));
}

std::expected<void, std::string> check_local_address(const std::string& address) {
  auto a = parse_bind_address(address);
  if (!a) return std::unexpected(fmt::format("instance address `{}` is not an IP address", address));
  // Linux routes all of 127.0.0.0/8 to the loopback device, configured or not.
  if (a->family == AF_INET && (ntohl(a->v4.s_addr) >> 24) == 127) return {};
  if (a->family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&a->v6)) return {};
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    return std::unexpected(fmt::format("cannot list the network interfaces: {}", std::strerror(errno)));
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != a->family) continue;
    ParsedAddress b;
    b.family = a->family;
    if (a->family == AF_INET) b.v4 = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr;
    else b.v6 = reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    found = same_address(*a, b);
  }
  ::freeifaddrs(list);
  if (!found)
    return std::unexpected(fmt::format("instance address {} is not an address of this machine", address));
  return {};
}

std::string find_port_holder(const std::string& address, int port) {
  auto target = parse_bind_address(address);
  if (!target) return {};
  std::vector<std::string> inodes = socket_inodes(*target, port);
  if (inodes.empty()) return {};
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    // Other users' descriptors are not readable: their sockets stay unattributed.
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      std::string link = fs::read_symlink(fd.path(), link_ec).string();
      if (link_ec || !link.starts_with("socket:[")) continue;
      std::string inode = link.substr(8, link.size() - 9);
      for (const auto& want : inodes)
        if (inode == want) return fmt::format("{} (pid {})", process_name(std::stoi(pid)), pid);
    }
  }
  return {};
}

std::expected<void, std::string> check_port_free(const std::string& address, int port) {
  auto a = parse_bind_address(address);
  if (!a) return std::unexpected(fmt::format("instance address `{}` is not an IP address", address));
  int fd = ::socket(a->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::unexpected(fmt::format("cannot check port {}: socket: {}", port, std::strerror(errno)));
  // SO_REUSEADDR as servers set it: a port whose last connection is in TIME_WAIT is free
  // for them, and only a socket that is really bound makes bind fail.
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (a->family == AF_INET) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr = a->v4;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_addr = a->v6;
    sa.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  int err = errno;
  ::close(fd);
  if (rc == 0) return {};
  if (err == EADDRINUSE) {
    std::string holder = find_port_holder(address, port);
    return std::unexpected(fmt::format("port {} on {} is held by {}", port, address,
                                       holder.empty() ? "another process" : holder));
  }
  return std::unexpected(fmt::format("cannot bind port {} on {}: {}", port, address, std::strerror(err)));
}

std::set<int> loopback_octets_in_use(std::string_view proc_net_tcp) {
  std::set<int> used;
  std::istringstream in{std::string(proc_net_tcp)};
  std::string line;
  std::getline(in, line);  // The header.
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string sl, local;
    if (!(ls >> sl >> local)) continue;
    ParsedAddress a;
    auto colon = local.find(':');
    if (colon == std::string::npos || !parse_proc_address(local.substr(0, colon), AF_INET, a)) continue;
    const auto* b = reinterpret_cast<const unsigned char*>(&a.v4.s_addr);  // Network order.
    if (b[0] == 127) used.insert(b[1]);
  }
  return used;
}

std::string pick_loopback_subnet(const std::string& store_path, const std::set<int>& used) {
  // FNV-1a: stable across runs and machines, unlike std::hash.
  uint32_t h = 2166136261u;
  for (unsigned char c : store_path) h = (h ^ c) * 16777619u;
  for (int k = 0; k < 255; ++k) {
    int octet = 1 + static_cast<int>((h + static_cast<uint32_t>(k)) % 255);
    if (!used.count(octet)) return fmt::format("127.{}.0.0/16", octet);
  }
  return "127.64.0.0/16";  // Every range has a socket: the port check at start decides.
}

std::string default_loopback_subnet(const std::string& store_path) {
  std::ifstream in("/proc/net/tcp");
  std::stringstream text;
  text << in.rdbuf();
  return pick_loopback_subnet(store_path, loopback_octets_in_use(text.str()));
}

}  // namespace gaia::process
