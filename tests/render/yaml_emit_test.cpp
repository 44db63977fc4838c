#include "render/yaml_emit.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "tests/render/workload_fixture.hpp"

using gaia::render::emit_yaml;
using gaia::render::emit_yaml_documents;
using gaia::render::yaml_plain_safe;
using gaia::test::yaml_to_json;
using nlohmann::json;

namespace {

json round_trip(const json& value) { return yaml_to_json(YAML::Load(emit_yaml(value))); }

const std::vector<std::string> kTricky = {
    "on",     "yes",      "No",      "OFF",    "y",      "n",          "true",       "False",   "null",
    "~",      "NULL",     "",        "1.0",    "1",      "-1",         "+1",         "0x1F",    "0o17",
    "1e3",    "1_000",    "1:20",    ".inf",   "-.inf",  ".nan",       "2001-12-14", "3.3.4",   "a: b",
    "a:",     ":a",       "#x",      "a #b",   "a#b",    " leading",   "trailing ",  "  both  ", "-",
    "- x",    "?",        "? x",     "[a]",    "{a: 1}", "*ref",       "&anchor",    "!tag",    "|",
    ">",      "'single'", "\"dbl\"", "%x",     "@x",     "`x`",        "a, b",       "<<",      "=",
    "tab\tin", "multi\nline", "multi\nline\n", "\nleading newline", "two\n\n", "trailing space \nx",
    "  indented\nblock", "back\\slash", "unicode é ü 中", "nel\xC2\x85x", "ls\xE2\x80\xA8x", "\x01\x7f",
    "---", "...", "hdfs://namenode:8020", "8Gi", "500m", "gaia.io/app", "Hello World"};

}  // namespace

TEST_CASE("tricky strings survive emit and YAML::Load as strings", "[yaml]") {
  for (const auto& s : kTricky) {
    INFO("string: " << json(s).dump());
    CHECK(round_trip(json(s)) == json(s));
    CHECK(round_trip(json::array({s, s})) == json::array({s, s}));
    CHECK(round_trip(json{{"k", s}, {"z", 1}}) == json({{"k", s}, {"z", 1}}));
    if (s.find('\n') == std::string::npos) {
      // As a key, too: "on: x" would be a boolean key in YAML 1.1.
      json keyed = {{s, "v"}};
      CHECK(round_trip(keyed) == keyed);
    }
  }
}

TEST_CASE("plain scalars only where every reader agrees", "[yaml]") {
  for (const char* s : {"on", "yes", "1.0", "", "null", "a: b", "#x", " x", "1:20", "0x1F", "1e3", ".inf", "-",
                        "~", "3.3.4", "a:", "Y"})
    CHECK_FALSE(yaml_plain_safe(s));
  for (const char* s : {"hello", "8Gi", "500m", "gaia.io/app", "hdfs://namenode:8020", "apache/hadoop:3.3.4",
                        "Hello World", "a-b_c.d"})
    CHECK(yaml_plain_safe(s));
}

TEST_CASE("emitted YAML has the documented shape", "[yaml]") {
  json v = {{"b", json::array({1, "x", json{{"k", true}}, json::array({2, 3})})},
            {"a", {{"empty_list", json::array()}, {"empty_obj", json::object()}, {"nil", nullptr}}},
            {"text", "l1\nl2"}};
  CHECK(emit_yaml(v) ==
        "a:\n"
        "  empty_list: []\n"
        "  empty_obj: {}\n"
        "  nil: null\n"
        "b:\n"
        "- 1\n"
        "- x\n"
        "- k: true\n"
        "- - 2\n"
        "  - 3\n"
        "text: |-\n"
        "  l1\n"
        "  l2\n");
  CHECK(emit_yaml(json("x")) == "x\n");
  CHECK(emit_yaml(json::object()) == "{}\n");
}

TEST_CASE("numbers, booleans and nesting round-trip", "[yaml]") {
  json v = json::parse(R"({
    "int": 42, "neg": -7, "big": 9007199254740993, "float": 0.75, "whole_float": 1.0, "tiny": 1e-300,
    "huge": 1.5e300, "t": true, "f": false, "nil": null,
    "nested": { "list": [ { "a": [ [], {} ] }, [ [ "deep" ] ] ] }
  })");
  CHECK(round_trip(v) == v);
  CHECK(round_trip(v).dump() == v.dump());
}

TEST_CASE("multi-document output separates documents with ---", "[yaml]") {
  std::vector<json> docs = {json{{"kind", "A"}, {"v", "on"}}, json{{"kind", "B"}, {"list", {1, 2}}}, json{{"c", ""}}};
  std::string text = emit_yaml_documents(docs);
  CHECK(text == "kind: A\nv: \"on\"\n---\nkind: B\nlist:\n- 1\n- 2\n---\nc: \"\"\n");
  auto loaded = YAML::LoadAll(text);
  REQUIRE(loaded.size() == docs.size());
  for (size_t i = 0; i < docs.size(); ++i) CHECK(yaml_to_json(loaded[i]) == docs[i]);
}

TEST_CASE("emission is deterministic and reads back for arbitrary strings", "[yaml]") {
  const std::string alphabet = "aZ09 :#-?&*!|>'\"%@`{}[],.\n\t\\~yYnN+_/=<";
  CHECK(rc::check("any string over YAML's special characters round-trips", [&] {
    auto chars = *rc::gen::container<std::vector<char>>(rc::gen::elementOf(alphabet));
    std::string s(chars.begin(), chars.end());
    json doc = {{"value", s}, {"list", json::array({s})}};
    if (s.find('\n') == std::string::npos) doc["map"] = json{{s, s}};
    RC_ASSERT(round_trip(doc) == doc);
    RC_ASSERT(emit_yaml(doc) == emit_yaml(json::parse(doc.dump())));
  }));
}
