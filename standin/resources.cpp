// The resources served, Status objects, discovery and small helpers of the stand-in
// API server (standin/server_impl.hpp).

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "standin/server_impl.hpp"

namespace gaia::standin::detail {

const std::vector<ResourceInfo>& resource_table() {
  static const std::vector<ResourceInfo> table = {
      {"", "v1", "namespaces", "namespace", "Namespace", "namespaces", false, true, false, {"status"}},
      {"", "v1", "nodes", "node", "Node", "nodes", false, true, false, {"status"}},
      {"", "v1", "pods", "pod", "Pod", "pods", true, true, false, {"status", "binding", "eviction"}},
      {"", "v1", "services", "service", "Service", "services", true, true, false, {"status"}},
      {"", "v1", "configmaps", "configmap", "ConfigMap", "configmaps", true, false, false, {}},
      {"", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", "persistentvolumeclaims",
       true, true, false, {"status"}},
      {"", "v1", "events", "event", "Event", "events", true, false, false, {}},
      {"events.k8s.io", "v1", "events", "event", "Event", "events.events.k8s.io", true, false, false, {}},
      {"policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", "poddisruptionbudgets",
       true, true, true, {"status"}},
      {"scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass", "priorityclasses", false,
       false, false, {}},
      {"storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", "storageclasses", false, false, false,
       {}},
  };
  return table;
}

const ResourceInfo* find_resource(std::string_view group, std::string_view version, std::string_view plural) {
  for (const ResourceInfo& r : resource_table())
    if (r.group == group && r.version == version && r.plural == plural) return &r;
  return nullptr;
}

const ResourceInfo* find_bucket(std::string_view bucket) {
  for (const ResourceInfo& r : resource_table())
    if (r.bucket == bucket) return &r;
  for (const ResourceInfo& r : resource_table())
    if (r.plural == bucket) return &r;
  return nullptr;
}

std::string reason_for(int code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return code >= 500 ? "InternalError" : "Unknown";
  }
}

json status_object(int code, const std::string& reason, const std::string& message, const json& details) {
  json status = {{"kind", "Status"},  {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Failure"},
                 {"message", message}, {"reason", reason},  {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status;
}

json success_status(int code) {
  return {{"kind", "Status"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"status", "Success"},
          {"code", code}};
}

ApiError bad_request(std::string message) { return ApiError(400, "BadRequest", std::move(message)); }

std::string qualified(const ResourceInfo& resource) {
  return resource.group.empty() ? resource.plural : resource.plural + "." + resource.group;
}

namespace {

json name_details(const ResourceInfo& resource, const std::string& name) {
  json details = {{"name", name}, {"kind", resource.plural}};
  if (!resource.group.empty()) details["group"] = resource.group;
  return details;
}

}  // namespace

ApiError not_found(const ResourceInfo& resource, const std::string& name) {
  return ApiError(404, "NotFound", fmt::format("{} \"{}\" not found", qualified(resource), name),
                  name_details(resource, name));
}

ApiError already_exists(const ResourceInfo& resource, const std::string& name) {
  return ApiError(409, "AlreadyExists", fmt::format("{} \"{}\" already exists", qualified(resource), name),
                  name_details(resource, name));
}

ApiError conflict(const std::string& qualified_resource, const std::string& name, const std::string& why) {
  return ApiError(409, "Conflict",
                  fmt::format("Operation cannot be fulfilled on {} \"{}\": {}", qualified_resource, name, why),
                  json{{"name", name}, {"kind", qualified_resource}});
}

ApiError stale_conflict(const ResourceInfo& resource, const std::string& name) {
  return conflict(qualified(resource), name,
                  "the object has been modified; please apply your changes to the latest version and try again");
}

ApiError invalid(const ResourceInfo& resource, const std::string& name, const std::string& field,
                 const std::string& cause_reason, const std::string& message) {
  json details = name_details(resource, name);
  details["kind"] = resource.kind;
  details["causes"] = json::array({{{"reason", cause_reason}, {"message", message}, {"field", field}}});
  return ApiError(422, "Invalid", fmt::format("{} \"{}\" is invalid: {}: {}", resource.kind, name, field, message),
                  details);
}

namespace {

json resource_list(const std::string& group_version, int port) {
  json resources = json::array();
  for (const ResourceInfo& r : resource_table()) {
    if (r.api_version() != group_version) continue;
    json verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    resources.push_back({{"name", r.plural},
                         {"singularName", r.singular},
                         {"namespaced", r.namespaced},
                         {"kind", r.kind},
                         {"verbs", verbs}});
    for (const std::string& sub : r.subresources) {
      json sub_verbs = sub == "status" ? json{"get", "patch", "update"} : json{"create"};
      std::string kind = sub == "binding" ? "Binding" : sub == "eviction" ? "Eviction" : r.kind;
      resources.push_back({{"name", r.plural + "/" + sub},
                           {"singularName", ""},
                           {"namespaced", r.namespaced},
                           {"kind", kind},
                           {"verbs", sub_verbs}});
    }
  }
  if (resources.empty()) return nullptr;
  return {{"kind", "APIResourceList"}, {"apiVersion", "v1"}, {"groupVersion", group_version},
          {"resources", resources}};
}

json api_group(const std::string& group) {
  for (const ResourceInfo& r : resource_table()) {
    if (r.group != group) continue;
    json version = {{"groupVersion", r.api_version()}, {"version", r.version}};
    return {{"kind", "APIGroup"},
            {"apiVersion", "v1"},
            {"name", group},
            {"versions", json::array({version})},
            {"preferredVersion", version}};
  }
  return nullptr;
}

}  // namespace

json discovery(std::string_view path, int port) {
  if (path == "/version")
    return {{"major", "1"},          {"minor", "28"},       {"gitVersion", "v1.28.0-gaia-standin"},
            {"gitCommit", "standin"}, {"gitTreeState", "clean"}, {"goVersion", "none"},
            {"compiler", "gc"},       {"platform", "linux/amd64"}};
  if (path == "/api" || path == "/api/")
    return {{"kind", "APIVersions"},
            {"versions", json::array({"v1"})},
            {"serverAddressByClientCIDRs",
             json::array({{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", fmt::format("127.0.0.1:{}", port)}}})}};
  if (path == "/api/v1" || path == "/api/v1/") return resource_list("v1", port);
  if (path == "/apis" || path == "/apis/") {
    json groups = json::array();
    std::vector<std::string> seen;
    for (const ResourceInfo& r : resource_table()) {
      if (r.group.empty() || std::find(seen.begin(), seen.end(), r.group) != seen.end()) continue;
      seen.push_back(r.group);
      groups.push_back(api_group(r.group));
    }
    return {{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", groups}};
  }
  if (path.starts_with("/apis/")) {
    std::string rest(path.substr(6));
    if (rest.ends_with("/")) rest.pop_back();
    auto slash = rest.find('/');
    if (slash == std::string::npos) return api_group(rest);
    if (rest.find('/', slash + 1) == std::string::npos) return resource_list(rest, port);
  }
  return nullptr;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", std::chrono::floor<std::chrono::seconds>(t));
}

std::string random_uid(std::mt19937_64& rng) {
  uint64_t hi = rng(), lo = rng();
  // A version 4 UUID: the version nibble 4 and the variant bits 10.
  hi = (hi & ~0xF000ULL) | 0x4000ULL;
  lo = (lo & ~(0xC000ULL << 48)) | (0x8000ULL << 48);
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xFFFF, hi & 0xFFFF, lo >> 48,
                     lo & 0xFFFFFFFFFFFFULL);
}

std::string random_suffix(std::mt19937_64& rng) {
  // The alphabet of Kubernetes' generateName: no vowels (no words) and no look-alikes.
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s += alphabet[rng() % alphabet.size()];
  return s;
}

namespace {

bool is_label_chars(std::string_view part) {
  if (part.empty() || part.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(part.front()) || !alnum(part.back())) return false;
  return std::all_of(part.begin(), part.end(), [&](char c) { return alnum(c) || c == '-'; });
}

}  // namespace

bool is_dns_label(std::string_view name) { return is_label_chars(name); }

bool is_dns_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = name.find('.', start);
    if (!is_label_chars(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::string string_at(const json& object, std::initializer_list<const char*> path) {
  const json* at = &object;
  for (const char* key : path) {
    if (!at->is_object()) return {};
    auto it = at->find(key);
    if (it == at->end()) return {};
    at = &*it;
  }
  return at->is_string() ? at->get<std::string>() : std::string();
}

std::string resource_version_of(const json& object) { return string_at(object, {"metadata", "resourceVersion"}); }

json parse_body(const std::string& body) {
  json parsed = json::parse(body, nullptr, false);
  if (parsed.is_discarded()) throw bad_request("the request body is not valid JSON");
  if (!parsed.is_object()) throw bad_request("the request body is not a JSON object");
  return parsed;
}

// The store.

json* ObjectStore::find(const std::string& bucket, const std::string& ns, const std::string& name) {
  auto b = m_buckets.find(bucket);
  if (b == m_buckets.end()) return nullptr;
  auto it = b->second.find(key(ns, name));
  return it == b->second.end() ? nullptr : &it->second;
}

const json* ObjectStore::find(const std::string& bucket, const std::string& ns, const std::string& name) const {
  return const_cast<ObjectStore*>(this)->find(bucket, ns, name);
}

std::vector<const json*> ObjectStore::list(const std::string& bucket, const std::string& ns) const {
  std::vector<const json*> out;
  auto b = m_buckets.find(bucket);
  if (b == m_buckets.end()) return out;
  // Keys are "ns/name", so one namespace is a contiguous range starting at "ns/".
  auto it = ns.empty() ? b->second.begin() : b->second.lower_bound(ns + "/");
  for (; it != b->second.end(); ++it) {
    if (!ns.empty() && !it->first.starts_with(ns + "/")) break;
    out.push_back(&it->second);
  }
  return out;
}

std::vector<std::string> ObjectStore::buckets() const {
  std::vector<std::string> out;
  for (const auto& [bucket, objects] : m_buckets) out.push_back(bucket);
  return out;
}

const json& ObjectStore::add(const std::string& bucket, json object) {
  object["metadata"]["resourceVersion"] = std::to_string(++m_revision);
  std::string k = key(string_at(object, {"metadata", "namespace"}), string_at(object, {"metadata", "name"}));
  json& stored = m_buckets[bucket][k] = std::move(object);
  record({m_revision, bucket, "ADDED", stored, nullptr});
  return stored;
}

const json& ObjectStore::modify(const std::string& bucket, json object) {
  object["metadata"]["resourceVersion"] = std::to_string(++m_revision);
  std::string k = key(string_at(object, {"metadata", "namespace"}), string_at(object, {"metadata", "name"}));
  json& stored = m_buckets[bucket][k];
  json previous = std::move(stored);
  stored = std::move(object);
  record({m_revision, bucket, "MODIFIED", stored, std::move(previous)});
  return stored;
}

json ObjectStore::remove(const std::string& bucket, const std::string& ns, const std::string& name) {
  auto& objects = m_buckets[bucket];
  auto it = objects.find(key(ns, name));
  if (it == objects.end()) return nullptr;
  json last = std::move(it->second);
  objects.erase(it);
  // A deletion is a change like any other: it gets its own resourceVersion, which the
  // DELETED event carries on the object's last state.
  last["metadata"]["resourceVersion"] = std::to_string(++m_revision);
  record({m_revision, bucket, "DELETED", last, nullptr});
  return last;
}

void ObjectStore::compact() {
  m_history.clear();
  m_floor = m_revision;
}

void ObjectStore::record(Change change) {
  m_history.push_back(std::move(change));
  while (m_history.size() > m_history_limit) {
    m_floor = m_history.front().rv;
    m_history.pop_front();
  }
}

}  // namespace gaia::standin::detail
