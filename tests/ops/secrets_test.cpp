// The secret keys of the deployed apps (ops/secrets.hpp): read from the app.yaml in each
// app's spec bundle, shared bundles read once, and an unreadable bundle reported rather
// than silently treated as "no secrets".
#include "ops/secrets.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace gaia;
using nlohmann::json;

namespace {

ops::PackedBundle bundle_with(const std::string& app_yaml) {
  ops::Bundle b;
  b.app_dir = "/specs/web";
  b.files["/specs/web/app.yaml"] = app_yaml;
  b.files["/specs/web/config.jsonnet"] = "{}\n";
  b.files["/specs/web/main.jsonnet"] = "function(config, deps, app) { roles: {}, outputs: {} }\n";
  return ops::pack_bundle(b);
}

AppRecord app_record(const std::string& tenant, const std::string& name, const std::string& bundle) {
  AppRecord a;
  a.tenant = tenant;
  a.name = name;
  a.version = "1.0.0";
  a.bundle = bundle;
  return a;
}

}  // namespace

TEST_CASE("deployed_secrets: every app's secrets: list, from its bundle", "[secrets]") {
  auto web = bundle_with("name: web\nversion: 1.0.0\nsecrets: [web.session_secret, web.db.password]\n");
  auto plain = bundle_with("name: api\nversion: 1.0.0\n");
  std::map<std::string, std::string> stored = {{web.hash, web.json}, {plain.hash, plain.json}};
  int reads = 0;
  ops::BundleReader reader = [&](const std::string& hash) -> Result<std::optional<std::string>> {
    ++reads;
    auto it = stored.find(hash);
    return it == stored.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  };
  ClusterState state;
  state.apps["default/web"] = app_record("default", "web", web.hash);
  state.apps["shop/web"] = app_record("shop", "web", web.hash);  // The same bundle: read once.
  state.apps["default/api"] = app_record("default", "api", plain.hash);
  auto found = ops::deployed_secrets(state, reader);
  CHECK(found.unreadable.empty());
  CHECK(found.keys.listed() == std::set<std::string>{"web.db.password", "web.session_secret"});
  CHECK(found.keys.secret("web.session_secret"));
  CHECK_FALSE(found.keys.secret("api.port"));
  CHECK(reads == 2);

  // A bundle missing from the store: its keys are unknown, and that is said.
  state.apps["default/lost"] = app_record("default", "lost", "0123456789abcdef0123456789abcdef");
  auto partly = ops::deployed_secrets(state, reader);
  REQUIRE(partly.unreadable.size() == 1);
  CHECK_THAT(partly.unreadable[0], Catch::StartsWith("default/lost:") && Catch::Contains("missing"));
  CHECK(partly.keys.secret("web.session_secret"));
}

TEST_CASE("app_secret_values: what the app's document copied from its secret keys", "[secrets]") {
  AppRecord a = app_record("default", "web", "");
  a.document = {{"config", {{"session_secret", "from-config-param"}}},
                {"reads", json::array({{{"kind", "config"}, {"key", "web.session_secret"}, {"value", "from-center"}}})}};
  auto values = ops::app_secret_values(a, SecretKeys({"web.session_secret"}));
  CHECK(values.mask_text("dsn=from-center;p=from-config-param") == "dsn=<secret>;p=<secret>");
  CHECK(ops::app_secret_values(a, SecretKeys()).empty());
}
