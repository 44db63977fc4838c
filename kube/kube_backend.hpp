#pragma once
// The Kubernetes backend (docs/kubernetes.md): gaia is the scheduler and controller of
// its own pods on a real API server. Starting a copy creates its pod (schedulerName
// gaia, no node) and binds it through pods/binding to the node gaia's scheduler chose;
// stopping deletes it with its grace period, or, for a voluntary move (StopSpec::evict:
// migrate, drain, rebalance), asks the Eviction API, which a PodDisruptionBudget may
// refuse for now (BackendErrc::Throttled, retried by the next cycle). Observing lists
// the Node objects (the inventory gaia's store follows) and gaia's pods (label
// gaia.io/owner); once `wait` was called, two informers keep both up to date from
// watches (resumed from the last resourceVersion, relisted after 410 Gone), so the
// long-running loops (`controller run`) read a cache and wake on news.
//
// Every request is idempotent, so a cycle interrupted anywhere (an API server restart,
// gaia killed) is repaired by the next one: a pod is named after its instance and
// placement generation, so creating it again answers AlreadyExists and binding it again
// finds it bound to the same node; nothing is placed twice.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "kube/client.hpp"
#include "kube/kube_objects.hpp"
#include "lib/backend.hpp"

namespace gaia::kube {

struct KubeBackendOptions {
  std::string namespace_name = "default";
  // The value of the gaia.io/owner label: which gaia store the pods belong to, so two
  // stores sharing a cluster never see (or stop) each other's pods.
  std::string owner;
  std::string scheduler_name = "gaia";
  std::string field_manager = "gaia";
  // A label selector on the cluster's nodes ("pool=gaia"): gaia uses only these, and
  // leaves every other node to kube-scheduler. Empty: every node.
  std::string node_selector;
  // Posts core/v1 Events on pods (Scheduled, Preempted, Evicting), so `kubectl describe
  // pod` tells why gaia placed or stopped it.
  bool post_events = true;
  // Requests sent at once when starting or stopping many copies.
  int parallelism = 8;
};

class KubeBackend : public Backend {
 public:
  KubeBackend(std::shared_ptr<Client> client, KubeBackendOptions options);
  ~KubeBackend() override;

  std::string_view name() const override { return "kubernetes"; }
  BackendResult<Observation> observe(int64_t now_ms) override;
  BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& specs, int64_t now_ms) override;
  BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& specs, int64_t now_ms) override;
  bool wait(std::chrono::milliseconds timeout) override;
  // Deletes the ConfigMaps, Services and PodDisruptionBudgets of this store's apps and
  // roles that are gone (kube_objects.hpp unused_objects); claims stay. Lists them only
  // when the apps and roles differ from the last successful look, and deletes each only
  // if unchanged since it was listed (a resourceVersion precondition).
  BackendResult<std::vector<std::string>> remove_unused(
      const ClusterState& cycle_state, const std::function<std::optional<ClusterState>()>& current) override;

  // Whether the API server answers with these credentials and gaia may list nodes and
  // pods in its namespace: what `gaia context add` and `cluster create` check first.
  BackendResult<std::string> check();

  // The cluster's StorageClass objects (storage.k8s.io/v1), for storage_classes_of().
  // A store without the right to list them (RBAC) gets none, and says so in `note`.
  BackendResult<std::vector<nlohmann::json>> storage_class_objects(std::string* note);

 private:
  struct Informer;
  BackendResult<std::vector<nlohmann::json>> list(const std::string& path, std::string* resource_version);
  std::optional<BackendError> ensure_supporting(const StartSpec& s);
  std::optional<BackendError> start_one(const StartSpec& s, int64_t now_ms);
  std::optional<BackendError> stop_one(const StopSpec& s, int64_t now_ms);
  void post_event(const std::string& pod, const std::string& reason, const std::string& message,
                  const std::string& type, int64_t now_ms);
  void start_informers();
  std::string pods_path() const;
  std::string nodes_path() const;

  std::shared_ptr<Client> m_client;
  KubeBackendOptions m_options;
  std::mutex m_applied_mutex;
  std::set<std::string> m_applied;  // Supporting objects applied by this backend (name + content hash).
  // The apps and roles (with their budgets) remove_unused last found nothing more to
  // remove for; empty before the first look.
  std::string m_unused_checked;
  std::unique_ptr<Informer> m_pods, m_nodes;
  std::mutex m_news_mutex;
  std::condition_variable m_news;
  uint64_t m_version = 0, m_seen_version = 0;
};

// Maps an API error to a backend error with a message for the user.
BackendError backend_error(const ApiError& e, const std::string& what);

}  // namespace gaia::kube
