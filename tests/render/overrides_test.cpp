// --set and --values: typed values, dotted keys, YAML/JSON values files, merge order and
// the check that overrides name real parameters.

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <rapidcheck.h>

#include "render/overrides.hpp"
#include "tests/render/render_test_util.hpp"

using nlohmann::json;
namespace render = gaia::render;

TEST_CASE("flags --set values are typed", "[overrides]") {
  auto v = [](const std::string& text) {
    auto r = render::parse_override_value(text, "k");
    REQUIRE(r.has_value());
    return *r;
  };
  CHECK(v("3") == json(3));
  CHECK(v("3").is_number_integer());
  CHECK(v("-12") == json(-12));
  CHECK(v("0.25") == json(0.25));
  CHECK(v("1e3").is_number_float());
  CHECK(v("true") == json(true));
  CHECK(v("false") == json(false));
  CHECK(v("null") == json(nullptr));
  CHECK(v("hello") == json("hello"));
  CHECK(v("") == json(""));
  CHECK(v("8Gi") == json("8Gi"));
  CHECK(v("1.2.3") == json("1.2.3"));
  CHECK(v("{\"a\": 1}") == json{{"a", 1}});
  CHECK(v("[1, \"x\"]") == json{1, "x"});
  CHECK(v("\"123\"") == json("123"));
  CHECK(v("99999999999999999999").is_number_float());

  auto bad = render::parse_override_value("{a: 1}", "x");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error()[0].path == "x");
  CHECK_THAT(bad.error()[0].message, Catch::Contains("not valid JSON"));
}

TEST_CASE("flags --set keys nest on dots", "[overrides]") {
  auto r = render::parse_set("hdfs.replication=2");
  REQUIRE(r.has_value());
  CHECK(*r == json{{"hdfs", {{"replication", 2}}}});
  r = render::parse_set("a=b=c");
  REQUIRE(r.has_value());
  CHECK(*r == json{{"a", "b=c"}});
  CHECK_FALSE(render::parse_set("novalue").has_value());
  CHECK_FALSE(render::parse_set("a..b=1").has_value());
  CHECK_FALSE(render::parse_set("=1").has_value());
  CHECK_FALSE(render::parse_set(".a=1").has_value());
}

TEST_CASE("YAML values keep their types", "[overrides]") {
  auto r = render::yaml_to_json(
      "i: 3\nf: 2.5\nb: true\nn: null\nt: ~\ns: hello\nq: \"3\"\nsq: 'true'\nlist: [1, two]\n"
      "nested: {a: {b: 8Gi}}\nneg: -4\nexp: 1e3\n",
      "v.yaml");
  REQUIRE(r.has_value());
  CHECK((*r)["i"] == json(3));
  CHECK((*r)["i"].is_number_integer());
  CHECK((*r)["f"] == json(2.5));
  CHECK((*r)["b"] == json(true));
  CHECK((*r)["n"].is_null());
  CHECK((*r)["t"].is_null());
  CHECK((*r)["s"] == "hello");
  CHECK((*r)["q"] == "3");
  CHECK((*r)["sq"] == "true");
  CHECK((*r)["list"] == json{1, "two"});
  CHECK((*r)["nested"]["a"]["b"] == "8Gi");
  CHECK((*r)["neg"] == -4);
  CHECK((*r)["exp"] == 1000.0);

  auto bad = render::yaml_to_json("a: 1\nb: [1, 2\n", "v.yaml");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error()[0].location.file == "v.yaml");
  CHECK(bad.error()[0].location.line >= 2);
  CHECK(bad.error()[0].location.column >= 1);

  auto inf = render::yaml_to_json("a: .inf\n", "v.yaml");
  REQUIRE_FALSE(inf.has_value());
  CHECK(inf.error()[0].location.to_string() == "v.yaml:1:4");
}

TEST_CASE("values files (YAML and JSON) then --set, later wins", "[overrides]") {
  gaia::test::TempApp app;
  auto y = app.write("values.yaml", "hdfs:\n  replication: 2\n  heap: 1g\nreplicas: 1\n");
  auto j = app.write("values.json", R"({"hdfs": {"heap": "2g"}, "debug": false})");
  auto r = render::build_overrides({y, j}, {"replicas=7", "hdfs.extra={\"x\": [1]}"});
  REQUIRE(r.has_value());
  CHECK(*r == json{{"hdfs", {{"replication", 2}, {"heap", "2g"}, {"extra", {{"x", {1}}}}}},
                   {"replicas", 7},
                   {"debug", false}});

  SECTION("errors of every source are collected") {
    auto bad_file = app.write("bad.yaml", "- a list\n");
    auto bad = render::build_overrides({bad_file, app.dir() / "missing.yaml"}, {"oops"});
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().size() == 3);
    CHECK_THAT(bad.error()[0].message, Catch::Contains("must be a mapping"));
    CHECK_THAT(bad.error()[1].message, Catch::Contains("cannot read"));
    CHECK_THAT(bad.error()[2].message, Catch::Contains("key=value"));
  }
  SECTION("an empty values file overrides nothing") {
    auto empty = app.write("empty.yaml", "");
    auto e = render::build_overrides({empty}, {});
    REQUIRE(e.has_value());
    CHECK(*e == json::object());
  }
}

TEST_CASE("overrides must name parameters of config.jsonnet", "[overrides]") {
  json config{{"replicas", 2}, {"hdfs", {{"replication", 3}}}, {"image", "x"}};
  auto ok = render::apply_overrides(config, json{{"hdfs", {{"replication", 1}, {"new_deep_key", 1}}}}, "c.jsonnet");
  REQUIRE(ok.has_value());
  CHECK((*ok)["hdfs"] == json{{"replication", 1}, {"new_deep_key", 1}});
  CHECK((*ok)["replicas"] == 2);

  auto bad = render::apply_overrides(config, json{{"replicass", 1}, {"zzz", 2}}, "c.jsonnet");
  REQUIRE_FALSE(bad.has_value());
  REQUIRE(bad.error().size() == 2);
  CHECK(bad.error()[0].path == "replicass");
  CHECK(bad.error()[0].location.file == "c.jsonnet");
  CHECK_THAT(bad.error()[0].hint, Catch::Contains("did you mean 'replicas'"));
  CHECK_THAT(bad.error()[1].hint, Catch::Contains("known parameters: hdfs, image, replicas"));
  CHECK_THAT(bad.error()[1].hint, !Catch::Contains("did you mean"));
}

TEST_CASE("deep_merge properties", "[overrides]") {
  CHECK(rc::check("merging an object into itself changes nothing; --set round-trips integers",
           [](const std::map<std::string, int>& m, int64_t n) {
             json j = json::object();
             for (const auto& [k, v] : m) j[k] = json{{"v", v}};
             json merged = j;
             render::deep_merge(merged, j);
             RC_ASSERT(merged == j);
             auto parsed = render::parse_override_value(std::to_string(n), "k");
             RC_ASSERT(parsed.has_value());
             RC_ASSERT(*parsed == json(n));
           }));
}

// Found by fuzzing (fuzz/targets/overrides.cpp). Each of these crashed gaia with an
// internal error: a value JSON cannot hold reached the store (`config set`, `submit
// --set`), or std::stod threw on a number beyond a double.
TEST_CASE("overrides JSON cannot hold are errors, not crashes", "[overrides][fuzz]") {
  for (const std::string& text : {std::string("\xFF"), std::string("caf\xE9"), std::string("\"\xC0\x80\"")}) {
    auto r = render::parse_override_value(text, "image");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error()[0].path == "image");
  }
  CHECK_THAT(render::parse_override_value("\xFF", "k").error()[0].message, Catch::Contains("not UTF-8"));
  CHECK_FALSE(render::parse_set("ima\xFFge=1").has_value());
  for (const char* number : {"1e400", "-1e400", "1e-400", "[1e309]"}) {
    INFO(number);
    auto r = render::parse_override_value(number, "k");
    REQUIRE_FALSE(r.has_value());
  }
  CHECK_THAT(render::parse_override_value("1e400", "k").error()[0].message, Catch::Contains("beyond the range"));
  // A long number is read without recursion (std::regex overflowed the stack on it).
  auto long_number = render::parse_override_value(std::string(200000, '7'), "k");
  CHECK_FALSE(long_number.has_value());
  CHECK(render::parse_override_value(std::string(300, '7'), "k")->is_number_float());

  auto values = render::yaml_to_json("a: 1e-400\nb: [1e999]\n", "v.yaml");
  REQUIRE_FALSE(values.has_value());
  REQUIRE(values.error().size() == 2);
  CHECK(values.error()[0].location.line == 1);
  CHECK(values.error()[1].location.line == 2);
  values = render::yaml_to_json("image: \"n\xA0\"\n", "v.yaml");
  REQUIRE_FALSE(values.has_value());
  CHECK_THAT(values.error()[0].message, Catch::Contains("not UTF-8"));
  values = render::yaml_to_json(std::string("v: a\0b\n", 7), "v.yaml");
  REQUIRE_FALSE(values.has_value());
  CHECK_THAT(values.error()[0].message, Catch::Contains("control character"));
}

TEST_CASE("a values file with several YAML documents is refused, not cut to the first", "[overrides]") {
  auto r = render::yaml_to_json("a: 1\n---\nb: 2\n", "v.yaml");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error()[0].location.line == 3);
  CHECK_THAT(r.error()[0].message, Catch::Contains("2 YAML documents"));
  // A trailing separator, as generators write, leaves one document.
  auto trailing = render::yaml_to_json("a: 1\n---\n", "v.yaml");
  REQUIRE(trailing.has_value());
  CHECK((*trailing)["a"] == 1);
}

// Found by libFuzzer (fuzz/targets/overrides.cpp): an alias inside its own anchor made
// the conversion recurse until the stack overflowed (a segfault of `gaia submit
// --values`), nested anchors could expand a few lines to billions of values, and
// yaml-cpp decodes the escapes \N and \_ to bytes that are not UTF-8, which crashed the
// store write.
TEST_CASE("values files with runaway aliases or escapes yaml-cpp decodes wrongly are errors", "[overrides][fuzz]") {
  for (const char* cyclic : {"a: &x [*x]\n", "a: &x {b: *x}\n"}) {
    INFO(cyclic);
    auto r = render::yaml_to_json(cyclic, "v.yaml");
    REQUIRE_FALSE(r.has_value());
    CHECK_THAT(r.error()[0].message, Catch::Contains("with its aliases expanded"));
  }
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'j'; ++c)
    laughs += fmt::format("{}: &{} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n", c, c,
                          fmt::arg("p", static_cast<char>(c - 1)));
  auto r = render::yaml_to_json(laughs, "v.yaml");
  REQUIRE_FALSE(r.has_value());
  CHECK_THAT(r.error()[0].message, Catch::Contains("with its aliases expanded"));
  // Shared anchors within bounds still work.
  auto shared = render::yaml_to_json("base: &b {cpu: 1}\nweb: *b\napi: *b\n", "v.yaml");
  REQUIRE(shared.has_value());
  CHECK((*shared)["api"]["cpu"] == 1);

  r = render::yaml_to_json("motd: \"line\\Nnext\"\n", "v.yaml");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error()[0].location.line == 1);
  CHECK_THAT(r.error()[0].message, Catch::Contains("write \\x85 or \\xA0"));
  auto fine = render::yaml_to_json("motd: \"line\\x85next\\xA0\"\n", "v.yaml");
  REQUIRE(fine.has_value());
  CHECK((*fine)["motd"] == "line\xC2\x85next\xC2\xA0");
}
