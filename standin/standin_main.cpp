// gaia-kube-standin: the stand-in Kubernetes API server as a program, to try gaia's
// Kubernetes backend by hand (docs/kubernetes.md). It prints its URL and the path of a
// kubeconfig it wrote for it, and serves until SIGINT or SIGTERM.
//
//   gaia-kube-standin [--port N] [--token T]... [--tls-dir DIR] [--nodes N] [--kubeconfig PATH]

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>
#include <httplib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "standin/kube_apiserver.hpp"

namespace {

using gaia::standin::ApiServerOptions;
using gaia::standin::KubeApiServer;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: gaia-kube-standin [--port N] [--token T]... [--tls-dir DIR] [--nodes N] [--kubeconfig PATH]\n"
    "  --port N          listen on 127.0.0.1:N (default: a free port)\n"
    "  --token T         accept the bearer token T (repeatable; none: no authentication)\n"
    "  --tls-dir DIR     serve HTTPS with certificates made in DIR (client certificates accepted too)\n"
    "  --nodes N         create N Ready nodes (16 CPUs, 64Gi, 110 pods; zones zone-0..2, racks rack-0..9)\n"
    "  --kubeconfig PATH where to write the kubeconfig (default: a file in the temp dir)\n";

struct Args {
  int port = 0;
  std::vector<std::string> tokens;
  std::string tls_dir;
  int nodes = 0;
  std::string kubeconfig;
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::cerr << "gaia-kube-standin: " << flag << " needs a value\n" << kUsage;
      std::exit(2);
    }
    std::string value = argv[++i];
    try {
      if (flag == "--port") args.port = std::stoi(value);
      else if (flag == "--token") args.tokens.push_back(value);
      else if (flag == "--tls-dir") args.tls_dir = value;
      else if (flag == "--nodes") args.nodes = std::stoi(value);
      else if (flag == "--kubeconfig") args.kubeconfig = value;
      else throw std::invalid_argument(flag);
    } catch (const std::exception&) {
      std::cerr << "gaia-kube-standin: bad argument " << flag << " " << value << "\n" << kUsage;
      std::exit(2);
    }
  }
  return args;
}

json node_object(int i) {
  std::string name = fmt::format("node-{}", i);
  json capacity = {{"cpu", "16"}, {"memory", "64Gi"}, {"pods", "110"}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"topology.kubernetes.io/zone", fmt::format("zone-{}", i % 3)},
              {"gaia.io/rack", fmt::format("rack-{}", i % 10)}}}}},
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}})}}}};
}

// The nodes go in through the API, as any client's objects do.
void create_nodes(int port, const Args& args, const gaia::standin::TestCertificates* certs, int count) {
  if (count <= 0) return;
  std::unique_ptr<httplib::ClientImpl> client;
  if (certs) {
    auto tls = std::make_unique<httplib::SSLClient>("127.0.0.1", port, certs->client_cert.string(),
                                                    certs->client_key.string());
    tls->set_ca_cert_path(certs->ca_cert.string());
    client = std::move(tls);
  } else {
    client = std::make_unique<httplib::ClientImpl>("127.0.0.1", port);
  }
  if (!args.tokens.empty()) client->set_bearer_token_auth(args.tokens.front());
  for (int i = 0; i < count; ++i) {
    auto res = client->Post("/api/v1/nodes", node_object(i).dump(), "application/json");
    if (!res || res->status != 201)
      throw std::runtime_error(fmt::format("cannot create node-{}: {}", i,
                                           res ? res->body : httplib::to_string(res.error())));
  }
}

std::string kubeconfig_text(const std::string& url, const Args& args, const gaia::standin::TestCertificates* certs) {
  std::string cluster = fmt::format("    server: {}\n", url);
  if (certs) cluster += fmt::format("    certificate-authority: {}\n", certs->ca_cert.string());
  std::string user;
  if (!args.tokens.empty()) user += fmt::format("    token: {}\n", args.tokens.front());
  else if (certs)
    user += fmt::format("    client-certificate: {}\n    client-key: {}\n", certs->client_cert.string(),
                        certs->client_key.string());
  if (user.empty()) user = "    {}\n";
  return fmt::format(
      "apiVersion: v1\nkind: Config\nclusters:\n- name: standin\n  cluster:\n{}contexts:\n- name: standin\n"
      "  context:\n    cluster: standin\n    user: standin\n    namespace: default\ncurrent-context: standin\n"
      "users:\n- name: standin\n  user:\n{}",
      cluster, user);
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  // Blocked before any thread starts so that every thread inherits the mask and the
  // signals wait for sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    ApiServerOptions options;
    options.port = args.port;
    options.tokens = args.tokens;
    std::optional<gaia::standin::TestCertificates> certs;
    if (!args.tls_dir.empty()) {
      certs = gaia::standin::make_test_certificates(args.tls_dir);
      options.cert_file = certs->server_cert;
      options.key_file = certs->server_key;
      options.client_ca_file = certs->ca_cert;
    }
    KubeApiServer server(options);
    std::filesystem::path kubeconfig = args.kubeconfig;
    if (kubeconfig.empty())
      kubeconfig = std::filesystem::temp_directory_path() / fmt::format("gaia-kube-standin-{}.kubeconfig", ::getpid());
    {
      std::ofstream out(kubeconfig, std::ios::trunc);
      out << kubeconfig_text(server.url(), args, certs ? &*certs : nullptr);
      if (!out) throw std::runtime_error("cannot write " + kubeconfig.string());
    }
    std::filesystem::permissions(kubeconfig, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    create_nodes(server.port(), args, certs ? &*certs : nullptr, args.nodes);
    std::cout << "url: " << server.url() << "\nkubeconfig: " << kubeconfig.string() << std::endl;
    int received = 0;
    sigwait(&signals, &received);
    std::cout << "gaia-kube-standin: stopping (" << (received == SIGINT ? "SIGINT" : "SIGTERM") << ")" << std::endl;
  } catch (const std::exception& e) {
    std::cerr << "gaia-kube-standin: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
