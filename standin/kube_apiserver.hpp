#pragma once
// A stand-in for the Kubernetes API server, for tests and benchmarks only
// (docs/kubernetes.md). No real kube-apiserver can be installed from Debian's or npm's
// registries, so gaia's Kubernetes backend is tested against this one, written from the
// Kubernetes API reference. It holds the semantics the backend relies on rather than
// echoing what it sends:
// - every object has metadata.resourceVersion (one global counter, as etcd's revision),
//   uid, creationTimestamp; a PUT or PATCH carrying a stale resourceVersion is 409
//   Conflict; a create of an existing name is 409 AlreadyExists;
// - server-side apply (PATCH application/apply-patch+yaml, ?fieldManager=, ?force=)
//   merges by field manager: fields another manager owns with a different value are a
//   409 Conflict unless force=true; fields this manager applied before and omits now
//   are removed; metadata.managedFields records who owns what;
// - pods/binding: a pod binds once (409 when spec.nodeName is set), to a node that
//   exists (404 otherwise); pods/status for the kubelet's phase and conditions;
// - DELETE of a pod bound to a node with a grace period > 0 only sets
//   deletionTimestamp (the kubelet finishes it with gracePeriodSeconds=0); an unbound
//   pod or a grace of 0 removes it at once;
// - list with labelSelector (=, ==, !=, exists, !exists, in, notin) and fieldSelector
//   (metadata.name, metadata.namespace, spec.nodeName, spec.schedulerName,
//   status.phase), answering metadata.resourceVersion of the list;
// - watch (?watch=1&resourceVersion=N) streams every change after N, sends BOOKMARK
//   events when allowWatchBookmarks=true, ends after timeoutSeconds, and answers 410
//   Gone (an ERROR event with a Status of code 410) when N is older than the history
//   kept (compact() or the history bound);
// - pods/eviction (policy/v1 Eviction) refuses with 429 when a PodDisruptionBudget in
//   the namespace selecting the pod would be violated (minAvailable or maxUnavailable,
//   counting pods Ready and not terminating), and otherwise deletes the pod gracefully;
// - bearer token and TLS (client certificates optional) authentication: 401 otherwise;
// - faults on demand: the next N requests answered with a status (429/5xx with
//   Retry-After), 409 storms on writes, dropped watches, a restart that drops every
//   connection and watch (objects kept, as etcd keeps them).
//
// Resources served: namespaces, nodes (and nodes/status), persistentvolumeclaims, pods (status, binding,
// eviction), services, configmaps, events (core/v1 and events.k8s.io/v1),
// poddisruptionbudgets (policy/v1), priorityclasses (scheduling.k8s.io/v1); plus
// /version, /healthz, /readyz, and discovery enough for kubectl (/api, /apis).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gaia::standin {

struct ApiServerOptions {
  // Both empty: plain HTTP. Else HTTPS with this certificate and key (PEM files).
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  // When set, clients must present a certificate signed by this CA (PEM file) or a
  // valid bearer token.
  std::filesystem::path client_ca_file;
  // Bearer tokens accepted. Empty and no client CA: no authentication.
  std::vector<std::string> tokens;
  // Changes kept for watches; a watch from an older resourceVersion gets 410 Gone.
  size_t history = 10000;
  // How often a watch with allowWatchBookmarks=true gets a BOOKMARK.
  std::chrono::milliseconds bookmark_interval{1000};
  // 0: a free port on 127.0.0.1.
  int port = 0;
};

// Counters, for tests and benchmarks: requests by "VERB resource[/subresource]", e.g.
// "POST pods/binding", "PATCH pods/status", "GET pods" (a list), "WATCH pods".
using RequestCounts = std::map<std::string, int64_t>;

class KubeApiServer {
 public:
  explicit KubeApiServer(ApiServerOptions options = {});
  ~KubeApiServer();  // Stops serving; ends every watch.
  KubeApiServer(const KubeApiServer&) = delete;
  KubeApiServer& operator=(const KubeApiServer&) = delete;

  int port() const;
  std::string url() const;  // "http://127.0.0.1:PORT" or "https://..."

  // Faults.
  // The next `count` requests whose "VERB resource" key contains `match` (all when
  // empty) are answered with `status` (a Status object) and, when not empty, the
  // Retry-After header.
  void fail_next(int status, int count, std::string retry_after = "1", std::string match = {});
  // The next `count` writes that carry a resourceVersion or bind a pod get 409 Conflict.
  void conflict_next(int count);
  // Ends every open watch stream now (clients must resume).
  void drop_watches();
  // Forgets the change history: every watch resumed from an older resourceVersion, and
  // every open one, gets 410 Gone.
  void compact();
  // Stops listening, drops every connection and watch, and listens again on the same
  // port after `down` (objects and resourceVersions kept, as etcd keeps them).
  void restart(std::chrono::milliseconds down = std::chrono::milliseconds(0));

  // Direct access to the objects, bypassing HTTP, authentication and faults, for
  // assertions. `resource` is the plural ("pods", "nodes"); `ns` empty for
  // cluster-scoped ones.
  std::optional<nlohmann::json> object(const std::string& resource, const std::string& ns,
                                       const std::string& name) const;
  std::vector<nlohmann::json> objects(const std::string& resource, const std::string& ns = {}) const;
  int64_t resource_version() const;
  RequestCounts request_counts() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// A self-signed CA and a server certificate for 127.0.0.1 and localhost signed by it,
// plus a client certificate, written by the openssl command into `dir` as ca.crt,
// ca.key, server.crt, server.key, client.crt, client.key. For TLS tests.
struct TestCertificates {
  std::filesystem::path ca_cert, ca_key, server_cert, server_key, client_cert, client_key;
};
TestCertificates make_test_certificates(const std::filesystem::path& dir);

}  // namespace gaia::standin
