// End-to-end tests of `gaia describe` with the real binary: a failed instance says why
// and when it restarts (in `get instances` too), every command a hint about it names
// succeeds as written, -o json|yaml works for every kind, and describe app shows the
// roles whose replicas `gaia scale` set.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

// An app of one role with `replicas` instances, restarted `retry_times` times after a
// back-off of `backoff`.
void write_role_app(const Scratch& s, const std::string& name, int replicas, const std::string& backoff, int retry_times) {
  write_app(s, "apps/" + name, name, "1.0.0", "", "{}\n",
            fmt::format("function(config, deps, app) {{\n"
                        "  roles: {{ main: {{ image: 'busybox:1', replicas: {},\n"
                        "                    resources: {{ cpu: '100m', memory: '128Mi' }},\n"
                        "                    restart: {{ retry_times: {}, backoff: '{}' }} }} }},\n"
                        "  outputs: {{}},\n"
                        "}}\n",
                        replicas, retry_times, backoff));
}

// The line of `text` that starts with `prefix` ("" when there is none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line;
  return "";
}

// The line of a table in `text` that names `key`.
std::string row_of(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.find(key) != std::string::npos) return line;
  return "";
}

// Every `gaia ...` command quoted in backquotes in `text`.
std::vector<std::string> quoted_commands(const std::string& text) {
  std::vector<std::string> out;
  for (size_t open = text.find('`'); open != std::string::npos; open = text.find('`', open + 1)) {
    size_t close = text.find('`', open + 1);
    if (close == std::string::npos) break;
    std::string cmd = text.substr(open + 1, close - open - 1);
    if (cmd.starts_with("gaia ")) out.push_back(cmd);
    open = close;
  }
  return out;
}


}  // namespace

TEST_CASE("describe: a failed instance says why and when it restarts, and every hint about it runs", "[e2e][describe]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1"});
  write_role_app(s, "db", 1, "10m", 2);  // Stays Failed while the test looks at it.
  write_role_app(s, "job", 1, "1s", 0);  // Its first failure fails the role for good.
  ok(s, {"submit", "apps/db", "apps/job"});
  auto failed = ok(s, {"sim", "fail", "db/main/0", "--reason", "exit code 3"});
  auto role_failed = ok(s, {"sim", "fail", "job/main/0", "--reason", "segfault"});

  auto get = ok(s, {"get", "instances"});
  std::string db_row = row_of(get.out, "0.main.db.default");
  CHECK_THAT(db_row, Catch::Contains("Failed") && Catch::Contains("exit code 3; restarts in"));
  CHECK_THAT(row_of(get.out, "0.main.job.default"), Catch::Contains("Failed") && Catch::Contains("segfault"));

  auto described = ok(s, {"describe", "instance", "db/main/0"});
  CHECK_THAT(line_starting(described.out, "Reason:"), Catch::Contains("exit code 3"));
  json dj = parsed(ok(s, {"describe", "instance", "db/main/0", "-o", "json"}));
  CHECK(dj["state"] == "Failed");
  CHECK(dj["reason"] == "exit code 3");
  REQUIRE(dj["next_restart"].is_string());
  CHECK(dj["role_failed"] == "");
  std::string next = line_starting(described.out, "Next restart:");
  CHECK_THAT(next, Catch::Contains(dj["next_restart"].get<std::string>()) && Catch::Contains("(in "));
  YAML::Node dy = YAML::Load(ok(s, {"describe", "instance", "db/main/0", "-o", "yaml"}).out);
  CHECK(dy["reason"].as<std::string>() == "exit code 3");

  auto gone = ok(s, {"describe", "instance", "job/main/0"});
  CHECK_THAT(line_starting(gone.out, "Reason:"), Catch::Contains("segfault"));
  CHECK_THAT(line_starting(gone.out, "Next restart:"), Catch::Contains("none: role main failed"));
  json gj = parsed(ok(s, {"describe", "instance", "job/main/0", "-o", "json"}));
  CHECK(gj["next_restart"].is_null());
  CHECK_THAT(gj["role_failed"].get<std::string>(), Catch::Contains("segfault"));

  // Every command the hints about these instances name succeeds as written. `gaia
  // controller run` runs until interrupted by design; it is bounded here with --for.
  auto hints = quoted_commands(failed.out + role_failed.out + get.out + described.out + gone.out);
  REQUIRE_FALSE(hints.empty());
  for (const auto& hint : hints) {
    INFO("hint: " << hint);
    std::vector<std::string> args;
    std::istringstream words(hint.substr(5));
    for (std::string w; words >> w;) args.push_back(w);
    if (args == std::vector<std::string>{"controller", "run"}) args.insert(args.end(), {"--for", "1s"});
    ok(s, args);
  }
}

TEST_CASE("describe -o json and -o yaml for every kind, and the scale overrides of an app", "[e2e][describe]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "2"});
  write_role_app(s, "web", 1, "1s", 3);
  ok(s, {"submit", "apps/web"});
  ok(s, {"scale", "web", "--replicas", "3"});

  auto text = ok(s, {"describe", "app", "web"});
  CHECK_THAT(line_starting(text.out, "Scale overrides:"), Catch::Contains("main: 3 replicas (the spec says 1)"));
  json app = parsed(ok(s, {"describe", "app", "web", "-o", "json"}));
  CHECK(app["name"] == "web");
  CHECK(app["scale"] == json({{"main", 3}}));
  REQUIRE(app["roles"].size() == 1);
  CHECK(app["roles"][0]["replicas"] == 3);
  CHECK(app["roles"][0]["spec_replicas"] == 1);
  CHECK(app["roles"][0]["scale_override"] == 3);
  CHECK(app["instances"].size() == 3);
  CHECK(app["events"].is_array());
  CHECK_FALSE(app["events"].empty());
  YAML::Node app_yaml = YAML::Load(ok(s, {"describe", "app", "web", "-o", "yaml"}).out);
  CHECK(app_yaml["scale"]["main"].as<int>() == 3);
  CHECK(app_yaml["version"].as<std::string>() == "1.0.0");

  // Without an override the app says so.
  write_role_app(s, "api", 1, "1s", 3);
  ok(s, {"submit", "apps/api"});
  CHECK_THAT(line_starting(ok(s, {"describe", "app", "api"}).out, "Scale overrides:"), Catch::Contains("<none>"));
  CHECK(parsed(ok(s, {"describe", "app", "api", "-o", "json"}))["scale"] == json::object());

  json node = parsed(ok(s, {"describe", "node", "node-1", "-o", "json"}));
  CHECK(node["name"] == "node-1");
  CHECK(node["instances"].is_array());
  CHECK(node["events"].is_array());
  CHECK(YAML::Load(ok(s, {"describe", "node", "node-1", "-o", "yaml"}).out)["name"].as<std::string>() == "node-1");

  json inst = parsed(ok(s, {"describe", "instance", "web/main/0", "-o", "json"}));
  CHECK(inst["name"] == "0.main.web.default");
  CHECK(inst["state"] == "Running");
  CHECK(inst["reason"] == "");
  CHECK(inst["next_restart"].is_null());
  CHECK(inst["events"].is_array());
  CHECK(YAML::Load(ok(s, {"describe", "instance", "web/main/0", "-o", "yaml"}).out)["name"].as<std::string>() ==
        "0.main.web.default");

  // An unknown name is still an error, not an empty object.
  auto missing = s.gaia({"describe", "app", "wbe", "-o", "json"});
  CHECK(missing.code == 1);
  CHECK(missing.out.empty());
  CHECK_THAT(missing.err, Catch::Contains("did you mean 'web'?"));
  CHECK(s.gaia({"describe", "app", "web", "-o", "table"}).code == 2);
}
