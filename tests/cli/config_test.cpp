// End-to-end tests of `gaia config` and `gaia label` with the real binary: a change
// re-renders exactly the apps that read it, follows the chain only to dependents whose
// imported outputs changed, rolls instances out, --dry-run writes nothing, node label
// changes move instances that no longer fit, `gaia describe app` shows provenance, and
// a submit of a changed spec ends fully rolled out.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>

#include "lib/config_center.hpp"
#include "store/sqlite_store.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

json json_of(const Scratch& s, const std::vector<std::string>& args) {
  auto r = ok(s, args);
  json j;
  REQUIRE_NOTHROW(j = json::parse(r.out));
  return j;
}

std::vector<json> events(const Scratch& s, const std::vector<std::string>& filter = {}) {
  std::vector<std::string> args = {"events", "-o", "json"};
  args.insert(args.end(), filter.begin(), filter.end());
  return json_lines(ok(s, args).out);
}

size_t count_reason(const std::vector<json>& evs, const std::string& reason, const std::string& app = "") {
  size_t n = 0;
  for (const auto& e : evs)
    if (e.value("reason", "") == reason && (app.empty() || e.value("app", "") == app)) ++n;
  return n;
}

// api reads api.port (into its output url) and api.threads (into its roles); front
// imports api's url; other reads nothing; cache imports api's unused output `name`.
void write_chain(const Scratch& s) {
  write_app(s, "apps/api", "api", "1.0.0", "outputs: [url, name]\n",
            "local gaia = import 'gaia.libsonnet';\n"
            "{ port: gaia.config('api.port', 8080), threads: gaia.config('api.threads', 4),\n"
            "  replicas: gaia.config('api.replicas', 3) }\n",
            "function(config, deps, app) {\n"
            "  roles: { api: { image: 'api:1', replicas: config.replicas, env: { THREADS: std.toString(config.threads) },\n"
            "                  resources: { cpu: '500m', memory: '1Gi' }, migration: { min_available: 2 } } },\n"
            "  outputs: { url: 'http://api:' + config.port, name: 'api' },\n"
            "}\n");
  write_app(s, "apps/front", "front", "1.0.0", "dependencies:\n  - name: api\n    import: [url]\n", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { front: { image: 'front:1', replicas: 2, env: { API: deps.api.url },\n"
            "                    resources: { cpu: '500m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  write_app(s, "apps/cache", "cache", "1.0.0", "dependencies:\n  - name: api\n    import: [name]\n", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { cache: { image: 'cache:1', env: { N: deps.api.name }, resources: { cpu: '100m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  write_app(s, "apps/other", "other", "1.0.0", "", "{}\n", one_role_main());
}

void deploy_chain(const Scratch& s) {
  write_chain(s);
  ok(s, {"cluster", "create", "--nodes", "3"});
  ok(s, {"submit", "apps/front", "apps/cache", "apps/other", "--wait", "--timeout", "30s"});
}

// Every instance of `app` runs the app's current workload.
void check_rolled_out(const Scratch& s, const std::string& app) {
  json apps = json_of(s, {"get", "apps", "-o", "json"});
  std::string hash;
  for (const auto& a : apps)
    if (a["name"] == app) hash = a["document"]["metadata"]["hash"];
  REQUIRE_FALSE(hash.empty());
  json instances = json_of(s, {"get", "instances", "-o", "json"});
  size_t n = 0;
  for (const auto& i : instances) {
    if (i["app"] != app) continue;
    ++n;
    CHECK(i["state"] == "Running");
    CHECK(i.value("hash", "") == hash);
  }
  CHECK(n > 0);
}

// The store of the default context, which these tests use (no --store).
std::string default_store(const Scratch& s) { return (s.dir() / "state" / "gaia" / "gaia.db").string(); }

}  // namespace

TEST_CASE("config set re-renders exactly the apps reading the key, and rolls them out", "[e2e][config]") {
  Scratch s;
  deploy_chain(s);
  auto before = events(s);
  auto r = ok(s, {"config", "set", "api.threads=8"});
  CHECK(r.out.find("config api.threads = 8 (global; was unset)") != std::string::npos);
  CHECK(r.out.find("roll out 3 instance(s)") != std::string::npos);
  auto after = events(s);
  std::vector<json> fresh(after.begin() + static_cast<long>(before.size()), after.end());
  CHECK(count_reason(fresh, "ConfigChanged") == 1);
  CHECK(count_reason(fresh, "Rerendered", "api") == 1);
  CHECK(count_reason(fresh, "Rerendered") == 1);  // api's outputs did not change: no dependent.
  CHECK(count_reason(fresh, "Replaced", "api") == 3);
  CHECK(count_reason(fresh, "RolledOut", "api") == 1);
  for (const auto& e : fresh) {
    CHECK(e.value("app", "") != "other");
    CHECK(e.value("app", "") != "front");
    CHECK(e.value("app", "") != "cache");
  }
  check_rolled_out(s, "api");
  // Setting the same value again changes nothing.
  auto again = ok(s, {"config", "set", "api.threads", "8"});
  CHECK(again.out.find("config unchanged") != std::string::npos);
  CHECK(events(s).size() == after.size());
}

TEST_CASE("config set follows the chain only to dependents whose imports changed", "[e2e][config]") {
  Scratch s;
  deploy_chain(s);
  auto before = events(s);
  auto r = ok(s, {"config", "set", "api.port=9090"});
  auto after = events(s);
  std::vector<json> fresh(after.begin() + static_cast<long>(before.size()), after.end());
  CHECK(count_reason(fresh, "Rerendered", "api") == 1);
  CHECK(count_reason(fresh, "Rerendered", "front") == 1);  // Imports api.url, which changed.
  CHECK(count_reason(fresh, "Rerendered", "cache") == 0);  // Imports api.name, unchanged.
  CHECK(count_reason(fresh, "Replaced", "api") == 0);      // api's roles did not change.
  CHECK(count_reason(fresh, "Replaced", "front") == 2);
  CHECK(r.out.find("api.url") != std::string::npos);
  CHECK(r.out.find("kept (imported outputs unchanged)") != std::string::npos);
  // api's render comes before front's on the timeline (topological order).
  size_t api_at = 0, front_at = 0;
  for (size_t k = 0; k < fresh.size(); ++k) {
    if (fresh[k].value("reason", "") != "Rerendered") continue;
    (fresh[k]["app"] == "api" ? api_at : front_at) = k;
  }
  CHECK(api_at < front_at);
  check_rolled_out(s, "front");
  // front was rendered with the new url.
  for (const auto& a : json_of(s, {"get", "apps", "-o", "json"}))
    if (a["name"] == "front")
      CHECK(a["document"]["spec"]["roles"]["front"]["env"]["API"] == "http://api:9090");
}

TEST_CASE("config set --dry-run prints the impact chain and writes nothing", "[e2e][config]") {
  Scratch s;
  deploy_chain(s);
  auto instances = ok(s, {"get", "instances", "-o", "json"}).out;
  auto evs = events(s).size();
  auto r = ok(s, {"config", "set", "api.port=9090", "--dry-run"});
  CHECK(r.out.find("would re-render (apps reading it):") != std::string::npos);
  CHECK(r.out.find("front") != std::string::npos);
  CHECK(r.out.find("dry run: nothing was written") != std::string::npos);
  json j = json_of(s, {"config", "set", "api.port=9090", "--dry-run", "-o", "json"});
  CHECK(j["dry_run"] == true);
  REQUIRE(j["apps"].size() == 3);  // api, then its dependents cache and front.
  CHECK(j["apps"][0]["app"] == "api");
  CHECK(j["apps"][0]["direct"] == true);
  for (const auto& a : j["apps"])
    if (a["app"] == "front") CHECK(a["rerendered"] == true);
    else if (a["app"] == "cache") CHECK(a["rerendered"] == false);
  CHECK(ok(s, {"get", "instances", "-o", "json"}).out == instances);
  CHECK(events(s).size() == evs);
  CHECK(json_of(s, {"config", "list", "-o", "json"}).empty());
}

TEST_CASE("config get, list, history, unset, scopes and typed values", "[e2e][config]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1"});
  ok(s, {"config", "set", "web.replicas=3", "web.name=shop", "flag=true"});
  ok(s, {"config", "set", "web.replicas", "5", "--tenant", "shop"});
  ok(s, {"config", "set", "code", "007", "--string"});
  ok(s, {"config", "set", "secrets.token=abc"});
  CHECK(ok(s, {"config", "get", "web.replicas"}).out == "3\n");
  CHECK(ok(s, {"config", "get", "web.replicas", "--tenant", "shop"}).out == "5\n");
  CHECK(ok(s, {"config", "get", "web.replicas", "--tenant", "other"}).out == "3\n");
  CHECK(json_of(s, {"config", "get", "web", "-o", "json"})["value"] == json({{"replicas", 3}, {"name", "shop"}}));
  CHECK(json_of(s, {"config", "get", "flag", "-o", "json"})["value"] == true);
  CHECK(json_of(s, {"config", "get", "code", "-o", "json"})["value"] == "007");
  CHECK(ok(s, {"config", "get", "secrets.token"}).out == "<secret>\n");
  CHECK(ok(s, {"config", "get", "secrets.token", "--show-secrets"}).out == "abc\n");  // Asked for.
  auto list = ok(s, {"config", "list"});
  CHECK(list.out.find("<secret>") != std::string::npos);
  CHECK(list.out.find("abc") == std::string::npos);
  auto tenant = ok(s, {"config", "list", "--tenant", "shop"});
  CHECK(tenant.out.find("overridden by tenant") != std::string::npos);
  ok(s, {"config", "set", "web.replicas=4"});
  ok(s, {"config", "unset", "web.replicas"});
  json h = json_of(s, {"config", "history", "web.replicas", "-o", "json"});
  REQUIRE(h.size() == 3);
  CHECK(h[0]["value"] == 3);
  CHECK(h[1]["value"] == 4);
  CHECK(h[2]["unset"] == true);
  CHECK(h[0]["revision"].get<int64_t>() < h[1]["revision"].get<int64_t>());
  auto gone = s.gaia({"config", "get", "web.replicas"});
  CHECK(gone.code == 1);
}

TEST_CASE("config errors: bad keys are usage errors, unknown keys suggest, nothing is written", "[e2e][config]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1"});
  ok(s, {"config", "set", "web.replicas=3"});
  auto list = ok(s, {"config", "list", "-o", "json"}).out;
  auto bad = s.gaia({"config", "set", "web..replicas=1", "a b=2"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("bad config key 'web..replicas'") != std::string::npos);
  CHECK(bad.err.find("bad config key 'a b'") != std::string::npos);
  auto form = s.gaia({"config", "set", "a=1", "b"});
  CHECK(form.code == 2);
  CHECK(form.err.find("'b' is not KEY=VALUE") != std::string::npos);
  auto unknown = s.gaia({"config", "unset", "web.replica"});
  CHECK(unknown.code == 1);
  CHECK(unknown.err.find("did you mean 'web.replicas'?") != std::string::npos);
  auto both = s.gaia({"config", "set", "x=1", "--tenant", "shop", "--global"});
  CHECK(both.code == 2);
  CHECK(ok(s, {"config", "list", "-o", "json"}).out == list);
}

TEST_CASE("config set refuses a value that breaks a reader's render, writing nothing", "[e2e][config]") {
  Scratch s;
  deploy_chain(s);
  auto instances = ok(s, {"get", "instances", "-o", "json"}).out;
  // replicas must be a number: the render fails, so the change is refused.
  auto r = s.gaia({"config", "set", "api.replicas=many"});
  CHECK(r.code == 1);
  CHECK(r.err.find("re-rendering api (default) for this change") != std::string::npos);
  CHECK(json_of(s, {"config", "list", "-o", "json"}).empty());
  CHECK(ok(s, {"get", "instances", "-o", "json"}).out == instances);
}

TEST_CASE("label set on a node re-checks required placement and re-renders readers", "[e2e][label]") {
  Scratch s;
  write_app(s, "apps/db", "db", "1.0.0", "",
            "local gaia = import 'gaia.libsonnet';\n{ zone: gaia.label('node', 'node-1', 'zone', 'none') }\n",
            "function(config, deps, app) {\n"
            "  roles: { db: { image: 'db:1', env: { Z: config.zone }, node_selector: { disk: 'ssd' },\n"
            "                 resources: { cpu: '100m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  write_app(s, "apps/plain", "plain", "1.0.0", "", "{}\n",
            "function(config, deps, app) {\n"
            "  roles: { p: { image: 'p:1', node_selector: { disk: 'ssd' }, resources: { cpu: '100m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  ok(s, {"cluster", "create", "--nodes", "1"});
  ok(s, {"node", "add", "--label", "disk=ssd"});
  ok(s, {"label", "set", "node", "node-1", "disk=ssd"});
  ok(s, {"submit", "apps/db", "apps/plain", "--wait", "--timeout", "30s"});
  auto instances = ok(s, {"get", "instances", "-o", "json"}).out;
  REQUIRE(json::parse(instances).size() == 2);
  bool on_node_1 = false;
  for (const auto& i : json::parse(instances)) on_node_1 = on_node_1 || i["node"] == "node-1";

  auto dry = ok(s, {"label", "set", "node", "node-1", "disk=hdd", "--dry-run"});
  CHECK(dry.out.find("dry run: nothing was written") != std::string::npos);
  if (on_node_1) CHECK(dry.out.find("required placement no longer met (would move):") != std::string::npos);
  CHECK(ok(s, {"get", "instances", "-o", "json"}).out == instances);
  auto r = ok(s, {"label", "set", "node", "node-1", "disk=hdd"});
  CHECK(r.out.find("labeled node node-1: disk=hdd") != std::string::npos);
  json after = json_of(s, {"get", "instances", "-o", "json"});
  for (const auto& i : after) {
    CHECK(i["node"] == "node-2");
    CHECK(i["state"] == "Running");
  }
  CHECK(json_of(s, {"label", "list", "node", "node-1", "-o", "json"})[0]["value"] == "hdd");

  // A label the db app reads: it is re-rendered (and rolled); plain is not.
  auto before = events(s).size();
  ok(s, {"label", "set", "node", "node-1", "zone=z7"});
  auto evs = events(s);
  std::vector<json> fresh(evs.begin() + static_cast<long>(before), evs.end());
  CHECK(count_reason(fresh, "NodeLabeled") == 1);
  CHECK(count_reason(fresh, "Rerendered", "db") == 1);
  CHECK(count_reason(fresh, "Rerendered", "plain") == 0);
  check_rolled_out(s, "db");
}

TEST_CASE("label set and unset on apps and tenants, list, errors", "[e2e][label]") {
  Scratch s;
  write_app(s, "apps/web", "web", "1.0.0", "",
            "local gaia = import 'gaia.libsonnet';\n{ tier: gaia.label('app', 'web', 'tier', 'bronze') }\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'web:1', env: { TIER: config.tier }, resources: { cpu: '100m', memory: '1Gi' } } },\n"
            "  outputs: {},\n"
            "}\n");
  ok(s, {"cluster", "create", "--nodes", "1"});
  ok(s, {"submit", "apps/web", "--wait", "--timeout", "30s"});
  auto r = ok(s, {"label", "set", "app", "web", "tier=gold"});
  CHECK(r.out.find("label app web/tier") == std::string::npos);
  CHECK(r.out.find("re-rendered (apps reading it):") != std::string::npos);
  CHECK(count_reason(events(s), "LabelChanged") == 1);
  json l = json_of(s, {"label", "list", "app", "-o", "json"});
  REQUIRE(l.size() == 1);
  CHECK(l[0]["key"] == "tier");
  CHECK(l[0]["value"] == "gold");
  // Another tenant's app of the same name is a different object.
  CHECK(json_of(s, {"label", "list", "app", "--tenant", "other", "-o", "json"}).empty());
  ok(s, {"label", "set", "tenant", "default", "cost=42"});
  CHECK(json_of(s, {"label", "list", "tenant", "-o", "json"})[0]["value"] == "42");
  auto typo = s.gaia({"label", "unset", "app", "web", "teir"});
  CHECK(typo.code == 1);
  CHECK(typo.err.find("did you mean 'tier'?") != std::string::npos);
  CHECK(s.gaia({"label", "set", "planet", "x", "a=b"}).code == 2);
  CHECK(s.gaia({"label", "set", "app", "web", "tier"}).code == 2);
  CHECK(s.gaia({"label", "set", "node", "nope", "a=b"}).code == 1);
  ok(s, {"label", "unset", "app", "web", "tier"});
  CHECK(json_of(s, {"label", "list", "app", "-o", "json"}).empty());
  check_rolled_out(s, "web");
}

TEST_CASE("describe app shows each config value read, its revision and whether it is stale", "[e2e][config]") {
  Scratch s;
  deploy_chain(s);
  ok(s, {"config", "set", "api.threads=8"});
  auto d = ok(s, {"describe", "app", "api"});
  CHECK(d.out.find("Config reads:") != std::string::npos);
  CHECK(d.out.find("api.threads") != std::string::npos);
  CHECK(d.out.find("current") != std::string::npos);
  CHECK(d.out.find("8080 (default)") == std::string::npos);
  CHECK(d.out.find("(default) 8080") != std::string::npos);
  // A write that bypasses propagation (another tool, a crash between the two commits)
  // leaves the app stale, and describe says so.
  {
    auto store = gaia::SqliteStore::open(default_store(s));
    REQUIRE(store);
    auto centers = gaia::StoreConfigSource::load(**store);
    REQUIRE(centers);
    int64_t rev = centers->find(gaia::k_global_scope, "api.threads")->revision;
    auto w = gaia::write_config(**store, gaia::k_global_scope, {gaia::ConfigEdit{"api.threads", 16}},
                                {{"api.threads", rev}}, "op-outside", "t");
    REQUIRE(w);
    REQUIRE(w->succeeded);
  }
  auto stale = ok(s, {"describe", "app", "api"});
  CHECK(stale.out.find("stale: now 16") != std::string::npos);
}

TEST_CASE("submit of a changed spec ends fully rolled out", "[e2e][config][rollout]") {
  Scratch s;
  write_chain(s);
  ok(s, {"cluster", "create", "--nodes", "3"});
  ok(s, {"submit", "apps/api", "--wait", "--timeout", "30s"});
  s.write("apps/api/main.jsonnet",
          "function(config, deps, app) {\n"
          "  roles: { api: { image: 'api:2', replicas: config.replicas,\n"
          "                  resources: { cpu: '500m', memory: '1Gi' }, migration: { min_available: 2 } } },\n"
          "  outputs: { url: 'http://api:' + config.port, name: 'api' },\n"
          "}\n");
  auto r = ok(s, {"submit", "apps/api"});
  CHECK(r.out.find("update (3 to roll out)") != std::string::npos);
  auto evs = events(s);
  CHECK(count_reason(evs, "Replaced", "api") == 3);
  CHECK(count_reason(evs, "RolledOut", "api") == 1);
  check_rolled_out(s, "api");
  json apps = json_of(s, {"get", "apps", "-o", "json"});
  CHECK(apps[0]["status"] == "Ready");
}

TEST_CASE("config set --wait follows the rollout and names what blocks it", "[e2e][config]") {
  Scratch s;
  write_app(s, "apps/job", "job", "1.0.0", "",
            "local gaia = import 'gaia.libsonnet';\n{ cpu: gaia.config('job.cpu', '500m') }\n",
            "function(config, deps, app) {\n"
            "  roles: { job: { image: 'job:1', replicas: 2, resources: { cpu: config.cpu, memory: '1Gi' },\n"
            "                  migration: { min_available: 1 } } },\n"
            "  outputs: {},\n"
            "}\n");
  ok(s, {"cluster", "create", "--nodes", "2", "--cpu", "4"});
  ok(s, {"submit", "apps/job", "--wait", "--timeout", "30s"});
  ok(s, {"config", "set", "job.cpu=1", "--wait", "--timeout", "30s"});
  check_rolled_out(s, "job");
  // A request no node can hold: one instance is replaced and stays pending, the other
  // keeps running (min_available 1), and --wait gives up naming the pending one.
  auto r = s.gaia({"config", "set", "job.cpu=64", "--wait", "--timeout", "2s"});
  CHECK(r.code == 1);
  CHECK(r.err.find("not rolled out after 2s") != std::string::npos);
  CHECK(r.err.find("1.job.job.default") != std::string::npos);
  json instances = json_of(s, {"get", "instances", "-o", "json"});
  size_t running = 0;
  for (const auto& i : instances)
    if (i["state"] == "Running") ++running;
  CHECK(running == 1);
  CHECK(s.gaia({"config", "set", "job.cpu=2", "--wait", "--timeout", "soon"}).code == 2);
}

TEST_CASE("a gaia killed between a config write and the re-render leaves stale apps that controller run heals",
          "[e2e][config][crash]") {
  Scratch s;
  deploy_chain(s);
  // SIGKILL at the point between the two commits, as a power cut would.
  auto killed = s.gaia({"config", "set", "api.port=9090"}, {{"GAIA_TEST_KILL_AT", "center-change-written"}});
  REQUIRE(killed.code == 128 + 9);
  auto stale = ok(s, {"describe", "app", "api"});
  CHECK(stale.out.find("stale: now 9090") != std::string::npos);
  json apps = json_of(s, {"get", "apps", "-o", "json"});
  for (const auto& a : apps)
    if (a["name"] == "front") CHECK(a["document"].dump().find("http://api:8080") != std::string::npos);

  auto healed = ok(s, {"controller", "run", "--once"});
  CHECK(healed.out.find("repaired 2 stale render(s)") != std::string::npos);
  auto fresh = ok(s, {"describe", "app", "api"});
  CHECK(fresh.out.find("stale: now") == std::string::npos);
  CHECK(fresh.out.find("current") != std::string::npos);
  apps = json_of(s, {"get", "apps", "-o", "json"});
  for (const auto& a : apps)
    if (a["name"] == "front") CHECK(a["document"].dump().find("http://api:9090") != std::string::npos);
  auto evs = events(s);
  size_t repairs = 0;
  for (const auto& e : evs)
    if (e.value("reason", "") == "Rerendered" && e.value("message", "").find("repairing a stale render") != std::string::npos)
      ++repairs;
  CHECK(repairs == 2);
  ok(s, {"controller", "run", "--for", "3s", "--interval", "500ms", "--lease-ttl", "2s"});
  check_rolled_out(s, "front");
  // A second pass finds nothing more to repair.
  auto quiet = ok(s, {"controller", "run", "--once"});
  CHECK(quiet.out.find("repaired") == std::string::npos);
}

// Issue 14.1: `config set api.replicas=4` while `gaia scale` holds api at 5 must say
// which count wins, not leave the user guessing why 5 instances still run.
TEST_CASE("config set of a replica count under a scale override says the override wins", "[e2e][config][scale]") {
  Scratch s;
  deploy_chain(s);
  ok(s, {"scale", "api", "--replicas", "5"});
  auto r = ok(s, {"config", "set", "api.replicas=4"});
  CHECK(r.out.find("api/api: the spec now says 4 replica(s), but the scale override of 5 wins") != std::string::npos);
  CHECK(r.out.find("gaia scale api/api --reset") != std::string::npos);
  size_t api = 0;
  for (const auto& i : json_of(s, {"get", "instances", "-o", "json"})) api += i["app"] == "api";
  CHECK(api == 5);
  auto j = json_of(s, {"config", "set", "api.replicas=6", "-o", "json"});
  std::string text = j.dump();
  CHECK(text.find("the spec now says 6 replica(s), but the scale override of 5 wins") != std::string::npos);
  // A change that does not touch the count says nothing about it.
  auto threads = ok(s, {"config", "set", "api.threads=9"});
  CHECK(threads.out.find("override") == std::string::npos);
}

// Found by fuzzing the override parser: a value that is not UTF-8 reached the store and
// every write of it failed with an internal error.
TEST_CASE("config set and submit --set refuse text that is not UTF-8, writing nothing", "[e2e][config][fuzz]") {
  Scratch s;
  deploy_chain(s);
  const int64_t before = store_revision(default_store(s));
  auto r = expect_exit(s, 2, {"config", "set", "api.threads=caf\xE9"});  // Bad arguments exit 2.
  CHECK_THAT(r.err, Catch::Contains("not UTF-8 text (byte 0xE9"));
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK(r.err.find("--set") == std::string::npos);  // The value came from config set, not --set.
  r = expect_exit(s, 2, {"config", "set", "--string", "api.threads=caf\xE9"});
  CHECK_THAT(r.err, Catch::Contains("not UTF-8 text (byte 0xE9"));
  r = expect_exit(s, 2, {"config", "set", "api.threads=1e400"});
  CHECK_THAT(r.err, Catch::Contains("beyond the range of a number"));
  r = expect_exit(s, 1, {"submit", "apps/front", "--set", "threads=\xFF"});
  CHECK_THAT(r.err, Catch::Contains("not UTF-8 text (byte 0xFF"));
  CHECK(store_revision(default_store(s)) == before);
}
