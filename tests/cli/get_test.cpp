// End-to-end tests of the reading side of the CLI with the real binary: `gaia get` with
// names that match nothing, the short form of gaia's labels in -l, --watch; `gaia delete
// --dry-run`; `gaia deps` against the apps running in the context.
#include <catch2/catch.hpp>
#include <signal.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "lib/state.hpp"
#include "store/sqlite_store.hpp"
#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;
using nlohmann::json;

namespace {

const std::string k_needs_base = "dependencies:\n  - name: base\n    version: \">=1.0.0\"\n";

// A cluster of two nodes with `base` and `top` (which depends on base) submitted; each
// app has one instance, 0.web.<app>.default.
void base_and_top(const Scratch& s) {
  ok(s, {"cluster", "create", "--nodes", "2", "--cpu", "8", "--memory", "32Gi"});
  write_app(s, "base", "base", "1.0.0");
  write_app(s, "top", "top", "1.0.0", k_needs_base);
  ok(s, {"submit", "top"});
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("get: a NAME that matches nothing exits 1 and names it", "[e2e][get]") {
  Scratch s;
  base_and_top(s);
  CHECK_THAT(ok(s, {"get", "instances", "0.web.top.default"}).out, Catch::Contains("0.web.top.default"));

  RunResult none = s.gaia({"get", "instances", "0.web.nope.default"});
  CHECK(none.code == 1);
  CHECK(none.out.empty());
  CHECK_THAT(none.err, Catch::Contains("instance 0.web.nope.default not found"));
  CHECK_THAT(none.err, Catch::Contains("gaia get instances"));

  // What matched is printed; what did not is an error after it.
  RunResult mixed = s.gaia({"get", "instances", "0.web.top.default", "top/web/7"});
  CHECK(mixed.code == 1);
  CHECK_THAT(mixed.out, Catch::Contains("0.web.top.default"));
  CHECK_THAT(mixed.err, Catch::Contains("instance top/web/7 (7.web.top.default) not found"));

  RunResult app = s.gaia({"get", "apps", "nope"});
  CHECK(app.code == 1);
  CHECK_THAT(app.err, Catch::Contains("app nope in tenant default not found"));
  RunResult node = s.gaia({"get", "nodes", "node-9", "-o", "json"});
  CHECK(node.code == 1);
  CHECK_THAT(node.err, Catch::Contains("node node-9 not found"));
  CHECK(json::parse(node.out).empty());

  // A selector that matches nothing is no error: there is simply nothing to list.
  RunResult selected = s.gaia({"get", "instances", "-l", "app=nope"});
  CHECK(selected.code == 0);
  CHECK_THAT(selected.err, Catch::Contains("No instances in tenant default found."));
}

TEST_CASE("get: -l app=NAME matches the label gaia.io/app, as affinity terms do", "[e2e][get]") {
  Scratch s;
  base_and_top(s);
  auto names = [&](std::vector<std::string> args) {
    std::vector<std::string> full = {"get"};
    full.insert(full.end(), args.begin(), args.end());
    full.insert(full.end(), {"-o", "json"});
    std::vector<std::string> out;
    for (const auto& item : json::parse(ok(s, full).out))
      out.push_back(item.contains("key") ? item["key"].get<std::string>() : item["name"].get<std::string>());
    return out;
  };
  const auto top_only = std::vector<std::string>{"0.web.top.default"};
  CHECK(names({"instances", "-l", "app=top"}) == top_only);
  CHECK(names({"instances", "-l", "gaia.io/app=top"}) == top_only);
  CHECK(names({"instances", "-l", "app=top,role=web,tenant=default,version=1.0.0"}) == top_only);
  CHECK(names({"instances", "-l", "app in (base,top)"}).size() == 2);
  CHECK(names({"instances", "-l", "app!=base"}) == top_only);
  CHECK(names({"instances", "-l", "!app"}).empty());
  CHECK(names({"apps", "-l", "app=base"}) == std::vector<std::string>{"base"});
  CHECK(names({"apps", "-l", "app=top"}) == std::vector<std::string>{"top"});
}

TEST_CASE("get --watch prints the list again when it changes", "[e2e][get]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "2", "--cpu", "8", "--memory", "32Gi"});
  write_app(s, "base", "base", "1.0.0");
  write_app(s, "other", "other", "1.0.0");
  ok(s, {"submit", "base"});
  pid_t pid = s.spawn({"get", "instances", "--watch"}, "watch");
  KillOnExit guard(pid);
  auto out = s.dir() / "watch.out";
  REQUIRE(eventually([&] { return Scratch::slurp(out).find("0.web.base.default") != std::string::npos; }));
  ok(s, {"submit", "other"});
  bool seen = eventually([&] { return Scratch::slurp(out).find("0.web.other.default") != std::string::npos; },
                         std::chrono::seconds(10));
  ::kill(pid, SIGTERM);
  CHECK(guard.wait() == 0);  // A stop signal ends a watch cleanly.
  std::string text = Scratch::slurp(out);
  INFO(text << Scratch::slurp(s.dir() / "watch.err"));
  CHECK(seen);
  // The first listing, then one for each change (submitting places, then starts, it).
  CHECK(count_of(text, "NAME") >= 2);
  CHECK(text.find("0.web.other.default") > text.find("NAME", text.find("NAME") + 1));

  // --timeout ends a watch by itself; with nothing changing it printed once.
  auto t0 = std::chrono::steady_clock::now();
  RunResult quiet = ok(s, {"get", "nodes", "-w", "--timeout", "300ms"});
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  CHECK(count_of(quiet.out, "NAME") == 1);
  CHECK_THAT(quiet.out, Catch::Contains("node-2"));
  RunResult bad = s.gaia({"get", "nodes", "--timeout", "1s"});
  CHECK(bad.code == 1);
  CHECK_THAT(bad.err, Catch::Contains("--timeout only applies with --watch"));
  // A watch of a name that does not exist is the same error as without --watch.
  CHECK(s.gaia({"get", "apps", "nope", "-w", "--timeout", "300ms"}).code == 1);
}

TEST_CASE("delete --dry-run shows what would be deleted and writes nothing", "[e2e][delete]") {
  Scratch s;
  base_and_top(s);
  const auto before = ok(s, {"get", "apps", "-o", "json"}).out;
  auto events_before = json_lines(ok(s, {"events", "-o", "json"}).out).size();

  RunResult dry = ok(s, {"delete", "base", "--cascade", "--dry-run"});
  CHECK_THAT(dry.out, Catch::Contains("would delete top 1.0.0 (tenant default): 1 instance(s)"));
  CHECK_THAT(dry.out, Catch::Contains("would delete base 1.0.0 (tenant default): 1 instance(s)"));
  CHECK_THAT(dry.out, Catch::Contains("  0.web.base.default"));
  CHECK_THAT(dry.out, Catch::Contains("dry run: nothing was written"));
  CHECK(dry.out.find("would delete top") < dry.out.find("would delete base"));  // Dependents first.
  auto j = json::parse(ok(s, {"delete", "base", "--cascade", "--dry-run", "-o", "json"}).out);
  CHECK(j["dry_run"] == true);
  CHECK(j["deleted"].size() == 2);
  // Nothing changed: the same apps, no new events.
  CHECK(ok(s, {"get", "apps", "-o", "json"}).out == before);
  CHECK(json_lines(ok(s, {"events", "-o", "json"}).out).size() == events_before);

  // The same refusals as a real delete.
  RunResult refused = s.gaia({"delete", "base", "--dry-run"});
  CHECK(refused.code == 1);
  CHECK_THAT(refused.err, Catch::Contains("top"));
  CHECK(s.gaia({"delete", "nope", "--dry-run"}).code == 1);

  ok(s, {"delete", "base", "--cascade"});
  CHECK(json::parse(ok(s, {"get", "apps", "-o", "json"}).out).empty());
}

TEST_CASE("deps: the apps running in the context are reused, as plan reuses them", "[e2e][deps]") {
  Scratch s;
  write_app(s, "base", "base", "1.0.0");
  write_app(s, "top", "top", "1.0.0", k_needs_base);
  // No cluster (no store) yet: everything is deployed, and no store is made.
  RunResult fresh = ok(s, {"deps", "top"});
  CHECK_THAT(fresh.out, Catch::Contains("base (deploy 1.0.0)"));
  CHECK_THAT(fresh.out, Catch::Contains("plan: 2 to deploy, 0 reused"));
  CHECK_FALSE(std::filesystem::exists(s.dir() / "state" / "gaia" / "gaia.db"));

  ok(s, {"cluster", "create", "--nodes", "2", "--cpu", "8", "--memory", "32Gi"});
  ok(s, {"submit", "base", "--wait"});
  RunResult plan = ok(s, {"plan", "top"});
  CHECK_THAT(plan.out, Catch::Contains("reuse"));
  RunResult deps = ok(s, {"deps", "top"});
  CHECK_THAT(deps.out, Catch::Contains("base (reuse 1.0.0)"));
  CHECK_THAT(deps.out, Catch::Contains("plan: 1 to deploy, 1 reused"));
  CHECK(json::parse(ok(s, {"deps", "top", "-o", "json"}).out).dump().find("reuse") != std::string::npos);
  // Another tenant runs nothing.
  CHECK_THAT(ok(s, {"--tenant", "team-a", "deps", "top"}).out, Catch::Contains("base (deploy 1.0.0)"));
  // --running replaces the context's apps.
  s.write("running.yaml", "[]\n");
  CHECK_THAT(ok(s, {"deps", "top", "--running", "running.yaml"}).out, Catch::Contains("base (deploy 1.0.0)"));
}

TEST_CASE("get apps counts serving instances per app, the same with and without --watch", "[e2e][get]") {
  // One node of 2 cores: base and top take one each, so top scaled to 4 has 3 pending.
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1", "--cpu", "2", "--memory", "32Gi"});
  write_app(s, "base", "base", "1.0.0");
  write_app(s, "top", "top", "1.0.0", k_needs_base);
  ok(s, {"submit", "top"});
  s.gaia({"scale", "top", "--replicas", "4"});
  json instances = json::parse(ok(s, {"get", "instances", "-o", "json"}).out);
  REQUIRE(instances.size() == 5);

  json apps = json::parse(ok(s, {"get", "apps", "-o", "json"}).out);
  REQUIRE(apps.size() == 2);
  for (const auto& app : apps) {
    INFO(app.dump());
    int running = 0;
    for (const auto& i : instances)
      if (i["app"] == app["name"] && (i["state"] == "Running" || i["state"] == "Succeeded")) ++running;
    CHECK(app["instances"]["running"] == running);
  }
  CHECK(apps[0]["name"] == "base");
  CHECK(apps[0]["instances"] == json({{"running", 1}, {"desired", 1}}));
  CHECK(apps[1]["instances"] == json({{"running", 1}, {"desired", 4}}));
  std::string table = ok(s, {"get", "apps"}).out;
  CHECK_THAT(table, Catch::Contains("1/4"));

  // The watch reads the whole state (its informer); a single listing reads only the apps
  // and their counts. Both print the same, in every format and for every tenant.
  for (std::vector<std::string> args : {std::vector<std::string>{}, {"-o", "json"}, {"-o", "yaml"}, {"-o", "wide"},
                                        {"-A"}, {"-l", "app=top"}, {"top"}}) {
    std::vector<std::string> once = {"get", "apps"};
    once.insert(once.end(), args.begin(), args.end());
    std::vector<std::string> watched = once;
    watched.insert(watched.end(), {"-w", "--timeout", "300ms"});
    INFO(fmt::format("{}", fmt::join(once, " ")));
    // AGE may tick over between the two commands.
    auto without_age = [](const std::string& text) {
      return std::regex_replace(text, std::regex(R"(\b[0-9]+s\b)"), "AGE");
    };
    CHECK(without_age(ok(s, once).out) == without_age(ok(s, watched).out));
  }
}

TEST_CASE("get apps prints from the summaries commits keep, and from the apps when a writer did not keep them",
          "[e2e][get]") {
  Scratch s;
  ok(s, {"cluster", "create", "--nodes", "1", "--cpu", "2", "--memory", "32Gi"});
  write_app(s, "base", "base", "1.0.0");
  write_app(s, "top", "top", "1.0.0", k_needs_base);
  ok(s, {"submit", "top"});
  s.gaia({"scale", "top", "--replicas", "3"});
  const std::string store = (s.dir() / "state" / "gaia" / "gaia.db").string();
  auto without_age = [](const std::string& text) { return std::regex_replace(text, std::regex(R"(\b[0-9]+s\b)"), "AGE"); };
  const std::vector<std::vector<std::string>> forms = {{}, {"-o", "wide"}, {"-A"}, {"-l", "app=top"}, {"top"}};
  std::vector<std::string> kept;
  for (const auto& args : forms) {
    std::vector<std::string> cmd = {"-v", "get", "apps"};
    cmd.insert(cmd.end(), args.begin(), args.end());
    auto r = ok(s, cmd);
    CHECK_THAT(r.err, Catch::Contains("get apps: 2 app summaries"));
    kept.push_back(without_age(r.out));
  }
  CHECK_THAT(kept[0], Catch::Contains("1/3"));

  // An older gaia commits without keeping them: the sequence moves, the marker does not.
  {
    auto st = gaia::SqliteStore::open(store);
    REQUIRE(st);
    auto seq = (*st)->get(gaia::keys::k_seq);
    REQUIRE(seq);
    REQUIRE(*seq);
    gaia::Txn old;
    old.compares.push_back({gaia::keys::k_seq, (*seq)->mod_revision});
    old.puts.push_back({gaia::keys::k_seq, std::to_string(std::stoll((*seq)->value) + 1)});
    auto wrote = (*st)->txn(old);
    REQUIRE(wrote);
    REQUIRE(wrote->succeeded);
  }
  for (size_t k = 0; k < forms.size(); ++k) {
    std::vector<std::string> cmd = {"-v", "get", "apps"};
    cmd.insert(cmd.end(), forms[k].begin(), forms[k].end());
    auto r = ok(s, cmd);
    INFO(fmt::format("{}", fmt::join(cmd, " ")));
    CHECK_THAT(r.err, Catch::Contains("summaries not kept yet; reading the apps"));
    CHECK(without_age(r.out) == kept[k]);
  }
  // The next commit writes them all again.
  ok(s, {"node", "label", "node-1", "disk=ssd"});
  auto r = ok(s, {"-v", "get", "apps"});
  CHECK_THAT(r.err, Catch::Contains("get apps: 2 app summaries"));
  CHECK(without_age(r.out) == kept[0]);
}
