#include "render/kubernetes.hpp"

#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "render/yaml_emit.hpp"
#include "tests/golden_util.hpp"
#include "tests/render/workload_fixture.hpp"

using gaia::Workload;
using gaia::render::to_kubernetes;
using gaia::render::validate_workload;
using nlohmann::json;

namespace {

// kubectl is not available in the test environment, so this is the part of the
// Kubernetes API validation that `kubectl apply --dry-run` and the API server would do
// for the objects gaia emits: known kinds, required fields, name and label syntax,
// quantities, and references between objects (selectors, named ports, claims,
// services, priority classes, config maps).
class ManifestChecker {
 public:
  // The checker works on a copy: json's const operator[] must not be used on missing
  // keys, while the non-const one yields null for them, which every check handles.
  explicit ManifestChecker(const std::vector<json>& all) : m_all(all) {}

  std::vector<std::string> check() {
    for (auto& m : m_all) check_object(m);
    return m_problems;
  }

 private:
  void problem(json& m, const std::string& what) {
    m_problems.push_back(m.value("kind", "?") + "/" + m["metadata"].value("name", "?") + ": " + what);
  }

  static bool matches(const std::string& s, const char* re) { return std::regex_match(s, std::regex(re)); }
  static bool dns_label(const std::string& s) { return s.size() <= 63 && matches(s, "[a-z0-9]([-a-z0-9]*[a-z0-9])?"); }
  static bool dns1035(const std::string& s) { return s.size() <= 63 && matches(s, "[a-z]([-a-z0-9]*[a-z0-9])?"); }
  static bool label_name(const std::string& s) {
    return s.size() <= 63 && matches(s, "([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
  }
  static bool label_key(const std::string& k) {
    auto slash = k.find('/');
    std::string name = slash == std::string::npos ? k : k.substr(slash + 1);
    if (slash != std::string::npos && !matches(k.substr(0, slash), "[a-z0-9]([-a-z0-9.]*[a-z0-9])?")) return false;
    return !name.empty() && label_name(name);
  }
  static bool quantity(const json& q) {
    return q.is_string() && matches(q.get<std::string>(), "[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?");
  }

  json* find(const std::string& kind, const std::string& name) {
    for (auto& m : m_all)
      if (m["kind"] == kind && m["metadata"]["name"] == name) return &m;
    return nullptr;
  }

  void check_object(json& m) {
    static const std::map<std::string, std::string> api = {
        {"ConfigMap", "v1"},  {"Service", "v1"}, {"Deployment", "apps/v1"}, {"StatefulSet", "apps/v1"},
        {"Job", "batch/v1"},  {"PriorityClass", "scheduling.k8s.io/v1"},    {"PodDisruptionBudget", "policy/v1"}};
    std::string kind = m.value("kind", "");
    if (!api.contains(kind) || m.value("apiVersion", "") != api.at(kind)) return problem(m, "unknown apiVersion/kind");
    json& meta = m["metadata"];
    std::string name = meta.value("name", "");
    if (name.empty() || name.size() > 253 || !matches(name, "[a-z0-9]([-a-z0-9.]*[a-z0-9])?")) problem(m, "bad name");
    if (kind == "PriorityClass" ? meta.contains("namespace") : !dns_label(meta.value("namespace", "")))
      problem(m, "namespace");
    for (auto& [k, v] : meta["labels"].items())
      if (!label_key(k) || !v.is_string() || !label_name(v)) problem(m, "label " + k);
    if (kind == "Service") check_service(m);
    if (kind == "Deployment" || kind == "StatefulSet" || kind == "Job") check_workload(m);
    if (kind == "PriorityClass") {
      if (!m["value"].is_number_integer() || m["value"].get<int64_t>() > 1'000'000'000) problem(m, "value");
      std::string p = m.value("preemptionPolicy", "");
      if (p != "Never" && p != "PreemptLowerPriority") problem(m, "preemptionPolicy");
    }
    if (kind == "ConfigMap")
      for (auto& [k, v] : m["data"].items())
        if (!v.is_string() || !matches(k, "[-._a-zA-Z0-9]+")) problem(m, "data " + k);
    if (kind == "PodDisruptionBudget" &&
        (!m["spec"]["minAvailable"].is_number_integer() || m["spec"]["selector"]["matchLabels"].empty()))
      problem(m, "pdb spec");
  }

  // The workload whose pod template labels the selector selects, or nullptr.
  json* selected(json& selector) {
    for (auto& w : m_all) {
      if (w["kind"] != "Deployment" && w["kind"] != "StatefulSet" && w["kind"] != "Job") continue;
      json& labels = w["spec"]["template"]["metadata"]["labels"];
      bool all = !selector.empty();
      for (auto& [k, v] : selector.items()) all = all && labels.contains(k) && labels[k] == v;
      if (all) return &w;
    }
    return nullptr;
  }

  void check_service(json& m) {
    if (!dns1035(m["metadata"]["name"])) problem(m, "service name must be DNS-1035");
    json* target = selected(m["spec"]["selector"]);
    if (!target) return problem(m, "selector selects no workload");
    bool headless = m["spec"].value("clusterIP", "") == "None";
    if (!headless && m["spec"].value("ports", json::array()).empty()) problem(m, "ports required");
    std::set<std::string> names;
    json container_ports = (*target)["spec"]["template"]["spec"]["containers"][0].value("ports", json::array());
    for (auto& p : m["spec"].value("ports", json::array())) {
      if (!p["port"].is_number_integer() || p["port"] < 1 || p["port"] > 65535) problem(m, "port");
      if (!names.insert(p.value("name", "")).second) problem(m, "duplicate port name");
      bool found = false;
      for (auto& cp : container_ports) found = found || cp["name"] == p["targetPort"];
      if (!found) problem(m, "targetPort names no container port");
    }
  }

  void check_workload(json& m) {
    json& spec = m["spec"];
    json& tmpl = spec["template"];
    json& labels = tmpl["metadata"]["labels"];
    for (auto& [k, v] : labels.items())
      if (!label_key(k) || !label_name(v)) problem(m, "template label " + k);
    if (m["kind"] == "Job") {
      if (spec.contains("selector")) problem(m, "job selector needs manualSelector");
      std::string rp = tmpl["spec"].value("restartPolicy", "");
      if (rp != "Never" && rp != "OnFailure") problem(m, "job restartPolicy");
      if (!spec["completions"].is_number_integer() || !spec["parallelism"].is_number_integer()) problem(m, "counts");
    } else {
      json& sel = spec["selector"]["matchLabels"];
      if (sel.empty()) problem(m, "selector.matchLabels required");
      for (auto& [k, v] : sel.items())
        if (!labels.contains(k) || labels[k] != v) problem(m, "selector does not match template labels: " + k);
      if (!spec["replicas"].is_number_integer() || spec["replicas"] < 0) problem(m, "replicas");
    }
    std::set<std::string> volumes;
    for (auto& v : tmpl["spec"].value("volumes", json::array())) {
      volumes.insert(v["name"]);
      if (v.contains("configMap") && !find("ConfigMap", v["configMap"]["name"])) problem(m, "configMap not emitted");
    }
    if (m["kind"] == "StatefulSet") {
      json* svc = find("Service", spec.value("serviceName", ""));
      if (!svc || (*svc)["spec"].value("clusterIP", "") != "None") problem(m, "serviceName must be a headless Service");
      for (auto& c : spec.value("volumeClaimTemplates", json::array())) {
        volumes.insert(c["metadata"]["name"]);
        if (c["spec"]["accessModes"].empty() || !quantity(c["spec"]["resources"]["requests"]["storage"]))
          problem(m, "claim template");
      }
    }
    if (!find("PriorityClass", tmpl["spec"].value("priorityClassName", ""))) problem(m, "priorityClassName");
    json& containers = tmpl["spec"]["containers"];
    if (!containers.is_array() || containers.empty()) return problem(m, "containers required");
    for (auto& c : containers) check_container(m, c, volumes);
    if (tmpl["spec"].contains("affinity")) check_affinity(m, tmpl["spec"]["affinity"]);
  }

  void check_container(json& m, json& c, const std::set<std::string>& volumes) {
    if (!dns_label(c.value("name", "")) || c.value("image", "").empty()) problem(m, "container name/image");
    std::set<std::string> ports;
    for (auto& p : c.value("ports", json::array())) {
      if (!p["containerPort"].is_number_integer() || p["containerPort"] < 1 || p["containerPort"] > 65535)
        problem(m, "containerPort");
      std::string n = p.value("name", "");
      if (n.size() > 15 || !dns_label(n)) problem(m, "port name");
      ports.insert(n);
    }
    for (const char* part : {"requests", "limits"})
      for (auto& [k, q] : c["resources"][part].items())
        if (!quantity(q)) problem(m, std::string("quantity ") + k);
    // The API requires a limit for every request and equal values for extended
    // resources such as gpus; cpu, memory and ephemeral-storage limits may be higher.
    for (auto& [k, q] : c["resources"]["requests"].items()) {
      if (!c["resources"]["limits"].contains(k)) problem(m, "no limit for " + k);
      else if (k == "nvidia.com/gpu" && c["resources"]["limits"][k] != q) problem(m, "gpu needs requests == limits");
    }
    for (auto& e : c.value("env", json::array()))
      if (!e["name"].is_string() || !e["value"].is_string()) problem(m, "env");
    for (auto& vm : c.value("volumeMounts", json::array()))
      if (!volumes.contains(vm["name"]) || !vm["mountPath"].is_string()) problem(m, "volumeMount " + vm.dump());
    for (const char* probe : {"readinessProbe", "livenessProbe"}) {
      if (!c.contains(probe)) continue;
      json& p = c[probe];
      int handlers = p.contains("tcpSocket") + p.contains("httpGet") + p.contains("exec");
      if (handlers != 1) problem(m, "probe needs exactly one handler");
      for (const char* h : {"tcpSocket", "httpGet"})
        if (p.contains(h) && !ports.contains(p[h]["port"])) problem(m, "probe port names no container port");
    }
  }

  void check_requirements(json& m, json& exprs) {
    if (!exprs.is_array() || exprs.empty()) return problem(m, "matchExpressions");
    for (auto& e : exprs) {
      std::string op = e.value("operator", "");
      bool set_op = op == "In" || op == "NotIn";
      if (!set_op && op != "Exists" && op != "DoesNotExist") problem(m, "operator " + op);
      if (set_op != (e.contains("values") && !e["values"].empty())) problem(m, "values for " + op);
      if (!label_key(e.value("key", ""))) problem(m, "requirement key");
    }
  }

  void check_affinity(json& m, json& a) {
    if (a.contains("nodeAffinity")) {
      json& n = a["nodeAffinity"];
      if (n.contains("requiredDuringSchedulingIgnoredDuringExecution")) {
        json& terms = n["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
        if (terms.empty()) problem(m, "nodeSelectorTerms");
        for (auto& t : terms) check_requirements(m, t["matchExpressions"]);
      }
      for (auto& p : n.value("preferredDuringSchedulingIgnoredDuringExecution", json::array())) {
        if (p["weight"] < 1 || p["weight"] > 100) problem(m, "weight");
        check_requirements(m, p["preference"]["matchExpressions"]);
      }
    }
    for (const char* kind : {"podAffinity", "podAntiAffinity"}) {
      if (!a.contains(kind)) continue;
      auto term = [&](json& t) {
        if (t.value("topologyKey", "").empty()) problem(m, "topologyKey");
        check_requirements(m, t["labelSelector"]["matchExpressions"]);
      };
      for (auto& t : a[kind].value("requiredDuringSchedulingIgnoredDuringExecution", json::array())) term(t);
      for (auto& p : a[kind].value("preferredDuringSchedulingIgnoredDuringExecution", json::array())) {
        if (p["weight"] < 1 || p["weight"] > 100) problem(m, "weight");
        term(p["podAffinityTerm"]);
      }
    }
  }

  std::vector<json> m_all;
  std::vector<std::string> m_problems;
};

std::vector<json> hdfs_manifests() {
  auto w = validate_workload(gaia::test::hdfs_spec(), "default", gaia::test::hdfs_raw());
  REQUIRE(w);
  auto m = to_kubernetes(*w, gaia::test::hdfs_spec());
  if (!m) FAIL(gaia::format_diagnostics(m.error()));
  return *m;
}

const json& find(const std::vector<json>& all, const std::string& kind, const std::string& name) {
  for (const auto& m : all)
    if (m["kind"] == kind && m["metadata"]["name"] == name) return m;
  FAIL("no " << kind << "/" << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("hdfs renders to Kubernetes manifests (golden)", "[kubernetes]") {
  std::vector<json> all = hdfs_manifests();
  std::string yaml = gaia::render::emit_yaml_documents(all);
  gaia::test::check_golden("render/hdfs.kubernetes.yaml", yaml);
  // What kubectl reads back is what was emitted.
  auto docs = YAML::LoadAll(yaml);
  REQUIRE(docs.size() == all.size());
  for (size_t i = 0; i < all.size(); ++i) CHECK(gaia::test::yaml_to_json(docs[i]) == all[i]);
  // Deterministic.
  CHECK(gaia::render::emit_yaml_documents(hdfs_manifests()) == yaml);
}

TEST_CASE("the manifests pass the structural API checks", "[kubernetes]") {
  std::vector<json> all = hdfs_manifests();
  auto problems = ManifestChecker(all).check();
  INFO([&] {
    std::string s;
    for (const auto& p : problems) s += p + "\n";
    return s;
  }());
  CHECK(problems.empty());

  // The checker itself catches what it is meant to catch.
  std::vector<json> broken = all;
  for (auto& m : broken) {
    if (m["kind"] == "Deployment") m["spec"]["selector"]["matchLabels"]["gaia.io/role"] = "other";
    if (m["kind"] == "StatefulSet") m["spec"]["serviceName"] = "missing";
    if (m["kind"] == "Job") m["spec"]["template"]["spec"]["restartPolicy"] = "Always";
  }
  CHECK(ManifestChecker(broken).check().size() >= 3);
}

TEST_CASE("roles map to the right Kubernetes kinds", "[kubernetes]") {
  std::vector<json> all = hdfs_manifests();
  std::vector<std::string> order;
  for (const auto& m : all) order.push_back(m["kind"].get<std::string>() + "/" + m["metadata"]["name"].get<std::string>());
  CHECK(order == std::vector<std::string>{"PriorityClass/gaia-nonprod-50-np", "PriorityClass/gaia-prod-200",
                                          "PriorityClass/gaia-prod-300", "ConfigMap/hdfs-config",
                                          "Job/hdfs-balancer", "Service/hdfs-datanode", "StatefulSet/hdfs-datanode",
                                          "Service/hdfs-namenode", "Deployment/hdfs-namenode",
                                          "PodDisruptionBudget/hdfs-namenode"});

  const json& np = find(all, "PriorityClass", "gaia-nonprod-50-np");
  CHECK(np["value"] == 50);
  CHECK(np["preemptionPolicy"] == "Never");
  CHECK(find(all, "PriorityClass", "gaia-prod-300")["value"] == 10300);

  const json& job = find(all, "Job", "hdfs-balancer");
  CHECK(job["spec"]["parallelism"] == 2);
  CHECK(job["spec"]["completions"] == 2);
  CHECK(job["spec"]["backoffLimit"] == 2);
  const json& jc = job["spec"]["template"]["spec"]["containers"][0];
  CHECK(jc["resources"]["limits"]["nvidia.com/gpu"] == "1");
  CHECK(jc["resources"]["requests"]["cpu"] == "500m");
  CHECK(job["spec"]["template"]["spec"]["volumes"][1]["ephemeral"]["volumeClaimTemplate"]["spec"]["storageClassName"] ==
        "hdd");
  // Node anti-affinity is negated; the required topology becomes a zone requirement.
  const json& jterms = job["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                          ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  REQUIRE(jterms.size() == 1);
  CHECK(jterms[0]["matchExpressions"] ==
        json::parse(R"([{"key":"topology.kubernetes.io/zone","operator":"In","values":["z1"]},
                        {"key":"gpu-model","operator":"NotIn","values":["k80"]}])"));

  const json& sts = find(all, "StatefulSet", "hdfs-datanode");
  CHECK(sts["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"] == "ssd");
  CHECK(sts["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"] == "100Gi");
  CHECK(sts["spec"]["volumeClaimTemplates"][0]["metadata"]["annotations"]["gaia.io/iops"] == "3000");
  CHECK(find(all, "Service", "hdfs-datanode")["spec"]["clusterIP"] == "None");
  const json& anti = sts["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"];
  CHECK(anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname");
  CHECK(anti["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == "gaia.io/rack");
  CHECK(anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchExpressions"][0]["key"] ==
        "gaia.io/app");

  const json& nn = find(all, "Deployment", "hdfs-namenode");
  const json& pod = nn["spec"]["template"]["spec"];
  CHECK(pod["nodeSelector"] == json{{"disktype", "ssd"}, {"topology.kubernetes.io/zone", "z1"}});
  CHECK(pod["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
           ["labelSelector"]["matchExpressions"][0]["values"][0] == "zookeeper");
  CHECK(pod["containers"][0]["env"][0]["name"] == "CLUSTER_ID");  // Sorted.
  CHECK(pod["containers"][0]["readinessProbe"]["tcpSocket"]["port"] == "rpc");
  CHECK(nn["metadata"]["labels"]["tier"] == "master");
  CHECK(nn["metadata"]["namespace"] == "default");
}

TEST_CASE("what Kubernetes cannot express is an error naming role and field", "[kubernetes]") {
  auto spec = gaia::test::hdfs_spec();
  auto raw = gaia::test::hdfs_raw();
  raw.main["roles"]["namenode"]["ports"][0]["port"] = 0;
  raw.main["roles"]["namenode"]["ports"][1]["name"] = "very-long-port-name";
  raw.main["roles"]["namenode"]["health"]["target"] = "very-long-port-name";
  raw.main["roles"]["datanode"]["anti_affinity"]["preferred"].push_back(
      {{"target", "node"},
       {"match", {{{"key", "a"}, {"op", "Exists"}}, {{"key", "b"}, {"op", "Exists"}}}},
       {"weight", 10}});
  raw.main["roles"]["balancer"].erase("image");
  auto w = validate_workload(spec, "Not_A_Namespace", raw);
  REQUIRE(w);
  auto m = to_kubernetes(*w, spec);
  REQUIRE_FALSE(m);
  gaia::test::check_golden("render/kubernetes_errors.err", gaia::format_diagnostics(m.error()));
  std::set<std::string> paths;
  for (const auto& d : m.error()) paths.insert(d.path);
  CHECK(paths == std::set<std::string>{"", "roles.balancer.image", "roles.datanode.anti_affinity.preferred[1]",
                                       "roles.namenode.ports[0].port", "roles.namenode.ports[1].name"});
}

TEST_CASE("names too long for the generated objects are errors", "[kubernetes]") {
  auto spec = gaia::test::hdfs_spec();
  spec.name = std::string(45, 'a');
  auto raw = gaia::test::hdfs_raw();
  auto w = validate_workload(spec, "default", raw);
  REQUIRE(w);
  auto m = to_kubernetes(*w, spec);
  REQUIRE_FALSE(m);
  REQUIRE(m.error().size() == 1);  // Only the StatefulSet: 45 + 9 > 52.
  CHECK(m.error()[0].path == "roles.datanode");
}

TEST_CASE("negated multi-label node terms expand into alternatives", "[kubernetes]") {
  auto spec = gaia::test::hdfs_spec();
  auto raw = gaia::test::hdfs_raw();
  raw.main["roles"]["balancer"]["anti_affinity"]["required"][0]["match"].push_back(
      {{"key", "rack"}, {"op", "In"}, {"values", {"r1"}}});
  auto w = validate_workload(spec, "default", raw);
  REQUIRE(w);
  auto m = to_kubernetes(*w, spec);
  REQUIRE(m);
  const json& terms = find(*m, "Job", "hdfs-balancer")["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                          ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  // NOT (gpu-model In k80 AND rack In r1), AND zone In z1.
  REQUIRE(terms.size() == 2);
  CHECK(terms[0]["matchExpressions"][1]["operator"] == "NotIn");
  CHECK(terms[1]["matchExpressions"][1]["key"] == "gaia.io/rack");
  CHECK(ManifestChecker(*m).check().empty());
}

TEST_CASE("versions with build metadata become valid label values", "[kubernetes]") {
  auto spec = gaia::test::hdfs_spec();
  spec.version = *gaia::semver::parse_version("3.3.4+build.7");
  auto w = validate_workload(spec, "default", gaia::test::hdfs_raw());
  REQUIRE(w);
  auto m = to_kubernetes(*w, spec);
  REQUIRE(m);
  CHECK(find(*m, "ConfigMap", "hdfs-config")["metadata"]["labels"]["gaia.io/version"] == "3.3.4_build.7");
  CHECK(ManifestChecker(*m).check().empty());
}
