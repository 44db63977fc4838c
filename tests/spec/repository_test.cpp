#include "spec/repository.hpp"

#include <catch2/catch.hpp>

#include "spec/resolve.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using namespace gaia::spec;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> versions_of(const SpecRepository& repo, const std::string& name) {
  std::vector<std::string> out;
  for (const AppSpec* s : repo.versions(name)) out.push_back(s->version.to_string());
  return out;
}

std::string yaml(const std::string& name, const std::string& version, const std::string& extra = "") {
  return "name: " + name + "\nversion: " + version + "\n" + extra;
}

}  // namespace

TEST_CASE("a repository finds apps one and two levels below its roots", "[repo]") {
  test::TempDir tmp;
  tmp.write_app("r1/hdfs", yaml("hdfs", "3.3.4"));
  tmp.write_app("r1/zookeeper/3.6.4", yaml("zookeeper", "3.6.4"));
  tmp.write_app("r1/zookeeper/3.8.1", yaml("zookeeper", "3.8.1"));
  tmp.write_app("r1/zookeeper/3.10.0", yaml("zookeeper", "3.10.0"));
  tmp.write_app("r2/kafka-3.6.0", yaml("kafka", "3.6.0"));
  tmp.write_app("r2/.hidden/x", yaml("hidden", "1.0.0"));
  tmp.write_app("r2/deep/a/b", yaml("too-deep", "1.0.0"));  // three levels: not an app version
  tmp.write("r2/README.md", "not an app\n");

  auto repo = SpecRepository::load({tmp.path() / "r1", tmp.path() / "r2"});
  REQUIRE(repo.has_value());
  CHECK(repo->diagnostics().empty());
  CHECK(repo->names() == std::vector<std::string>{"hdfs", "kafka", "zookeeper"});
  CHECK(versions_of(*repo, "zookeeper") == std::vector<std::string>{"3.10.0", "3.8.1", "3.6.4"});
  CHECK(versions_of(*repo, "nope").empty());
  CHECK(repo->size() == 5);
  const AppSpec* hdfs = repo->find("hdfs", semver::parse_version("3.3.4").value());
  REQUIRE(hdfs != nullptr);
  CHECK(hdfs->dir == fs::canonical(tmp.path() / "r1/hdfs"));
  CHECK(repo->roots().size() == 2);
}

TEST_CASE("a missing or non-directory root is an error", "[repo]") {
  test::TempDir tmp;
  fs::path file = tmp.write("file.txt", "x");
  auto repo = SpecRepository::load({tmp.path() / "missing", file, tmp.path()});
  REQUIRE_FALSE(repo.has_value());
  REQUIRE(repo.error().size() == 2);
  CHECK(repo.error()[0].message.find("does not exist") != std::string::npos);
  CHECK(repo.error()[1].message.find("is a file, expected a directory of app directories") != std::string::npos);
}

TEST_CASE("broken apps are kept as diagnostics under their name", "[repo]") {
  test::TempDir tmp;
  tmp.write_app("r/zookeeper/3.8.1", yaml("zookeeper", "3.8.1", "bogus: 1\n"));
  tmp.write_app("r/zookeeper/3.6.4", yaml("zookeeper", "3.6.4"));
  tmp.write_app("r/Weird", "name: [x]\nversion: 1.0.0\n");
  tmp.write_app("r/hdfs", yaml("hdfs", "3.3.4"));
  auto repo = SpecRepository::load({tmp.path() / "r"});
  REQUIRE(repo.has_value());
  CHECK(repo->diagnostics().size() == 2);
  REQUIRE(repo->diagnostics_for("zookeeper").size() == 1);
  CHECK(repo->diagnostics_for("zookeeper")[0].message == "unknown field 'bogus'");
  CHECK(repo->diagnostics_for("zookeeper")[0].location.line == 3);
  CHECK(repo->diagnostics_for("Weird").size() == 1);  // name unreadable: filed under the folder
  CHECK(repo->diagnostics_for("hdfs").empty());
  CHECK(versions_of(*repo, "zookeeper") == std::vector<std::string>{"3.6.4"});

  // Resolving hdfs ignores the broken zookeeper; resolving zookeeper reports it.
  AppSpec a;
  a.name = "a";
  a.version = semver::parse_version("1.0.0").value();
  Dependency d;
  d.name = "hdfs";
  d.alias = "hdfs";
  d.range = semver::Range::parse("*").value();
  a.dependencies.push_back(d);
  CHECK(resolve({&a}, *repo, {}, "default").has_value());
  a.dependencies[0].name = "zookeeper";
  a.dependencies[0].alias = "zookeeper";
  auto touched = resolve({&a}, *repo, {}, "default");
  REQUIRE_FALSE(touched.has_value());
  CHECK(format_diagnostics(touched.error()).find("unknown field 'bogus'") != std::string::npos);
}

TEST_CASE("the same name@version in two directories names both", "[repo]") {
  test::TempDir tmp;
  tmp.write_app("r1/hdfs", yaml("hdfs", "3.3.4"));
  tmp.write_app("r2/hdfs-copy", yaml("hdfs", "3.3.4"));
  auto repo = SpecRepository::load({tmp.path() / "r1", tmp.path() / "r2"});
  REQUIRE(repo.has_value());
  REQUIRE(repo->diagnostics_for("hdfs").size() == 1);
  std::string msg = repo->diagnostics_for("hdfs")[0].message;
  CHECK(msg.find("hdfs@3.3.4 is defined twice") != std::string::npos);
  CHECK(msg.find(fs::canonical(tmp.path() / "r1/hdfs").string()) != std::string::npos);
  CHECK(msg.find(fs::canonical(tmp.path() / "r2/hdfs-copy").string()) != std::string::npos);
  CHECK(repo->size() == 1);
}

TEST_CASE("GAIA_REPO values split on colons", "[repo]") {
  CHECK(SpecRepository::split_path_list("/a:/b::c:") == std::vector<fs::path>{"/a", "/b", "c"});
  CHECK(SpecRepository::split_path_list("").empty());
}

TEST_CASE("an in-memory repository keeps versions sorted and survives a move", "[repo]") {
  SpecRepository repo;
  for (const char* v : {"1.0.0", "1.10.0", "1.2.0", "1.2.0-rc.1"}) {
    AppSpec s;
    s.name = "x";
    s.version = semver::parse_version(v).value();
    repo.add(std::move(s));
  }
  const AppSpec* before = repo.versions("x")[0];
  SpecRepository moved = std::move(repo);
  CHECK(versions_of(moved, "x") == std::vector<std::string>{"1.10.0", "1.2.0", "1.2.0-rc.1", "1.0.0"});
  CHECK(moved.versions("x")[0] == before);
}
