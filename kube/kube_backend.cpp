#include "kube/kube_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "lib/hash.hpp"
#include "lib/timeline.hpp"

namespace gaia::kube {

using nlohmann::json;

BackendError backend_error(const ApiError& e, const std::string& what) {
  BackendErrc code = BackendErrc::Rejected;
  switch (e.code) {
    case ApiErrc::Unavailable:
    case ApiErrc::Conflict:  // Re-decided on fresh data by the next cycle.
    case ApiErrc::Cancelled: code = BackendErrc::Unavailable; break;
    case ApiErrc::Timeout: code = BackendErrc::Timeout; break;
    case ApiErrc::TooManyRequests: code = BackendErrc::Throttled; break;
    case ApiErrc::NotFound: code = BackendErrc::NotFound; break;
    default: code = BackendErrc::Rejected; break;
  }
  return BackendError{code, what.empty() ? e.message : fmt::format("{}: {}", what, e.message)};
}

namespace {

std::string key_of(const json& obj) {
  const json& m = obj.value("metadata", json::object());
  return m.value("namespace", "") + "/" + m.value("name", "");
}

std::string rv_of(const json& obj) {
  const json& m = obj.value("metadata", json::object());
  return m.value("resourceVersion", "");
}

std::string with_query(const std::string& path, const std::string& query) {
  return path + (path.find('?') == std::string::npos ? "?" : "&") + query;
}

int64_t grace_seconds(std::chrono::milliseconds ms) { return (ms.count() + 999) / 1000; }

// Runs fn(i) for i in [0, n) on up to `parallelism` threads.
template <class Fn>
void for_each_parallel(size_t n, int parallelism, Fn fn) {
  size_t workers = std::min<size_t>(n, static_cast<size_t>(std::max(parallelism, 1)));
  if (workers <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  for (auto& t : threads) t.join();
}

}  // namespace

// A list-then-watch loop on one resource, on its own thread: the cache of what the API
// server holds, as fresh as its watch.
struct KubeBackend::Informer {
  KubeBackend* backend = nullptr;
  std::string path;  // The list path, with its label selector.
  std::mutex mutex;
  std::map<std::string, json> objects;
  std::string resource_version;
  bool synced = false;
  std::condition_variable stop_cv;
  bool stopping = false;
  http::Cancellation cancel;
  std::thread thread;

  void notify() {
    std::lock_guard lock(backend->m_news_mutex);
    ++backend->m_version;
    backend->m_news.notify_all();
  }

  // Sleeps `ms` unless stopping; false when stopping.
  bool pause(std::chrono::milliseconds ms) {
    std::unique_lock lock(mutex);
    stop_cv.wait_for(lock, ms, [&] { return stopping; });
    return !stopping;
  }

  bool stopped() {
    std::lock_guard lock(mutex);
    return stopping;
  }

  void run() {
    std::chrono::milliseconds backoff{200};
    while (!stopped()) {
      bool need_list;
      std::string rv;
      {
        std::lock_guard lock(mutex);
        need_list = !synced;
        rv = resource_version;
      }
      if (need_list) {
        std::string list_rv;
        auto items = backend->list(path, &list_rv);
        if (!items) {
          if (!pause(backoff)) return;
          backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
          continue;
        }
        {
          std::lock_guard lock(mutex);
          objects.clear();
          for (auto& o : *items) objects[key_of(o)] = std::move(o);
          resource_version = rv = list_rv;
          synced = true;
        }
        notify();
      }
      auto watched = backend->m_client->watch(
          with_query(path, "watch=1&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion=" + rv),
          [&](const WatchEvent& e) {
            std::string new_rv = rv_of(e.object);
            {
              std::lock_guard lock(mutex);
              if (e.type == "ADDED" || e.type == "MODIFIED") objects[key_of(e.object)] = e.object;
              else if (e.type == "DELETED") objects.erase(key_of(e.object));
              if (!new_rv.empty()) resource_version = new_rv;
            }
            if (e.type != "BOOKMARK") notify();
            return !stopped();
          },
          &cancel, std::chrono::milliseconds(90000));
      if (watched) {
        backoff = std::chrono::milliseconds(200);
        continue;  // The server ended the stream (timeoutSeconds): resume.
      }
      if (watched.error().code == ApiErrc::Cancelled) return;
      if (watched.error().code == ApiErrc::Gone) {
        // The history we would resume from is gone: read everything afresh.
        std::lock_guard lock(mutex);
        synced = false;
        continue;
      }
      if (!pause(backoff)) return;
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
    }
  }
};

KubeBackend::KubeBackend(std::shared_ptr<Client> client, KubeBackendOptions options)
    : m_client(std::move(client)), m_options(std::move(options)) {}

KubeBackend::~KubeBackend() {
  for (Informer* inf : {m_pods.get(), m_nodes.get()}) {
    if (!inf) continue;
    {
      std::lock_guard lock(inf->mutex);
      inf->stopping = true;
    }
    inf->stop_cv.notify_all();
    inf->cancel.cancel();
  }
  for (Informer* inf : {m_pods.get(), m_nodes.get()})
    if (inf && inf->thread.joinable()) inf->thread.join();
}

std::string KubeBackend::pods_path() const {
  return fmt::format("/api/v1/namespaces/{}/pods?labelSelector={}", m_options.namespace_name,
                     url_encode(fmt::format("{}={}", k_label_owner, m_options.owner)));
}

std::string KubeBackend::nodes_path() const {
  if (m_options.node_selector.empty()) return "/api/v1/nodes";
  return "/api/v1/nodes?labelSelector=" + url_encode(m_options.node_selector);
}

BackendResult<std::vector<json>> KubeBackend::list(const std::string& path, std::string* resource_version) {
  auto got = m_client->get(path);
  if (!got) return std::unexpected(backend_error(got.error(), ""));
  // A list without items is not an empty cluster: reading it as one would take every
  // node away and report every copy lost.
  if (!got->is_object() || !got->contains("items") || !(*got)["items"].is_array())
    return std::unexpected(BackendError{BackendErrc::Unavailable, fmt::format("GET {}: the answer is not a list", path)});
  std::vector<json> items;
  for (auto& o : (*got)["items"]) items.push_back(std::move(o));
  if (resource_version) *resource_version = rv_of(*got);
  return items;
}

BackendResult<std::vector<json>> KubeBackend::storage_class_objects(std::string* note) {
  auto got = list("/apis/storage.k8s.io/v1/storageclasses", nullptr);
  if (!got && (got.error().code == BackendErrc::Rejected || got.error().code == BackendErrc::NotFound)) {
    // Forbidden: the cluster's volumes still work through the classes its nodes offer.
    if (note) *note = fmt::format("storage classes not read ({}): only the nodes' local classes are known", got.error().message);
    return std::vector<json>{};
  }
  return got;
}

void KubeBackend::start_informers() {
  if (m_pods) return;
  m_pods = std::make_unique<Informer>();
  m_pods->backend = this;
  m_pods->path = pods_path();
  m_nodes = std::make_unique<Informer>();
  m_nodes->backend = this;
  m_nodes->path = nodes_path();
  m_pods->thread = std::thread([this] { m_pods->run(); });
  m_nodes->thread = std::thread([this] { m_nodes->run(); });
}

BackendResult<Observation> KubeBackend::observe(int64_t) {
  std::vector<json> nodes, pods;
  bool cached = false;
  if (m_pods && m_nodes) {
    std::scoped_lock lock(m_pods->mutex, m_nodes->mutex);
    if (m_pods->synced && m_nodes->synced) {
      cached = true;
      for (const auto& [k, v] : m_nodes->objects) nodes.push_back(v);
      for (const auto& [k, v] : m_pods->objects) pods.push_back(v);
    }
  }
  if (!cached) {
    auto n = list(nodes_path(), nullptr);
    if (!n) return std::unexpected(n.error());
    auto p = list(pods_path(), nullptr);
    if (!p) return std::unexpected(p.error());
    nodes = std::move(*n);
    pods = std::move(*p);
  }
  // A pod whose create answer was lost would wait forever (pods_to_bind): bind it to the
  // node gaia chose. A bind racing a start's own is answered 409 and changes nothing.
  for (const auto& [name, node] : pods_to_bind(pods, m_options.owner))
    (void)m_client->create(fmt::format("/api/v1/namespaces/{}/pods/{}/binding", m_options.namespace_name, name),
                           pod_binding(name, m_options.namespace_name, node));
  Observation obs;
  obs.inventory.emplace();
  for (const auto& n : nodes) {
    InventoryNode inv = inventory_of_node(n);
    obs.nodes.push_back(ObservedNode{inv.node.name, inv.ready, inv.not_ready_reason});
    obs.inventory->push_back(std::move(inv));
  }
  for (const auto& p : pods)
    if (auto c = copy_of_pod(p)) obs.copies.push_back(std::move(*c));
  return obs;
}

std::optional<BackendError> KubeBackend::ensure_supporting(const StartSpec& s) {
  PodOptions po{m_options.namespace_name, m_options.owner, m_options.scheduler_name};
  for (const json& obj : supporting_objects(s, po)) {
    std::string kind = obj.value("kind", "");
    std::string name = obj["metadata"].value("name", "");
    std::string path;
    if (kind == "PriorityClass") path = "/apis/scheduling.k8s.io/v1/priorityclasses/" + name;
    else if (kind == "ConfigMap") path = fmt::format("/api/v1/namespaces/{}/configmaps/{}", m_options.namespace_name, name);
    else if (kind == "Service") path = fmt::format("/api/v1/namespaces/{}/services/{}", m_options.namespace_name, name);
    else if (kind == "PersistentVolumeClaim")
      path = fmt::format("/api/v1/namespaces/{}/persistentvolumeclaims/{}", m_options.namespace_name, name);
    else if (kind == "PodDisruptionBudget")
      path = fmt::format("/apis/policy/v1/namespaces/{}/poddisruptionbudgets/{}", m_options.namespace_name, name);
    else continue;
    std::string done = kind + "/" + name + "/" + content_hash(obj.dump());
    {
      std::lock_guard lock(m_applied_mutex);
      if (m_applied.count(done)) continue;
    }
    auto applied = m_client->apply(path, obj, m_options.field_manager, true);
    if (!applied) return backend_error(applied.error(), fmt::format("applying {} {}", kind, name));
    std::lock_guard lock(m_applied_mutex);
    m_applied.insert(done);
  }
  return std::nullopt;
}

BackendResult<std::vector<std::string>> KubeBackend::remove_unused(
    const ClusterState& state, const std::function<std::optional<ClusterState>()>& current) {
  // What decides: the apps, roles and budgets in use. While they are what the last look
  // saw, nothing new can have become unused, so a converged controller loop lists
  // nothing.
  std::string in_use;
  for (const auto& [id, record] : state.apps) in_use += "a:" + id + "\n";
  for (const auto& [id, role] : state.snapshot.roles)
    in_use += fmt::format("r:{}:{}:{}\n", id, role.kind, role.min_available);
  for (const Instance& i : state.snapshot.instances) in_use += "i:" + i.tenant + "/" + i.app + "/" + i.role + "\n";
  std::string fingerprint = content_hash(in_use);
  if (fingerprint == m_unused_checked) return std::vector<std::string>{};

  std::vector<json> objects;
  const std::string selector = std::string("?labelSelector=") + k_label_owner + "%3D" + m_options.owner;
  for (const SupportingKind& k : per_app_kinds()) {
    std::string path = k.path;
    path.replace(path.find("{ns}"), 4, m_options.namespace_name);
    auto items = list(path + selector, nullptr);
    if (!items) {
      // Told once per change of the apps, not on every cycle: an identity that may not
      // list these (RBAC), a server without policy/v1, or one that is away. The next
      // change, or the next gaia process, looks again.
      m_unused_checked = fingerprint;
      return std::unexpected(items.error());
    }
    for (json& o : *items) {
      o["kind"] = k.kind;
      objects.push_back(std::move(o));
    }
  }
  // Decided on the store as it is now, after the listing: an app submitted since the
  // cycle's state was read is in it, and so keeps the objects it has made.
  std::optional<ClusterState> now = current();
  if (!now) return std::vector<std::string>{};
  std::map<std::string, std::string> versions;  // kind/name -> resourceVersion as listed.
  for (const json& o : objects) {
    const json meta = o.value("metadata", json::object());
    versions[o.value("kind", "") + "/" + meta.value("name", "")] = meta.value("resourceVersion", "");
  }
  std::vector<std::string> removed;
  bool unfinished = false;
  for (const ObjectRef& ref : unused_objects(objects, *now, m_options.owner)) {
    const SupportingKind* k = nullptr;
    for (const SupportingKind& c : per_app_kinds())
      if (ref.kind == c.kind) k = &c;
    std::string path = k->path;
    path.replace(path.find("{ns}"), 4, m_options.namespace_name);
    // Only the object as listed: one changed since (applied again for a new app of the
    // same name) answers 409 and stays; the next look judges it afresh.
    json options = json::object();
    if (const std::string& rv = versions[ref.kind + "/" + ref.name]; !rv.empty())
      options["preconditions"] = {{"resourceVersion", rv}};
    auto gone = m_client->remove(path + "/" + ref.name, options);
    if (!gone && gone.error().code == ApiErrc::Conflict) {
      unfinished = true;
      continue;
    }
    if (!gone && gone.error().code == ApiErrc::NotFound) continue;  // Someone else removed it.
    if (!gone) {
      // What was removed so far is reported; the rest is looked at again next time.
      unfinished = true;
      break;
    }
    {
      // A later start of an app of that name must apply the object again.
      std::lock_guard lock(m_applied_mutex);
      std::string prefix = ref.kind + "/" + ref.name + "/";
      for (auto it = m_applied.lower_bound(prefix); it != m_applied.end() && it->starts_with(prefix);)
        it = m_applied.erase(it);
    }
    removed.push_back(ref.kind + " " + ref.name);
  }
  if (!unfinished) m_unused_checked = fingerprint;
  return removed;
}

std::optional<BackendError> KubeBackend::start_one(const StartSpec& s, int64_t now_ms) {
  PodOptions po{m_options.namespace_name, m_options.owner, m_options.scheduler_name};
  auto pod = pod_manifest(s, po);
  if (!pod) return BackendError{BackendErrc::Rejected, pod.error()};
  if (auto e = ensure_supporting(s)) return e;
  const std::string name = (*pod)["metadata"]["name"];
  const std::string base = fmt::format("/api/v1/namespaces/{}/pods", m_options.namespace_name);
  auto created = m_client->create(base, *pod);
  if (!created && created.error().code == ApiErrc::AlreadyExists) {
    // Ours from an earlier try, or another store's of the same name in this namespace:
    // binding or later stopping someone else's pod is never right.
    auto existing = m_client->get(base + "/" + name);
    if (!existing) return backend_error(existing.error(), "reading pod " + name);
    std::string owner = existing->value("metadata", json::object()).value("labels", json::object()).value(k_label_owner, "");
    if (owner != m_options.owner)
      return BackendError{BackendErrc::Rejected,
                          fmt::format("pod {} in namespace {} exists and is not this store's (owner '{}'); give each "
                                      "gaia store a namespace of its own (gaia context add --namespace)",
                                      name, m_options.namespace_name, owner)};
  } else if (!created) {
    if (created.error().code == ApiErrc::NotFound)
      return BackendError{BackendErrc::Rejected,
                          fmt::format("namespace {} does not exist on the API server ({}); create it: kubectl create "
                                      "namespace {}",
                                      m_options.namespace_name, created.error().message, m_options.namespace_name)};
    return backend_error(created.error(), "creating pod " + name);
  }
  const std::string& node = s.instance.node;
  const json binding = pod_binding(name, m_options.namespace_name, node);
  // A 409 on a binding means the pod is bound already (by an earlier try whose answer
  // was lost) or the write raced another; read the pod and decide on what it says.
  for (int attempt = 0;; ++attempt) {
    auto bound = m_client->create(base + "/" + name + "/binding", binding);
    if (bound) break;
    if (bound.error().code != ApiErrc::Conflict && bound.error().code != ApiErrc::AlreadyExists)
      return backend_error(bound.error(), fmt::format("binding pod {} to {}", name, node));
    auto now = m_client->get(base + "/" + name);
    if (!now) return backend_error(now.error(), "reading pod " + name);
    std::string on = now->value("spec", json::object()).value("nodeName", "");
    if (on == node) return std::nullopt;  // Bound by an earlier try: done, and its event was posted then.
    if (!on.empty())
      return BackendError{BackendErrc::Rejected,
                          fmt::format("pod {} is bound to {}, not {} as gaia decided; delete it to let gaia place it "
                                      "again",
                                      name, on, node)};
    if (attempt >= 4) return backend_error(bound.error(), fmt::format("binding pod {} to {}", name, node));
  }
  if (m_options.post_events)
    post_event(name, "Scheduled",
               fmt::format("Successfully assigned {}/{} to {} (gaia: instance {}, generation {})",
                           m_options.namespace_name, name, node, s.instance.key(), s.instance.generation),
               "Normal", now_ms);
  return std::nullopt;
}

std::optional<BackendError> KubeBackend::stop_one(const StopSpec& s, int64_t now_ms) {
  const std::string name = pod_name(s.instance, s.generation);
  const std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}", m_options.namespace_name, name);
  json options = json::object();
  if (s.grace) options["gracePeriodSeconds"] = grace_seconds(*s.grace);
  if (s.evict) {
    json eviction = {{"apiVersion", "policy/v1"},
                     {"kind", "Eviction"},
                     {"metadata", {{"name", name}, {"namespace", m_options.namespace_name}}}};
    if (!options.empty()) eviction["deleteOptions"] = options;
    auto evicted = m_client->create(path + "/eviction", eviction);
    if (!evicted) {
      if (evicted.error().code == ApiErrc::NotFound) return std::nullopt;
      return backend_error(evicted.error(), fmt::format("evicting pod {} ({})", name, s.reason));
    }
    if (m_options.post_events) post_event(name, "Evicting", fmt::format("gaia: {}", s.reason), "Normal", now_ms);
    return std::nullopt;
  }
  auto deleted = m_client->remove(path, options.empty() ? json(nullptr) : json(options));
  if (!deleted) {
    if (deleted.error().code == ApiErrc::NotFound) return std::nullopt;
    return backend_error(deleted.error(), fmt::format("deleting pod {}", name));
  }
  if (m_options.post_events) {
    bool preempted = s.reason.starts_with("preempted") || s.reason.starts_with("its room");
    post_event(name, preempted ? "Preempted" : "Killing", fmt::format("gaia: {}", s.reason),
               preempted ? "Warning" : "Normal", now_ms);
  }
  return std::nullopt;
}

void KubeBackend::post_event(const std::string& pod, const std::string& reason, const std::string& message,
                             const std::string& type, int64_t now_ms) {
  std::string when = format_rfc3339(Clock::time_point(std::chrono::milliseconds(now_ms)));
  json event = {{"apiVersion", "v1"},
                {"kind", "Event"},
                {"metadata", {{"generateName", pod + "."}, {"namespace", m_options.namespace_name}}},
                {"involvedObject", {{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", pod}, {"namespace", m_options.namespace_name}}},
                {"reason", reason},
                {"message", message},
                {"type", type},
                {"source", {{"component", m_options.scheduler_name}}},
                {"reportingComponent", m_options.scheduler_name},
                {"reportingInstance", m_options.scheduler_name},
                {"firstTimestamp", when},
                {"lastTimestamp", when},
                {"count", 1}};
  // An event is for people reading `kubectl describe`; failing to post one changes
  // nothing gaia decided, so it is not an error.
  (void)m_client->create(fmt::format("/api/v1/namespaces/{}/events", m_options.namespace_name), event);
}

BackendResult<std::vector<ActionResult>> KubeBackend::start(const std::vector<StartSpec>& specs, int64_t now_ms) {
  std::vector<ActionResult> out(specs.size());
  for_each_parallel(specs.size(), m_options.parallelism, [&](size_t i) {
    out[i].instance = specs[i].instance.key();
    out[i].node = specs[i].instance.node;
    out[i].error = start_one(specs[i], now_ms);
  });
  // The whole call fails only when the server could not be reached at all.
  bool all_unreachable = !out.empty() && std::all_of(out.begin(), out.end(), [](const ActionResult& a) {
    return a.error && a.error->code == BackendErrc::Unavailable;
  });
  if (all_unreachable) return std::unexpected(*out.front().error);
  return out;
}

BackendResult<std::vector<ActionResult>> KubeBackend::stop(const std::vector<StopSpec>& specs, int64_t now_ms) {
  std::vector<ActionResult> out(specs.size());
  for_each_parallel(specs.size(), m_options.parallelism, [&](size_t i) {
    out[i].instance = specs[i].instance;
    out[i].node = specs[i].node;
    out[i].error = stop_one(specs[i], now_ms);
  });
  bool all_unreachable = !out.empty() && std::all_of(out.begin(), out.end(), [](const ActionResult& a) {
    return a.error && a.error->code == BackendErrc::Unavailable;
  });
  if (all_unreachable) return std::unexpected(*out.front().error);
  return out;
}

bool KubeBackend::wait(std::chrono::milliseconds timeout) {
  start_informers();
  std::unique_lock lock(m_news_mutex);
  bool news = m_news.wait_for(lock, timeout, [&] { return m_version != m_seen_version; });
  m_seen_version = m_version;
  return news;
}

BackendResult<std::string> KubeBackend::check() {
  auto version = m_client->get("/version");
  if (!version) return std::unexpected(backend_error(version.error(), "asking the API server for its version"));
  auto nodes = m_client->get(with_query(nodes_path(), "limit=500"));
  if (!nodes) return std::unexpected(backend_error(nodes.error(), "listing nodes"));
  auto pods = m_client->get(fmt::format("/api/v1/namespaces/{}/pods?limit=1", m_options.namespace_name));
  if (!pods) return std::unexpected(backend_error(pods.error(), "listing pods in namespace " + m_options.namespace_name));
  size_t count = nodes->value("items", json::array()).size();
  bool more = !nodes->value("metadata", json::object()).value("continue", "").empty();
  return fmt::format("Kubernetes {} at {}: {}{} node(s), namespace {}", version->value("gitVersion", "?"),
                     m_client->config().server, count, more ? "+" : "", m_options.namespace_name);
}

}  // namespace gaia::kube
