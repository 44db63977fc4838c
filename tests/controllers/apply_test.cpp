// plan_apply (controllers/apply.hpp): deploy, update with a field-level diff, secrets
// masked, ownership, prune (never other owners, never a dependency still in use),
// idempotence and determinism.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "controllers/apply.hpp"
#include "tests/controllers/cluster_builder.hpp"

namespace gaia {
namespace {

using json = nlohmann::json;
using test::kGi;

ClusterState cluster(int nodes) {
  ClusterState s;
  for (int k = 0; k < nodes; ++k) {
    Node n;
    n.name = fmt::format("n{}", k + 1);
    n.capacity = test::res(8000, 32);
    n.address = fmt::format("10.0.0.{}", k + 1);
    n.instance_subnet = fmt::format("10.0.{}.0/24", 128 + k);
    s.snapshot.nodes.push_back(std::move(n));
  }
  return s;
}

// A rendered app as the renderer would give it: typed workload plus the gaia/v1
// document the diff compares. `env` and `config` feed the document; the hash covers
// everything, as a real render's does.
AppToDeploy app(const std::string& name, int replicas, std::map<std::string, std::string> env = {},
                std::vector<std::string> deps = {}, json config = json::object(), json reads = json::array(),
                json outputs = json::object()) {
  AppToDeploy a;
  AppRecord& r = a.record;
  r.tenant = "default";
  r.name = name;
  r.version = "1.0.0";
  Role role;
  role.name = "main";
  role.replicas = replicas;
  role.resources = test::res(500, 1);
  role.env = env;
  r.workload.app = name;
  r.workload.version = "1.0.0";
  r.workload.tenant = "default";
  r.workload.roles = {role};
  r.workload.outputs = outputs;
  r.dependencies = std::move(deps);
  r.document = {{"apiVersion", "gaia/v1"},
                {"metadata", {{"name", name}, {"version", "1.0.0"}}},
                {"spec",
                 {{"roles", {{"main", {{"replicas", replicas}, {"env", env}, {"ports", json::array()}}}}},
                  {"outputs", outputs}}},
                {"config", config},
                {"reads", reads}};
  r.workload.hash = fmt::format("{:016x}", std::hash<std::string>{}(r.document.dump()));
  r.document["metadata"]["hash"] = r.workload.hash;
  return a;
}

ApplyRequest request(std::vector<AppToDeploy> apps, const std::string& source = "dir:/specs", bool prune = false) {
  ApplyRequest req;
  req.tenant = "default";
  req.source = source;
  req.apps = std::move(apps);
  req.prune = prune;
  return req;
}

// The state after committing `plan`, as State::load would return it.
ClusterState committed(const ApplyPlan& plan) { return plan.after; }

const AppChange& change(const ApplyPlan& p, const std::string& name) {
  for (const auto& c : p.apps)
    if (c.name == name) return c;
  FAIL("no change for " << name);
  throw std::logic_error("unreachable");
}

const FieldChange* field(const AppChange& c, const std::string& path) {
  for (const auto& f : c.changes)
    if (f.path == path) return &f;
  return nullptr;
}

std::string batch_text(const Batch& b) {
  std::string out;
  for (const auto& a : b.put_apps) out += "app " + a.name + " " + a.source + " " + a.workload.hash + "\n";
  for (const auto& [t, n] : b.delete_apps) out += "del-app " + t + "/" + n + "\n";
  for (const auto& i : b.put_instances) out += "inst " + i.key() + " " + i.node + " " + i.address + "\n";
  for (const auto& k : b.delete_instances) out += "del-inst " + k + "\n";
  for (const auto& e : b.events) out += "event " + e.reason + " " + e.app + " " + e.instance + " " + e.message + "\n";
  return out;
}

TEST_CASE("apply deploys new apps, records the source, and a second apply changes nothing", "[apply]") {
  ClusterState s = cluster(3);
  auto req = request({app("db", 2), app("web", 3, {}, {"db"})});
  ApplyPlan p = plan_apply(s, req);
  REQUIRE(p.changed());
  CHECK(change(p, "db").action == "deploy");
  CHECK(change(p, "web").action == "deploy");
  CHECK(change(p, "web").added.size() == 3);
  CHECK(change(p, "web").landings.size() == 3);
  for (const auto& l : change(p, "web").landings) CHECK(!l.node.empty());
  for (const auto& a : p.batch.put_apps) CHECK(a.source == "dir:/specs");
  CHECK(p.count("deploy") == 2);

  ApplyPlan again = plan_apply(committed(p), req);
  CHECK_FALSE(again.changed());
  CHECK(again.batch.events.empty());
  CHECK(change(again, "db").action == "unchanged");
  CHECK(change(again, "web").action == "unchanged");
}

TEST_CASE("apply is deterministic: the same state and request give the same batch", "[apply]") {
  ClusterState s = cluster(4);
  auto req = request({app("db", 2), app("web", 5, {}, {"db"})});
  CHECK(batch_text(plan_apply(s, req).batch) == batch_text(plan_apply(s, req).batch));
}

TEST_CASE("an update lists the changed fields of the rendered document", "[apply]") {
  ClusterState s = committed(plan_apply(cluster(3), request({app("web", 2, {{"LOG", "info"}})})));
  ApplyPlan p = plan_apply(s, request({app("web", 4, {{"LOG", "debug"}, {"NEW", "x"}})}));
  const AppChange& c = change(p, "web");
  REQUIRE(c.action == "update");
  const FieldChange* replicas = field(c, "spec.roles.main.replicas");
  REQUIRE(replicas);
  CHECK(replicas->op == "changed");
  CHECK(replicas->before == 2);
  CHECK(replicas->after == 4);
  const FieldChange* log = field(c, "spec.roles.main.env.LOG");
  REQUIRE(log);
  CHECK(log->before == "info");
  CHECK(log->after == "debug");
  const FieldChange* added = field(c, "spec.roles.main.env.NEW");
  REQUIRE(added);
  CHECK(added->op == "added");
  CHECK_FALSE(field(c, "metadata.hash"));  // It changes whenever anything does.
  CHECK(c.added.size() == 2);   // Ordinals 2 and 3.
  CHECK(c.rolling.size() == 2);  // 0 and 1 keep running until the rollout replaces them.
}

TEST_CASE("secret values are masked wherever they appear in a diff", "[apply]") {
  auto web = [](const std::string& secret, int replicas) {
    json reads = json::array({{{"kind", "config"}, {"key", "web.session_secret"}, {"value", secret}}});
    return app("web", replicas, {{"SESSION_SECRET", secret}, {"CMD", "--secret=" + secret}}, {},
               {{"session_secret", secret}}, reads);
  };
  ClusterState s = committed(plan_apply(cluster(2), request({web("hunter22", 1)})));
  auto req = request({web("correct-horse", 2)});
  req.secrets["web"] = {"web.session_secret"};
  ApplyPlan p = plan_apply(s, req);
  const AppChange& c = change(p, "web");
  REQUIRE(c.action == "update");
  for (const char* path : {"spec.roles.main.env.SESSION_SECRET", "spec.roles.main.env.CMD", "config.session_secret",
                           "reads[web.session_secret].value"}) {
    const FieldChange* f = field(c, path);
    INFO(path);
    REQUIRE(f);
    CHECK(f->secret);
    CHECK(f->before == "<secret>");
    CHECK(f->after == "<secret>");
  }
  const FieldChange* replicas = field(c, "spec.roles.main.replicas");
  REQUIRE(replicas);
  CHECK_FALSE(replicas->secret);
  for (const auto& f : c.changes) {
    CHECK(f.before.dump().find("hunter22") == std::string::npos);
    CHECK(f.after.dump().find("correct-horse") == std::string::npos);
  }
}

TEST_CASE("show_secrets keeps the values of secret changes, still marked secret", "[apply]") {
  auto web = [](const std::string& secret) {
    json reads = json::array({{{"kind", "config"}, {"key", "web.session_secret"}, {"value", secret}}});
    return app("web", 1, {{"SESSION_SECRET", secret}}, {}, {{"session_secret", secret}}, reads);
  };
  ClusterState s = committed(plan_apply(cluster(2), request({web("hunter22")})));
  auto req = request({web("correct-horse")});
  req.secrets["web"] = {"web.session_secret"};
  req.show_secrets = true;
  ApplyPlan p = plan_apply(s, req);
  const FieldChange* f = field(change(p, "web"), "spec.roles.main.env.SESSION_SECRET");
  REQUIRE(f);
  CHECK(f->secret);
  CHECK(f->before == "hunter22");
  CHECK(f->after == "correct-horse");
}

TEST_CASE("without secrets listed nothing is masked", "[apply]") {
  ClusterState s = committed(plan_apply(cluster(2), request({app("web", 1, {{"TOKEN", "abc"}})})));
  ApplyPlan p = plan_apply(s, request({app("web", 1, {{"TOKEN", "xyz"}})}));
  const AppChange& c = change(p, "web");
  const FieldChange* f = field(c, "spec.roles.main.env.TOKEN");
  REQUIRE(f);
  CHECK_FALSE(f->secret);
  CHECK(f->after == "xyz");
}

TEST_CASE("reveals_secret: equality always, containment for secrets of 4+ characters", "[apply]") {
  CHECK(reveals_secret("s3cr3t", {"s3cr3t"}));
  CHECK(reveals_secret("--password=s3cr3t", {"s3cr3t"}));
  CHECK(reveals_secret(json(1), {"1"}));
  CHECK_FALSE(reveals_secret(json(12), {"1"}));
  CHECK_FALSE(reveals_secret("abc", {}));
  CHECK_FALSE(reveals_secret(json(), {"x"}));
}

TEST_CASE("secret_values reads the config-center value and the config parameter", "[apply]") {
  json doc = {{"config", {{"db", {{"password", "pw-from-config"}}}}},
              {"reads", json::array({{{"kind", "config"}, {"key", "hbase.db.password"}, {"value", "pw-from-center"}}})}};
  auto values = secret_values("hbase", {"hbase.db.password"}, {&doc});
  CHECK(values == std::vector<std::string>{"pw-from-center", "pw-from-config"});
  CHECK(secret_values("web", {"web.session_secret"}, {&doc}).empty());
}

TEST_CASE("diff_documents matches list items by name and reports removals", "[apply]") {
  json a = {{"ports", json::array({{{"name", "http"}, {"port", 80}}, {{"name", "admin"}, {"port", 9000}}})},
            {"gone", true}};
  json b = {{"ports", json::array({{{"name", "grpc"}, {"port", 50051}}, {{"name", "http"}, {"port", 8080}}})}};
  auto changes = diff_documents(a, b, {});
  std::vector<std::string> lines;
  for (const auto& c : changes) lines.push_back(c.op + " " + c.path);
  CHECK(lines == std::vector<std::string>{"removed gone", "removed ports[admin]", "added ports[grpc]",
                                          "changed ports[http].port"});
}

TEST_CASE("prune removes only this source's apps that left the set", "[apply][prune]") {
  ClusterState s = committed(plan_apply(cluster(4), request({app("a", 1), app("b", 1)}, "dir:/specs")));
  s = committed(plan_apply(s, request({app("other", 1)}, "dir:/elsewhere")));
  // A submit-created app: plan_submit records no source.
  SubmitOutcome submitted = plan_submit(s, {app("manual", 1)});
  s = submitted.after;
  REQUIRE(s.find_app("default", "manual")->source.empty());

  ApplyPlan p = plan_apply(s, request({app("a", 1)}, "dir:/specs", true));
  CHECK(change(p, "b").action == "prune");
  CHECK(change(p, "b").removed == std::vector<std::string>{"0.main.b.default"});
  ClusterState after = committed(p);
  CHECK_FALSE(after.find_app("default", "b"));
  CHECK(after.find_app("default", "other"));
  CHECK(after.find_app("default", "manual"));
  CHECK(after.find_app("default", "a"));
  bool pruned_event = std::any_of(p.batch.events.begin(), p.batch.events.end(),
                                  [](const TimelineEvent& e) { return e.reason == "Pruned" && e.app == "b"; });
  CHECK(pruned_event);
  // Idempotent: nothing left to prune.
  CHECK_FALSE(plan_apply(after, request({app("a", 1)}, "dir:/specs", true)).changed());
}

TEST_CASE("without --prune nothing is deleted", "[apply][prune]") {
  ClusterState s = committed(plan_apply(cluster(2), request({app("a", 1), app("b", 1)})));
  ApplyPlan p = plan_apply(s, request({app("a", 1)}));
  CHECK_FALSE(p.changed());
  CHECK(p.batch.delete_apps.empty());
}

TEST_CASE("prune keeps a dependency another remaining app still uses", "[apply][prune]") {
  ClusterState s = committed(plan_apply(cluster(4), request({app("zk", 1), app("kafka", 1, {}, {"zk"})})));
  // Another app, created by submit, uses zk.
  s = plan_submit(s, {app("hdfs", 1, {}, {"zk"})}).after;
  ApplyPlan p = plan_apply(s, request({app("web", 1)}, "dir:/specs", true));
  CHECK(change(p, "kafka").action == "prune");
  const AppChange& zk = change(p, "zk");
  CHECK(zk.action == "keep");
  CHECK(zk.note.find("hdfs") != std::string::npos);
  ClusterState after = committed(p);
  CHECK(after.find_app("default", "zk"));
  CHECK_FALSE(after.find_app("default", "kafka"));
}

TEST_CASE("prune deletes dependents before their dependencies", "[apply][prune]") {
  ClusterState s = committed(plan_apply(cluster(4), request({app("zk", 1), app("kafka", 1, {}, {"zk"})})));
  ApplyPlan p = plan_apply(s, request({app("web", 1)}, "dir:/specs", true));
  std::vector<std::string> order;
  for (const auto& c : p.apps)
    if (c.action == "prune") order.push_back(c.name);
  CHECK(order == std::vector<std::string>{"kafka", "zk"});
  CHECK(committed(p).apps.size() == 1);
}

TEST_CASE("an update keeps the app's owner, other owners are noted", "[apply]") {
  ClusterState s = plan_submit(cluster(2), {app("web", 1)}).after;
  ApplyPlan p = plan_apply(s, request({app("web", 2)}, "dir:/specs", true));
  const AppChange& c = change(p, "web");
  CHECK(c.action == "update");
  CHECK(c.owner.empty());
  CHECK(c.note.find("submit") != std::string::npos);
  REQUIRE(committed(p).find_app("default", "web"));
  CHECK(committed(p).find_app("default", "web")->source.empty());
  // And so a later prune of this source never deletes it.
  CHECK(committed(plan_apply(committed(p), request({app("x", 1)}, "dir:/specs", true))).find_app("default", "web"));
}

TEST_CASE("dependents outside the set are reported when outputs change, inside they re-render", "[apply]") {
  ClusterState s = committed(plan_apply(cluster(4), request({app("db", 1, {}, {}, {}, json::array(), {{"url", "a"}}),
                                                            app("web", 1, {{"DB", "a"}}, {"db"})})));
  s = plan_submit(s, {app("report", 1, {}, {"db"})}).after;
  ApplyPlan p = plan_apply(s, request({app("db", 1, {}, {}, {}, json::array(), {{"url", "b"}}),
                                       app("web", 1, {{"DB", "b"}}, {"db"})}));
  CHECK(change(p, "db").action == "update");
  CHECK(change(p, "web").rerendered_by == std::vector<std::string>{"db"});
  REQUIRE(p.dependents.size() == 1);
  CHECK(p.dependents[0].name == "report");
  CHECK(p.dependents[0].depends_on == "db");
}

TEST_CASE("reused apps are listed and never touched", "[apply]") {
  ClusterState s = plan_submit(cluster(2), {app("zk", 1)}).after;
  auto req = request({app("kafka", 1, {}, {"zk"})}, "dir:/specs", true);
  req.reused = {"zk"};
  ApplyPlan p = plan_apply(s, req);
  CHECK(change(p, "zk").action == "reuse");
  CHECK(committed(p).find_app("default", "zk"));
}

}  // namespace
}  // namespace gaia
