#include "standin/fake_kubelet.hpp"

#include "lib/clock.hpp"
#include "lib/timeline.hpp"

#include <fmt/format.h>


namespace gaia::standin {

using nlohmann::json;

namespace {

std::string now_text() { return format_rfc3339(SystemClock().now()); }

json ready_condition(bool ready) {
  return {{"type", "Ready"},
          {"status", ready ? "True" : "False"},
          {"reason", ready ? "KubeletReady" : "KubeletNotReady"},
          {"message", ready ? "kubelet is posting ready status" : "the fake kubelet was stopped by the test"},
          {"lastHeartbeatTime", now_text()},
          {"lastTransitionTime", now_text()}};
}

}  // namespace

FakeKubelet::FakeKubelet(std::shared_ptr<kube::Client> client, std::string namespace_name,
                         std::chrono::milliseconds ready_after)
    : m_client(std::move(client)), m_namespace(std::move(namespace_name)), m_ready_after(ready_after) {}

FakeKubelet::~FakeKubelet() { stop(); }

std::string FakeKubelet::next_pod_ip() {
  std::lock_guard lock(m_mutex);
  uint32_t n = ++m_pod_ips;
  return fmt::format("10.244.{}.{}", (n >> 8) & 255, n & 255);
}

kube::ApiResult<void> FakeKubelet::add_node(const FakeNode& node) {
  json labels = {{"kubernetes.io/hostname", node.name}};
  for (const auto& [k, v] : node.labels) labels[k] = v;
  json meta = {{"name", node.name}, {"labels", labels}};
  if (!node.volume_groups.empty()) meta["annotations"] = {{"gaia.io/volume-groups", node.volume_groups}};
  json obj = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", meta}, {"spec", json::object()}};
  auto created = m_client->create("/api/v1/nodes", obj);
  if (!created && created.error().code != kube::ApiErrc::AlreadyExists) return std::unexpected(created.error());
  json resources = {{"cpu", node.cpu}, {"memory", node.memory}, {"pods", "110"}, {"ephemeral-storage", "100Gi"}};
  json status = {{"capacity", resources}, {"allocatable", resources}, {"conditions", json::array({ready_condition(true)})}};
  if (!node.address.empty()) status["addresses"] = json::array({{{"type", "InternalIP"}, {"address", node.address}}});
  auto patched = m_client->merge_patch("/api/v1/nodes/" + node.name + "/status", {{"status", status}});
  if (!patched) return std::unexpected(patched.error());
  std::lock_guard lock(m_mutex);
  m_dead.erase(node.name);
  return {};
}

kube::ApiResult<void> FakeKubelet::set_node_ready(const std::string& node, bool ready) {
  {
    std::lock_guard lock(m_mutex);
    if (ready) m_dead.erase(node);
    else m_dead.insert(node);
  }
  auto patched = m_client->merge_patch("/api/v1/nodes/" + node + "/status",
                                       {{"status", {{"conditions", json::array({ready_condition(ready)})}}}});
  if (!patched) return std::unexpected(patched.error());
  return {};
}

kube::ApiResult<void> FakeKubelet::finish_pod(const std::string& pod, int exit_code, const std::string& reason) {
  json status = {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                 {"conditions", json::array({{{"type", "Ready"}, {"status", "False"}}})},
                 {"containerStatuses",
                  json::array({{{"name", "main"},
                                {"ready", false},
                                {"state", {{"terminated", {{"exitCode", exit_code}, {"reason", reason}}}}}}})}};
  auto patched =
      m_client->merge_patch(fmt::format("/api/v1/namespaces/{}/pods/{}/status", m_namespace, pod), {{"status", status}});
  if (!patched) return std::unexpected(patched.error());
  return {};
}

void FakeKubelet::start() {
  std::lock_guard lock(m_mutex);
  if (m_thread.joinable()) return;
  m_stopping = false;
  m_cancel_owned = std::make_unique<http::Cancellation>();
  m_cancel = m_cancel_owned.get();
  m_thread = std::thread([this] { run(); });
}

void FakeKubelet::stop() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    if (m_cancel) m_cancel->cancel();
  }
  if (m_thread.joinable()) m_thread.join();
}

int FakeKubelet::started() const {
  std::lock_guard lock(m_mutex);
  return m_started;
}

int FakeKubelet::finished_deletions() const {
  std::lock_guard lock(m_mutex);
  return m_deleted;
}

void FakeKubelet::handle(const json& pod) {
  const json& meta = pod.value("metadata", json::object());
  const json& spec = pod.value("spec", json::object());
  const json& status = pod.value("status", json::object());
  std::string name = meta.value("name", "");
  std::string node = spec.value("nodeName", "");
  if (node.empty()) return;
  {
    std::lock_guard lock(m_mutex);
    if (m_dead.count(node)) return;
  }
  const std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}", m_namespace, name);
  if (meta.contains("deletionTimestamp")) {
    auto gone = m_client->remove(path, json{{"gracePeriodSeconds", 0}});
    if (gone || gone.error().code == kube::ApiErrc::NotFound) {
      std::lock_guard lock(m_mutex);
      ++m_deleted;
    }
    return;
  }
  std::string phase = status.value("phase", "");
  if (phase != "Pending" && !phase.empty()) return;
  if (m_ready_after.count() > 0) {
    std::lock_guard lock(m_mutex);
    auto [it, fresh] = m_seen_bound.emplace(name, std::chrono::steady_clock::now());
    if (std::chrono::steady_clock::now() - it->second < m_ready_after) return;
  }
  std::string container = "main";
  if (spec.contains("containers") && !spec["containers"].empty()) container = spec["containers"][0].value("name", "main");
  json new_status = {{"phase", "Running"},
                     {"startTime", now_text()},
                     {"podIP", next_pod_ip()},
                     {"conditions", json::array({{{"type", "PodScheduled"}, {"status", "True"}},
                                                 {{"type", "Ready"}, {"status", "True"}}})},
                     {"containerStatuses", json::array({{{"name", container},
                                                         {"ready", true},
                                                         {"started", true},
                                                         {"state", {{"running", {{"startedAt", now_text()}}}}}}})}};
  auto patched = m_client->merge_patch(path + "/status", {{"status", new_status}});
  if (patched) {
    std::lock_guard lock(m_mutex);
    ++m_started;
  }
}

void FakeKubelet::run() {
  const std::string base = fmt::format("/api/v1/namespaces/{}/pods", m_namespace);
  auto stopping = [&] {
    std::lock_guard lock(m_mutex);
    return m_stopping;
  };
  while (!stopping()) {
    auto list = m_client->get(base);
    if (!list) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    std::string rv = list->value("metadata", json::object()).value("resourceVersion", "");
    for (const auto& pod : list->value("items", json::array())) handle(pod);
    // A pod waiting out ready_after needs another look without a change to wake on, so
    // the watch is bounded and the list repeated.
    std::string timeout = m_ready_after.count() > 0 ? "1" : "30";
    auto watched = m_client->watch(
        fmt::format("{}?watch=1&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}", base, timeout, rv),
        [&](const kube::WatchEvent& e) {
          if (e.type == "ADDED" || e.type == "MODIFIED") handle(e.object);
          return !stopping();
        },
        m_cancel, std::chrono::milliseconds(60000));
    if (!watched && watched.error().code == kube::ApiErrc::Cancelled) return;
    if (!watched) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace gaia::standin
