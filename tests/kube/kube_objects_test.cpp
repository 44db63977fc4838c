#include <catch2/catch.hpp>

#include <set>

#include "kube/kube_objects.hpp"

using namespace gaia;
using namespace gaia::kube;
using nlohmann::json;

namespace {

StartSpec start_spec() {
  StartSpec s;
  s.instance.tenant = "default";
  s.instance.app = "web";
  s.instance.role = "api";
  s.instance.ordinal = 2;
  s.instance.generation = 3;
  s.instance.node = "n1";
  s.role.name = "api";
  s.role.image = "nginx:1.25";
  s.role.replicas = 3;
  s.role.min_available = 2;
  s.role.resources.cpu_millis = 500;
  s.role.resources.memory_bytes = 1 << 30;
  s.role.ports.push_back(Port{"http", 8080, "TCP"});
  s.app_version = "1.0.0";
  s.config = {{"a", 1}};
  s.env = {{"GAIA_INSTANCE", "2.api.web.default"}};
  return s;
}

json pod_with(const std::string& phase, bool ready) {
  return {{"metadata", {{"name", "web-api-2-g3"}, {"labels", {{"gaia.io/instance", "2.api.web.default"}, {"gaia.io/generation", "3"}}}}},
          {"spec", {{"nodeName", "n1"}}},
          {"status", {{"phase", phase}, {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

}  // namespace

TEST_CASE("kube objects: pods are named after the instance and its generation", "[kube]") {
  CHECK(pod_name("2.api.web.default", 3) == "web-api-2-g3");
  CHECK(pod_name("0.db.shop.team-a", 1) == "team-a-shop-db-0-g1");
  std::string long_key = "0." + std::string(120, 'r') + "." + std::string(120, 'a') + ".default";
  CHECK(pod_name(long_key, 1).size() <= 253);
}

TEST_CASE("kube objects: the pod of a copy carries gaia's labels, scheduler and environment", "[kube]") {
  auto pod = pod_manifest(start_spec(), PodOptions{"ns", "gaia-owner", "gaia"});
  REQUIRE(pod);
  CHECK((*pod)["metadata"]["name"] == "web-api-2-g3");
  CHECK((*pod)["metadata"]["namespace"] == "ns");
  CHECK((*pod)["metadata"]["labels"]["gaia.io/owner"] == "gaia-owner");
  CHECK((*pod)["metadata"]["labels"]["gaia.io/instance"] == "2.api.web.default");
  CHECK((*pod)["metadata"]["labels"]["gaia.io/generation"] == "3");
  CHECK((*pod)["metadata"]["annotations"]["gaia.io/node"] == "n1");
  CHECK((*pod)["spec"]["schedulerName"] == "gaia");
  CHECK(!(*pod)["spec"].contains("nodeName"));  // Bound through pods/binding.
  bool has_env = false;
  for (const auto& e : (*pod)["spec"]["containers"][0]["env"]) has_env |= e["name"] == "GAIA_INSTANCE";
  CHECK(has_env);
  auto objects = supporting_objects(start_spec(), PodOptions{"ns", "gaia-owner", "gaia"});
  std::set<std::string> kinds;
  for (const auto& o : objects) kinds.insert(o["kind"]);
  CHECK(kinds == std::set<std::string>{"PriorityClass", "ConfigMap", "Service", "PodDisruptionBudget"});
}

TEST_CASE("kube objects: a role Kubernetes cannot run is refused with the reason", "[kube]") {
  StartSpec s = start_spec();
  s.role.image.clear();
  auto pod = pod_manifest(s, PodOptions{"ns", "o", "gaia"});
  REQUIRE(!pod);
  CHECK(pod.error().find("image") != std::string::npos);
}

TEST_CASE("kube objects: pod phases become copy phases", "[kube]") {
  auto c = copy_of_pod(pod_with("Pending", false));
  REQUIRE(c);
  CHECK(c->instance == "2.api.web.default");
  CHECK(c->generation == 3);
  CHECK(c->node == "n1");
  CHECK(c->phase == CopyPhase::Starting);
  CHECK(copy_of_pod(pod_with("Running", false))->phase == CopyPhase::Starting);
  CHECK(copy_of_pod(pod_with("Running", true))->phase == CopyPhase::Running);
  CHECK(copy_of_pod(pod_with("Succeeded", false))->phase == CopyPhase::Exited);
  json failed = pod_with("Failed", false);
  failed["status"]["containerStatuses"] = json::array({{{"state", {{"terminated", {{"exitCode", 137}, {"reason", "OOMKilled"}}}}}}});
  auto f = copy_of_pod(failed);
  CHECK(f->phase == CopyPhase::Failed);
  CHECK(f->exit_code == 137);
  CHECK(f->reason.find("OOMKilled") != std::string::npos);
  json deleting = pod_with("Running", true);
  deleting["metadata"]["deletionTimestamp"] = "2026-11-24T10:00:00Z";
  CHECK(copy_of_pod(deleting)->live());
  CHECK(!copy_of_pod(json{{"metadata", {{"name", "other"}}}}));
}

TEST_CASE("kube objects: nodes become inventory with topology, capacity and health", "[kube]") {
  json node = {{"metadata", {{"name", "n1"},
                             {"labels", {{"topology.kubernetes.io/zone", "z1"}, {"gaia.io/rack", "r2"}, {"disk", "ssd"}}},
                             {"annotations", {{"gaia.io/volume-groups", "ssd=1Ti:20000,hdd=4Ti"}}}}},
               {"spec", {{"unschedulable", true}}},
               {"status", {{"allocatable", {{"cpu", "7500m"}, {"memory", "31Gi"}, {"nvidia.com/gpu", "2"}}},
                           {"addresses", json::array({{{"type", "InternalIP"}, {"address", "10.0.0.5"}}})},
                           {"conditions", json::array({{{"type", "Ready"}, {"status", "False"}, {"reason", "KubeletNotReady"},
                                                        {"lastTransitionTime", "2026-11-24T10:00:00Z"}}})}}}};
  InventoryNode inv = inventory_of_node(node);
  CHECK(inv.node.name == "n1");
  CHECK(inv.node.zone == "z1");
  CHECK(inv.node.rack == "r2");
  CHECK(inv.node.labels.at("zone") == "z1");
  CHECK(inv.node.labels.at("disk") == "ssd");
  CHECK(inv.node.capacity.cpu_millis == 7500);
  CHECK(inv.node.capacity.memory_bytes == 31LL << 30);
  CHECK(inv.node.capacity.gpu == 2);
  CHECK(inv.node.address == "10.0.0.5");
  REQUIRE(inv.node.volume_groups.size() == 2);
  CHECK(inv.node.volume_groups[0].iops == 20000);
  CHECK(inv.node.volume_groups[1].size_bytes == 4LL << 40);
  CHECK(inv.unschedulable);
  CHECK(!inv.ready);
  CHECK(inv.not_ready_reason.starts_with("KubeletNotReady"));
  CHECK(inv.not_ready_since_ms == time_ms("2026-11-24T10:00:00Z"));
  CHECK(inv.not_ready_since_ms == 1'795'514'400'000);
  CHECK(time_ms("not a time") == 0);
}

// A pod whose create answer was lost in an API server restart stayed unbound forever
// (the controller saw its copy starting); the backend binds such pods on observe.
TEST_CASE("kube objects: only this store's unbound pods with a chosen node are bound on observe", "[kube]") {
  auto pod = pod_manifest(start_spec(), PodOptions{"ns", "gaia-owner", "gaia"});
  REQUIRE(pod);
  json bound = *pod;
  bound["spec"]["nodeName"] = "n1";
  json others = *pod;
  others["metadata"]["name"] = "theirs";
  others["metadata"]["labels"]["gaia.io/owner"] = "another-store";
  json deleting = *pod;
  deleting["metadata"]["name"] = "going";
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  json no_node = *pod;
  no_node["metadata"]["name"] = "nowhere";
  no_node["metadata"]["annotations"].erase("gaia.io/node");
  auto todo = pods_to_bind({*pod, bound, others, deleting, no_node}, "gaia-owner");
  REQUIRE(todo.size() == 1);
  CHECK(todo[0] == std::pair<std::string, std::string>{"web-api-2-g3", "n1"});

  json binding = pod_binding("web-api-2-g3", "ns", "n1");
  CHECK(binding["kind"] == "Binding");
  CHECK(binding["metadata"]["namespace"] == "ns");
  CHECK(binding["target"]["name"] == "n1");
}

TEST_CASE("kube objects: storage classes are the nodes' local classes and the StorageClass objects as claims",
          "[kube][storage]") {
  Node a;
  a.name = "a";
  a.volume_groups = {VolumeGroup{"ssd", "ssd", 1LL << 40, 0}, VolumeGroup{"local-nvme", "local-nvme", 1LL << 40, 0}};
  Node b;
  b.name = "b";
  b.volume_groups = {VolumeGroup{"ssd", "ssd", 1LL << 40, 0}};
  auto sc = [](const std::string& name, nlohmann::json topologies = nullptr) {
    nlohmann::json o = {{"apiVersion", "storage.k8s.io/v1"},
                        {"kind", "StorageClass"},
                        {"metadata", {{"name", name}}},
                        {"provisioner", "rbd.csi.ceph.com"}};
    if (!topologies.is_null()) o["allowedTopologies"] = topologies;
    return o;
  };
  std::vector<nlohmann::json> objects = {
      sc("standard"),
      sc("gold", nlohmann::json::array(
                     {{{"matchLabelExpressions", {{{"key", "topology.kubernetes.io/zone"}, {"values", {"z1"}}}}}}})),
      // Two zones: wider than a selector, left to Kubernetes.
      sc("silver", nlohmann::json::array(
                       {{{"matchLabelExpressions", {{{"key", "topology.kubernetes.io/zone"}, {"values", {"z1", "z2"}}}}}}})),
      // A StorageClass of a class the nodes offer stays local.
      sc("ssd"),
      sc("Not_Valid"),
  };
  auto classes = kube::storage_classes_of(objects, {a, b});
  REQUIRE(classes.size() == 5);
  CHECK(classes[0].name == "ssd");
  CHECK(classes[0].kind == StorageKind::Local);
  CHECK(classes[1].name == "local-nvme");
  CHECK(classes[1].kind == StorageKind::Local);
  CHECK(classes[2].name == "gold");
  CHECK(classes[2].kind == StorageKind::Claim);
  CHECK(classes[2].capacity_bytes == -1);
  CHECK(classes[2].node_selector == std::map<std::string, std::string>{{"zone", "z1"}});
  CHECK(classes[2].description == "provisioner rbd.csi.ceph.com");
  CHECK(classes[3].name == "silver");
  CHECK(classes[3].node_selector.empty());
  CHECK(classes[4].name == "standard");
  // No StorageClass objects: the defaults and what the nodes offer.
  CHECK(kube::storage_classes_of({}, {a, b}).empty());
}

TEST_CASE("kube objects: what deleted apps and dropped roles leave is unused, nothing else", "[kube]") {
  // The objects supporting_objects() makes for web's api role, as a list returns them
  // (plus the kind the caller sets), and the same of another store.
  PodOptions mine{"ns", "store-a"}, theirs{"ns", "store-b"};
  std::vector<json> objects;
  for (const PodOptions& o : {mine, theirs})
    for (json obj : supporting_objects(start_spec(), o))
      if (obj["kind"] != "PriorityClass" && obj["kind"] != "PersistentVolumeClaim") objects.push_back(obj);
  // A ConfigMap a user labelled gaia.io/owner by hand, without the app labels.
  objects.push_back({{"kind", "ConfigMap"}, {"metadata", {{"name", "notes"}, {"labels", {{"gaia.io/owner", "store-a"}}}}}});
  auto names = [&](const ClusterState& st) {
    std::set<std::string> out;
    for (const ObjectRef& r : unused_objects(objects, st, "store-a")) out.insert(r.kind + " " + r.name);
    return out;
  };

  ClusterState st;
  AppRecord web;
  web.tenant = "default";
  web.name = "web";
  st.apps["default/web"] = web;
  Role api = start_spec().role;
  st.snapshot.roles["default/web/api"] = api;
  SECTION("an app and role the store has keep everything") { CHECK(names(st).empty()); }
  SECTION("a deleted app leaves its ConfigMap, Service and budget, only this store's") {
    st.apps.clear();
    st.snapshot.roles.clear();
    CHECK(names(st) == std::set<std::string>{"ConfigMap web-config", "Service web-api", "PodDisruptionBudget web-api"});
  }
  SECTION("copies still recorded keep their role's objects until they are gone") {
    st.apps.clear();
    st.snapshot.roles.clear();
    Instance i = start_spec().instance;
    st.snapshot.instances.push_back(i);
    CHECK(names(st).empty());
  }
  SECTION("a role a resubmit dropped leaves its Service and budget; the app keeps its ConfigMap") {
    st.snapshot.roles.clear();
    st.snapshot.roles["default/web/worker"] = api;
    CHECK(names(st) == std::set<std::string>{"Service web-api", "PodDisruptionBudget web-api"});
  }
  SECTION("a budget the role no longer asks for goes, its Service stays") {
    st.snapshot.roles["default/web/api"].min_available = 0;
    CHECK(names(st) == std::set<std::string>{"PodDisruptionBudget web-api"});
  }
  SECTION("a name a live app of another tenant maps to stays, whoever applied it last") {
    // Tenant shop's app web and the default tenant's app shop-web name their objects
    // alike: shop-web-config, shop-web-api.
    std::vector<json> shop;
    StartSpec spec = start_spec();
    spec.instance.tenant = "shop";
    for (json obj : supporting_objects(spec, mine))
      if (obj["kind"] == "ConfigMap" || obj["kind"] == "Service") shop.push_back(obj);
    st.apps.clear();
    st.snapshot.roles.clear();
    AppRecord live = web;
    live.name = "shop-web";
    st.apps["default/shop-web"] = live;
    st.snapshot.roles["default/shop-web/api"] = api;
    CHECK(unused_objects(shop, st, "store-a").empty());
    st.apps.clear();
    st.snapshot.roles.clear();
    CHECK(unused_objects(shop, st, "store-a").size() == 2);
  }
  SECTION("an app of the same name in another tenant keeps nothing of this one") {
    st.apps.clear();
    st.snapshot.roles.clear();
    AppRecord other = web;
    other.tenant = "team";
    st.apps["team/web"] = other;
    st.snapshot.roles["team/web/api"] = api;
    CHECK(names(st).size() == 3);
  }
}

TEST_CASE("kube objects: an app's Service, ConfigMap and budget carry its incarnation", "[kube]") {
  // A resubmit after a delete makes objects that differ from the old app's, so a removal
  // of the old app's leftovers conditioned on their resourceVersion cannot take them.
  StartSpec s = start_spec();
  s.app_created = "2026-11-27T10:00:00.000Z";
  int stamped = 0;
  for (const json& obj : supporting_objects(s, PodOptions{"ns", "store-a"})) {
    std::string kind = obj["kind"];
    std::string created = obj["metadata"].value("annotations", json::object()).value("gaia.io/app-created", "");
    if (kind == "ConfigMap" || kind == "Service" || kind == "PodDisruptionBudget") {
      CHECK(created == s.app_created);
      ++stamped;
    }
  }
  CHECK(stamped == 3);
}
