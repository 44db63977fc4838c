#include "standin/test_cluster.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <stdexcept>

#include "kube/kubeconfig.hpp"

namespace gaia::standin {

namespace {

constexpr const char* k_token = "gaia-test-token";

std::string random_id() {
  std::random_device rd;
  std::mt19937_64 rng(rd() ^ static_cast<uint64_t>(::getpid()));
  return fmt::format("{:08x}", static_cast<uint32_t>(rng()));
}

}  // namespace

TestCluster::TestCluster(const std::filesystem::path& dir, TestClusterOptions options) : m_dir(dir), m_id(random_id()) {
  m_namespace = "gaia-test-" + m_id;
  if (const char* real = std::getenv("GAIA_TEST_KUBECONFIG"); real && *real) {
    m_kubeconfig = real;
    if (const char* ctx = std::getenv("GAIA_TEST_KUBE_CONTEXT"); ctx && *ctx) m_context = ctx;
  } else {
    ApiServerOptions so;
    so.tokens = {k_token};
    so.history = options.history;
    if (options.tls) {
      auto certs = make_test_certificates(dir / "certs");
      so.cert_file = certs.server_cert;
      so.key_file = certs.server_key;
      m_ca = certs.ca_cert;
    }
    m_server = std::make_unique<KubeApiServer>(so);
    m_kubeconfig = write_kubeconfig(dir / "kubeconfig", k_token, m_ca);
  }
  auto config = kube::load_kubeconfig(m_kubeconfig, m_context);
  if (!config) throw std::runtime_error("test kubeconfig: " + config.error().front().message);
  kube::RetryPolicy retry;
  retry.cap = std::chrono::milliseconds(500);
  m_client = std::make_shared<kube::Client>(std::move(*config), retry);
  auto ns = m_client->create("/api/v1/namespaces",
                             {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", m_namespace}}}});
  if (!ns) throw std::runtime_error("creating the test namespace: " + ns.error().message);
  m_kubelet = std::make_unique<FakeKubelet>(m_client, m_namespace, options.ready_after);
  m_kubelet->start();
}

TestCluster::~TestCluster() {
  m_kubelet.reset();
  if (m_client) {
    (void)m_client->remove("/api/v1/namespaces/" + m_namespace);
    for (const auto& n : m_nodes) (void)m_client->remove("/api/v1/nodes/" + n);
  }
}

std::string TestCluster::node_selector() const { return "gaia.io/test=" + m_id; }

std::string TestCluster::node_name(int i) const { return fmt::format("gaia-{}-n{}", m_id, i); }

void TestCluster::add_nodes(int n, int zones, int racks, const std::string& cpu, const std::string& memory) {
  for (int i = 0; i < n; ++i) {
    FakeNode node;
    node.name = node_name(i);
    node.cpu = cpu;
    node.memory = memory;
    node.address = fmt::format("10.{}.{}.{}", 200 + (i >> 16) % 50, (i >> 8) & 255, i & 255);
    // disk=ssd: the example stack's storage roles select it.
    node.labels = {{"gaia.io/test", m_id},
                   {"disk", "ssd"},
                   {"topology.kubernetes.io/zone", fmt::format("zone-{}", i % std::max(zones, 1))},
                   {"gaia.io/rack", fmt::format("rack-{}", i % std::max(racks, 1))}};
    auto added = m_kubelet->add_node(node);
    if (!added) throw std::runtime_error("registering node " + node.name + ": " + added.error().message);
    m_nodes.push_back(node.name);
  }
}

std::filesystem::path TestCluster::write_kubeconfig(const std::filesystem::path& path, const std::string& token,
                                                     const std::filesystem::path& ca_file) const {
  if (!m_server) return m_kubeconfig;
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\ncurrent-context: standin\n"
      << "clusters:\n- name: standin\n  cluster:\n    server: " << m_server->url() << "\n";
  if (!ca_file.empty()) out << "    certificate-authority: " << ca_file.string() << "\n";
  out << "users:\n- name: tester\n  user:\n    token: " << token << "\n"
      << "contexts:\n- name: standin\n  context:\n    cluster: standin\n    user: tester\n    namespace: " << m_namespace
      << "\n";
  return path;
}

}  // namespace gaia::standin
