// The stand-in Kubernetes API server (standin/kube_apiserver.hpp), exercised over HTTP
// with cpp-httplib's client: the semantics gaia's Kubernetes backend relies on must hold
// here as they do in a real API server, or the backend's tests prove nothing.

#include <catch2/catch.hpp>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "standin/kube_apiserver.hpp"
#include "tests/temp_dir.hpp"

namespace {

using gaia::standin::ApiServerOptions;
using gaia::standin::KubeApiServer;
using nlohmann::json;

json pod_object(const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"containers", json::array({{{"name", "main"}, {"image", "busybox"}}})}}}};
}

json node_object(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

// A client of one server, speaking JSON.
class Api {
 public:
  explicit Api(const KubeApiServer& server) : m_client("127.0.0.1", server.port()) {
    m_client.set_read_timeout(10, 0);
    m_client.set_url_encode(false);  // The tests encode their queries themselves.
  }
  httplib::Client& raw() { return m_client; }

  struct Answer {
    int status = 0;
    json body;
    std::string retry_after;
  };
  Answer get(const std::string& path) { return answer(m_client.Get(path.c_str())); }
  Answer post(const std::string& path, const json& body) {
    return answer(m_client.Post(path.c_str(), body.dump(), "application/json"));
  }
  Answer put(const std::string& path, const json& body) {
    return answer(m_client.Put(path.c_str(), body.dump(), "application/json"));
  }
  Answer patch(const std::string& path, const json& body, const std::string& type = "application/merge-patch+json") {
    return answer(m_client.Patch(path.c_str(), body.dump(), type.c_str()));
  }
  Answer apply(const std::string& path, const json& body, const std::string& manager, bool force = false) {
    std::string target = path + "?fieldManager=" + manager + (force ? "&force=true" : "");
    return patch(target, body, "application/apply-patch+yaml");
  }
  Answer del(const std::string& path, const json& options = nullptr) {
    if (options.is_null()) return answer(m_client.Delete(path.c_str()));
    return answer(m_client.Delete(path.c_str(), options.dump(), "application/json"));
  }

  // Reads a watch until it ends or `enough` events arrived.
  std::vector<json> watch(const std::string& path, size_t enough = SIZE_MAX) {
    std::vector<json> events;
    std::string buffer;
    m_client.Get(path.c_str(), [&](const char* data, size_t size) {
      buffer.append(data, size);
      size_t nl;
      while ((nl = buffer.find('\n')) != std::string::npos) {
        events.push_back(json::parse(buffer.substr(0, nl)));
        buffer.erase(0, nl + 1);
      }
      return events.size() < enough;
    });
    return events;
  }

 private:
  static Answer answer(const httplib::Result& result) {
    if (!result) return {0, nullptr, {}};
    Answer a{result->status, json::parse(result->body, nullptr, false), result->get_header_value("Retry-After")};
    return a;
  }
  httplib::Client m_client;
};

std::string rv_of(const json& object) { return object["metadata"]["resourceVersion"].get<std::string>(); }

void create_namespace(Api& api, const std::string& name) {
  REQUIRE(api.post("/api/v1/namespaces", {{"metadata", {{"name", name}}}}).status == 201);
}

const std::string kPods = "/api/v1/namespaces/ns/pods";

}  // namespace

TEST_CASE("standin: create, get and list carry resourceVersions and names are unique", "[standin]") {
  KubeApiServer server;
  Api api(server);
  // Namespaced objects need their namespace first.
  auto missing = api.post(kPods, pod_object("a"));
  CHECK(missing.status == 404);
  CHECK(missing.body["kind"] == "Status");
  CHECK(missing.body["reason"] == "NotFound");
  create_namespace(api, "ns");

  auto created = api.post(kPods, pod_object("a", {{"app", "web"}}));
  REQUIRE(created.status == 201);
  CHECK(created.body["status"]["phase"] == "Pending");
  CHECK(created.body["metadata"]["uid"].get<std::string>().size() == 36);
  CHECK(!created.body["metadata"]["creationTimestamp"].get<std::string>().empty());
  CHECK(std::stoll(rv_of(created.body)) == server.resource_version());

  auto again = api.post(kPods, pod_object("a"));
  CHECK(again.status == 409);
  CHECK(again.body["reason"] == "AlreadyExists");

  json generated = pod_object("");
  generated["metadata"].erase("name");
  generated["metadata"]["generateName"] = "web-";
  auto gen = api.post(kPods, generated);
  REQUIRE(gen.status == 201);
  std::string gen_name = gen.body["metadata"]["name"];
  CHECK(gen_name.starts_with("web-"));
  CHECK(gen_name.size() == 9);

  auto got = api.get(kPods + "/a");
  REQUIRE(got.status == 200);
  CHECK(got.body == created.body);
  CHECK(api.get(kPods + "/nope").status == 404);

  auto list = api.get(kPods);
  REQUIRE(list.status == 200);
  CHECK(list.body["kind"] == "PodList");
  CHECK(list.body["items"].size() == 2);
  CHECK(list.body["metadata"]["resourceVersion"] == std::to_string(server.resource_version()));
  CHECK(api.get("/api/v1/pods").body["items"].size() == 2);

  // A pod without containers is invalid, as in Kubernetes.
  json bare = {{"metadata", {{"name", "bare"}}}, {"spec", json::object()}};
  CHECK(api.post(kPods, bare).status == 422);
  CHECK(api.get("/version").body["gitVersion"] == "v1.28.0-gaia-standin");
}

TEST_CASE("standin: a stale resourceVersion is a conflict and none is unconditional", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  json cm = {{"metadata", {{"name", "c"}}}, {"data", {{"k", "1"}}}};
  auto created = api.post("/api/v1/namespaces/ns/configmaps", cm);
  REQUIRE(created.status == 201);

  json update = created.body;
  update["data"]["k"] = "2";
  auto first = api.put("/api/v1/namespaces/ns/configmaps/c", update);
  REQUIRE(first.status == 200);
  CHECK(std::stoll(rv_of(first.body)) > std::stoll(rv_of(created.body)));

  update["data"]["k"] = "3";  // Still carries the first resourceVersion.
  auto stale = api.put("/api/v1/namespaces/ns/configmaps/c", update);
  CHECK(stale.status == 409);
  CHECK(stale.body["reason"] == "Conflict");
  auto stale_patch = api.patch("/api/v1/namespaces/ns/configmaps/c",
                               {{"metadata", {{"resourceVersion", rv_of(created.body)}}}, {"data", {{"k", "4"}}}});
  CHECK(stale_patch.status == 409);

  update["metadata"].erase("resourceVersion");
  auto unconditional = api.put("/api/v1/namespaces/ns/configmaps/c", update);
  REQUIRE(unconditional.status == 200);
  CHECK(unconditional.body["data"]["k"] == "3");

  // A write that changes nothing makes no new version.
  auto same = api.put("/api/v1/namespaces/ns/configmaps/c", update);
  CHECK(rv_of(same.body) == rv_of(unconditional.body));

  // conflict_next: writes that carry a resourceVersion fail even when it is current.
  server.conflict_next(1);
  auto current = api.get("/api/v1/namespaces/ns/configmaps/c").body;
  CHECK(api.put("/api/v1/namespaces/ns/configmaps/c", current).status == 409);
  CHECK(api.put("/api/v1/namespaces/ns/configmaps/c", current).status == 200);
}

TEST_CASE("standin: server-side apply merges by manager, conflicts and removes omitted fields", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  const std::string path = "/api/v1/namespaces/ns/configmaps/c";
  auto config = [](json data) {
    return json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "c"}}}, {"data", data}};
  };
  CHECK(api.patch(path + "?force=true", config({{"x", "1"}}), "application/apply-patch+yaml").status == 400);

  auto created = api.apply(path, config({{"x", "1"}, {"y", "2"}}), "alpha");
  REQUIRE(created.status == 201);
  REQUIRE(created.body["metadata"]["managedFields"].size() == 1);
  CHECK(created.body["metadata"]["managedFields"][0]["manager"] == "alpha");
  CHECK(created.body["metadata"]["managedFields"][0]["operation"] == "Apply");
  CHECK(created.body["metadata"]["managedFields"][0]["fieldsV1"] ==
        json{{"f:data", {{"f:x", json::object()}, {"f:y", json::object()}}}});

  // Another manager setting alpha's field to another value conflicts...
  auto clash = api.apply(path, config({{"x", "9"}}), "beta");
  CHECK(clash.status == 409);
  CHECK(clash.body["reason"] == "Conflict");
  CHECK(clash.body["message"].get<std::string>().find("conflict with \"alpha\": .data.x") != std::string::npos);
  // ...while the same value is shared ownership, not a conflict.
  CHECK(api.apply(path, config({{"y", "2"}}), "beta").status == 200);

  // Forced, the field moves to beta.
  auto forced = api.apply(path, config({{"x", "9"}, {"y", "2"}}), "beta", true);
  REQUIRE(forced.status == 200);
  CHECK(forced.body["data"] == json{{"x", "9"}, {"y", "2"}});

  // beta omits x now: nobody else owns it, so it goes. y stays: alpha owns it too.
  auto omitted = api.apply(path, config({{"z", "3"}}), "beta");
  REQUIRE(omitted.status == 200);
  CHECK(omitted.body["data"] == json{{"y", "2"}, {"z", "3"}});

  // alpha dropping y removes it (beta's earlier co-ownership went with its last apply).
  auto dropped = api.apply(path, config({{"w", "0"}}), "alpha");
  REQUIRE(dropped.status == 200);
  CHECK(dropped.body["data"] == json{{"w", "0"}, {"z", "3"}});

  // A merge patch is an Update: it takes the fields it changed from their appliers.
  auto patched = api.patch(path + "?fieldManager=editor", {{"data", {{"z", "4"}}}});
  REQUIRE(patched.status == 200);
  std::map<std::string, json> by_manager;
  for (const json& e : patched.body["metadata"]["managedFields"]) by_manager[e["manager"]] = e;
  CHECK(by_manager["editor"]["operation"] == "Update");
  CHECK(by_manager["editor"]["fieldsV1"] == json{{"f:data", {{"f:z", json::object()}}}});
  CHECK(by_manager.count("beta") == 0);  // z was all beta owned.
  // An apply that changes nothing is no write.
  auto noop = api.apply(path, config({{"w", "0"}}), "alpha");
  CHECK(rv_of(noop.body) == rv_of(patched.body));
}

TEST_CASE("standin: a pod binds once, to a node that exists", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  REQUIRE(api.post("/api/v1/nodes", node_object("n1")).status == 201);
  REQUIRE(api.post(kPods, pod_object("p")).status == 201);
  auto binding = [](const std::string& node) {
    return json{{"apiVersion", "v1"},
                {"kind", "Binding"},
                {"metadata", {{"name", "p"}}},
                {"target", {{"kind", "Node"}, {"name", node}}}};
  };
  auto missing_node = api.post(kPods + "/p/binding", binding("n9"));
  CHECK(missing_node.status == 404);
  CHECK(missing_node.body["message"] == "nodes \"n9\" not found");

  auto bound = api.post(kPods + "/p/binding", binding("n1"));
  CHECK(bound.status == 201);
  auto pod = api.get(kPods + "/p").body;
  CHECK(pod["spec"]["nodeName"] == "n1");
  CHECK(pod["status"]["conditions"][0]["type"] == "PodScheduled");
  CHECK(pod["status"]["conditions"][0]["status"] == "True");

  auto twice = api.post(kPods + "/p/binding", binding("n1"));
  CHECK(twice.status == 409);
  CHECK(twice.body["message"].get<std::string>().find("pod p is already assigned to node \"n1\"") !=
        std::string::npos);
  // spec.nodeName is not for updates to change.
  pod["spec"]["nodeName"] = "n2";
  CHECK(api.put(kPods + "/p", pod).status == 422);
  CHECK(server.request_counts()["POST pods/binding"] == 3);
}

TEST_CASE("standin: a bound pod is deleted gracefully and a grace of 0 removes it", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  REQUIRE(api.post("/api/v1/nodes", node_object("n1")).status == 201);
  json bound = pod_object("p");
  bound["spec"]["nodeName"] = "n1";
  REQUIRE(api.post(kPods, bound).status == 201);
  REQUIRE(api.post(kPods, pod_object("q")).status == 201);

  auto graceful = api.del(kPods + "/p");
  REQUIRE(graceful.status == 200);
  CHECK(graceful.body["metadata"].contains("deletionTimestamp"));
  CHECK(graceful.body["metadata"]["deletionGracePeriodSeconds"] == 30);
  CHECK(server.object("pods", "ns", "p").has_value());

  // Preconditions are checked before anything else.
  CHECK(api.del(kPods + "/p", {{"preconditions", {{"uid", "not-it"}}}}).status == 409);
  CHECK(api.del(kPods + "/p", {{"gracePeriodSeconds", 0}}).status == 200);
  CHECK(!server.object("pods", "ns", "p").has_value());

  // Nothing runs an unbound pod: it goes at once.
  CHECK(api.del(kPods + "/q").status == 200);
  CHECK(!server.object("pods", "ns", "q").has_value());
  CHECK(api.del(kPods + "/q").status == 404);
}

TEST_CASE("standin: eviction honours PodDisruptionBudgets", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  REQUIRE(api.post("/api/v1/nodes", node_object("n1")).status == 201);
  for (const char* name : {"a", "b", "c"}) {
    json p = pod_object(name, {{"app", "db"}});
    p["spec"]["nodeName"] = "n1";
    REQUIRE(api.post(kPods, p).status == 201);
    json ready = {{"status",
                   {{"phase", "Running"}, {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
    REQUIRE(api.patch(kPods + "/" + name + "/status", ready).status == 200);
  }
  json pdb = {{"apiVersion", "policy/v1"},
              {"kind", "PodDisruptionBudget"},
              {"metadata", {{"name", "db"}}},
              {"spec", {{"minAvailable", 2}, {"selector", {{"matchLabels", {{"app", "db"}}}}}}}};
  REQUIRE(api.post("/apis/policy/v1/namespaces/ns/poddisruptionbudgets", pdb).status == 201);
  auto status = api.get("/apis/policy/v1/namespaces/ns/poddisruptionbudgets/db").body["status"];
  CHECK(status["currentHealthy"] == 3);
  CHECK(status["desiredHealthy"] == 2);
  CHECK(status["disruptionsAllowed"] == 1);
  CHECK(status["expectedPods"] == 3);

  auto eviction = [](const std::string& name) {
    return json{{"apiVersion", "policy/v1"}, {"kind", "Eviction"}, {"metadata", {{"name", name}, {"namespace", "ns"}}}};
  };
  auto first = api.post(kPods + "/a/eviction", eviction("a"));
  CHECK(first.status == 201);
  // Evicted gracefully: terminating, no longer healthy.
  CHECK(server.object("pods", "ns", "a").value()["metadata"].contains("deletionTimestamp"));

  auto refused = api.post(kPods + "/b/eviction", eviction("b"));
  CHECK(refused.status == 429);
  CHECK(refused.body["reason"] == "TooManyRequests");
  CHECK(refused.body["message"] == "Cannot evict pod as it would violate the pod's disruption budget.");
  CHECK(refused.body["details"]["causes"][0]["reason"] == "DisruptionBudget");
  CHECK(refused.body["details"]["causes"][0]["message"] ==
        "The disruption budget db needs 2 healthy pods and has 2 currently");
  CHECK(!server.object("pods", "ns", "b").value()["metadata"].contains("deletionTimestamp"));

  // maxUnavailable 66% of 3, rounded up: 2 may be down, one already is.
  REQUIRE(api.del("/apis/policy/v1/namespaces/ns/poddisruptionbudgets/db").status == 200);
  pdb["spec"] = {{"maxUnavailable", "66%"}, {"selector", {{"matchLabels", {{"app", "db"}}}}}};
  REQUIRE(api.post("/apis/policy/v1/namespaces/ns/poddisruptionbudgets", pdb).status == 201);
  CHECK(api.post(kPods + "/b/eviction", eviction("b")).status == 201);
  CHECK(api.post(kPods + "/c/eviction", eviction("c")).status == 429);
  CHECK(api.post(kPods + "/zz/eviction", eviction("zz")).status == 404);
}

TEST_CASE("standin: label and field selectors", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  REQUIRE(api.post("/api/v1/nodes", node_object("n1")).status == 201);
  REQUIRE(api.post(kPods, pod_object("a", {{"app", "web"}, {"tier", "front"}})).status == 201);
  REQUIRE(api.post(kPods, pod_object("b", {{"app", "db"}})).status == 201);
  json bound = pod_object("c", {{"app", "web"}});
  bound["spec"]["nodeName"] = "n1";
  REQUIRE(api.post(kPods, bound).status == 201);

  auto names = [&](const std::string& query) {
    std::vector<std::string> out;
    auto list = api.get(kPods + "?" + query);
    REQUIRE(list.status == 200);
    for (const json& item : list.body["items"]) out.push_back(item["metadata"]["name"]);
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(names("labelSelector=app%3Dweb") == V{"a", "c"});
  CHECK(names("labelSelector=app%3D%3Dweb%2Ctier") == V{"a"});
  CHECK(names("labelSelector=app!%3Dweb") == V{"b"});
  CHECK(names("labelSelector=!tier") == V{"b", "c"});
  CHECK(names("labelSelector=app%20in%20(db%2C%20cache)") == V{"b"});
  CHECK(names("labelSelector=tier%20notin%20(front)") == V{"b", "c"});
  CHECK(names("fieldSelector=spec.nodeName%3Dn1") == V{"c"});
  CHECK(names("fieldSelector=spec.nodeName%3D") == V{"a", "b"});
  CHECK(names("fieldSelector=metadata.name!%3Da%2Cstatus.phase%3DPending") == V{"b", "c"});
  CHECK(names("fieldSelector=spec.schedulerName%3Ddefault-scheduler&labelSelector=app%3Ddb") == V{"b"});
  CHECK(api.get(kPods + "?fieldSelector=spec.bogus%3D1").status == 400);
  CHECK(api.get(kPods + "?labelSelector=app%20in%20(x").status == 400);
}

TEST_CASE("standin: a watch streams exactly the changes after its resourceVersion, in order", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  REQUIRE(api.post("/api/v1/nodes", node_object("n1")).status == 201);
  auto start = api.post(kPods, pod_object("a"));
  std::string from = rv_of(start.body);
  REQUIRE(api.post(kPods, pod_object("b")).status == 201);
  REQUIRE(api.patch(kPods + "/a", {{"metadata", {{"labels", {{"x", "1"}}}}}}).status == 200);
  REQUIRE(api.del(kPods + "/b").status == 200);
  REQUIRE(api.post("/api/v1/namespaces/ns/configmaps", {{"metadata", {{"name", "other"}}}}).status == 201);

  auto events = api.watch(kPods + "?watch=1&timeoutSeconds=1&resourceVersion=" + from);
  REQUIRE(events.size() == 3);
  CHECK(events[0]["type"] == "ADDED");
  CHECK(events[0]["object"]["metadata"]["name"] == "b");
  CHECK(events[1]["type"] == "MODIFIED");
  CHECK(events[1]["object"]["metadata"]["labels"]["x"] == "1");
  CHECK(events[2]["type"] == "DELETED");
  CHECK(events[2]["object"]["metadata"]["name"] == "b");
  CHECK(std::stoll(rv_of(events[0]["object"])) < std::stoll(rv_of(events[1]["object"])));
  CHECK(std::stoll(rv_of(events[1]["object"])) < std::stoll(rv_of(events[2]["object"])));

  // Without a resourceVersion: the current objects first, then what follows. A pod
  // that comes to match the field selector (bound to n1) arrives as ADDED.
  std::vector<json> live;
  std::thread watcher([&] {
    Api own(server);
    live = own.watch(kPods + "?watch=true&timeoutSeconds=5&fieldSelector=spec.nodeName%3Dn1", 2);
  });
  json bound = pod_object("c");
  bound["spec"]["nodeName"] = "n1";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(api.post(kPods, bound).status == 201);
  REQUIRE(api.post(kPods, pod_object("d")).status == 201);
  json binding = {{"metadata", {{"name", "d"}}}, {"target", {{"kind", "Node"}, {"name", "n1"}}}};
  REQUIRE(api.post(kPods + "/d/binding", binding).status == 201);
  watcher.join();
  REQUIRE(live.size() == 2);
  CHECK(live[0]["object"]["metadata"]["name"] == "c");
  CHECK(live[1]["type"] == "ADDED");
  CHECK(live[1]["object"]["metadata"]["name"] == "d");

  auto initial = api.watch(kPods + "?watch=1&resourceVersion=0&timeoutSeconds=1");
  REQUIRE(initial.size() == 3);
  for (const json& e : initial) CHECK(e["type"] == "ADDED");
}

TEST_CASE("standin: a watch from a compacted resourceVersion gets 410", "[standin]") {
  ApiServerOptions options;
  options.history = 3;
  KubeApiServer server(options);
  Api api(server);
  create_namespace(api, "ns");
  std::string first = rv_of(api.post(kPods, pod_object("a")).body);
  for (const char* name : {"b", "c", "d", "e"}) REQUIRE(api.post(kPods, pod_object(name)).status == 201);
  // The history bound dropped the changes after `first`.
  auto gone = api.watch(kPods + "?watch=1&resourceVersion=" + first);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0]["type"] == "ERROR");
  CHECK(gone[0]["object"]["code"] == 410);
  CHECK(gone[0]["object"]["message"].get<std::string>().starts_with("too old resource version: " + first));

  // compact() forgets everything: the current version still works, older ones do not.
  std::string now = std::to_string(server.resource_version());
  server.compact();
  auto older = api.watch(kPods + "?watch=1&resourceVersion=" + std::to_string(server.resource_version() - 1));
  REQUIRE(older.size() == 1);
  CHECK(older[0]["object"]["code"] == 410);
  auto current = api.watch(kPods + "?watch=1&timeoutSeconds=1&resourceVersion=" + now);
  CHECK(current.empty());
}

TEST_CASE("standin: bookmarks and drop_watches", "[standin]") {
  ApiServerOptions options;
  options.bookmark_interval = std::chrono::milliseconds(50);
  KubeApiServer server(options);
  Api api(server);
  create_namespace(api, "ns");
  std::string rv = std::to_string(server.resource_version());
  auto marks = api.watch(kPods + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=" + rv, 2);
  REQUIRE(marks.size() == 2);
  CHECK(marks[0]["type"] == "BOOKMARK");
  CHECK(marks[0]["object"]["kind"] == "Pod");
  CHECK(marks[0]["object"]["metadata"]["resourceVersion"] == rv);

  std::vector<json> events;
  auto started = std::chrono::steady_clock::now();
  std::thread watcher([&] {
    Api own(server);
    events = own.watch(kPods + "?watch=1&timeoutSeconds=30");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  server.drop_watches();
  watcher.join();
  CHECK(events.empty());
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

TEST_CASE("standin: authentication by bearer token", "[standin]") {
  ApiServerOptions options;
  options.tokens = {"s3cret"};
  KubeApiServer server(options);
  Api api(server);
  auto refused = api.get("/api/v1/namespaces");
  CHECK(refused.status == 401);
  CHECK(refused.body["reason"] == "Unauthorized");
  CHECK(api.get("/version").status == 401);
  CHECK(api.raw().Get("/healthz")->status == 200);
  api.raw().set_bearer_token_auth("wrong");
  CHECK(api.get("/api/v1/namespaces").status == 401);
  api.raw().set_bearer_token_auth("s3cret");
  auto list = api.get("/api/v1/namespaces");
  CHECK(list.status == 200);
  CHECK(list.body["items"].size() == 4);  // default, kube-system, kube-public, kube-node-lease.
}

TEST_CASE("standin: fail_next answers with the status and Retry-After", "[standin]") {
  KubeApiServer server;
  Api api(server);
  server.fail_next(503, 2, "3", "GET namespaces");
  auto first = api.get("/api/v1/namespaces");
  CHECK(first.status == 503);
  CHECK(first.retry_after == "3");
  CHECK(first.body["reason"] == "ServiceUnavailable");
  CHECK(api.post("/api/v1/namespaces", {{"metadata", {{"name", "x"}}}}).status == 201);  // Not matched.
  CHECK(api.get("/api/v1/namespaces/x").status == 503);
  CHECK(api.get("/api/v1/namespaces").status == 200);
  server.fail_next(429, 1);
  CHECK(api.get("/api/v1/namespaces/x").status == 429);
  auto counts = server.request_counts();
  CHECK(counts["GET namespaces"] == 4);
  CHECK(counts["LIST namespaces"] == 2);
  CHECK(counts["POST namespaces"] == 1);
}

TEST_CASE("standin: restart keeps the objects and ends the watches", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  REQUIRE(api.post(kPods, pod_object("a")).status == 201);
  int64_t rv = server.resource_version();
  int port = server.port();

  std::atomic<bool> ended{false};
  std::thread watcher([&] {
    Api own(server);
    own.watch(kPods + "?watch=1&timeoutSeconds=30&resourceVersion=" + std::to_string(rv));
    ended = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto started = std::chrono::steady_clock::now();
  server.restart(std::chrono::milliseconds(100));
  watcher.join();
  CHECK(ended);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(3));
  CHECK(server.port() == port);
  CHECK(server.resource_version() == rv);
  auto got = api.get(kPods + "/a");
  CHECK(got.status == 200);
  REQUIRE(api.post(kPods, pod_object("b")).status == 201);
  CHECK(server.resource_version() == rv + 1);
}

TEST_CASE("standin: TLS with a test CA, tokens and client certificates", "[standin]") {
  gaia::test::TempDir dir("gaia-standin-tls");
  auto certs = gaia::standin::make_test_certificates(dir.path());
  ApiServerOptions options;
  options.cert_file = certs.server_cert;
  options.key_file = certs.server_key;
  options.client_ca_file = certs.ca_cert;
  options.tokens = {"t0ken"};
  KubeApiServer server(options);
  CHECK(server.url() == "https://127.0.0.1:" + std::to_string(server.port()));

  httplib::SSLClient anonymous("127.0.0.1", server.port());
  anonymous.set_ca_cert_path(certs.ca_cert.string());
  auto refused = anonymous.Get("/api/v1/namespaces");
  REQUIRE(refused);
  CHECK(refused->status == 401);
  CHECK(anonymous.Get("/healthz")->status == 200);

  anonymous.set_bearer_token_auth("t0ken");
  auto with_token = anonymous.Get("/api/v1/namespaces");
  REQUIRE(with_token);
  CHECK(with_token->status == 200);

  httplib::SSLClient with_cert("127.0.0.1", server.port(), certs.client_cert.string(), certs.client_key.string());
  with_cert.set_ca_cert_path(certs.ca_cert.string());
  auto by_cert = with_cert.Get("/api/v1/namespaces/default");
  REQUIRE(by_cert);
  CHECK(by_cert->status == 200);

  // Without the CA (the system's store only) the server is not trusted.
  httplib::SSLClient untrusting("127.0.0.1", server.port());
  CHECK(!untrusting.Get("/healthz"));
}

TEST_CASE("standin: status goes through /status only and a namespace takes its objects along", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  auto created = api.post(kPods, pod_object("p"));
  REQUIRE(created.status == 201);
  std::string from = rv_of(created.body);

  // The main resource ignores status; /status ignores everything else.
  json put = created.body;
  put["status"]["phase"] = "Running";
  CHECK(api.put(kPods + "/p", put).body["status"]["phase"] == "Pending");
  auto running = api.patch(kPods + "/p/status",
                           {{"status", {{"phase", "Running"}}}, {"metadata", {{"labels", {{"sneaky", "1"}}}}}});
  REQUIRE(running.status == 200);
  CHECK(running.body["status"]["phase"] == "Running");
  CHECK(!running.body["metadata"]["labels"].contains("sneaky"));

  // JSON patch (RFC 6902), with its test operation.
  json ops = json::array({{{"op", "add"}, {"path", "/metadata/labels/x"}, {"value", "1"}}});
  auto patched = api.patch(kPods + "/p", ops, "application/json-patch+json");
  REQUIRE(patched.status == 200);
  CHECK(patched.body["metadata"]["labels"]["x"] == "1");
  json failing = json::array({{{"op", "test"}, {"path", "/metadata/labels/x"}, {"value", "2"}}});
  CHECK(api.patch(kPods + "/p", failing, "application/json-patch+json").status == 422);
  CHECK(api.patch(kPods + "/p", json::object(), "text/plain").status == 415);

  REQUIRE(api.post("/api/v1/namespaces/ns/configmaps", {{"metadata", {{"name", "c"}}}}).status == 201);
  REQUIRE(api.del("/api/v1/namespaces/ns").status == 200);
  CHECK(server.objects("pods").empty());
  CHECK(server.objects("configmaps").empty());
  CHECK(api.get("/api/v1/namespaces/ns").status == 404);
  auto events = api.watch(kPods + "?watch=1&timeoutSeconds=1&resourceVersion=" + from);
  // The PUT changed nothing (status is not its to change), so it made no event.
  REQUIRE(events.size() == 3);
  CHECK(events[0]["type"] == "MODIFIED");
  CHECK(events[1]["type"] == "MODIFIED");
  CHECK(events[2]["type"] == "DELETED");
}

TEST_CASE("standin: pods take their priority from their PriorityClass", "[standin]") {
  KubeApiServer server;
  Api api(server);
  create_namespace(api, "ns");
  json high = {{"apiVersion", "scheduling.k8s.io/v1"},
               {"kind", "PriorityClass"},
               {"metadata", {{"name", "high"}}},
               {"value", 1000}};
  REQUIRE(api.post("/apis/scheduling.k8s.io/v1/priorityclasses", high).status == 201);
  json p = pod_object("p");
  p["spec"]["priorityClassName"] = "high";
  auto created = api.post(kPods, p);
  REQUIRE(created.status == 201);
  CHECK(created.body["spec"]["priority"] == 1000);
  CHECK(created.body["spec"]["schedulerName"] == "default-scheduler");

  json unknown = pod_object("q");
  unknown["spec"]["priorityClassName"] = "nope";
  CHECK(api.post(kPods, unknown).status == 403);
  json self_assigned = pod_object("r");
  self_assigned["spec"]["priority"] = 5;
  CHECK(api.post(kPods, self_assigned).status == 403);
}
