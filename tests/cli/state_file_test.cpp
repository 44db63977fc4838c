// The state a command leaves in the user's cache folder for the next command on the same
// store (lib/state_file.hpp): commands that start from it show what commands that read
// the store afresh show, and a damaged file, or a store re-created under the same path,
// changes nothing the user sees.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/cli/e2e_util.hpp"

using namespace gaia::test;

namespace {

// The cluster is large enough to be worth a state file (2,000 records).
void big_cluster(const Scratch& s) {
  ok(s, {"cluster", "create", "--nodes", "2100", "--cpu", "8", "--memory", "32Gi", "--subnet", "10.0.0.0/8"});
}

std::vector<std::filesystem::path> state_files(const Scratch& s) {
  std::vector<std::filesystem::path> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(s.dir() / "cache" / "gaia" / "state", ec))
    out.push_back(e.path());
  return out;
}

// What the user sees of the state: every instance and app, as JSON.
std::string seen(const Scratch& s) {
  return ok(s, {"get", "instances", "-o", "json"}).out + ok(s, {"get", "apps", "-o", "json"}).out;
}

// The same with no state file to start from.
std::string seen_afresh(const Scratch& s) {
  std::filesystem::remove_all(s.dir() / "cache" / "gaia" / "state");
  return seen(s);
}

}  // namespace

TEST_CASE("state file: commands start from the state the last one left and show what a fresh read shows",
          "[e2e][state-file]") {
  Scratch s;
  big_cluster(s);
  write_app(s, "web", "web", "1.0.0");
  ok(s, {"submit", "web"});
  auto files = state_files(s);
  REQUIRE(files.size() == 1);
  CHECK(files[0].extension() == ".state");
  using std::filesystem::perms;
  CHECK((std::filesystem::status(files[0]).permissions() & (perms::group_all | perms::others_all)) == perms::none);

  // Each command below starts from the file an earlier one left, replaying the changes
  // since; what it shows must be what a command without a file shows.
  ok(s, {"scale", "web", "--replicas", "4"});
  std::string kept = seen(s);
  CHECK_THAT(kept, Catch::Contains("3.web.web.default"));
  CHECK(kept == seen_afresh(s));
  ok(s, {"scale", "web", "--replicas", "2"});
  kept = seen(s);
  CHECK_THAT(kept, !Catch::Contains("3.web.web.default"));
  CHECK(kept == seen_afresh(s));
  // -v says where a command started from: the file a command left, or why not it.
  CHECK_THAT(ok(s, {"get", "nodes"}).err, !Catch::Contains("state file"));
  CHECK_THAT(ok(s, {"-v", "get", "nodes"}).err, Catch::Contains("state file") && Catch::Contains(": used, at revision"));
  std::filesystem::remove_all(s.dir() / "cache" / "gaia" / "state");
  CHECK_THAT(ok(s, {"-v", "get", "nodes"}).err, Catch::Contains(": none yet; reading the store") &&
                                                      Catch::Contains(": writing, at revision"));

  SECTION("a damaged file is ignored, and written again") {
    (void)seen(s);
    files = state_files(s);
    REQUIRE(files.size() == 1);
    std::string good = Scratch::slurp(files[0]);
    {
      std::ofstream out(files[0], std::ios::binary | std::ios::trunc);
      out << good.substr(0, good.size() / 3);  // A command killed while writing it.
    }
    CHECK_THAT(ok(s, {"-v", "scale", "web", "--replicas", "3"}).err,
               Catch::Contains(".state: damaged: ") && Catch::Contains("; reading the store"));
    kept = seen(s);
    CHECK_THAT(kept, Catch::Contains("2.web.web.default"));
    CHECK(kept == seen_afresh(s));
  }

  SECTION("a store made again at the same path, with more nodes, is not mistaken for the old one") {
    (void)seen(s);
    std::filesystem::remove_all(s.dir() / "state");
    ok(s, {"cluster", "create", "--nodes", "2200", "--cpu", "8", "--memory", "32Gi", "--subnet", "10.0.0.0/8"});
    auto nodes = nlohmann::json::parse(ok(s, {"get", "nodes", "-o", "json"}).out);
    CHECK(nodes.size() == 2200);
    ok(s, {"node", "cordon", "node-2150"});
  }

  SECTION("a store re-created under the same path is not mistaken for the old one") {
    (void)seen(s);
    REQUIRE(state_files(s).size() == 1);
    std::filesystem::remove_all(s.dir() / "state");
    CHECK_THAT(ok(s, {"-v", "cluster", "create", "--nodes", "2100", "--cpu", "8", "--memory", "32Gi", "--subnet",
                      "10.0.0.0/8"})
                   .err,
               Catch::Contains(".state: another store's, at this address") && !Catch::Contains(": used, at revision"));
    write_app(s, "api", "api", "1.0.0");
    ok(s, {"submit", "api"});
    kept = seen(s);
    CHECK_THAT(kept, Catch::Contains("0.web.api.default"));
    CHECK_THAT(kept, !Catch::Contains("web.web.default"));
    CHECK(kept == seen_afresh(s));
  }
}

TEST_CASE("state file: two stores both named gaia.db in two folders are two stores", "[e2e][state-file]") {
  Scratch s;
  std::filesystem::create_directories(s.dir() / "a");
  std::filesystem::create_directories(s.dir() / "b");
  auto in = [&](const std::string& folder, std::vector<std::string> args) {
    // The same relative --store, run from each folder.
    args.insert(args.begin(), {"--store", "gaia.db"});
    std::vector<std::string> sh = {"-c", "cd " + (s.dir() / folder).string() + " && exec \"$0\" \"$@\"", GAIA_BINARY};
    sh.insert(sh.end(), args.begin(), args.end());
    RunResult r = s.run("/bin/sh", sh);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return r.out;
  };
  in("a", {"cluster", "create", "--nodes", "2100", "--cpu", "8", "--memory", "32Gi", "--subnet", "10.0.0.0/8"});
  CHECK(nlohmann::json::parse(in("a", {"get", "nodes", "-o", "json"})).size() == 2100);
  in("b", {"cluster", "create", "--nodes", "2200", "--cpu", "8", "--memory", "32Gi", "--subnet", "10.0.0.0/8"});
  CHECK(nlohmann::json::parse(in("b", {"get", "nodes", "-o", "json"})).size() == 2200);
  CHECK(nlohmann::json::parse(in("a", {"get", "nodes", "-o", "json"})).size() == 2100);
  CHECK(state_files(s).size() == 2);
}
