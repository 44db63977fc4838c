// End-to-end tests of secrets (lib/secrets.hpp, docs/cli.md#secrets) with the real
// binary: a key an app lists under `secrets:` is masked on every path that shows it —
// config set (text and JSON, dry run too), config list, history and get, the events of
// the timeline, describe app (text, JSON, YAML), diff (text and JSON) — and
// --show-secrets shows it where a person asks for the value.
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// Every value the secret key takes in these tests: the default in config.jsonnet and
// the values set. None may show unless asked for.
const std::vector<std::string> kClear = {"factory-default-pw", "hunter2-first-value", "second-secret-value"};

// web lists web.session_secret as secret, reads it (and web.replicas) from the config
// center, puts it into an env var and into an output's text.
void write_web(const Scratch& s, const std::string& extra_env = "") {
  write_app(s, "apps/web", "web", "1.0.0", "outputs: [dsn]\nsecrets: [web.session_secret]\n",
            "local gaia = import 'gaia.libsonnet';\n"
            "{ session_secret: gaia.config('web.session_secret', 'factory-default-pw'),\n"
            "  replicas: gaia.config('web.replicas', 1) }\n",
            "function(config, deps, app) {\n"
            "  roles: { web: { image: 'web:1', replicas: config.replicas,\n"
            "                  env: { SESSION_SECRET: config.session_secret" + extra_env + " },\n"
            "                  resources: { cpu: '100m', memory: '128Mi' } } },\n"
            "  outputs: { dsn: 'redis://web:' + config.session_secret + '@cache:6379' },\n"
            "}\n");
}

// Output that must not show any clear value, and shows the mask instead.
void check_masked(const RunResult& r, const std::string& what) {
  INFO(what << "\nstdout: " << r.out << "\nstderr: " << r.err);
  for (const auto& clear : kClear) {
    CHECK(r.out.find(clear) == std::string::npos);
    CHECK(r.err.find(clear) == std::string::npos);
  }
  CHECK(r.out.find("<secret>") != std::string::npos);
}


}  // namespace

TEST_CASE("secrets: a key listed under secrets: is masked on every path, shown with --show-secrets", "[e2e][secrets]") {
  Scratch s;
  write_web(s);
  ok(s, {"cluster", "create", "--nodes", "1"});
  ok(s, {"submit", "apps/web"});

  // config set: the impact chain shows the read's old and new value; both are masked.
  check_masked(ok(s, {"config", "set", "web.session_secret=hunter2-first-value", "--dry-run"}), "set --dry-run");
  check_masked(ok(s, {"config", "set", "web.session_secret=hunter2-first-value"}), "set");
  auto set_json = ok(s, {"config", "set", "web.session_secret=second-secret-value", "-o", "json"});
  check_masked(set_json, "set -o json");
  json sj = parsed(set_json);
  CHECK(sj["changes"][0]["value"] == "<secret>");
  CHECK(sj["changes"][0]["was"] == "<secret>");
  REQUIRE(sj["apps"].size() == 1);
  CHECK(sj["apps"][0]["reads"][0]["was"] == "<secret>");
  CHECK(sj["apps"][0]["reads"][0]["now"] == "<secret>");
  ok(s, {"config", "set", "web.replicas=2"});

  // config list, history, get: masked, and in clear with --show-secrets.
  check_masked(ok(s, {"config", "list"}), "list");
  auto list_json = ok(s, {"config", "list", "-o", "json"});
  check_masked(list_json, "list -o json");
  for (const auto& e : parsed(list_json))
    if (e["key"] == "web.session_secret") CHECK(e["value"] == "<secret>");
    else CHECK(e["value"] == 2);
  CHECK(ok(s, {"config", "list", "--show-secrets"}).out.find("second-secret-value") != std::string::npos);
  bool shown = false;
  for (const auto& e : parsed(ok(s, {"config", "list", "-o", "json", "--show-secrets"})))
    shown = shown || e["value"] == "second-secret-value";
  CHECK(shown);

  check_masked(ok(s, {"config", "history", "web.session_secret"}), "history");
  auto history_json = ok(s, {"config", "history", "web.session_secret", "-o", "json"});
  check_masked(history_json, "history -o json");
  CHECK(parsed(history_json).size() == 2);
  auto history_shown = ok(s, {"config", "history", "web.session_secret", "--show-secrets"});
  CHECK(history_shown.out.find("hunter2-first-value") != std::string::npos);
  CHECK(history_shown.out.find("second-secret-value") != std::string::npos);
  json hj = parsed(ok(s, {"config", "history", "web.session_secret", "-o", "json", "--show-secrets"}));
  CHECK(hj[0]["value"] == "hunter2-first-value");

  CHECK(ok(s, {"config", "get", "web.session_secret"}).out == "<secret>\n");
  check_masked(ok(s, {"config", "get", "web.session_secret", "-o", "json"}), "get -o json");
  CHECK(ok(s, {"config", "get", "web.session_secret", "--show-secrets"}).out == "second-secret-value\n");
  CHECK(parsed(ok(s, {"config", "get", "web.session_secret", "-o", "json", "--show-secrets"}))["value"] ==
        "second-secret-value");
  // The parent key shows its object with the secret member masked.
  json parent = parsed(ok(s, {"config", "get", "web", "-o", "json"}));
  CHECK(parent["value"] == json({{"session_secret", "<secret>"}, {"replicas", 2}}));
  CHECK(parsed(ok(s, {"config", "get", "web", "-o", "json", "--show-secrets"}))["value"]["session_secret"] ==
        "second-secret-value");

  // The timeline never holds the value: ConfigChanged and Rerendered say <secret>.
  auto events_text = ok(s, {"events"});
  check_masked(events_text, "events");
  auto events_json = ok(s, {"events", "-o", "json"});
  check_masked(events_json, "events -o json");
  size_t config_changed = 0, rerendered = 0;
  for (const auto& e : json_lines(events_json.out)) {
    if (e["reason"] == "ConfigChanged" && e["message"].get<std::string>().starts_with("web.session_secret")) {
      ++config_changed;
      CHECK(e["message"].get<std::string>().find("<secret>") != std::string::npos);
    }
    if (e["reason"] == "Rerendered" && e["message"].get<std::string>().find("web.session_secret") != std::string::npos) {
      ++rerendered;
      CHECK(e["message"].get<std::string>().find("<secret>") != std::string::npos);
    }
  }
  CHECK(config_changed == 2);
  CHECK(rerendered == 2);

  // describe app: the config reads and the output that copied the value.
  auto described = ok(s, {"describe", "app", "web"});
  check_masked(described, "describe app");
  CHECK(described.out.find("dsn = redis://web:<secret>@cache:6379") != std::string::npos);
  auto described_json = ok(s, {"describe", "app", "web", "-o", "json"});
  check_masked(described_json, "describe app -o json");
  json dj = parsed(described_json);
  CHECK(dj["outputs"]["dsn"] == "redis://web:<secret>@cache:6379");
  bool read_masked = false;
  for (const auto& r : dj["reads"])
    if (r["key"] == "web.session_secret") read_masked = r["value"] == "<secret>";
  CHECK(read_masked);
  auto described_yaml = ok(s, {"describe", "app", "web", "-o", "yaml"});
  check_masked(described_yaml, "describe app -o yaml");
  CHECK(YAML::Load(described_yaml.out)["outputs"]["dsn"].as<std::string>() == "redis://web:<secret>@cache:6379");
  auto described_shown = ok(s, {"describe", "app", "web", "--show-secrets"});
  CHECK(described_shown.out.find("redis://web:second-secret-value@cache:6379") != std::string::npos);
  CHECK(parsed(ok(s, {"describe", "app", "web", "-o", "json", "--show-secrets"}))["outputs"]["dsn"] ==
        "redis://web:second-secret-value@cache:6379");

  // get apps -o json|yaml: the whole record (env, outputs, reads) with its secrets masked.
  check_masked(ok(s, {"get", "apps", "-o", "json"}), "get apps -o json");
  check_masked(ok(s, {"get", "apps", "web", "-o", "yaml"}), "get apps -o yaml");

  // diff: a spec change that copies the secret into another place.
  write_web(s, ", CMD: '--secret=' + config.session_secret");
  auto diff = expect_exit(s, 2, {"diff", "-f", "apps/web"});
  CHECK(diff.out.find("spec.roles.web.env.CMD: (secret, added)") != std::string::npos);
  for (const auto& clear : kClear) CHECK(diff.out.find(clear) == std::string::npos);
  auto diff_json = expect_exit(s, 2, {"diff", "-f", "apps/web", "-o", "json"});
  check_masked(diff_json, "diff -o json");
  bool secret_change = false;
  json diff_doc = parsed(diff_json);
  for (const auto& c : diff_doc["apps"][0]["changes"])
    if (c["path"] == "spec.roles.web.env.CMD") secret_change = c["secret"] == true && c["after"] == "<secret>";
  CHECK(secret_change);
  auto diff_shown = expect_exit(s, 2, {"diff", "-f", "apps/web", "--show-secrets"});
  CHECK(diff_shown.out.find("spec.roles.web.env.CMD: added --secret=second-secret-value (secret)") != std::string::npos);
  bool shown_change = false;
  json shown_doc = parsed(expect_exit(s, 2, {"diff", "-f", "apps/web", "-o", "json", "--show-secrets"}));
  for (const auto& c : shown_doc["apps"][0]["changes"])
    if (c["path"] == "spec.roles.web.env.CMD") shown_change = c["secret"] == true && c["after"] == "--secret=second-secret-value";
  CHECK(shown_change);
}

TEST_CASE("secrets: the secrets. convention needs no app, and unrelated keys show", "[e2e][secrets]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1"});  // Only cluster create makes a store.
  ok(s, {"config", "set", "secrets.token=abc-token-123", "web.name=shop"});
  auto list = ok(s, {"config", "list"});
  CHECK(list.out.find("abc-token-123") == std::string::npos);
  CHECK(list.out.find("<secret>") != std::string::npos);
  CHECK(list.out.find("shop") != std::string::npos);
  CHECK(ok(s, {"config", "get", "secrets.token"}).out == "<secret>\n");
  CHECK(ok(s, {"config", "get", "secrets.token", "--show-secrets"}).out == "abc-token-123\n");
  CHECK(ok(s, {"events"}).out.find("abc-token-123") == std::string::npos);
}

// A dependent that imports a dependency's secret carries it in its own document; its
// diff hid only the secrets of its own app.yaml, so the dependency's showed in clear.
TEST_CASE("secrets: a dependent's diff hides the secret it imported from a running dependency", "[e2e][secrets]") {
  Scratch s;
  write_web(s);
  auto write_front = [&](const std::string& env) {
    write_app(s, "apps/front", "front", "1.0.0", "dependencies:\n  - name: web\n    import: [dsn]\n", "{}\n",
              "function(config, deps, app) {\n"
              "  roles: { front: { image: 'front:1', env: { " + env + " },\n"
              "                    resources: { cpu: '100m', memory: '128Mi' } } },\n"
              "  outputs: {},\n"
              "}\n");
  };
  write_front("UPSTREAM: deps.web.dsn");
  ok(s, {"cluster", "create", "--nodes", "1"});
  ok(s, {"submit", "apps/web"});
  ok(s, {"config", "set", "web.session_secret=hunter2-first-value"});
  ok(s, {"submit", "apps/front"});

  // Only front is in the set; web runs and is reused.
  write_front("UPSTREAM: deps.web.dsn, MIRROR: 'mirror+' + deps.web.dsn");
  auto diff = expect_exit(s, 2, {"diff", "-f", "apps/front"});
  for (const auto& clear : kClear) CHECK(diff.out.find(clear) == std::string::npos);
  CHECK(diff.out.find("spec.roles.front.env.MIRROR: (secret, added)") != std::string::npos);
  auto diff_json = expect_exit(s, 2, {"diff", "-f", "apps/front", "-o", "json"});
  check_masked(diff_json, "diff -o json of the dependent");
  auto shown = expect_exit(s, 2, {"diff", "-f", "apps/front", "--show-secrets"});
  CHECK(shown.out.find("mirror+redis://web:hunter2-first-value@cache:6379") != std::string::npos);
  // apply prints the same plan, dry run or not.
  for (const auto& args : {std::vector<std::string>{"apply", "-f", "apps/front", "--dry-run"},
                           std::vector<std::string>{"apply", "-f", "apps/front", "--dry-run", "-o", "json"},
                           std::vector<std::string>{"apply", "-f", "apps/front"}}) {
    auto r = ok(s, args);
    INFO(r.out);
    for (const auto& clear : kClear) CHECK(r.out.find(clear) == std::string::npos);
    CHECK(r.out.find("MIRROR") != std::string::npos);
  }
}
