// The verbs of the stand-in API server on any resource: get, list, create, replace,
// merge/JSON patch, server-side apply and delete. Every function runs with the server's
// mutex held (kube_apiserver.cpp dispatches). Pod-specific behaviour is in pods.cpp.

#include <fmt/format.h>

#include <charconv>

#include "standin/fields.hpp"
#include "standin/selectors.hpp"
#include "standin/server_impl.hpp"

namespace gaia::standin {

using namespace detail;
using nlohmann::json;

namespace {

std::string now_string() { return rfc3339(std::chrono::system_clock::now()); }

FieldScope scope_for(const ResourceInfo& resource, const std::string& subresource) {
  if (subresource == "status") return FieldScope::StatusOnly;
  return resource.has_status ? FieldScope::NoStatus : FieldScope::All;
}

std::string manager_of(const ApiRequest& r) {
  std::string manager = r.param("fieldManager");
  return manager.empty() ? "unknown" : manager;
}

const std::vector<std::string>& server_owned_metadata() {
  static const std::vector<std::string> keys = {"uid",        "resourceVersion",   "creationTimestamp",
                                                "generation", "deletionTimestamp", "deletionGracePeriodSeconds",
                                                "selfLink",   "managedFields"};
  return keys;
}

// What the server owns comes from the stored object whatever the client sent: identity,
// timestamps, resourceVersion and, unless `keep_managed`, the managed fields.
void keep_server_fields(const json& live, json& candidate, const ResourceInfo& resource, bool keep_managed) {
  candidate["apiVersion"] = resource.api_version();
  candidate["kind"] = resource.kind;
  if (!candidate["metadata"].is_object()) candidate["metadata"] = json::object();
  json& meta = candidate["metadata"];
  const json& old = live["metadata"];
  meta["name"] = old["name"];
  if (old.contains("namespace")) meta["namespace"] = old["namespace"];
  else meta.erase("namespace");
  for (const std::string& key : server_owned_metadata()) {
    if (key == "managedFields" && keep_managed) continue;
    if (old.contains(key)) meta[key] = old[key];
    else meta.erase(key);
  }
}

void check_kind(const json& body, const ResourceInfo& resource, bool required) {
  std::string kind = body.value("kind", "");
  std::string api_version = body.value("apiVersion", "");
  if (required && (kind.empty() || api_version.empty()))
    throw bad_request("apiVersion and kind must be set in an apply configuration");
  if (!kind.empty() && kind != resource.kind)
    throw bad_request(fmt::format("the object's kind {} does not match the resource {}", kind, qualified(resource)));
  if (!api_version.empty() && api_version != resource.api_version())
    throw bad_request(fmt::format("the object's apiVersion {} does not match the request's {}", api_version,
                                  resource.api_version()));
}

// The name and namespace in a body must agree with the URL's; absent ones are filled in.
void check_identity(json& body, const ApiRequest& r) {
  if (!body["metadata"].is_object()) body["metadata"] = json::object();
  json& meta = body["metadata"];
  std::string name = meta.value("name", "");
  if (!name.empty() && name != r.name)
    throw bad_request(fmt::format("the name of the object ({}) does not match the name on the URL ({})", name, r.name));
  std::string ns = meta.value("namespace", "");
  if (!ns.empty() && ns != r.ns)
    throw bad_request("the namespace of the provided object does not match the namespace sent on the request");
  meta["name"] = r.name;
  if (r.resource->namespaced) meta["namespace"] = r.ns;
}

// Whether anything outside metadata and status differs (what bumps metadata.generation).
bool spec_changed(const json& a, const json& b) {
  json x = a, y = b;
  for (json* o : {&x, &y}) {
    o->erase("metadata");
    o->erase("status");
  }
  return x != y;
}

}  // namespace

json KubeApiServer::Impl::present(const ResourceInfo& resource, const json& object) const {
  if (resource.plural != "poddisruptionbudgets") return object;
  json out = object;
  out["status"] = disruption_status(object);
  return out;
}

void KubeApiServer::Impl::require_namespace(const std::string& ns) const {
  if (!store.find("namespaces", "", ns)) throw not_found(*find_bucket("namespaces"), ns);
}

ApiReply KubeApiServer::Impl::get_object(const ApiRequest& r) {
  const json* found = store.find(r.resource->bucket, r.ns, r.name);
  if (!found) throw not_found(*r.resource, r.name);
  return {200, present(*r.resource, *found)};
}

ApiReply KubeApiServer::Impl::list_objects(const ApiRequest& r) {
  ObjectFilter filter = parse_filter(r);
  json items = json::array();
  for (const json* o : store.list(r.resource->bucket, r.ns))
    if (filter.matches(*o)) items.push_back(present(*r.resource, *o));
  // No paging: ?limit= is ignored and the answer never carries a continue token, which
  // clients that page read as the last page.
  return {200,
          {{"kind", r.resource->list_kind()},
           {"apiVersion", r.resource->api_version()},
           {"metadata", {{"resourceVersion", std::to_string(store.revision())}}},
           {"items", std::move(items)}}};
}

void KubeApiServer::Impl::prepare_create(const ApiRequest& r, json& object) {
  const ResourceInfo& resource = *r.resource;
  if (!object["metadata"].is_object()) object["metadata"] = json::object();
  json& meta = object["metadata"];
  if (resource.namespaced) {
    std::string ns = meta.value("namespace", "");
    if (!ns.empty() && ns != r.ns)
      throw bad_request("the namespace of the provided object does not match the namespace sent on the request");
    meta["namespace"] = r.ns;
    require_namespace(r.ns);
  } else {
    meta.erase("namespace");
  }
  std::string name = meta.value("name", "");
  if (name.empty()) {
    std::string prefix = meta.value("generateName", "");
    if (prefix.empty())
      throw invalid(resource, "", "metadata.name", "FieldValueRequired",
                    "Required value: name or generateName is required");
    // Kubernetes retries a generated name that happens to exist; so does this.
    for (int attempt = 0; attempt < 16; ++attempt) {
      name = prefix + random_suffix(rng);
      if (!store.find(resource.bucket, r.ns, name)) break;
    }
  }
  bool label_only = resource.plural == "namespaces" || resource.plural == "services";
  if (label_only ? !is_dns_label(name) : !is_dns_subdomain(name))
    throw invalid(resource, name, "metadata.name", "FieldValueInvalid",
                  fmt::format("Invalid value: \"{}\": a lowercase RFC 1123 {} must consist of lower case alphanumeric "
                              "characters, '-'{}, and must start and end with an alphanumeric character",
                              name, label_only ? "label" : "subdomain", label_only ? "" : " or '.'"));
  meta["name"] = name;
  for (const std::string& key : server_owned_metadata()) meta.erase(key);
  meta["uid"] = random_uid(rng);
  meta["creationTimestamp"] = now_string();
  if (resource.has_generation) meta["generation"] = 1;
  object["apiVersion"] = resource.api_version();
  object["kind"] = resource.kind;

  if (resource.plural == "pods") {
    prepare_pod(object);
  } else if (resource.plural == "namespaces") {
    object["status"] = {{"phase", "Active"}};
    meta["labels"]["kubernetes.io/metadata.name"] = name;
  } else if (resource.plural == "services") {
    object["status"] = {{"loadBalancer", json::object()}};
  } else if (resource.plural == "poddisruptionbudgets") {
    object.erase("status");  // Computed whenever the budget is read.
  } else if (resource.plural == "priorityclasses") {
    if (!object.contains("value") || !object["value"].is_number_integer())
      throw invalid(resource, name, "value", "FieldValueRequired", "Required value");
  }
}

void KubeApiServer::Impl::bootstrap() {
  ApiRequest r;
  r.resource = find_bucket("namespaces");
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    json ns = {{"metadata", {{"name", name}}}};
    prepare_create(r, ns);
    store.add("namespaces", std::move(ns));
  }
}

ApiReply KubeApiServer::Impl::create_object(const ApiRequest& r) {
  if (!r.name.empty()) throw ApiError(405, "MethodNotAllowed", "POST to an object");
  json object = parse_body(r.body);
  check_kind(object, *r.resource, false);
  prepare_create(r, object);
  std::string name = object["metadata"]["name"];
  if (store.find(r.resource->bucket, r.ns, name)) throw already_exists(*r.resource, name);
  record_update(nullptr, object, manager_of(r), r.resource->api_version(), now_string(), scope_for(*r.resource, ""),
                "");
  const json& stored = store.add(r.resource->bucket, std::move(object));
  return {201, present(*r.resource, stored)};
}

ApiReply KubeApiServer::Impl::replace_object(const ApiRequest& r) {
  json body = parse_body(r.body);
  const json* found = store.find(r.resource->bucket, r.ns, r.name);
  if (!found) throw not_found(*r.resource, r.name);
  check_kind(body, *r.resource, false);
  check_identity(body, r);
  bool carried = !resource_version_of(body).empty();
  return commit_update(r, json(*found), std::move(body), carried);
}

ApiReply KubeApiServer::Impl::commit_update(const ApiRequest& r, const json& live, json candidate, bool carried_rv,
                                            bool record) {
  const ResourceInfo& resource = *r.resource;
  if (carried_rv) {
    // A resourceVersion in the body is a precondition: the write applies to that
    // version of the object or not at all.
    if (take_conflict() || resource_version_of(candidate) != resource_version_of(live))
      throw stale_conflict(resource, r.name);
  }
  keep_server_fields(live, candidate, resource, !record);
  FieldScope scope = scope_for(resource, r.subresource);
  if (scope == FieldScope::StatusOnly) {
    json next = live;
    next["status"] = candidate.contains("status") ? candidate["status"] : json::object();
    if (!record) {
      if (candidate["metadata"].contains("managedFields"))
        next["metadata"]["managedFields"] = candidate["metadata"]["managedFields"];
      else
        next["metadata"].erase("managedFields");
    }
    candidate = std::move(next);
  } else if (scope == FieldScope::NoStatus) {
    if (live.contains("status")) candidate["status"] = live["status"];
    else candidate.erase("status");
  }
  if (resource.plural == "pods") validate_pod_update(live, candidate);
  if (resource.has_generation && spec_changed(live, candidate))
    candidate["metadata"]["generation"] = live["metadata"].value("generation", 1) + 1;
  if (record)
    record_update(live, candidate, manager_of(r), resource.api_version(), now_string(), scope,
                  r.subresource == "status" ? "status" : "");
  // A write that changes nothing is not a write: no new resourceVersion, no event.
  if (candidate == live) return {200, present(resource, live)};
  const json& stored = store.modify(resource.bucket, std::move(candidate));
  return {200, present(resource, stored)};
}

ApiReply KubeApiServer::Impl::patch_object(const ApiRequest& r) {
  if (r.content_type == "application/apply-patch+yaml") return apply_object(r);
  const json* found = store.find(r.resource->bucket, r.ns, r.name);
  if (!found) throw not_found(*r.resource, r.name);
  json live = *found;
  json candidate;
  bool carried = false;
  if (r.content_type == "application/merge-patch+json" || r.content_type == "application/strategic-merge-patch+json") {
    // Strategic merge patch is taken as a JSON merge patch: lists are replaced whole
    // rather than merged by their patch keys.
    json patch = parse_body(r.body);
    carried = !resource_version_of(patch).empty();
    candidate = merge_patch(live, patch);
  } else if (r.content_type == "application/json-patch+json") {
    json patch = json::parse(r.body, nullptr, false);
    if (patch.is_discarded() || !patch.is_array()) throw bad_request("a JSON patch must be a JSON array of operations");
    try {
      candidate = live.patch(patch);
    } catch (const json::exception& e) {
      throw ApiError(422, "Invalid", fmt::format("the JSON patch could not be applied: {}", e.what()));
    }
    carried = resource_version_of(candidate) != resource_version_of(live);
  } else {
    throw ApiError(415, "UnsupportedMediaType",
                   fmt::format("the body of the request was in an unknown format ({}) - accepted media types include: "
                               "application/json-patch+json, application/merge-patch+json, "
                               "application/apply-patch+yaml",
                               r.content_type.empty() ? "none" : r.content_type));
  }
  if (!candidate.is_object()) throw ApiError(422, "Invalid", "the patch did not leave an object");
  return commit_update(r, live, std::move(candidate), carried);
}

ApiReply KubeApiServer::Impl::apply_object(const ApiRequest& r) {
  const ResourceInfo& resource = *r.resource;
  std::string manager = r.param("fieldManager");
  if (manager.empty()) throw bad_request("fieldManager is required for apply requests");
  std::string force_text = r.param("force");
  if (!force_text.empty() && force_text != "true" && force_text != "false")
    throw bad_request(fmt::format("invalid value for force: {}", force_text));
  bool force = force_text == "true";
  json config = json::parse(r.body, nullptr, false);
  if (config.is_discarded())
    throw ApiError(415, "UnsupportedMediaType",
                   "the stand-in reads apply configurations written as JSON (which is YAML) only");
  if (!config.is_object()) throw bad_request("an apply configuration must be an object");
  check_kind(config, resource, true);
  check_identity(config, r);

  const json* found = store.find(resource.bucket, r.ns, r.name);
  if (!resource_version_of(config).empty()) {
    if (take_conflict() || !found || resource_version_of(config) != resource_version_of(*found))
      throw stale_conflict(resource, r.name);
  }
  for (const std::string& key : server_owned_metadata()) config["metadata"].erase(key);
  FieldScope scope = scope_for(resource, r.subresource);
  if (scope == FieldScope::NoStatus) {
    config.erase("status");
  } else if (scope == FieldScope::StatusOnly) {
    config = {{"apiVersion", config["apiVersion"]},
              {"kind", config["kind"]},
              {"metadata", config["metadata"]},
              {"status", config.value("status", json::object())}};
  }
  std::string subresource = r.subresource == "status" ? "status" : "";
  std::string time = now_string();

  if (!found) {
    // Apply creates what does not exist (its status subresource excepted).
    if (!r.subresource.empty()) throw not_found(resource, r.name);
    ApplyOutcome outcome = server_side_apply(nullptr, config, manager, force, scope, resource.api_version(), time, "");
    json object = std::move(outcome.object);
    json managed = object["metadata"].value("managedFields", json(nullptr));
    prepare_create(r, object);
    if (!managed.is_null()) object["metadata"]["managedFields"] = managed;
    const json& stored = store.add(resource.bucket, std::move(object));
    return {201, present(resource, stored)};
  }
  json live = *found;
  ApplyOutcome outcome = server_side_apply(live, config, manager, force, scope, resource.api_version(), time,
                                           subresource);
  if (!outcome.conflicts.empty()) {
    json causes = json::array();
    for (const ApplyConflict& c : outcome.conflicts)
      causes.push_back({{"reason", "FieldManagerConflict"},
                        {"message", fmt::format("conflict with \"{}\"", c.manager)},
                        {"field", path_string(c.path)}});
    throw ApiError(409, "Conflict", conflict_message(outcome.conflicts),
                   json{{"name", r.name}, {"kind", resource.plural}, {"causes", causes}});
  }
  return commit_update(r, live, std::move(outcome.object), false, false);
}

std::optional<int64_t> KubeApiServer::Impl::requested_grace(const ApiRequest& r, const json& options) {
  if (options.contains("gracePeriodSeconds") && options["gracePeriodSeconds"].is_number_integer())
    return options["gracePeriodSeconds"].get<int64_t>();
  std::string text = r.param("gracePeriodSeconds");
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    throw bad_request(fmt::format("invalid gracePeriodSeconds: {}", text));
  return value;
}

void KubeApiServer::Impl::check_preconditions(const ResourceInfo& resource, const json& live, const json& options) {
  if (!options.is_object() || !options.contains("preconditions") || !options["preconditions"].is_object()) return;
  const json& pre = options["preconditions"];
  std::string uid = pre.value("uid", "");
  std::string rv = pre.value("resourceVersion", "");
  std::string name = string_at(live, {"metadata", "name"});
  if (!uid.empty() && uid != string_at(live, {"metadata", "uid"}))
    throw conflict(qualified(resource), name,
                   fmt::format("Precondition failed: UID in precondition: {}, UID in object meta: {}", uid,
                               string_at(live, {"metadata", "uid"})));
  if (!rv.empty() && (take_conflict() || rv != resource_version_of(live)))
    throw conflict(qualified(resource), name,
                   fmt::format("Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object "
                               "meta: {}",
                               rv, resource_version_of(live)));
}

ApiReply KubeApiServer::Impl::delete_object(const ApiRequest& r) {
  const ResourceInfo& resource = *r.resource;
  const json* found = store.find(resource.bucket, r.ns, r.name);
  if (!found) throw not_found(resource, r.name);
  json live = *found;
  json options = r.body.empty() || r.body == "null" ? json::object() : parse_body(r.body);
  check_preconditions(resource, live, options);
  std::optional<int64_t> grace = requested_grace(r, options);
  if (resource.plural == "pods") return delete_pod(r, live, grace);
  if (resource.plural == "namespaces") {
    // Immediately, rather than through a Terminating phase: everything in the
    // namespace goes first, each with its DELETED event.
    for (const std::string& bucket : store.buckets()) {
      const ResourceInfo* info = find_bucket(bucket);
      if (!info || !info->namespaced) continue;
      std::vector<std::string> names;
      for (const json* o : store.list(bucket, r.name)) names.push_back(string_at(*o, {"metadata", "name"}));
      for (const std::string& name : names) store.remove(bucket, r.name, name);
    }
  }
  json last = store.remove(resource.bucket, r.ns, r.name);
  return {200, present(resource, last)};
}

}  // namespace gaia::standin
