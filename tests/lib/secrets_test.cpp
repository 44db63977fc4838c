// The one rule for secrets (lib/secrets.hpp): which keys are secret, how a value read or
// written under a key is masked, and how secret values copied elsewhere are hidden.
#include "lib/secrets.hpp"

#include <catch2/catch.hpp>

using namespace gaia;
using nlohmann::json;

TEST_CASE("SecretKeys: listed keys, keys under them and the secrets. convention", "[secrets]") {
  SecretKeys keys({"web.session_secret"});
  CHECK(keys.secret("web.session_secret"));
  CHECK(keys.secret("web.session_secret.v2"));
  CHECK(keys.secret("secrets.token"));
  CHECK(keys.secret("secrets"));
  CHECK_FALSE(keys.secret("web"));
  CHECK_FALSE(keys.secret("web.session_secret_hint"));  // A sibling that only shares the prefix.
  CHECK_FALSE(keys.secret("secretsmanager.url"));
  CHECK_FALSE(keys.secret("web.replicas"));
  CHECK(keys.touches("web"));  // Its object holds the secret.
  CHECK_FALSE(keys.touches("db"));
  CHECK(SecretKeys().secret("secrets.x"));  // The convention needs no app.
  CHECK_FALSE(SecretKeys().secret("web.session_secret"));
}

TEST_CASE("SecretKeys::mask: the whole value, or the secret members of a parent", "[secrets]") {
  SecretKeys keys({"web.session_secret", "web.db.password"});
  CHECK(keys.mask("web.session_secret", "hunter2") == "<secret>");
  CHECK(keys.mask("web.session_secret", json({{"a", 1}})) == "<secret>");
  CHECK(keys.mask("web.session_secret", json()).is_null());
  CHECK(keys.mask("web.replicas", 3) == 3);
  json web = {{"replicas", 3}, {"session_secret", "hunter2"}, {"db", {{"password", "pw"}, {"user", "u"}}}};
  json masked = keys.mask("web", web);
  CHECK(masked == json({{"replicas", 3}, {"session_secret", "<secret>"}, {"db", {{"password", "<secret>"}, {"user", "u"}}}}));
  CHECK(keys.mask("web.db", web["db"]) == json({{"password", "<secret>"}, {"user", "u"}}));
  CHECK(keys.mask("web", json({{"replicas", 3}})) == json({{"replicas", 3}}));  // Nothing secret set.
  CHECK(keys.text("web.session_secret", "hunter2") == "<secret>");
  CHECK(keys.text("web.replicas", 3) == "3");
  CHECK(keys.text("web.name", "shop") == "shop");
  CHECK(keys.text("web", web).find("hunter2") == std::string::npos);
  // Labels are never secret, even under a secret-looking key.
  CHECK(keys.read_text("label", "secrets.tier", "gold") == "gold");
  CHECK(keys.read_text("config", "secrets.tier", "gold") == "<secret>");
}

TEST_CASE("SecretValues: equality always, containment for 4+ characters, longest first", "[secrets]") {
  SecretValues v({"hunter2-pw", "1"});
  CHECK(v.reveals("hunter2-pw"));
  CHECK(v.reveals("--password=hunter2-pw"));
  CHECK(v.reveals(json(1)));
  CHECK_FALSE(v.reveals(json(12)));  // A short secret only masks on equality.
  CHECK_FALSE(v.reveals(json()));
  CHECK(v.mask_text("dsn redis://u:hunter2-pw@h, again hunter2-pw") == "dsn redis://u:<secret>@h, again <secret>");
  CHECK(v.mask_text("1") == "<secret>");
  CHECK(v.mask_text("11 replicas") == "11 replicas");
  SecretValues nested({"abcd", "xabcdx"});
  CHECK(nested.mask_text("[xabcdx]") == "[<secret>]");
  SecretValues eats({"secr"});
  CHECK(eats.mask_text("secr and secr") == "<secret> and <secret>");  // The mask is not searched again.
  json doc = {{"env", {{"PW", "hunter2-pw"}, {"N", 1}, {"CMD", "--pw=hunter2-pw"}}}, {"replicas", 12}};
  CHECK(v.mask_json(doc) == json({{"env", {{"PW", "<secret>"}, {"N", "<secret>"}, {"CMD", "--pw=<secret>"}}}, {"replicas", 12}}));
  SecretValues none;
  CHECK(none.mask_text("hunter2-pw") == "hunter2-pw");
}

TEST_CASE("SecretValues::add: objects add their members, empty values nothing", "[secrets]") {
  SecretValues v;
  v.add(json({{"user", "admin-user"}, {"password", "pw-1234"}}));
  v.add("");
  v.add(json());
  CHECK(v.reveals("login admin-user"));
  CHECK(v.reveals("pw-1234"));
  CHECK_FALSE(v.reveals(""));
}

TEST_CASE("secret_values_of: reads of secret keys, secret members of parent reads, config parameters", "[secrets]") {
  json doc = {{"config", {{"session_secret", "from-config"}, {"replicas", 3}}},
              {"reads", json::array({{{"kind", "config"}, {"key", "web.session_secret"}, {"value", "from-center"}},
                                     {{"kind", "config"}, {"key", "web"}, {"value", {{"session_secret", "from-parent"}, {"replicas", 3}}}},
                                     {{"kind", "config"}, {"key", "secrets.api_key"}, {"value", "from-convention"}},
                                     {{"kind", "label"}, {"key", "web.session_secret"}, {"value", "a-label"}},
                                     {{"kind", "config"}, {"key", "web.replicas"}, {"value", 3}}})}};
  auto values = secret_values_of("web", SecretKeys({"web.session_secret"}), {&doc}).values();
  std::sort(values.begin(), values.end());
  CHECK(values == std::vector<std::string>{"from-center", "from-config", "from-convention", "from-parent"});
  // The config parameter rule only maps the app's own keys.
  auto other = secret_values_of("api", SecretKeys({"web.session_secret"}), {&doc}).values();
  CHECK(std::find(other.begin(), other.end(), "from-config") == other.end());
  CHECK(secret_values("web", {}, {nullptr}).empty());
}
