#include "lib/kube_pod.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace gaia;
using nlohmann::json;

namespace {

PodTemplateContext context() {
  return {.app = "web", .tenant = "team-a", .version = "1.2.0+build.5", .hash = "abc123", .config_map = "web-config"};
}

// A service role with every field the pod template shows: what tests/render builds
// from Jsonnet, written out directly because test_lib cannot link the renderer.
Role service_role() {
  Role r;
  r.name = "frontend";
  r.image = "nginx:1.25";
  r.command = {"nginx", "-g", "daemon off;"};
  r.env = {{"MODE", "prod"}, {"LEVEL", "info"}};
  r.resources = {.cpu_millis = 500, .memory_bytes = int64_t{512} << 20, .gpu = 0, .disk_bytes = int64_t{2} << 30};
  r.priority = {.band = Band::Prod, .level = 200, .preemptible = true};
  r.labels = {{"tier", "edge"}};
  r.ports = {{.name = "http", .port = 8080, .protocol = "TCP"}};
  r.health = {.type = "http", .target = "http/healthz", .period_s = 5, .timeout_s = 2, .failure_threshold = 4};
  r.grace_period_ms = 1500;
  r.backoff_ms = 2000;
  return r;
}

std::vector<PodTemplateProblem> problems_of(const Role& r) {
  std::vector<PodTemplateProblem> problems;
  kubernetes_pod_template(r, context(), problems);
  return problems;
}

}  // namespace

TEST_CASE("kube_pod: the template of a service role", "[kube_pod]") {
  std::vector<PodTemplateProblem> problems;
  json t = kubernetes_pod_template(service_role(), context(), problems);
  CHECK(problems.empty());

  CHECK(t["metadata"]["labels"] == json{{"gaia.io/app", "web"},
                                        {"gaia.io/role", "frontend"},
                                        {"gaia.io/tenant", "team-a"},
                                        {"gaia.io/version", "1.2.0_build.5"},
                                        {"app.kubernetes.io/name", "web"},
                                        {"app.kubernetes.io/component", "frontend"},
                                        {"app.kubernetes.io/managed-by", "gaia"},
                                        {"tier", "edge"}});
  CHECK(t["metadata"]["annotations"] == json{{"gaia.io/hash", "abc123"}, {"gaia.io/backoff-ms", "2000"}});

  const json& spec = t["spec"];
  CHECK(spec["priorityClassName"] == "gaia-prod-200");
  CHECK(spec["restartPolicy"] == "Always");
  // 1.5 s of grace rounds up to 2: a grace is never cut short.
  CHECK(spec["terminationGracePeriodSeconds"] == 2);
  CHECK_FALSE(spec.contains("affinity"));
  CHECK_FALSE(spec.contains("nodeSelector"));
  CHECK(spec["volumes"] == json::parse(R"([{"name":"gaia-config","configMap":{"name":"web-config"}}])"));

  REQUIRE(spec["containers"].size() == 1);
  const json& c = spec["containers"][0];
  CHECK(c["name"] == "frontend");
  CHECK(c["image"] == "nginx:1.25");
  CHECK(c["command"] == json{"nginx", "-g", "daemon off;"});
  CHECK(c["env"] == json::parse(R"([{"name":"LEVEL","value":"info"},{"name":"MODE","value":"prod"}])"));
  CHECK(c["ports"] == json::parse(R"([{"name":"http","containerPort":8080,"protocol":"TCP"}])"));
  // Limits equal requests (the Guaranteed QoS class).
  json q = {{"cpu", "500m"}, {"memory", "512Mi"}, {"ephemeral-storage", "2Gi"}};
  CHECK(c["resources"] == json{{"requests", q}, {"limits", q}});
  CHECK(c["volumeMounts"] == json::parse(R"([{"name":"gaia-config","mountPath":"/etc/gaia","readOnly":true}])"));
  json probe = json::parse(R"({"periodSeconds":5,"timeoutSeconds":2,"failureThreshold":4,
                               "httpGet":{"port":"http","path":"/healthz"}})");
  CHECK(c["readinessProbe"] == probe);
  CHECK(c["livenessProbe"] == probe);
}

TEST_CASE("kube_pod: a Burstable role writes its limits apart from its requests and after becomes an annotation",
          "[kube_pod][limits][after]") {
  Role r = service_role();
  r.limits = Resources{2000, int64_t{1} << 30, 0, int64_t{2} << 30};
  r.after = {"db", "queue"};
  std::vector<PodTemplateProblem> problems;
  json t = kubernetes_pod_template(r, context(), problems);
  CHECK(problems.empty());
  const json& c = t["spec"]["containers"][0];
  CHECK(c["resources"]["requests"] == json{{"cpu", "500m"}, {"memory", "512Mi"}, {"ephemeral-storage", "2Gi"}});
  CHECK(c["resources"]["limits"] == json{{"cpu", "2"}, {"memory", "1Gi"}, {"ephemeral-storage", "2Gi"}});
  CHECK(t["metadata"]["annotations"]["gaia.io/after"] == "db,queue");

  // A disk limit without a disk request: the request is written as 0, not left for
  // Kubernetes to default to the limit.
  Role d = service_role();
  d.resources.disk_bytes = 0;
  d.limits = d.resources;
  d.limits->disk_bytes = int64_t{1} << 30;
  json td = kubernetes_pod_template(d, context(), problems);
  CHECK(td["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] == "0");
  CHECK(td["spec"]["containers"][0]["resources"]["limits"]["ephemeral-storage"] == "1Gi");
}

TEST_CASE("kube_pod: whole seconds of grace, gpus, and batch volumes", "[kube_pod]") {
  Role r = service_role();
  r.kind = "batch";
  r.grace_period_ms = 3000;
  r.resources.gpu = 2;
  r.health = {};
  r.priority = {.band = Band::Nonprod, .level = 50, .preemptible = false};
  r.volumes = {{.name = "scratch", .size_bytes = int64_t{10} << 30, .storage_class = "ssd", .iops = 500,
                .mount_path = "/scratch"}};
  std::vector<PodTemplateProblem> problems;
  json t = kubernetes_pod_template(r, context(), problems);
  CHECK(problems.empty());
  const json& spec = t["spec"];
  CHECK(spec["terminationGracePeriodSeconds"] == 3);
  CHECK(spec["restartPolicy"] == "OnFailure");
  CHECK(spec["priorityClassName"] == "gaia-nonprod-50-np");
  const json& c = spec["containers"][0];
  CHECK(c["resources"]["limits"]["nvidia.com/gpu"] == "2");
  CHECK_FALSE(c.contains("readinessProbe"));
  CHECK(c["volumeMounts"][1] == json{{"name", "scratch"}, {"mountPath", "/scratch"}});
  // A batch role's volumes are generic ephemeral volumes, unnamed (the pod names them).
  REQUIRE(spec["volumes"].size() == 2);
  const json& claim = spec["volumes"][1]["ephemeral"]["volumeClaimTemplate"];
  CHECK(spec["volumes"][1]["name"] == "scratch");
  CHECK_FALSE(claim["metadata"].contains("name"));
  CHECK(claim["metadata"]["annotations"]["gaia.io/iops"] == "500");
  CHECK(claim["spec"] == json::parse(R"({"accessModes":["ReadWriteOnce"],"storageClassName":"ssd",
                                         "resources":{"requests":{"storage":"10Gi"}}})"));
  // A StatefulSet's claim template of the same volume is named after it.
  json named = kubernetes_volume_claim_template(r, r.volumes[0], context());
  CHECK(named["metadata"]["name"] == "scratch");
  CHECK(named["spec"] == claim["spec"]);
}

TEST_CASE("kube_pod: node constraints expand into disjunctive normal form", "[kube_pod]") {
  Role r = service_role();
  r.node_selector = {{"zone", "z1"}, {"disktype", "ssd"}};
  r.required_affinity = {{.target = AffinityTerm::Target::Node, .match = {{"gpu-model", "In", {"a100"}}}}};
  r.required_topology = "rack=r7";
  // NOT (node In n1 AND switch Exists) = node NotIn n1 OR switch DoesNotExist.
  r.required_anti_affinity = {{.target = AffinityTerm::Target::Node,
                               .match = {{"node", "In", {"n1"}}, {"switch", "Exists", {}}}}};
  r.preferred_anti_affinity = {{.target = AffinityTerm::Target::Node, .match = {{"spot", "Exists", {}}}, .weight = 30}};

  std::vector<PodTemplateProblem> problems;
  json t = kubernetes_pod_template(r, context(), problems);
  CHECK(problems.empty());
  const json& spec = t["spec"];
  CHECK(spec["nodeSelector"] == json{{"topology.kubernetes.io/zone", "z1"}, {"disktype", "ssd"}});
  const json& node = spec["affinity"]["nodeAffinity"];
  CHECK(node["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == json::parse(R"([
    {"matchExpressions":[{"key":"gpu-model","operator":"In","values":["a100"]},
                         {"key":"gaia.io/rack","operator":"In","values":["r7"]},
                         {"key":"kubernetes.io/hostname","operator":"NotIn","values":["n1"]}]},
    {"matchExpressions":[{"key":"gpu-model","operator":"In","values":["a100"]},
                         {"key":"gaia.io/rack","operator":"In","values":["r7"]},
                         {"key":"gaia.io/switch","operator":"DoesNotExist"}]}])"));
  CHECK(node["preferredDuringSchedulingIgnoredDuringExecution"] == json::parse(R"([
    {"weight":30,"preference":{"matchExpressions":[{"key":"spot","operator":"DoesNotExist"}]}}])"));
}

TEST_CASE("kube_pod: node constraints Kubernetes cannot express are problems", "[kube_pod]") {
  Role r = service_role();
  // Seven terms of two labels each expand to 2^7 = 128 alternatives, beyond the 64 allowed.
  for (int i = 0; i < 7; ++i)
    r.required_anti_affinity.push_back(
        {.target = AffinityTerm::Target::Node,
         .match = {{"a" + std::to_string(i), "Exists", {}}, {"b" + std::to_string(i), "Exists", {}}}});
  r.preferred_anti_affinity = {
      {.target = AffinityTerm::Target::Node, .match = {{"a", "Exists", {}}, {"b", "Exists", {}}}, .weight = 10}};
  auto problems = problems_of(r);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].field == "anti_affinity.required[6]");
  CHECK(problems[1].field == "anti_affinity.preferred[0]");
  CHECK(problems[1].message == "a preferred node anti-affinity term must have exactly one label requirement here");
}

TEST_CASE("kube_pod: near becomes preferred pod affinity, instance terms pod (anti-)affinity", "[kube_pod]") {
  Role r = service_role();
  r.near = "zookeeper/server";
  r.preferred_affinity = {
      {.target = AffinityTerm::Target::Instance, .match = {{"app", "In", {"cache"}}}, .topology = "zone", .weight = 20}};
  r.required_anti_affinity = {
      {.target = AffinityTerm::Target::Instance, .match = {{"role", "In", {"frontend"}}}, .topology = "node"}};

  std::vector<PodTemplateProblem> problems;
  json t = kubernetes_pod_template(r, context(), problems);
  CHECK(problems.empty());
  const json& affinity = t["spec"]["affinity"];
  CHECK_FALSE(affinity.contains("nodeAffinity"));
  json near = {{"matchExpressions",
                json::parse(R"([{"key":"gaia.io/app","operator":"In","values":["zookeeper"]},
                                {"key":"gaia.io/role","operator":"In","values":["server"]}])")}};
  // The same node weighs twice the same zone; the role's own preferences follow.
  CHECK(affinity["podAffinity"] == json::parse(R"({"preferredDuringSchedulingIgnoredDuringExecution":[
    {"weight":100,"podAffinityTerm":{"labelSelector":)" + near.dump() + R"(,"topologyKey":"kubernetes.io/hostname"}},
    {"weight":50,"podAffinityTerm":{"labelSelector":)" + near.dump() + R"(,"topologyKey":"topology.kubernetes.io/zone"}},
    {"weight":20,"podAffinityTerm":{"labelSelector":{"matchExpressions":[
      {"key":"gaia.io/app","operator":"In","values":["cache"]}]},"topologyKey":"topology.kubernetes.io/zone"}}]})"));
  CHECK(affinity["podAntiAffinity"] == json::parse(R"({"requiredDuringSchedulingIgnoredDuringExecution":[
    {"labelSelector":{"matchExpressions":[{"key":"gaia.io/role","operator":"In","values":["frontend"]}]},
     "topologyKey":"kubernetes.io/hostname"}]})"));
}

TEST_CASE("kube_pod: role problems name the field Kubernetes cannot express", "[kube_pod]") {
  CHECK(kubernetes_role_problems(service_role()).empty());

  Role r = service_role();
  r.image.clear();
  r.ports = {{.name = "http", .port = 0}, {.name = "very-long-port-name", .port = 80}};
  r.volumes = {{.name = "gaia-config", .size_bytes = 1 << 30, .mount_path = "/data"}};
  r.labels["app.kubernetes.io/part-of"] = "x";
  auto problems = kubernetes_role_problems(r);
  REQUIRE(problems.size() == 5);
  CHECK(problems[0].field == "image");
  CHECK(problems[0].message == "Kubernetes runs containers: the role needs an image");
  CHECK(problems[0].hint == "add image: 'repo/name:tag' (command then runs inside it)");
  CHECK(problems[1].field == "ports[0].port");
  CHECK(problems[1].message == "port 0 (allocate from the node) has no Kubernetes equivalent");
  CHECK(problems[2].field == "ports[1].name");
  CHECK(problems[3].field == "volumes[0].name");
  CHECK(problems[4].field == "labels.app.kubernetes.io/part-of");
}

TEST_CASE("kube_pod: label values, priority classes and node label keys", "[kube_pod]") {
  CHECK(kubernetes_label_value("1.0.0+build.5") == "1.0.0_build.5");
  CHECK(kubernetes_label_value("+x+") == "x");
  CHECK(kubernetes_label_value(std::string(70, 'a')).size() == 63);
  CHECK(kubernetes_priority_class_name({.band = Band::Sys, .level = 100}) == "gaia-sys-100");
  CHECK(kubernetes_priority_value({.band = Band::Prod, .level = 300}) == 10300);
  CHECK(kubernetes_node_label_key("node") == "kubernetes.io/hostname");
  CHECK(kubernetes_node_label_key("disktype") == "disktype");

  Workload w;
  w.app = "hdfs";
  w.tenant = "default";
  w.version = "3.3.4";
  w.hash = "h";
  PodTemplateContext c = kubernetes_pod_context(w);
  CHECK(c.config_map == "hdfs-config");
  CHECK(c.hash == "h");
  CHECK(kubernetes_common_labels(c)["gaia.io/version"] == "3.3.4");
}
