// Pods in the stand-in API server: defaults and admission on create (the priority of
// the pod's PriorityClass), the immutable spec.nodeName, binding, graceful deletion and
// eviction against PodDisruptionBudgets (whose status is computed here too). Every
// function runs with the server's mutex held.

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "standin/selectors.hpp"
#include "standin/server_impl.hpp"

namespace gaia::standin {

using namespace detail;
using nlohmann::json;

namespace {

const ResourceInfo& pods_info() { return *find_bucket("pods"); }

int64_t int_at(const json& object, std::initializer_list<const char*> path, int64_t fallback) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return fallback;
    at = &(*at)[key];
  }
  return at->is_number_integer() ? at->get<int64_t>() : fallback;
}

// Ready and not being deleted: what a disruption budget counts as healthy.
bool is_healthy(const json& pod) {
  if (pod["metadata"].contains("deletionTimestamp")) return false;
  const json* conditions = pod.contains("status") ? &pod["status"] : nullptr;
  if (!conditions || !conditions->contains("conditions") || !(*conditions)["conditions"].is_array()) return false;
  for (const json& c : (*conditions)["conditions"])
    if (c.value("type", "") == "Ready" && c.value("status", "") == "True") return true;
  return false;
}

// An IntOrString of a budget: a count, or a percentage of `total` rounded up.
int64_t scaled(const json& value, int64_t total) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (!value.is_string()) return 0;
  std::string text = value.get<std::string>();
  int64_t n = 0;
  bool percent = !text.empty() && text.back() == '%';
  if (percent) text.pop_back();
  std::from_chars(text.data(), text.data() + text.size(), n);
  if (!percent) return n;
  return static_cast<int64_t>(std::ceil(static_cast<double>(n) * static_cast<double>(total) / 100.0));
}

struct Budget {
  int64_t expected = 0;
  int64_t healthy = 0;
  int64_t desired = 0;
};

Budget budget_of(const ObjectStore& store, const json& pdb) {
  Budget b;
  std::string ns = string_at(pdb, {"metadata", "namespace"});
  const json& spec = pdb.contains("spec") ? pdb["spec"] : json::object();
  json selector = spec.is_object() && spec.contains("selector") ? spec["selector"] : json(nullptr);
  for (const json* pod : store.list("pods", ns)) {
    json labels = (*pod)["metadata"].value("labels", json::object());
    if (!selector_selects(selector, labels)) continue;
    ++b.expected;
    if (is_healthy(*pod)) ++b.healthy;
  }
  if (spec.is_object() && spec.contains("minAvailable")) {
    b.desired = scaled(spec["minAvailable"], b.expected);
  } else if (spec.is_object() && spec.contains("maxUnavailable")) {
    b.desired = std::max<int64_t>(0, b.expected - scaled(spec["maxUnavailable"], b.expected));
  }
  return b;
}

}  // namespace

json KubeApiServer::Impl::disruption_status(const json& pdb) const {
  Budget b = budget_of(store, pdb);
  return {{"observedGeneration", int_at(pdb, {"metadata", "generation"}, 1)},
          {"disruptionsAllowed", std::max<int64_t>(0, b.healthy - b.desired)},
          {"currentHealthy", b.healthy},
          {"desiredHealthy", b.desired},
          {"expectedPods", b.expected}};
}

void KubeApiServer::Impl::prepare_pod(json& pod) {
  const ResourceInfo& pods = pods_info();
  std::string name = pod["metadata"]["name"];
  if (!pod["spec"].is_object()) throw invalid(pods, name, "spec.containers", "FieldValueRequired", "Required value");
  json& spec = pod["spec"];
  if (!spec.contains("containers") || !spec["containers"].is_array() || spec["containers"].empty())
    throw invalid(pods, name, "spec.containers", "FieldValueRequired", "Required value");
  for (size_t i = 0; i < spec["containers"].size(); ++i) {
    const json& c = spec["containers"][i];
    for (const char* field : {"name", "image"})
      if (!c.is_object() || !c.contains(field) || !c[field].is_string() || c[field].get<std::string>().empty())
        throw invalid(pods, name, fmt::format("spec.containers[{}].{}", i, field), "FieldValueRequired",
                      "Required value");
  }
  if (!spec.contains("schedulerName")) spec["schedulerName"] = "default-scheduler";
  if (!spec.contains("terminationGracePeriodSeconds")) spec["terminationGracePeriodSeconds"] = 30;
  if (!spec.contains("restartPolicy")) spec["restartPolicy"] = "Always";

  // The Priority admission plugin: the priority comes from the PriorityClass named (or
  // the global default), and a pod may not state a different one itself.
  std::string class_name = spec.value("priorityClassName", "");
  int64_t priority = 0;
  const json* found_class = nullptr;
  if (!class_name.empty()) {
    found_class = store.find("priorityclasses", "", class_name);
    if (!found_class)
      throw ApiError(403, "Forbidden",
                     fmt::format("pods \"{}\" is forbidden: no PriorityClass with name {} was found", name, class_name));
  } else {
    for (const json* pc : store.list("priorityclasses", ""))
      if (pc->value("globalDefault", false)) found_class = pc;
    if (found_class) spec["priorityClassName"] = (*found_class)["metadata"]["name"];
  }
  if (found_class) priority = found_class->value("value", int64_t{0});
  if (spec.contains("priority") && spec["priority"].is_number_integer() && spec["priority"].get<int64_t>() != priority)
    throw ApiError(403, "Forbidden",
                   fmt::format("pods \"{}\" is forbidden: the integer value of priority ({}) must not be provided in "
                               "pod spec; priority admission controller computed {} from the given PriorityClass name",
                               name, spec["priority"].get<int64_t>(), priority));
  spec["priority"] = priority;
  if (found_class && !spec.contains("preemptionPolicy"))
    spec["preemptionPolicy"] = found_class->value("preemptionPolicy", "PreemptLowerPriority");

  pod["status"] = {{"phase", "Pending"}};
}

void KubeApiServer::Impl::validate_pod_update(const json& live, const json& updated) const {
  std::string before = string_at(live, {"spec", "nodeName"});
  std::string after = string_at(updated, {"spec", "nodeName"});
  if (before != after)
    throw invalid(pods_info(), string_at(live, {"metadata", "name"}), "spec.nodeName", "FieldValueInvalid",
                  fmt::format("Invalid value: \"{}\": field is immutable (a pod is bound through pods/binding)", after));
}

ApiReply KubeApiServer::Impl::delete_pod(const ApiRequest& r, const json& live, std::optional<int64_t> grace) {
  std::string node = string_at(live, {"spec", "nodeName"});
  std::string phase = string_at(live, {"status", "phase"});
  int64_t period = grace ? *grace : int_at(live, {"spec", "terminationGracePeriodSeconds"}, 30);
  if (period < 0) period = 0;
  // Nothing runs an unbound or finished pod, so nothing needs to be told: it goes now,
  // as it does with a grace of 0 (the kubelet's final delete, or a forced one).
  if (node.empty() || phase == "Succeeded" || phase == "Failed" || period == 0) {
    json last = store.remove("pods", r.ns, r.name);
    return {200, last};
  }
  const json& meta = live["metadata"];
  // A second graceful delete may only shorten the grace period.
  if (meta.contains("deletionTimestamp") && period >= int_at(live, {"metadata", "deletionGracePeriodSeconds"}, period))
    return {200, live};
  json next = live;
  next["metadata"]["deletionTimestamp"] = rfc3339(std::chrono::system_clock::now() + std::chrono::seconds(period));
  next["metadata"]["deletionGracePeriodSeconds"] = period;
  const json& stored = store.modify("pods", std::move(next));
  return {200, stored};
}

ApiReply KubeApiServer::Impl::bind_pod(const ApiRequest& r) {
  json binding = parse_body(r.body);
  std::string binding_name = string_at(binding, {"metadata", "name"});
  if (!binding_name.empty() && binding_name != r.name)
    throw bad_request(fmt::format("the name of the binding ({}) does not match the pod's ({})", binding_name, r.name));
  std::string target = string_at(binding, {"target", "name"});
  std::string target_kind = string_at(binding, {"target", "kind"});
  if (target.empty()) throw invalid(pods_info(), r.name, "target.name", "FieldValueRequired", "Required value");
  if (!target_kind.empty() && target_kind != "Node")
    throw invalid(pods_info(), r.name, "target.kind", "FieldValueNotSupported",
                  fmt::format("Unsupported value: \"{}\": supported values: \"Node\"", target_kind));
  const json* found = store.find("pods", r.ns, r.name);
  if (!found) throw not_found(pods_info(), r.name);
  json pod = *found;
  if (take_conflict())
    throw conflict("pods/binding", r.name,
                   "the object has been modified; please apply your changes to the latest version and try again");
  std::string uid = string_at(binding, {"metadata", "uid"});
  if (!uid.empty() && uid != string_at(pod, {"metadata", "uid"}))
    throw conflict("pods/binding", r.name,
                   fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}", uid,
                               string_at(pod, {"metadata", "uid"})));
  if (pod["metadata"].contains("deletionTimestamp"))
    throw conflict("pods/binding", r.name, fmt::format("pod {} is being deleted, cannot be assigned to a host", r.name));
  std::string current = string_at(pod, {"spec", "nodeName"});
  if (!current.empty())
    throw conflict("pods/binding", r.name, fmt::format("pod {} is already assigned to node \"{}\"", r.name, current));
  if (!store.find("nodes", "", target)) throw not_found(*find_bucket("nodes"), target);

  pod["spec"]["nodeName"] = target;
  json& status = pod["status"];
  if (!status.is_object()) status = json::object();
  if (!status.contains("conditions") || !status["conditions"].is_array()) status["conditions"] = json::array();
  json scheduled = {{"type", "PodScheduled"},
                    {"status", "True"},
                    {"lastProbeTime", nullptr},
                    {"lastTransitionTime", rfc3339(std::chrono::system_clock::now())}};
  bool replaced = false;
  for (json& c : status["conditions"]) {
    if (c.value("type", "") == "PodScheduled") {
      c = scheduled;
      replaced = true;
    }
  }
  if (!replaced) status["conditions"].push_back(scheduled);
  store.modify("pods", std::move(pod));
  return {201, success_status(201)};
}

ApiReply KubeApiServer::Impl::evict_pod(const ApiRequest& r) {
  json eviction = parse_body(r.body);
  std::string eviction_name = string_at(eviction, {"metadata", "name"});
  if (!eviction_name.empty() && eviction_name != r.name)
    throw bad_request(fmt::format("name in URL does not match name in Eviction object ({} vs {})", r.name,
                                  eviction_name));
  const json* found = store.find("pods", r.ns, r.name);
  if (!found) throw not_found(pods_info(), r.name);
  json pod = *found;
  json options = eviction.contains("deleteOptions") && eviction["deleteOptions"].is_object()
                     ? eviction["deleteOptions"]
                     : json::object();
  check_preconditions(pods_info(), pod, options);
  std::optional<int64_t> grace = requested_grace(r, options);

  // A pod that is finished, not yet running or already going disrupts nothing more:
  // Kubernetes deletes it without consulting the budgets.
  std::string phase = string_at(pod, {"status", "phase"});
  bool terminating = pod["metadata"].contains("deletionTimestamp");
  if (phase != "Succeeded" && phase != "Failed" && phase != "Pending" && !terminating) {
    json labels = pod["metadata"].value("labels", json::object());
    bool healthy = is_healthy(pod);
    // Every budget selecting the pod must allow it (Kubernetes refuses a pod under more
    // than one budget outright; the stand-in asks them all).
    for (const json* pdb : store.list("poddisruptionbudgets", r.ns)) {
      json selector = (*pdb).contains("spec") ? (*pdb)["spec"].value("selector", json(nullptr)) : json(nullptr);
      if (!selector_selects(selector, labels)) continue;
      Budget b = budget_of(store, *pdb);
      if (!healthy || b.healthy - 1 >= b.desired) continue;
      std::string pdb_name = string_at(*pdb, {"metadata", "name"});
      json causes = json::array({{{"reason", "DisruptionBudget"},
                                  {"message", fmt::format("The disruption budget {} needs {} healthy pods and has {} "
                                                          "currently",
                                                          pdb_name, b.desired, b.healthy)}}});
      throw ApiError(429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.",
                     json{{"causes", causes}});
    }
  }
  delete_pod(r, pod, grace);
  return {201, success_status(201)};
}

}  // namespace gaia::standin
