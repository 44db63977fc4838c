#pragma once
// The API server the Kubernetes tests and benchmarks run against (docs/kubernetes.md):
// the stand-in (kube_apiserver.hpp) on 127.0.0.1 with a bearer token, or, when the
// environment variable GAIA_TEST_KUBECONFIG names a kubeconfig, a real cluster. Either
// way the tests see the same things: a namespace of their own (gaia-test-<random>),
// Node objects of their own registered by a fake kubelet (labelled gaia.io/test=<id>,
// so a context with --node-selector uses only them and never a real node), and a
// kubeconfig gaia can be pointed at. Everything is deleted at the end (on a real
// cluster too: the namespace and the nodes).

#include <filesystem>
#include <memory>
#include <string>

#include "kube/client.hpp"
#include "standin/fake_kubelet.hpp"
#include "standin/kube_apiserver.hpp"

namespace gaia::standin {

struct TestClusterOptions {
  // Serve the stand-in over TLS (certificates made in `dir`); the kubeconfig then
  // carries the CA.
  bool tls = false;
  std::chrono::milliseconds ready_after{0};
  // Change history of the stand-in (watches from older resourceVersions get 410).
  size_t history = 10000;
};

class TestCluster {
 public:
  TestCluster(const std::filesystem::path& dir, TestClusterOptions options = {});
  ~TestCluster();
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  // A real cluster (GAIA_TEST_KUBECONFIG) rather than the stand-in.
  bool real() const { return !m_server; }
  // The stand-in, for fault injection and assertions; nullptr on a real cluster.
  KubeApiServer* server() { return m_server.get(); }

  const std::filesystem::path& kubeconfig() const { return m_kubeconfig; }
  const std::string& kube_context() const { return m_context; }
  const std::string& namespace_name() const { return m_namespace; }
  // "gaia.io/test=<id>": select this test's nodes.
  std::string node_selector() const;
  std::string node_name(int i) const;

  kube::Client& client() { return *m_client; }
  std::shared_ptr<kube::Client> shared_client() { return m_client; }
  FakeKubelet& kubelet() { return *m_kubelet; }

  // Registers nodes node_name(0..n-1): zone-(i % zones), rack-(i % racks).
  void add_nodes(int n, int zones = 3, int racks = 6, const std::string& cpu = "16", const std::string& memory = "64Gi");

  // A kubeconfig at `path` with another token (for the wrong-credentials tests): the
  // stand-in only.
  std::filesystem::path write_kubeconfig(const std::filesystem::path& path, const std::string& token,
                                         const std::filesystem::path& ca_file = {}) const;

 private:
  std::filesystem::path m_dir;
  std::unique_ptr<KubeApiServer> m_server;
  std::filesystem::path m_kubeconfig;
  std::string m_context;
  std::string m_namespace, m_id;
  std::filesystem::path m_ca;
  std::shared_ptr<kube::Client> m_client;
  std::unique_ptr<FakeKubelet> m_kubelet;
  std::vector<std::string> m_nodes;
};

}  // namespace gaia::standin
