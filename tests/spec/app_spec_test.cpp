#include "spec/app_spec.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <unistd.h>

#include "spec/suggest.hpp"
#include "tests/golden_util.hpp"
#include "tests/temp_dir.hpp"

using namespace gaia;
using namespace gaia::spec;
namespace fs = std::filesystem;

namespace {

Diagnostics errors_of(const std::string& text) {
  auto r = parse_app_yaml(text, "app.yaml");
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

// The single diagnostic whose path is `path`; fails the test if there is not exactly one.
Diagnostic only(const Diagnostics& ds, const std::string& path) {
  std::vector<Diagnostic> hits;
  for (const auto& d : ds)
    if (d.path == path) hits.push_back(d);
  INFO(format_diagnostics(ds));
  REQUIRE(hits.size() == 1);
  return hits[0];
}

}  // namespace

TEST_CASE("a valid app.yaml gives every field, with defaults filled", "[appspec]") {
  auto r = parse_app_yaml(R"(name: hbase
version: 2.5.0-rc.1+build.7
description: HBase region servers
priority: prod:200
dependencies:
  - name: zookeeper
    version: ">=3.6 <4"
    as: zk
    import: [quorum, connect_string]
  - name: hdfs-client
outputs: [master_uri]
secrets: [db.password, admin.token]
)",
                          "hbase/app.yaml");
  INFO((r ? "" : format_diagnostics(r.error())));
  REQUIRE(r.has_value());
  CHECK(r->name == "hbase");
  CHECK(r->version.to_string() == "2.5.0-rc.1+build.7");
  CHECK(r->id() == "hbase@2.5.0-rc.1+build.7");
  CHECK(r->description == "HBase region servers");
  CHECK(r->priority.band == Band::Prod);
  CHECK(r->priority.level == 200);
  CHECK(r->yaml_file == "hbase/app.yaml");
  REQUIRE(r->dependencies.size() == 2);
  const Dependency& zk = r->dependencies[0];
  CHECK(zk.name == "zookeeper");
  CHECK(zk.range.text() == ">=3.6 <4");
  CHECK(zk.alias == "zk");
  CHECK(zk.imports == std::vector<std::string>{"quorum", "connect_string"});
  CHECK(zk.location.file == "hbase/app.yaml");
  CHECK(zk.location.line == 6);
  CHECK(zk.location.column == 5);
  const Dependency& hdfs = r->dependencies[1];
  CHECK(hdfs.alias == "hdfs_client");  // default: '-' -> '_'
  CHECK(hdfs.range.text() == "*");     // default range
  CHECK(hdfs.range.satisfies(*semver::parse_version("0.0.1")));
  CHECK(hdfs.imports.empty());
  CHECK(r->outputs == std::vector<std::string>{"master_uri"});
  CHECK(r->secrets == std::vector<std::string>{"db.password", "admin.token"});
}

TEST_CASE("optional fields may be left out or left empty", "[appspec]") {
  auto r = parse_app_yaml("name: tiny\nversion: 0.1.0\ndescription:\ndependencies:\noutputs: []\n", "app.yaml");
  REQUIRE(r.has_value());
  CHECK(r->priority == Priority{});
  CHECK(r->priority.band == Band::Prod);
  CHECK(r->dependencies.empty());
  CHECK(r->outputs.empty());
  CHECK(r->secrets.empty());
  CHECK(r->description.empty());
}

TEST_CASE("flow-style dependencies parse like block style", "[appspec]") {
  auto r = parse_app_yaml("{name: a, version: 1.0.0, dependencies: [{name: b, version: '^1', as: bee}]}", "x.yaml");
  REQUIRE(r.has_value());
  REQUIRE(r->dependencies.size() == 1);
  CHECK(r->dependencies[0].alias == "bee");
  CHECK(r->dependencies[0].range.satisfies(*semver::parse_version("1.9.0")));
  CHECK_FALSE(r->dependencies[0].range.satisfies(*semver::parse_version("2.0.0")));
}

TEST_CASE("unknown fields are errors with a did-you-mean hint at the key", "[appspec]") {
  auto ds = errors_of("name: a\nversion: 1.0.0\nverison: 1.0.0\ndependencies:\n  - name: b\n    improt: [x]\n");
  REQUIRE(ds.size() == 2);
  Diagnostic top = only(ds, "verison");
  CHECK(top.location.line == 3);
  CHECK(top.location.column == 1);
  CHECK(top.message == "unknown field 'verison'");
  CHECK(top.hint == "did you mean 'version'?");
  Diagnostic nested = only(ds, "dependencies[0].improt");
  CHECK(nested.location.line == 6);
  CHECK(nested.location.column == 5);
  CHECK(nested.hint == "did you mean 'import'?");
}

TEST_CASE("a far-off unknown field lists the known ones", "[appspec]") {
  Diagnostic d = only(errors_of("name: a\nversion: 1.0.0\nreplicas: 3\n"), "replicas");
  CHECK(d.hint == "known fields are: name, version, description, priority, dependencies, outputs, secrets");
}

TEST_CASE("wrong types say what was expected and what was found", "[appspec]") {
  auto ds = errors_of("name: [a]\nversion: 1.0.0\ndependencies: {name: b}\noutputs: uri\n");
  CHECK(only(ds, "name").message == "expected a string (the app's name), found a list");
  CHECK(only(ds, "dependencies").message == "expected a list, found a map");
  Diagnostic outputs = only(ds, "outputs");
  CHECK(outputs.message == "expected a list, found the string 'uri'");
  CHECK(outputs.hint == "write a YAML list, e.g. outputs: [uri]");
  CHECK(outputs.location.line == 4);
  CHECK(outputs.location.column == 10);
}

TEST_CASE("missing name and version point at the start of the document", "[appspec]") {
  auto ds = errors_of("\n\n  description: x\n");
  Diagnostic name = only(ds, "name");
  CHECK(name.location.line == 3);
  CHECK(name.location.column == 3);
  CHECK(name.message.starts_with("missing required field 'name'"));
  Diagnostic version = only(ds, "version");
  CHECK(version.location.line == 3);
  CHECK(version.message.starts_with("missing required field 'version'"));
}

TEST_CASE("a dependency without a name points at the list item", "[appspec]") {
  Diagnostic d = only(errors_of("name: a\nversion: 1.0.0\ndependencies:\n  - version: '1'\n"), "dependencies[0].name");
  CHECK(d.location.line == 4);
  CHECK(d.location.column == 5);
}

TEST_CASE("bad names say which DNS-label rule failed", "[appspec]") {
  auto check = [](const std::string& name, const std::string& expected_problem) {
    Diagnostic d = only(errors_of("name: \"" + name + "\"\nversion: 1.0.0\n"), "name");
    INFO(d.message);
    CHECK(d.message.find(expected_problem) != std::string::npos);
  };
  check("Hdfs", "upper-case letter 'H'");
  check("-hdfs", "starts with '-'");
  check("hdfs-", "ends with '-'");
  check("hd_fs", "contains '_' at position 3");
  check("", "it is empty");
  check(std::string(64, 'a'), "64 characters long, the limit is 63");
  CHECK(dns_label_problem("hdfs-2") == "");
  CHECK(suggest_dns_label("My_App.") == "my-app");
}

TEST_CASE("bad versions and ranges carry the semver error and a hint", "[appspec]") {
  auto ds = errors_of("name: a\nversion: '3.3'\ndependencies:\n  - name: b\n    version: '>=1 <<2'\n");
  Diagnostic v = only(ds, "version");
  CHECK(v.location.line == 2);
  CHECK(v.location.column == 10);
  CHECK(v.hint == "a version needs all three parts MAJOR.MINOR.PATCH: write 3.3.0");
  Diagnostic r = only(ds, "dependencies[0].version");
  CHECK(r.location.line == 5);
  CHECK(r.message.find("<<2") != std::string::npos);
}

TEST_CASE("bad priorities use the priority parser's explanation", "[appspec]") {
  Diagnostic d = only(errors_of("name: a\nversion: 1.0.0\npriority: prod:5000\n"), "priority");
  CHECK(d.message.find("expected a whole number from 0 to 1000") != std::string::npos);
  auto ok = parse_app_yaml("name: a\nversion: 1.0.0\npriority: nonprod:10:non-preemptible\n", "x");
  REQUIRE(ok.has_value());
  CHECK_FALSE(ok->priority.preemptible);
}

TEST_CASE("duplicate dependency names and aliases are errors", "[appspec]") {
  auto ds = errors_of(R"(name: a
version: 1.0.0
dependencies:
  - name: b-c
  - name: x
    as: b_c
  - name: b-c
    as: other
)");
  Diagnostic alias = only(ds, "dependencies[1].as");
  CHECK(alias.message == "alias 'b_c' is already used by dependencies[0] (b-c)");
  CHECK(alias.location.line == 5);
  Diagnostic name = only(ds, "dependencies[2].name");
  CHECK(name.message == "dependency 'b-c' is listed twice (also dependencies[0])");
}

TEST_CASE("aliases, outputs and imports must be identifiers", "[appspec]") {
  auto ds = errors_of(R"(name: a
version: 1.0.0
dependencies:
  - name: b
    as: b-alias
    import: [ok, not-ok]
  - name: 9lives
outputs: [uri, uri, "a b"]
)");
  CHECK(only(ds, "dependencies[0].as").hint.find("'b_alias'") != std::string::npos);
  CHECK(only(ds, "dependencies[0].import[1]").message.find("'not-ok'") != std::string::npos);
  CHECK(only(ds, "dependencies[1].as").message.find("default alias '9lives'") != std::string::npos);
  CHECK(only(ds, "outputs[1]").message == "output 'uri' is listed twice (also outputs[0])");
  CHECK(only(ds, "outputs[2]").message.find("contains ' ' at position 2") != std::string::npos);
}

TEST_CASE("all errors of a file are collected in one pass", "[appspec]") {
  auto ds = errors_of(R"(name: Bad
version: 1
priority: urgent
dependencies:
  - name: zk
    version: nope
outputs: [a-b]
unknown: 1
)");
  CHECK(ds.size() == 6);
  std::vector<int> lines;
  for (const auto& d : ds) lines.push_back(d.location.line);
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<int>{1, 2, 3, 6, 7, 8});
}

TEST_CASE("broken YAML reports yaml-cpp's position, 1-based", "[appspec]") {
  auto ds = errors_of("name: a\nversion: 1.0.0\noutputs: [a, b\n");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].message.starts_with("invalid YAML: "));
  CHECK(ds[0].location.line >= 3);
  CHECK(ds[0].location.column >= 1);
  auto unquoted = errors_of("name: a\nversion: 1.0.0\ndependencies:\n  - name: b\n    version: >=1\n");
  REQUIRE(unquoted.size() == 1);
  CHECK(unquoted[0].hint.find("quote the version range") != std::string::npos);
}

TEST_CASE("the partial parse keeps what was understood", "[appspec]") {
  AppSpecParse p = parse_app_yaml_partial("name: zookeeper\nversion: 3.8.1\nbogus: 1\n", "x");
  CHECK(p.name_valid);
  CHECK(p.version_valid);
  CHECK(p.spec.name == "zookeeper");
  CHECK(p.errors.size() == 1);
}

TEST_CASE("did-you-mean counts swapped letters as one edit", "[appspec]") {
  CHECK(edit_distance("nmae", "name") == 1);
  CHECK(edit_distance("verison", "version") == 1);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(did_you_mean("zookeper", {"hdfs", "zookeeper"}) == std::optional<std::string>("zookeeper"));
  CHECK_FALSE(did_you_mean("kafka", {"hdfs", "zookeeper"}).has_value());
}

// Golden tests: each tests/golden/appspec/NAME.yaml is broken on purpose, and NAME.err is
// exactly what format_diagnostics prints for it.
TEST_CASE("app.yaml error messages match the golden files", "[appspec][golden]") {
  fs::path dir = test::golden_dir() / "appspec";
  std::vector<fs::path> inputs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") inputs.push_back(e.path());
  std::sort(inputs.begin(), inputs.end());
  REQUIRE(inputs.size() >= 15);
  for (const auto& input : inputs) {
    std::string shown = "appspec/" + input.filename().string();
    SECTION(shown) {
      auto r = parse_app_yaml(test::read_text_file(input), shown);
      REQUIRE_FALSE(r.has_value());
      std::string stem = input.stem().string();
      test::check_golden("appspec/" + stem + ".err", format_diagnostics(r.error()));
    }
  }
}

TEST_CASE("load_app_spec reads a directory and stores it canonical", "[appspec]") {
  test::TempDir tmp;
  tmp.write_app("apps/hdfs", "name: hdfs\nversion: 3.3.4\n");
  fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  auto r = load_app_spec("apps/../apps/hdfs");
  fs::current_path(cwd);
  INFO((r ? "" : format_diagnostics(r.error())));
  REQUIRE(r.has_value());
  CHECK(r->dir == fs::canonical(tmp.path() / "apps/hdfs"));
  CHECK(r->dir.is_absolute());
  CHECK(r->yaml_file == "apps/../apps/hdfs/app.yaml");
}

TEST_CASE("load_app_spec explains a missing or wrong directory", "[appspec]") {
  test::TempDir tmp;
  auto missing = load_app_spec(tmp.path() / "nope");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error()[0].message.find("does not exist") != std::string::npos);

  fs::path file = tmp.write("app.yaml", "name: a\nversion: 1.0.0\n");
  auto is_file = load_app_spec(file);
  REQUIRE_FALSE(is_file.has_value());
  CHECK(is_file.error()[0].message == "'" + file.string() + "' is a file, expected an app directory containing app.yaml");
  CHECK(is_file.error()[0].hint == "pass its directory instead: " + tmp.path().string());

  fs::create_directories(tmp.path() / "empty");
  auto empty = load_app_spec(tmp.path() / "empty");
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().size() == 3);  // app.yaml, config.jsonnet and main.jsonnet all missing
}

TEST_CASE("load_app_spec reports app.yaml errors and missing files together", "[appspec]") {
  test::TempDir tmp;
  tmp.write("a/app.yaml", "name: A\nversion: 1.0.0\n");
  tmp.write("a/config.jsonnet", "{}");
  auto r = load_app_spec(tmp.path() / "a");
  REQUIRE_FALSE(r.has_value());
  REQUIRE(r.error().size() == 2);
  std::string all = format_diagnostics(r.error());
  CHECK(all.find("'A' is not a valid app name") != std::string::npos);
  CHECK(all.find("has no main.jsonnet") != std::string::npos);
}

TEST_CASE("load_app_spec reports an unreadable app.yaml", "[appspec]") {
  if (::geteuid() == 0) {
    WARN("running as root, which reads any file: unreadable-file check skipped");
    return;
  }
  test::TempDir tmp;
  fs::path dir = tmp.write_app("a", "name: a\nversion: 1.0.0\n");
  fs::permissions(dir / "app.yaml", fs::perms::none);
  auto r = load_app_spec(dir);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error()[0].message.starts_with("cannot read app.yaml"));
}

// Found by fuzzing (fuzz/targets/app_yaml.cpp): yaml-cpp's LoadAll never returned on a
// stray top-level ',' and filled memory, so `gaia validate` hung on a two-byte app.yaml.
TEST_CASE("a stray comma at the top of app.yaml is a located error, not a hang", "[appspec][fuzz]") {
  for (const std::string text : {", ", ",", "name: a\nversion: 1.0.0\n---\n, "}) {
    INFO(text);
    auto ds = errors_of(text);
    REQUIRE_FALSE(ds.empty());
    CHECK(ds.front().location.line >= 1);
    CHECK_THAT(ds.front().message, Catch::Contains("invalid YAML"));
  }
}

TEST_CASE("app.yaml that is not UTF-8 or holds control characters is refused where the byte is", "[appspec][fuzz]") {
  auto ds = errors_of("name: a\nversion: 1.0.0\ndescription: caf\xE9\n");
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].location.line == 3);
  CHECK(ds[0].location.column == 17);
  CHECK_THAT(ds[0].message, Catch::Contains("not UTF-8") && Catch::Contains("0xE9"));

  ds = errors_of(std::string("name: a\nversion: 1.0.0\ndescription: a\0b\n", 40));
  REQUIRE(ds.size() == 1);
  CHECK(ds[0].location.line == 3);
  CHECK_THAT(ds[0].message, Catch::Contains("control character 0x00"));

  auto ok = parse_app_yaml("name: a\nversion: 1.0.0\ndescription: \"caf\xC3\xA9 \xE2\x98\x95\"\n", "app.yaml");
  REQUIRE(ok.has_value());
  CHECK(ok->description == "caf\xC3\xA9 \xE2\x98\x95");
}

TEST_CASE("when: a dependency's condition parses, and a broken one is located", "[appspec][when]") {
  auto r = parse_app_yaml(R"(name: hub
version: 1.0.0
dependencies:
  - name: search
    when: search.enabled
  - name: kafka
    when: "!sharing.local"
  - name: hdfs
)",
                          "app.yaml");
  REQUIRE(r);
  REQUIRE(r->dependencies[0].when);
  CHECK(r->dependencies[0].when->key == "search.enabled");
  CHECK(r->dependencies[0].when->op == Condition::Op::IsTrue);
  CHECK(r->dependencies[0].when_location.line == 5);
  CHECK(r->dependencies[0].when_location.column == 11);
  CHECK(r->dependencies[1].when->op == Condition::Op::IsFalse);
  CHECK_FALSE(r->dependencies[2].when);

  auto ds = errors_of(R"(name: hub
version: 1.0.0
dependencies:
  - name: search
    when: "search.enabled =="
  - name: kafka
    when: [a]
  - name: hdfs
    wen: x
)");
  auto d = only(ds, "dependencies[0].when");
  CHECK(d.location.line == 5);
  CHECK_THAT(d.message, Catch::Contains("the value to compare with is missing"));
  CHECK_THAT(d.hint, Catch::Contains("storage.mode == hdfs"));
  CHECK_THAT(only(ds, "dependencies[1].when").message, Catch::Contains("expected a string"));
  CHECK_THAT(only(ds, "dependencies[2].wen").hint, Catch::Contains("when"));
}
