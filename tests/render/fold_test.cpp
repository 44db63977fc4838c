// Folding a render's files into one evaluation (render/import_scan.hpp and
// evaluate_jsonnet): the import sites the lexer finds, what makes it give up, and renders
// that come out the same folded and file by file, with the same errors.
#include <catch2/catch.hpp>

#include "render/evaluator.hpp"
#include "render/import_scan.hpp"
#include "tests/render/render_test_util.hpp"

using namespace gaia;
using namespace gaia::render;

using gaia::test::TempApp;

namespace {

std::vector<std::string> paths_of(std::string_view text) {
  auto sites = scan_imports(text);
  REQUIRE(sites);
  std::vector<std::string> out;
  for (const auto& s : *sites) {
    CHECK(text.substr(s.begin, 6) == "import");
    out.push_back(s.path);
  }
  return out;
}

// Both ways, in process: the folded evaluation and the files one by one.
std::pair<Result<EvalOutput>, Result<EvalOutput>> both_ways(const TempApp& app) {
  EvalInput in;
  in.app_dir = app.dir();
  in.app_name = "demo";
  in.overrides = nlohmann::json::object();
  EvalInput plain = in;
  plain.fold = false;
  return {evaluate_jsonnet(in), evaluate_jsonnet(plain)};
}

// Rendered file by file (the folding refused or failed), with what the plain render
// gives; the folded attempt's output, for more checks.
EvalOutput check_unfolded_same(const TempApp& app) {
  auto [folded, plain] = both_ways(app);
  REQUIRE(folded);
  REQUIRE(plain);
  CHECK_FALSE(folded->folded);
  CHECK(folded->raw.config == plain->raw.config);
  CHECK(folded->raw.main == plain->raw.main);
  return *folded;
}

// Fails as the plain render fails: the same first message at the same place.
std::string check_fails_same(const TempApp& app) {
  auto [folded, plain] = both_ways(app);
  REQUIRE_FALSE(folded);
  REQUIRE_FALSE(plain);
  const Diagnostic& f = folded.error().front();
  const Diagnostic& p = plain.error().front();
  CHECK(f.message == p.message);
  CHECK(f.location.file == p.location.file);
  CHECK(f.location.line == p.location.line);
  CHECK(f.location.column == p.location.column);
  return p.message;
}

}  // namespace

TEST_CASE("import scan: finds imports in code, not in strings, comments or text blocks", "[render][fold]") {
  CHECK(paths_of("local a = import 'a.libsonnet'; a") == std::vector<std::string>{"a.libsonnet"});
  CHECK(paths_of("local a = import \"lib/a.libsonnet\";\nlocal b = import\n  @'b.jsonnet'; a + b") ==
        std::vector<std::string>{"lib/a.libsonnet", "b.jsonnet"});
  CHECK(paths_of("// import 'no.libsonnet'\n# import 'no2'\n/* import 'no3' */ 1").empty());
  CHECK(paths_of("{ a: \"import 'no'\", b: 'x \\' import \"no\"', c: @\"import \"\"no\"\"\" }").empty());
  // A line of the block's indentation that starts with ||| is text; the block ends at
  // the first line indented less.
  CHECK(paths_of("local t = |||\n  import 'no'\n  ||| import 'no2'\n|||;\nimport 'yes'") ==
        std::vector<std::string>{"yes"});
  CHECK(paths_of("local t = |||\n\n  text\n\n  more\n|||; [import 'yes', t]") == std::vector<std::string>{"yes"});
  CHECK(paths_of("{ imported: 1, important: import 'x' }") == std::vector<std::string>{"x"});
  // Given up: what the folding does not handle, and text it cannot follow.
  CHECK_FALSE(scan_imports("importstr 'a.txt'"));
  CHECK_FALSE(scan_imports("importbin 'a.bin'"));
  CHECK(paths_of("[import 'a', f(import 'b'), if c then import 'c' else import 'd', { x: import 'e' }]") ==
        std::vector<std::string>{"a", "b", "c", "d", "e"});
  // libjsonnet refuses these files ("computed imports are not allowed"); a binding in
  // the import's place would make them valid.
  CHECK_FALSE(scan_imports("import 'a' + 'b'"));
  CHECK_FALSE(scan_imports("import 'a' { web+: 1 }"));
  CHECK_FALSE(scan_imports("import 'a'.f"));
  CHECK_FALSE(scan_imports("import 'a'[0]"));
  // std only by a plain field name, and not the ones that name the file.
  CHECK(paths_of("std.length(std.objectFields({}))").empty());
  CHECK_FALSE(scan_imports("std.thisFile"));
  CHECK_FALSE(scan_imports("std['this' + 'File']"));
  CHECK_FALSE(scan_imports("std.trace('here', 1)"));
  CHECK_FALSE(scan_imports("local s = std; s.length([])"));
  CHECK_FALSE(scan_imports("std.native('gaia_phase')"));
  CHECK(scan_imports("std.native('gaia_config')", /*allow_native=*/true));
  // Brackets pair within the file, or the file could close what it is folded into.
  CHECK_FALSE(scan_imports("{a: 1}) + ({b: 2}"));
  CHECK_FALSE(scan_imports("[1, 2"));
  CHECK_FALSE(scan_imports("(1]"));
  CHECK(paths_of("{ a: [ (1) ], b: '(' }").empty());
  CHECK_FALSE(scan_imports("import ('a')"));
  CHECK_FALSE(scan_imports("import 'a\\u0062'"));
  CHECK_FALSE(scan_imports("import @'a''b'"));
  CHECK_FALSE(scan_imports("local s = 'unterminated"));
  CHECK_FALSE(scan_imports("/* unterminated"));
  CHECK_FALSE(scan_imports("local t = |||-\n  chomped\n|||; 1"));
  CHECK_FALSE(scan_imports("local t = ||| text\n|||; 1"));
  CHECK_FALSE(scan_imports("local t = |||\nno indent\n|||; 1"));
  CHECK_FALSE(scan_imports("local t = |||\n  a\n x\n|||; 1"));
  CHECK_FALSE(scan_imports("import"));
}

TEST_CASE("fold: renders come out the same folded and file by file", "[render][fold]") {
  TempApp app("local c = import 'lib/defaults.libsonnet'; c + { note: \"import 'not/a/file'\" }",
              "local gaia = import 'gaia.libsonnet';\n"
              "local site = import 'lib/site.libsonnet';\n"
              "local again = import './lib/site.libsonnet';\n"
              "local text = |||\n  import 'neither'\n  // nor this\n|||;\n"
              "function(config, deps, app) {\n"
              "  roles: { web: { image: site.image, replicas: config.replicas,\n"
              "                  resources: { cpu: '1', memory: '1Gi' },\n"
              "                  env: { TEXT: text, SAME: std.toString(site == again), ROOT: site.root } } },\n"
              "  outputs: { doc: $.roles.web.image },\n"
              "}\n");
  // Relative imports from a sub folder, an import cycle between two lazy files, `$`
  // inside an imported object, and a file imported by two paths.
  app.write("lib/defaults.libsonnet", "{ replicas: (import 'deeper/two.libsonnet').n }");
  app.write("lib/deeper/two.libsonnet", "{ n: 2, other:: import '../site.libsonnet' }");
  app.write("lib/site.libsonnet", "{ image: 'nginx:' + $.tag, tag: '1.25', root: (import 'defaults.libsonnet').replicas }");
  auto [folded, plain] = both_ways(app);
  REQUIRE(folded);
  REQUIRE(plain);
  CHECK(folded->folded);
  CHECK_FALSE(plain->folded);
  CHECK(folded->raw.config == plain->raw.config);
  CHECK(folded->raw.main == plain->raw.main);
  CHECK(folded->raw.main["roles"]["web"]["image"] == "nginx:1.25");
  CHECK(folded->raw.config["replicas"] == 2);
}

TEST_CASE("fold: config reads are recorded the same folded", "[render][fold]") {
  TempApp app("{ replicas: 1 }",
              "local gaia = import 'gaia.libsonnet';\n"
              "function(config, deps, app) {\n"
              "  roles: { web: { image: gaia.config('image', 'nginx:1'), replicas: 1,\n"
              "                  resources: { cpu: '1', memory: '1Gi' } } },\n"
              "  outputs: {},\n"
              "}\n");
  auto [folded, plain] = both_ways(app);
  REQUIRE(folded);
  REQUIRE(plain);
  CHECK(folded->folded);
  REQUIRE(folded->raw.reads.size() == 1);
  CHECK(folded->raw.reads == plain->raw.reads);
}

TEST_CASE("fold: what it does not handle, or what fails, is evaluated file by file with the same result",
          "[render][fold]") {
  SECTION("std.thisFile") { check_unfolded_same(TempApp("{ replicas: 1, f: std.thisFile }")); }
  SECTION("importstr") {
    TempApp app("{ replicas: 1, t: importstr 'notes.txt' }");
    app.write("notes.txt", "hello");
    CHECK(check_unfolded_same(app).raw.config["t"] == "hello");
  }
  SECTION("an unused import of a missing file") {
    check_unfolded_same(TempApp("local unused = import 'missing.libsonnet'; { replicas: 1 }"));
  }
  SECTION("a syntax error in an unused imported file") {
    TempApp app("local unused = import 'broken.libsonnet'; { replicas: 1 }");
    app.write("broken.libsonnet", "{ a: ");
    check_unfolded_same(app);
  }
  SECTION("an import with more after it is refused as before") {
    TempApp app("local l = import 'lib.libsonnet' { replicas+: 1 }; l");
    app.write("lib.libsonnet", "{ replicas: 1 }");
    CHECK_THAT(check_fails_same(app), Catch::Contains("computed imports are not allowed"));
  }
  SECTION("a file that would close the parentheses it is folded into") {
    check_fails_same(TempApp("{ replicas: 1 }) + ({ b: 2 }"));
  }
  SECTION("the natives of a folded evaluation are not there for templates") {
    TempApp app("{ replicas: 1, t: std.type(std.native('gaia_phase')) }");
    auto [folded, plain] = both_ways(app);
    REQUIRE(folded);
    CHECK(folded->raw.config["t"] == "null");
    CHECK(folded->raw.config == plain->raw.config);
  }
  SECTION("std.thisFile by a computed name") {
    check_unfolded_same(TempApp("{ replicas: 1, f: std['this' + 'File'] }"));
  }
  SECTION("errors read the same") {
    for (const char* config : {"{ replicas: (import 'lib/bad.libsonnet').x }", "{ replicas: error 'no' }",
                               "{ replicas: }", "local l = import 'lib/bad.libsonnet'; { replicas: l.y }"}) {
      TempApp app(config);
      app.write("lib/bad.libsonnet", "{ x: error 'bad x',\n  y: std.foo() }");
      INFO(config);
      check_fails_same(app);
    }
  }
}

TEST_CASE("fold: only the imports a render evaluates count as files it read", "[render][fold]") {
  TempApp app("{ replicas: 1, used: (import 'used.libsonnet').x, unused: if false then import 'unused.libsonnet' else 0 }");
  app.write("vendor/used.libsonnet", "{ x: 1 }", /*in_root=*/true);
  app.write("vendor/unused.libsonnet", "{ x: 2 }", /*in_root=*/true);
  auto [folded, plain] = both_ways(app);
  REQUIRE(folded);
  REQUIRE(plain);
  CHECK(folded->folded);
  CHECK(folded->external == plain->external);
  bool used = false, unused = false;
  for (const auto& f : folded->external) {
    used = used || f.path.ends_with("/vendor/used.libsonnet");
    unused = unused || f.path.ends_with("/vendor/unused.libsonnet");
  }
  CHECK(used);
  CHECK_FALSE(unused);
}

TEST_CASE("fold: a folded evaluation that failed with no time left is not run again", "[render][fold]") {
  TempApp app("{ replicas: error 'no replicas' }");
  EvalInput in;
  in.app_dir = app.dir();
  in.app_name = "demo";
  auto roomy = evaluate_jsonnet(in);
  REQUIRE_FALSE(roomy);
  CHECK(roomy.error().front().location.line == 1);  // Evaluated again, file by file.
  in.timeout_ms = 1;
  auto tight = evaluate_jsonnet(in);
  REQUIRE_FALSE(tight);
  CHECK_THAT(tight.error().front().message, Catch::Contains("no replicas"));
  CHECK(tight.error().front().location.file == "config.jsonnet");
  CHECK(tight.error().front().location.line == 0);  // The folded evaluation's error.
}
