#pragma once
// A real etcd (the Debian package's /usr/bin/etcd, installed by scripts/setup.sh) for the
// etcd store's tests: a single member on 127.0.0.1 with free client and peer ports and a
// scratch data directory, started by the constructor (which waits until it answers) and
// killed by the destructor, so no etcd outlives its test even when the test fails. The
// child also asks the kernel to kill it when the test process dies (PR_SET_PDEATHSIG),
// which covers a crash or ctest's timeout.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "net/http.hpp"
#include "tests/temp_dir.hpp"

namespace gaia::testing {

// Two distinct ports nothing listens on right now (the kernel's choice for port 0).
inline std::pair<int, int> free_port_pair() {
  int fds[2];
  int ports[2];
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fds[i] < 0 || ::bind(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      throw std::runtime_error("cannot bind a free port on 127.0.0.1");
    socklen_t len = sizeof addr;
    ::getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr), &len);
    ports[i] = ntohs(addr.sin_port);
  }
  ::close(fds[0]);
  ::close(fds[1]);
  return {ports[0], ports[1]};
}

inline std::string etcd_binary() {
  if (const char* env = std::getenv("GAIA_TEST_ETCD"); env && *env) return env;
  return "/usr/bin/etcd";
}

class EtcdServer {
 public:
  struct Options {
    // Serve clients over TLS with this certificate and key (PEM); plain HTTP when empty.
    std::filesystem::path cert_file;
    std::filesystem::path key_file;
    // How the readiness check connects to a TLS server (its CA, a client certificate).
    http::TlsOptions client_tls;
    std::vector<std::string> extra_args;
  };

  EtcdServer() : EtcdServer(Options{}) {}
  explicit EtcdServer(Options options) : m_options(std::move(options)) {
    if (!std::filesystem::exists(etcd_binary()))
      throw std::runtime_error(etcd_binary() +
                               " is missing: install etcd-server (bash scripts/setup.sh)");
    // A port taken between choosing it and etcd binding it makes etcd exit: try again.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (start()) return;
    }
    throw std::runtime_error("etcd did not start; its log:\n" + log());
  }
  ~EtcdServer() { kill(); }
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  const std::string& endpoint() const { return m_endpoint; }
  pid_t pid() const { return m_pid; }

  // Freezes the process (SIGSTOP): its sockets stay open and accept connections, but
  // nothing answers, like a member stuck in a long GC pause or swapped out.
  // Returns once every thread has stopped: the signal alone only starts the stop, and a
  // thread on another CPU could still answer a request sent right after it.
  void pause() {
    ::kill(m_pid, SIGSTOP);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!all_threads_stopped() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void resume() { ::kill(m_pid, SIGCONT); }
  // Kills the member and starts it again on the same ports and data directory, as a
  // crash followed by a restart by its supervisor: what it committed survives. Waits
  // until it answers again.
  void restart() {
    kill();
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (start(m_client_port, m_peer_port)) return;
    }
    throw std::runtime_error("etcd did not restart; its log:\n" + log());
  }
  // SIGKILL, and reaps the process; idempotent.
  void kill() {
    if (m_pid <= 0) return;
    ::kill(m_pid, SIGKILL);  // Also ends a stopped process.
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_pid = -1;
  }

  std::string log() const {
    std::ifstream in(m_dir.path() / "etcd.log");
    std::stringstream text;
    text << in.rdbuf();
    std::string all = text.str();
    return all.size() > 4000 ? all.substr(all.size() - 4000) : all;
  }

 private:
  // Starts a member with a fresh data directory on free ports, or, given the ports of a
  // member that ran before, on those ports with its data directory as it was left.
  bool start(int client_port = 0, int peer_port = 0) {
    bool fresh = client_port == 0;
    if (fresh) std::tie(client_port, peer_port) = free_port_pair();
    m_client_port = client_port;
    m_peer_port = peer_port;
    bool tls = !m_options.cert_file.empty();
    m_endpoint = fmt::format("{}://127.0.0.1:{}", tls ? "https" : "http", client_port);
    std::string peer = fmt::format("http://127.0.0.1:{}", peer_port);
    std::vector<std::string> args = {
        etcd_binary(), "--name", "gaia-test",
        "--data-dir", (m_dir.path() / "data").string(),
        "--listen-client-urls", m_endpoint, "--advertise-client-urls", m_endpoint,
        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
        "--initial-cluster", "gaia-test=" + peer,
        // A lone member elects itself at once with short raft timers; they also bring
        // the shortest lease TTL etcd grants down to one second.
        "--heartbeat-interval", "10", "--election-timeout", "100",
        "--logger", "zap", "--log-level", "warn"};
    if (tls) {
      args.insert(args.end(), {"--cert-file", m_options.cert_file.string(), "--key-file",
                               m_options.key_file.string()});
    }
    args.insert(args.end(), m_options.extra_args.begin(), m_options.extra_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::string log_path = (m_dir.path() / "etcd.log").string();
    if (fresh) std::filesystem::remove_all(m_dir.path() / "data");

    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      // Only async-signal-safe calls between fork and exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
      int out = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      int in = ::open("/dev/null", O_RDONLY);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      if (in >= 0) ::dup2(in, 0);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    m_pid = pid;
    if (wait_ready()) return true;
    kill();
    return false;
  }

  // Polls until a range answers (or asks for credentials), the process exits, or 20 s
  // pass.
  bool wait_ready() {
    http::Client client(m_options.client_tls);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(m_pid, &status, WNOHANG) == m_pid) {
        m_pid = -1;
        return false;
      }
      http::Request request;
      request.url = m_endpoint + "/v3/kv/range";
      request.body = R"({"key":"AA==","count_only":true})";
      request.timeout = std::chrono::milliseconds(500);
      auto r = client.post(request);
      if (r && r->body.find("header") != std::string::npos) return true;
      // With authentication enabled (a restart), asking for credentials is serving too.
      if (!r && r.error().body.find("user name is empty") != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Whether /proc says every thread of the process is stopped ('T').
  bool all_threads_stopped() const {
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(
             fmt::format("/proc/{}/task", m_pid), ec)) {
      std::ifstream in(task.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      // "tid (comm) S ...": the state follows the last ')', as comm may hold any character.
      size_t close = stat.rfind(')');
      if (close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'T') return false;
    }
    return !ec;
  }

  Options m_options;
  gaia::test::TempDir m_dir{"gaia-etcd"};
  pid_t m_pid = -1;
  std::string m_endpoint;
  int m_client_port = 0, m_peer_port = 0;
};


// A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it,
// made with the openssl command in `dir` (ca.pem, server.pem/.key, client.pem/.key).
inline void make_test_certificates(const std::filesystem::path& dir) {
  auto run = [](const std::string& command) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0)
      throw std::runtime_error("failed: " + command);
  };
  std::string d = dir.string();
  std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  run(fmt::format("openssl req -x509 {} -keyout {d}/ca.key -out {d}/ca.pem -days 2 -subj /CN=gaia-test-ca", ec,
                  fmt::arg("d", d)));
  for (const char* who : {"server", "client"}) {
    std::string ext = std::string(who) == "server" ? "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n"
                                                   : "extendedKeyUsage=clientAuth\n";
    std::ofstream(dir / fmt::format("{}.ext", who)) << ext;
    run(fmt::format("openssl req {} -keyout {d}/{w}.key -out {d}/{w}.csr -subj /CN={w}", ec, fmt::arg("d", d),
                    fmt::arg("w", who)));
    run(fmt::format("openssl x509 -req -in {d}/{w}.csr -CA {d}/ca.pem -CAkey {d}/ca.key "
                    "-CAcreateserial -out {d}/{w}.pem -days 2 -extfile {d}/{w}.ext",
                    fmt::arg("d", d), fmt::arg("w", who)));
  }
}

}  // namespace gaia::testing
