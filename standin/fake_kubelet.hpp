#pragma once
// A fake kubelet for the Kubernetes backend's tests and benchmarks (docs/kubernetes.md).
// It speaks only the public API (kube/client.hpp), so the same tests run against the
// stand-in API server and against a real cluster (GAIA_TEST_KUBECONFIG): it registers
// Node objects with a Ready condition, and plays the kubelet of every node it serves by
// watching the pods bound there: a bound pod becomes Running and Ready (after
// `ready_after`), a pod being deleted is finished (gracePeriodSeconds=0). A node taken
// down with set_node_ready(false) stops being served, as a dead kubelet would.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"

namespace gaia::standin {

struct FakeNode {
  std::string name;
  std::string cpu = "16";
  std::string memory = "64Gi";
  std::string address;  // InternalIP; "" for none.
  std::map<std::string, std::string> labels;
  std::string volume_groups = "ssd=2Ti:50000,hdd=8Ti:2000";  // Annotation gaia.io/volume-groups.
};

class FakeKubelet {
 public:
  FakeKubelet(std::shared_ptr<kube::Client> client, std::string namespace_name,
              std::chrono::milliseconds ready_after = std::chrono::milliseconds(0));
  ~FakeKubelet();  // Stops serving; leaves the objects.
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  // Registers a node (create, then its status: allocatable and Ready) and serves it.
  kube::ApiResult<void> add_node(const FakeNode& node);
  // Ready=False (the kubelet stops; its pods are left as they are) or Ready=True again.
  kube::ApiResult<void> set_node_ready(const std::string& node, bool ready);
  // A pod's container exits: phase Failed (or Succeeded for exit code 0).
  kube::ApiResult<void> finish_pod(const std::string& pod, int exit_code, const std::string& reason);

  // Starts the watch loop on a thread (idempotent).
  void start();
  void stop();

  // Pods this kubelet made Running, and deletions it finished.
  int started() const;
  int finished_deletions() const;

 private:
  // The next pod address, 10.244.0.0/16 in order, each pod its own.
  std::string next_pod_ip();
  void run();
  void handle(const nlohmann::json& pod);

  std::shared_ptr<kube::Client> m_client;
  std::string m_namespace;
  std::chrono::milliseconds m_ready_after;
  mutable std::mutex m_mutex;
  std::set<std::string> m_dead;  // Nodes whose kubelet is down.
  std::map<std::string, std::chrono::steady_clock::time_point> m_seen_bound;
  int m_started = 0, m_deleted = 0;
  uint32_t m_pod_ips = 0;  // Pod addresses handed out, as a CNI plugin would.
  bool m_stopping = false;
  http::Cancellation* m_cancel = nullptr;
  std::unique_ptr<http::Cancellation> m_cancel_owned;
  std::thread m_thread;
};

}  // namespace gaia::standin
