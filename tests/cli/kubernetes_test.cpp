// End-to-end tests of the kubernetes backend: the real gaia binary against an API
// server: the project's stand-in (standin/, on 127.0.0.1), or a real cluster when
// GAIA_TEST_KUBECONFIG names a kubeconfig (docs/kubernetes.md). Each test has a
// namespace and Node objects of its own, played by a fake kubelet that speaks only the
// public API, and a gaia context that selects only those nodes.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "standin/test_cluster.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia;
using namespace gaia::test;
using nlohmann::json;

namespace {

struct KubeFixture {
  Scratch s;
  std::unique_ptr<standin::TestCluster> cluster;
  std::string store;

  explicit KubeFixture(int nodes, standin::TestClusterOptions options = {}) {
    cluster = std::make_unique<standin::TestCluster>(s.dir(), options);
    cluster->add_nodes(nodes, 3, 6, "32", "128Gi");
    store = (s.dir() / "k8s.db").string();
    std::vector<std::string> add = {"context", "add", "k8s", "--store", store, "--backend", "kubernetes",
                                    "--kubeconfig", cluster->kubeconfig().string(), "--namespace",
                                    cluster->namespace_name(), "--node-selector", cluster->node_selector()};
    if (!cluster->kube_context().empty()) add.insert(add.end(), {"--kube-context", cluster->kube_context()});
    ok(s, add);
    ok(s, {"context", "use", "k8s"});
  }

  RunResult gaia(const std::vector<std::string>& args) const {
    return s.gaia(args, {{"GAIA_REPO", examples_dir()}});
  }
  RunResult expect(int code, const std::vector<std::string>& args) const {
    RunResult r = gaia(args);
    INFO("gaia " << fmt::format("{}", fmt::join(args, " ")) << "\nexit " << r.code << "\nstdout: " << r.out
                 << "\nstderr: " << r.err);
    REQUIRE(r.code == code);
    return r;
  }

  std::vector<json> events() const {
    RunResult r = expect(0, {"events", "-o", "json"});
    return json_lines(r.out);
  }

  std::vector<json> pods() {
    auto list = cluster->client().get(fmt::format("/api/v1/namespaces/{}/pods", cluster->namespace_name()));
    REQUIRE(list);
    return list->value("items", json::array()).get<std::vector<json>>();
  }

  std::vector<json> live_pods() {
    std::vector<json> out;
    for (auto& p : pods())
      if (!p["metadata"].contains("deletionTimestamp")) out.push_back(p);
    return out;
  }
};

std::string label(const json& pod, const std::string& key) {
  return pod["metadata"].value("labels", json::object()).value(key, "");
}

}  // namespace

TEST_CASE("kubernetes: the example stack runs as pods gaia binds, dependencies first", "[kubernetes][e2e]") {
  KubeFixture f(12);
  RunResult created = f.expect(0, {"cluster", "create", "--backend", "kubernetes"});
  CHECK(created.out.find("12 nodes") != std::string::npos);
  CHECK(created.out.find("backend kubernetes") != std::string::npos);
  RunResult nodes = f.expect(0, {"get", "nodes"});
  CHECK(nodes.out.find(f.cluster->node_name(11)) != std::string::npos);

  RunResult submitted = f.gaia({"submit", examples_dir() + "/web", "--wait", "--timeout", "60s"});
  if (submitted.code != 0) {
    RunResult events = f.gaia({"events", "--type", "Warning"});
    INFO(submitted.out << submitted.err << "\nwarnings:\n" << events.out << events.err);
    REQUIRE(submitted.code == 0);
  }
  ClusterState st = load_state(f.store);
  REQUIRE(!st.snapshot.instances.empty());
  std::map<std::string, const Instance*> by_key;
  for (const auto& i : st.snapshot.instances) {
    CHECK(i.state == InstanceState::Running);
    by_key[i.key()] = &i;
  }
  // One live pod per instance, bound by gaia to the node gaia chose.
  auto pods = f.live_pods();
  CHECK(pods.size() == st.snapshot.instances.size());
  std::set<std::string> seen;
  std::map<std::string, std::set<std::string>> datanode_nodes;
  for (const auto& p : pods) {
    std::string key = label(p, "gaia.io/instance");
    INFO(p["metadata"]["name"]);
    REQUIRE(by_key.count(key));
    CHECK(seen.insert(key).second);
    CHECK(p["spec"]["schedulerName"] == "gaia");
    CHECK(p["spec"]["nodeName"] == by_key[key]->node);
    // The instance answers at its pod's address, which the cluster's network gave it.
    CHECK(!p["status"].value("podIP", "").empty());
    CHECK(p["status"].value("podIP", "") == by_key[key]->address);
    if (label(p, "gaia.io/app") == "hdfs" && label(p, "gaia.io/role") == "datanode")
      CHECK(datanode_nodes["hdfs"].insert(p["spec"]["nodeName"].get<std::string>()).second);  // One per node.
  }
  // Started in dependency order: no app started before every dependency served.
  std::map<std::string, int64_t> first_started, last_started;
  for (const auto& e : f.events()) {
    if (e.value("reason", "") != "Started") continue;
    std::string app = e.value("app", "");
    if (!first_started.count(app)) first_started[app] = e["seq"].get<int64_t>();
    last_started[app] = e["seq"].get<int64_t>();
  }
  CHECK(last_started["zookeeper"] < first_started["hdfs"]);
  CHECK(last_started["hdfs"] < first_started["hbase"]);
  CHECK(last_started["hbase"] < first_started["web"]);
  CHECK(last_started["kafka"] < first_started["web"]);
  // kubectl describe pod shows why: a Scheduled event from gaia for every pod.
  auto events = f.cluster->client().get(fmt::format("/api/v1/namespaces/{}/events", f.cluster->namespace_name()));
  REQUIRE(events);
  int scheduled = 0;
  for (const auto& e : (*events)["items"])
    if (e.value("reason", "") == "Scheduled" && e["source"].value("component", "") == "gaia") ++scheduled;
  CHECK(scheduled >= static_cast<int>(pods.size()));

  // What an app has beside its pods, by kind: its ConfigMap, a Service per role with
  // ports, a budget per role with min_available.
  auto objects_of = [&](const std::string& app) {
    std::set<std::string> out;
    for (const char* path : {"/api/v1/namespaces/{}/configmaps", "/api/v1/namespaces/{}/services",
                             "/apis/policy/v1/namespaces/{}/poddisruptionbudgets"}) {
      auto list = f.cluster->client().get(fmt::vformat(path, fmt::make_format_args(f.cluster->namespace_name())) +
                                          "?labelSelector=gaia.io%2Fapp%3D" + app);
      REQUIRE(list);
      for (const auto& o : (*list)["items"]) out.insert(path + std::string(" ") + o["metadata"].value("name", ""));
    }
    return out;
  };
  auto web_objects = objects_of("web");
  auto hbase_objects = objects_of("hbase");
  CHECK(web_objects.size() >= 3);
  CHECK(!hbase_objects.empty());

  // Deleting the app deletes its pods (gracefully: the kubelet finishes them), and then
  // what it had beside them; hbase, which it depended on, keeps all of its own.
  f.expect(0, {"delete", "web"});
  CHECK(eventually([&] {
    f.gaia({"controller", "run", "--once"});
    for (const auto& p : f.pods())
      if (label(p, "gaia.io/app") == "web") return false;
    return true;
  }));
  CHECK(eventually([&] {
    f.gaia({"controller", "run", "--once"});
    return objects_of("web").empty();
  }));
  CHECK(objects_of("hbase") == hbase_objects);
  bool said = false;
  for (const auto& e : f.events())
    if (e.value("reason", "") == "BackendCleanup" && e.value("message", "").find("web-config") != std::string::npos)
      said = true;
  CHECK(said);
}

TEST_CASE("kubernetes: a drain goes through the Eviction API and waits for a disruption budget",
          "[kubernetes][e2e]") {
  KubeFixture f(4);
  f.expect(0, {"cluster", "create", "--backend", "kubernetes"});
  // A role with min_available gets gaia's own budget.
  write_app(f.s, "svc", "svc", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { api: { image: 'nginx:1.25', replicas: 3, resources: { cpu: '1', memory: '1Gi' },\n"
            "                  ports: [{ name: 'http', port: 8080 }],\n"
            "                  migration: { migrate_times: 5, min_available: 2 } } },\n"
            "  outputs: {},\n"
            "}\n");
  f.expect(0, {"submit", (f.s.dir() / "svc").string(), "--wait", "--timeout", "30s"});
  auto& client = f.cluster->client();
  const std::string ns = f.cluster->namespace_name();
  auto pdb = client.get(fmt::format("/apis/policy/v1/namespaces/{}/poddisruptionbudgets/svc-api", ns));
  REQUIRE(pdb);
  CHECK((*pdb)["spec"]["minAvailable"] == 2);

  // A role without one, under a budget a cluster admin set that allows no disruption.
  write_app(f.s, "batchy", "batchy", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { worker: { image: 'busybox:1.36', replicas: 2, resources: { cpu: '1', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  f.expect(0, {"submit", (f.s.dir() / "batchy").string(), "--wait", "--timeout", "30s"});
  const std::string admin_pdb = fmt::format("/apis/policy/v1/namespaces/{}/poddisruptionbudgets", ns);
  REQUIRE(client.create(admin_pdb, {{"apiVersion", "policy/v1"},
                                    {"kind", "PodDisruptionBudget"},
                                    {"metadata", {{"name", "admin-says-no"}, {"namespace", ns}}},
                                    {"spec", {{"maxUnavailable", 0},
                                              {"selector", {{"matchLabels", {{"gaia.io/app", "batchy"}}}}}}}}));
  ClusterState st = load_state(f.store);
  std::string node;
  for (const auto& i : st.snapshot.instances)
    if (i.app == "batchy") node = i.node;
  REQUIRE(!node.empty());
  f.expect(0, {"drain", node});
  f.gaia({"controller", "run", "--once"});
  f.gaia({"controller", "run", "--once"});
  // The batchy copy is still there: the eviction was refused (429), and gaia says so.
  bool refused = false;
  for (const auto& e : f.events())
    if (e.value("reason", "") == "BackendError" && e.value("message", "").find("disruption budget") != std::string::npos)
      refused = true;
  CHECK(refused);
  int on_node = 0;
  for (const auto& p : f.live_pods())
    if (p["spec"].value("nodeName", "") == node && label(p, "gaia.io/app") == "batchy") ++on_node;
  CHECK(on_node >= 1);

  // Refused evictions are not retried inside a pass (a 429 from a budget is an answer).
  int64_t refusals = 0;
  if (auto* server = f.cluster->server()) {
    refusals = server->request_counts()["POST pods/eviction"];
    CHECK(refusals >= 1);
    CHECK(refusals <= 4);  // Two passes, one or two batchy copies on the node.
  }

  // The admin lifts the budget: the next passes evict, and the node empties.
  REQUIRE(client.remove(admin_pdb + "/admin-says-no"));
  CHECK(eventually([&] {
    f.gaia({"controller", "run", "--once"});
    for (const auto& p : f.pods())
      if (p["spec"].value("nodeName", "") == node) return false;
    return true;
  }, std::chrono::milliseconds(30000)));
  if (auto* server = f.cluster->server()) CHECK(server->request_counts()["POST pods/eviction"] > refusals);
}

TEST_CASE("kubernetes: a node that stays NotReady has its instances moved", "[kubernetes][e2e]") {
  KubeFixture f(4);
  f.expect(0, {"cluster", "create", "--backend", "kubernetes"});
  f.expect(0, {"controller", "options", "--heartbeat-timeout", "1s"});
  write_app(f.s, "svc", "svc", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { api: { image: 'nginx:1.25', replicas: 2, resources: { cpu: '1', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  f.expect(0, {"submit", (f.s.dir() / "svc").string(), "--wait", "--timeout", "30s"});
  ClusterState st = load_state(f.store);
  std::string node = st.snapshot.instances.front().node;
  REQUIRE(f.cluster->kubelet().set_node_ready(node, false));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  f.expect(0, {"controller", "run", "--once"});
  CHECK(eventually([&] {
    f.gaia({"controller", "run", "--once"});
    ClusterState now = load_state(f.store);
    const Node* n = now.find_node(node);
    if (!n || n->state != NodeState::Down) return false;
    for (const auto& i : now.snapshot.instances)
      if (i.node == node || i.state != InstanceState::Running) return false;
    return true;
  }));
  ClusterState now = load_state(f.store);
  CHECK(now.find_node(node)->down_reason.starts_with("kubernetes: node not ready"));
}

TEST_CASE("kubernetes: an API server restart in the middle of a submit converges with nothing placed twice",
          "[kubernetes][e2e]") {
  KubeFixture f(12);
  auto* server = f.cluster->server();
  if (!server) return;  // Restarting a real API server is not the test's to do.
  f.expect(0, {"cluster", "create", "--backend", "kubernetes"});
  pid_t pid = f.s.spawn({"submit", examples_dir() + "/web", "--wait", "--timeout", "60s"}, "submit");
  KillOnExit guard(pid);
  // Restart once some pods exist, so creates and bindings are cut in the middle.
  REQUIRE(eventually([&] { return server->objects("pods", f.cluster->namespace_name()).size() >= 3; },
                     std::chrono::milliseconds(15000)));
  server->restart(std::chrono::milliseconds(700));
  int code = guard.wait();
  if (code != 0) f.expect(0, {"controller", "run", "--once"});  // Converges on the next pass if the submit gave up.
  std::string not_running;  // What is still not running, to show if it never converges.
  bool converged = eventually([&] {
    f.gaia({"controller", "run", "--once"});
    ClusterState st = load_state(f.store);
    not_running.clear();
    for (const auto& i : st.snapshot.instances)
      if (i.state != InstanceState::Running)
        not_running += fmt::format("{} {} node={} reason={}\n", i.key(), nlohmann::json(i.state).dump(), i.node,
                                   i.pending_reason);
    return not_running.empty();
  }, std::chrono::milliseconds(30000));
  INFO("not running:\n" << not_running << "controller run:\n" << f.gaia({"controller", "run", "--once"}).out);
  CHECK(converged);
  ClusterState st = load_state(f.store);
  std::map<std::string, int> pods_per_instance;
  for (const auto& p : f.live_pods()) ++pods_per_instance[label(p, "gaia.io/instance")];
  CHECK(pods_per_instance.size() == st.snapshot.instances.size());
  for (const auto& [key, n] : pods_per_instance) {
    INFO(key);
    CHECK(n == 1);
  }
}

TEST_CASE("kubernetes: two stores sharing a namespace never take each other's pods", "[kubernetes][e2e]") {
  KubeFixture f(4);
  f.expect(0, {"cluster", "create", "--backend", "kubernetes"});
  write_app(f.s, "svc", "svc", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { api: { image: 'nginx:1.25', replicas: 1, resources: { cpu: '1', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  f.expect(0, {"submit", (f.s.dir() / "svc").string(), "--wait", "--timeout", "30s"});
  auto before = f.live_pods();
  REQUIRE(before.size() == 1);
  // A second store, same kubeconfig and namespace: its owner id is its own.
  std::string other = (f.s.dir() / "other.db").string();
  std::vector<std::string> add = {"context", "add", "other", "--store", other, "--backend", "kubernetes",
                                  "--kubeconfig", f.cluster->kubeconfig().string(), "--namespace",
                                  f.cluster->namespace_name(), "--node-selector", f.cluster->node_selector()};
  if (!f.cluster->kube_context().empty()) add.insert(add.end(), {"--kube-context", f.cluster->kube_context()});
  f.expect(0, add);
  f.expect(0, {"--context", "other", "cluster", "create", "--backend", "kubernetes"});
  // Same app, same pod name: the other store refuses to adopt the pod.
  RunResult r = f.gaia({"--context", "other", "submit", (f.s.dir() / "svc").string(), "--wait", "--timeout", "5s"});
  CHECK(r.code != 0);
  RunResult events = f.expect(0, {"--context", "other", "events", "--type", "Warning"});
  CHECK(events.out.find("is not this store's") != std::string::npos);
  // Deleting the app in the other store stops nothing of the first one's.
  f.expect(0, {"--context", "other", "delete", "svc"});
  f.gaia({"--context", "other", "controller", "run", "--once"});
  auto after = f.live_pods();
  REQUIRE(after.size() == 1);
  CHECK(after[0]["metadata"]["uid"] == before[0]["metadata"]["uid"]);
  CHECK(load_state(f.store).snapshot.instances.front().state == InstanceState::Running);
}

TEST_CASE("kubernetes: a wrong token and a wrong certificate authority are clear errors", "[kubernetes][e2e]") {
  Scratch s;
  standin::TestClusterOptions o;
  o.tls = true;
  standin::TestCluster cluster(s.dir(), o);
  if (cluster.real()) return;
  auto bad_token = cluster.write_kubeconfig(s.dir() / "bad-token", "not-the-token", cluster.kubeconfig().parent_path() / "certs" / "ca.crt");
  RunResult r = s.gaia({"context", "add", "a", "--store", (s.dir() / "a.db").string(), "--backend", "kubernetes",
                        "--kubeconfig", bad_token.string()});
  CHECK(r.code == 1);
  CHECK(r.err.find("401") != std::string::npos);
  CHECK(r.err.find("not-the-token") == std::string::npos);
  // A CA of its own that did not sign the server's certificate.
  standin::TestCertificates other = standin::make_test_certificates(s.dir() / "other");
  auto bad_ca = cluster.write_kubeconfig(s.dir() / "bad-ca", "gaia-test-token", other.ca_cert);
  r = s.gaia({"context", "add", "b", "--store", (s.dir() / "b.db").string(), "--backend", "kubernetes",
              "--kubeconfig", bad_ca.string()});
  CHECK(r.code == 1);
  CHECK(r.err.find("certificate") != std::string::npos);
  // The right ones work.
  auto good = cluster.write_kubeconfig(s.dir() / "good", "gaia-test-token", cluster.kubeconfig().parent_path() / "certs" / "ca.crt");
  r = s.gaia({"context", "add", "c", "--store", (s.dir() / "c.db").string(), "--backend", "kubernetes",
              "--kubeconfig", good.string()});
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("Kubernetes v1.28") != std::string::npos);
}

TEST_CASE("kubernetes: StorageClasses are claim classes, and a claim volume follows its pod to another zone's node",
          "[kubernetes][e2e][storage]") {
  KubeFixture f(6);
  // A StorageClass of this test's own (StorageClasses are cluster-wide), reachable
  // from zone-1 only; removed at the end, also on a real cluster.
  std::string gold = "gaia-gold-" + f.cluster->namespace_name();
  json sc = {{"apiVersion", "storage.k8s.io/v1"},
             {"kind", "StorageClass"},
             {"metadata", {{"name", gold}}},
             {"provisioner", "example.com/ceph"},
             {"allowedTopologies",
              json::array({{{"matchLabelExpressions",
                             json::array({{{"key", "topology.kubernetes.io/zone"}, {"values", {"zone-1"}}}})}}})}};
  REQUIRE(f.cluster->client().create("/apis/storage.k8s.io/v1/storageclasses", sc));
  struct Cleanup {
    standin::TestCluster& c;
    std::string name;
    ~Cleanup() { (void)c.client().remove("/apis/storage.k8s.io/v1/storageclasses/" + name); }
  } cleanup{*f.cluster, gold};

  f.expect(0, {"cluster", "create", "--backend", "kubernetes"});
  auto shown = json::parse(f.expect(0, {"cluster", "show", "-o", "json"}).out);
  std::map<std::string, json> classes;
  for (const auto& c : shown["storage_classes"]) classes[c["name"]] = c;
  REQUIRE(classes.count(gold));
  CHECK(classes[gold]["kind"] == "claim");
  CHECK(classes[gold]["node_selector"] == json{{"zone", "zone-1"}});
  CHECK(classes[gold]["nodes"] == 2);  // Nodes 1 and 4 of six in three zones.
  CHECK(classes["ssd"]["kind"] == "local");

  write_app(f.s, "apps/ledger", "ledger", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { db: { image: 'postgres:16', resources: { cpu: '1', memory: '1Gi' },\n"
            "    volumes: [{ name: 'data', size: '10Gi', class: '" + gold + "', mount: '/data' }] } },\n"
            "  outputs: {},\n"
            "}\n");
  f.expect(0, {"submit", "apps/ledger", "--wait", "--timeout", "60s"});
  ClusterState st = load_state(f.store);
  const Instance* i = st.find_instance("0.db.ledger.default");
  REQUIRE(i);
  REQUIRE(i->volumes.size() == 1);
  CHECK(i->volumes[0].node.empty());
  CHECK(i->volumes[0].group == gold);
  std::string first = i->node;
  CHECK((first == f.cluster->node_name(1) || first == f.cluster->node_name(4)));
  // The claim asks Kubernetes for the StorageClass by its name, as given.
  auto claims = f.cluster->client().get(fmt::format("/api/v1/namespaces/{}/persistentvolumeclaims",
                                                    f.cluster->namespace_name()));
  REQUIRE(claims);
  int of_gold = 0;
  for (const auto& c : (*claims)["items"]) of_gold += c["spec"].value("storageClassName", "") == gold;
  CHECK(of_gold == 1);

  // Its node stops being Ready: the instance is placed, with its claim, on the other
  // zone-1 node (the only other node that can attach it). It starts there only once its
  // old pod is gone, since a volume is never attached to two pods: here, when the node's
  // kubelet comes back and finishes the old pod (a real cluster waits the same way, or
  // for `kubectl delete pod --force`).
  f.expect(0, {"controller", "options", "--heartbeat-timeout", "1s"});
  REQUIRE(f.cluster->kubelet().set_node_ready(first, false));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  CHECK(eventually([&] {
    f.gaia({"controller", "run", "--once"});
    ClusterState now = load_state(f.store);
    const Instance* moved = now.find_instance("0.db.ledger.default");
    return moved && !moved->node.empty() && moved->node != first && moved->volumes.size() == 1 &&
           moved->volumes[0].group == gold;
  }));
  REQUIRE(f.cluster->kubelet().set_node_ready(first, true));
  CHECK(eventually([&] {
    f.gaia({"controller", "run", "--once"});
    ClusterState now = load_state(f.store);
    const Instance* moved = now.find_instance("0.db.ledger.default");
    return moved && moved->state == InstanceState::Running;
  }));
  ClusterState after = load_state(f.store);
  const Instance* moved = after.find_instance("0.db.ledger.default");
  REQUIRE(moved);
  INFO(fmt::format("{} {} on {} ({})\n{}", moved->key(), instance_state_name(moved->state), moved->node,
                   moved->pending_reason, f.gaia({"events", "--app", "ledger"}).out));
  REQUIRE(moved->state == InstanceState::Running);
  std::string second = moved->node;
  CHECK((second == f.cluster->node_name(1) || second == f.cluster->node_name(4)));
}
