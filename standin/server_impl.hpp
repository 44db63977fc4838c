#pragma once
// Private to standin/: the state of KubeApiServer shared by its .cpp files, and the
// small vocabulary they speak (errors answered as Status objects, the resource table,
// the object store with its history of changes). kube_apiserver.cpp serves and
// dispatches, handlers.cpp implements the verbs, pods.cpp the pod lifecycle (binding,
// graceful deletion, eviction against disruption budgets), watch.cpp the streams,
// fields.cpp merge patches and server-side apply, selectors.cpp label and field
// selectors, resources.cpp the table, Status objects and discovery.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "standin/kube_apiserver.hpp"

namespace httplib {
class DataSink;
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace gaia::standin {

struct WatchState;  // watch.cpp

namespace detail {

using nlohmann::json;

// A failure answered as a Status object with this HTTP code; thrown by the handlers and
// caught once where the request is dispatched.
struct ApiError : std::exception {
  ApiError(int code, std::string reason, std::string message, json details = nullptr)
      : code(code), reason(std::move(reason)), message(std::move(message)), details(std::move(details)) {}
  const char* what() const noexcept override { return message.c_str(); }

  int code;
  std::string reason;
  std::string message;
  json details;             // Status.details, null when there are none.
  std::string retry_after;  // The Retry-After header, empty for none.
};

struct ResourceInfo {
  std::string group;     // "" for the core group.
  std::string version;   // "v1".
  std::string plural;    // "pods": the URL segment.
  std::string singular;  // "pod", for discovery.
  std::string kind;      // "Pod".
  // Where the objects are kept: the plural, or "plural.group" for a group whose plural
  // the core group also serves (events.k8s.io events are kept apart from core events).
  std::string bucket;
  bool namespaced = true;
  // Has a status subresource: writes to the main resource keep the stored status, and
  // writes to /status change nothing else.
  bool has_status = false;
  // Keeps metadata.generation, bumped when anything outside metadata and status changes.
  bool has_generation = false;
  std::vector<std::string> subresources;

  std::string api_version() const { return group.empty() ? version : group + "/" + version; }
  std::string list_kind() const { return kind + "List"; }
};

const std::vector<ResourceInfo>& resource_table();
const ResourceInfo* find_resource(std::string_view group, std::string_view version, std::string_view plural);
// By bucket or, failing that, by plural (the accessors take "pods" or "events.events.k8s.io").
const ResourceInfo* find_bucket(std::string_view bucket);

// The reason Kubernetes gives with an HTTP code ("NotFound" for 404...).
std::string reason_for(int code);
json status_object(int code, const std::string& reason, const std::string& message, const json& details = nullptr);
json success_status(int code);
ApiError bad_request(std::string message);
ApiError not_found(const ResourceInfo& resource, const std::string& name);
ApiError already_exists(const ResourceInfo& resource, const std::string& name);
// 409 "Operation cannot be fulfilled on pods "x": <why>".
ApiError conflict(const std::string& qualified_resource, const std::string& name, const std::string& why);
ApiError stale_conflict(const ResourceInfo& resource, const std::string& name);
// 422 "Pod "x" is invalid: <field>: <message>".
ApiError invalid(const ResourceInfo& resource, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& message);
// "pods" or "poddisruptionbudgets.policy", as Kubernetes names a resource in messages.
std::string qualified(const ResourceInfo& resource);

// Discovery documents (/api, /api/v1, /apis, /apis/GROUP, /apis/GROUP/VERSION, /version):
// null when `path` is not one of them.
json discovery(std::string_view path, int port);

std::string rfc3339(std::chrono::system_clock::time_point t);
std::string random_uid(std::mt19937_64& rng);
std::string random_suffix(std::mt19937_64& rng);  // 5 characters, as generateName uses.
// DNS-1123 names: a subdomain (most objects) or a label (namespaces, services).
bool is_dns_subdomain(std::string_view name);
bool is_dns_label(std::string_view name);

std::string string_at(const json& object, std::initializer_list<const char*> path);
std::string resource_version_of(const json& object);

// A change as watches see it.
struct Change {
  int64_t rv = 0;
  std::string bucket;
  std::string type;  // ADDED, MODIFIED, DELETED.
  json object;       // The new state; for DELETED the last state, with the deletion's rv.
  json previous;     // For MODIFIED the state before, so selectors can see an object leave.
};

// The objects, the resourceVersion counter and the history of changes. Not
// synchronised: KubeApiServer::Impl holds its mutex around every use.
class ObjectStore {
 public:
  explicit ObjectStore(size_t history_limit) : m_history_limit(history_limit) {}

  json* find(const std::string& bucket, const std::string& ns, const std::string& name);
  const json* find(const std::string& bucket, const std::string& ns, const std::string& name) const;
  // Sorted by namespace then name, as etcd's keys sort; `ns` empty: every namespace.
  std::vector<const json*> list(const std::string& bucket, const std::string& ns) const;
  // Names of the buckets holding objects, for a namespace's deletion.
  std::vector<std::string> buckets() const;

  // Each write bumps the counter, stamps metadata.resourceVersion, records the change
  // for watches and returns the stored object.
  const json& add(const std::string& bucket, json object);
  const json& modify(const std::string& bucket, json object);
  json remove(const std::string& bucket, const std::string& ns, const std::string& name);

  int64_t revision() const { return m_revision; }
  // A watch may start from any resourceVersion >= floor(): every later change is kept.
  int64_t floor() const { return m_floor; }
  const std::deque<Change>& history() const { return m_history; }
  void compact();

 private:
  static std::string key(const std::string& ns, const std::string& name) { return ns + "/" + name; }
  void record(Change change);

  std::map<std::string, std::map<std::string, json>> m_buckets;  // bucket -> "ns/name" -> object
  int64_t m_revision = 0;
  int64_t m_floor = 0;
  size_t m_history_limit;
  std::deque<Change> m_history;
};

// One API request, parsed from the URL.
struct ApiRequest {
  std::string verb;  // GET, LIST, WATCH, POST, PUT, PATCH, DELETE.
  const ResourceInfo* resource = nullptr;
  std::string ns;    // Empty for cluster-scoped resources and lists across namespaces.
  std::string name;
  std::string subresource;
  std::multimap<std::string, std::string> params;
  std::string body;
  std::string content_type;  // Without parameters ("application/merge-patch+json").
  // "GET pods", "POST pods/binding"...: counted and matched by fail_next. A list is both
  // "GET pods" (as the header promises) and "LIST pods".
  std::vector<std::string> keys;

  std::string param(const std::string& key) const {
    auto it = params.find(key);
    return it == params.end() ? std::string() : it->second;
  }
  bool has_param(const std::string& key) const { return params.count(key) > 0; }
};

struct ApiReply {
  int status = 200;
  json body;
};

json parse_body(const std::string& body);  // A JSON object, or 400.

// A boolean query parameter as the API server reads it: "1" or "true".
inline bool is_true(const std::string& value) { return value == "1" || value == "true"; }

}  // namespace detail

struct KubeApiServer::Impl {
  explicit Impl(ApiServerOptions options);

  // Serving (kube_apiserver.cpp).
  void start_listening(int port);
  void stop_listening();
  void drop_connections();
  // The descriptor of the connection from 127.0.0.1:`peer_port`, -1 if none: a watch
  // polls it to notice a client that went away while no event was due.
  int connection_fd(int peer_port) const;
  void handle(const httplib::Request& request, httplib::Response& response);
  void authenticate(const httplib::Request& request) const;
  detail::ApiRequest parse_request(const httplib::Request& request) const;
  void count_and_inject_faults(const detail::ApiRequest& request);
  detail::ApiReply dispatch(const detail::ApiRequest& request);
  // Consumes one conflict_next() fault: true when this write must fail with 409.
  bool take_conflict();

  // The verbs (handlers.cpp); called with `mutex` held.
  detail::ApiReply get_object(const detail::ApiRequest& request);
  detail::ApiReply list_objects(const detail::ApiRequest& request);
  detail::ApiReply create_object(const detail::ApiRequest& request);
  detail::ApiReply replace_object(const detail::ApiRequest& request);
  detail::ApiReply patch_object(const detail::ApiRequest& request);
  detail::ApiReply apply_object(const detail::ApiRequest& request);
  detail::ApiReply delete_object(const detail::ApiRequest& request);
  // The common end of PUT and the patches: checks, ownership, the write.
  // `record`: false when the managed fields are already decided (server-side apply).
  detail::ApiReply commit_update(const detail::ApiRequest& request, const nlohmann::json& live,
                                 nlohmann::json candidate, bool carried_rv, bool record = true);
  // DeleteOptions.preconditions (uid, resourceVersion): 409 when they do not hold.
  void check_preconditions(const detail::ResourceInfo& resource, const nlohmann::json& live,
                           const nlohmann::json& options);
  // The grace period asked for: DeleteOptions.gracePeriodSeconds, else ?gracePeriodSeconds=.
  static std::optional<int64_t> requested_grace(const detail::ApiRequest& request, const nlohmann::json& options);
  // The object as answered: disruption budgets get their status computed now.
  nlohmann::json present(const detail::ResourceInfo& resource, const nlohmann::json& object) const;
  void require_namespace(const std::string& ns) const;
  // The namespaces every cluster starts with: default, kube-system, kube-public,
  // kube-node-lease.
  void bootstrap();
  // Fills in what the server owns on a new object (uid, timestamps, defaults, status).
  void prepare_create(const detail::ApiRequest& request, nlohmann::json& object);

  // Pods (pods.cpp); called with `mutex` held.
  void prepare_pod(nlohmann::json& pod);
  void validate_pod_update(const nlohmann::json& live, const nlohmann::json& updated) const;
  detail::ApiReply delete_pod(const detail::ApiRequest& request, const nlohmann::json& live,
                              std::optional<int64_t> grace);
  detail::ApiReply bind_pod(const detail::ApiRequest& request);
  detail::ApiReply evict_pod(const detail::ApiRequest& request);
  nlohmann::json disruption_status(const nlohmann::json& pdb) const;

  // Watches (watch.cpp): streams from the calling thread until the watch ends.
  void start_watch(const detail::ApiRequest& request, int peer_port, httplib::Response& response);
  // Writes what is due to one watch, waiting for it; false ends the connection.
  bool pump(const std::shared_ptr<WatchState>& watch, httplib::DataSink& sink);

  ApiServerOptions options;
  bool authenticating = false;

  mutable std::mutex mutex;
  // Signalled on every write, drop_watches(), compact(), restart() and destruction.
  std::condition_variable changed;
  detail::ObjectStore store;
  std::mt19937_64 rng;

  struct FailRule {
    int status;
    int count;
    std::string retry_after;
    std::string match;
  };
  std::vector<FailRule> fail_rules;
  int conflicts_left = 0;
  RequestCounts counts;
  // Open watches compare these with what they saw when they started.
  uint64_t drop_generation = 0;
  uint64_t compact_generation = 0;
  uint64_t serve_generation = 0;
  bool stopping = false;

  // restart() against the destructor.
  std::mutex lifecycle;
  std::unique_ptr<httplib::Server> server;
  std::thread listener;
  int port = 0;
};

}  // namespace gaia::standin
