// The faster std.format and std.escapeStringJson of a folded render
// (render/jsonnet_std.hpp): on random inputs, what they take comes out byte for byte as
// libjsonnet's own code gives it, both called directly and through the folded render's
// natives; what they do not take still renders as before.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <functional>
#include <random>

#include "render/evaluator.hpp"
#include "render/jsonnet_std.hpp"
#include "tests/render/render_test_util.hpp"

using namespace gaia;
using namespace gaia::render;
using gaia::test::TempApp;
using nlohmann::json;

namespace {

// Evaluates `main_body` (a Jsonnet expression; main.jsonnet's value when called) folded
// (the faster std) and file by file (libjsonnet's own), and returns both values.
// `natives`: how many calls the faster natives answered in the folded one.
std::pair<json, json> std_both_ways(const std::string& main_body, int* natives = nullptr) {
  TempApp app("{}", "function(config, deps, app)\n" + main_body + "\n");
  EvalInput in;
  in.app_dir = app.dir();
  in.app_name = "demo";
  EvalInput own = in;
  own.fold = false;
  auto folded = evaluate_jsonnet(in);
  auto plain = evaluate_jsonnet(own);
  if (!folded) FAIL(folded.error().front().message);
  if (!plain) FAIL(plain.error().front().message);
  CHECK(folded->folded);
  CHECK_FALSE(plain->folded);
  CHECK(plain->std_natives_taken == 0);
  if (natives) *natives = folded->std_natives_taken;
  return {folded->raw.main, plain->raw.main};
}

// One evaluation of the app, folded unless told otherwise.
Result<EvalOutput> evaluate_app(const TempApp& app, bool fold = true, json overrides = json::object()) {
  EvalInput in;
  in.app_dir = app.dir();
  in.app_name = "demo";
  in.fold = fold;
  in.overrides = std::move(overrides);
  return evaluate_jsonnet(in);
}

json to_json_value(const FormatValue& v) {
  if (std::holds_alternative<std::monostate>(v)) return nullptr;
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

// Text with what format strings and escapes find hard: quotes, backslashes, control
// characters, DEL and a lone '%'.
std::string random_text(std::mt19937& rng, size_t max_len) {
  static const std::string alphabet = "abcXYZ019 .:/-_\"\\\b\f\n\r\t\x01\x1f\x7f'{}";
  std::uniform_int_distribution<size_t> len(0, max_len);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::string s;
  for (size_t n = len(rng); n > 0; --n) s += alphabet[pick(rng)];
  return s;
}

FormatValue random_value(std::mt19937& rng) {
  static const std::vector<double> numbers = {0, 1, -1, 7, 42, -42, 255, 4096, 1e9, -1e9, 123456789012, 0.5, -0.5,
                                              -0.0, 2.5, -2.5, 1.999, 1e14, 1e15, 9007199254740992.0, 1e300};
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0: return std::monostate{};
    case 1: return std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    case 2:
    case 3: return random_text(rng, 6);
    default: return numbers[std::uniform_int_distribution<size_t>(0, numbers.size() - 1)(rng)];
  }
}

// A format string of literal text and codes (flags, width, precision, length modifier,
// type; now and then one it does not take or that is wrong), and values for it (now and
// then one too many or too few).
std::pair<std::string, std::vector<FormatValue>> random_case(std::mt19937& rng) {
  auto chance = [&](int percent) { return std::uniform_int_distribution<int>(0, 99)(rng) < percent; };
  static const std::string types = "diuoxXs%diss";
  static const std::string odd_types = "fegcq*(";
  std::string f;
  int consumed = 0;
  for (int parts = std::uniform_int_distribution<int>(1, 4)(rng); parts > 0; --parts) {
    if (chance(60)) {
      std::string t = random_text(rng, 5);
      std::erase(t, '%');
      f += t;
    }
    f += '%';
    // Mostly small; now and then past what the natives take (the library then pads one
    // stack frame per character), with leading zeros, or more flags than they read.
    auto digits = [&]() {
      std::string d = chance(10) ? std::string(rng() % 4, '0') : std::string();
      return d + std::to_string(chance(85) ? rng() % 12 : chance(70) ? rng() % 80 : rng() % 300);
    };
    for (int k = std::uniform_int_distribution<int>(0, chance(5) ? 8 : 3)(rng); k > 0; --k) f += "#0- +"[rng() % 5];
    if (chance(40)) f += digits();
    if (chance(25)) f += "." + (chance(80) ? digits() : std::string());
    if (chance(10)) f += "hlL"[rng() % 3];
    const char t = chance(95) ? types[rng() % types.size()] : odd_types[rng() % odd_types.size()];
    f += t;
    if (t != '%') ++consumed;
  }
  if (chance(3)) f += '%';  // Truncated.
  int n = consumed;
  if (chance(5)) n += chance(50) ? 1 : -1;
  std::vector<FormatValue> vals;
  for (int i = 0; i < std::max(n, 0); ++i) vals.push_back(random_value(rng));
  return {f, vals};
}

}  // namespace

TEST_CASE("jsonnet std: format takes what it mirrors, the same as libjsonnet's own", "[render][jsonnet-std]") {
  std::mt19937 rng(20261129);
  json cases = json::array();
  std::vector<std::string> expected;
  int taken = 0, total = 0;
  for (; total < 3000; ++total) {
    auto [f, vals] = random_case(rng);
    auto out = jsonnet_format(f, vals);
    if (!out) continue;
    ++taken;
    json v = json::array();
    for (const auto& x : vals) v.push_back(to_json_value(x));
    // A lone value is given bare half the time, as `'%d' % n` does.
    cases.push_back(json::array({f, v.size() == 1 && (taken % 2) ? v[0] : v}));
    expected.push_back(*out);
  }
  INFO(fmt::format("{} of {} random cases taken", taken, total));
  // Many are taken; the rest are mostly numeric codes given text, or values too few.
  CHECK(taken > total / 4);
  int natives = 0;
  auto [folded, own] = std_both_ways(fmt::format("[std.format(c[0], c[1]) for c in {}]", cases.dump()), &natives);
  CHECK(natives == taken);  // Every one went through the natives, none the library's way.
  REQUIRE(own.size() == expected.size());
  REQUIRE(folded.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO(cases[i].dump());
    CHECK(own[i] == expected[i]);
    CHECK(folded[i] == expected[i]);
  }
}

TEST_CASE("jsonnet std: what format does not take is left to libjsonnet's code", "[render][jsonnet-std]") {
  // Declined by the mirror (nothing is returned), and the folded render still gives what
  // libjsonnet gives, through the library's code.
  CHECK_FALSE(jsonnet_format("%f", {1.5}));
  CHECK_FALSE(jsonnet_format("%c", {65.0}));
  CHECK_FALSE(jsonnet_format("%*d", {3.0, 1.0}));
  CHECK_FALSE(jsonnet_format("%(a)s", {}));
  CHECK_FALSE(jsonnet_format("%s", {std::string("caf\xc3\xa9")}));
  CHECK_FALSE(jsonnet_format("%s", {0.1}));
  CHECK_FALSE(jsonnet_format("%d", {std::string("x")}));  // An error: the library says which.
  CHECK_FALSE(jsonnet_format("%d %d", {1.0}));             // Not enough values.
  CHECK_FALSE(jsonnet_format("%d", {1.0, 2.0}));           // Too many.
  CHECK_FALSE(jsonnet_format("%", {}));                    // Truncated.
  CHECK(jsonnet_format("%05.3d|%-4s|%+x|%#o|%%", {7.0, std::string("ab"), 255.0, 8.0}) == "00007|ab  |+ff|010|%");
  // Widths the library pads one stack frame per character: past 64, or written with more
  // digits or flags than the natives read, they are the library's (which may exceed its
  // stack where a native would not).
  CHECK(jsonnet_format("%64d", {1.0}));
  CHECK_FALSE(jsonnet_format("%65d", {1.0}));
  CHECK_FALSE(jsonnet_format("%.300d", {1.0}));
  CHECK(jsonnet_format("%00005d", {1.0}) == "00001");  // Four zero flags, width 5.
  CHECK_FALSE(jsonnet_format("%1.00005d", {1.0}));
  CHECK_FALSE(jsonnet_format("%00000d", {1.0}));
  CHECK_FALSE(jsonnet_format("%99999%", {}));
  int natives = 0;
  auto [folded, own] = std_both_ways(
      "[ '%f|%.2e|%g' % [1.5, 12345.678, 0.0001], '%c%c' % [65, 'b'], '%*d' % [5, 42], '%(a)s-%(b)03d' % { a: 'x', b: 7 },"
      "  '%s' % 'caf\\u00e9', '%s' % [[1, 2]], '%s' % [{ a: 1 }], '%s' % 0.1, '%d' % 1e300,"
      "  '%d %d %d %d %d %d %d' % [1, 2, 3, 4, 5, 6, 7], 'nul %s!' % 'a\\u0000b' ]",
      &natives);
  CHECK(folded == own);
  CHECK(natives == 0);  // All of them ran the library's code.
  CHECK(own[0] == "1.500000|1.23e+04|0.0001");
  CHECK(own[4] == "caf\xc3\xa9");
}

TEST_CASE("jsonnet std: escapeStringJson and the manifests built on it are the same", "[render][jsonnet-std]") {
  std::mt19937 rng(7);
  json strings = json::array();
  for (int i = 0; i < 400; ++i) {
    std::string s = random_text(rng, 12);
    auto out = jsonnet_escape_string_json(s);
    REQUIRE(out);
    CHECK(json::parse(*out) == s);
    strings.push_back(s);
  }
  strings.push_back("caf\xc3\xa9 \xe2\x82\xac");  // Not taken: the library's code.
  auto [folded, own] = std_both_ways(fmt::format(
      "local s = {}; [[std.escapeStringJson(x), std.manifestJsonMinified({{ [x]: [x, 1, null] }}),"
      " std.manifestJson({{ k: x }}), std.manifestYamlDoc({{ k: x }})] for x in s]",
      strings.dump()));
  REQUIRE(own.size() == strings.size());
  CHECK(folded == own);
  for (size_t i = 0; i + 1 < strings.size(); ++i) {
    INFO(strings[i].dump());
    CHECK(own[i][0] == *jsonnet_escape_string_json(strings[i].get<std::string>()));
  }
}

TEST_CASE("jsonnet std: the config becomes plain data before the overrides", "[render][jsonnet-std]") {
  // Fields that refer to others keep the values they had (an override of `a` does not
  // change `b`), hidden fields are dropped, and numbers and text come through whole
  // (through the natives' escapes, folded).
  TempApp app("{ a: 1, b: self.a + 1, h:: 5, n: { x: [0.1, 1e300, -0.0, 'caf\\u00e9'], y: $.a } }",
              "function(config, deps, app) config");
  for (bool fold : {true, false}) {
    auto out = evaluate_app(app, fold, json{{"a", 10}});
    REQUIRE(out);
    CHECK(out->folded == fold);
    const json want = json::parse(R"({"a": 10, "b": 2, "n": {"x": [0.1, 1e300, -0.0, "café"], "y": 1}})");
    CHECK(out->raw.config == want);
    CHECK(out->raw.main == want);
  }
  // Printed and parsed back, as always: a negative zero comes out as 0.
  TempApp zero("{ base: 0, neg: -self.base }", "function(config, deps, app) { s: 'offset=' + config.neg }");
  auto zout = evaluate_app(zero);
  REQUIRE(zout);
  CHECK(zout->folded);
  CHECK(zout->raw.main["s"] == "offset=0");
  // A function in the config is refused with the path to it, as printing it would be.
  TempApp bad("{ a: { f: function(x) x } }", "function(config, deps, app) config");
  auto out = evaluate_app(bad);
  REQUIRE_FALSE(out);
  CHECK_THAT(out.error().front().message, Catch::Contains("Tried to manifest function at [\"a\", \"f\"]"));
  CHECK(out.error().front().location.file == "config.jsonnet");
}

TEST_CASE("jsonnet std: manifestXmlJsonml gives the library's text", "[render][jsonnet-std]") {
  // Random JSONML: tags, attributes of every plain type, text with what XML and JSON
  // find hard, nesting; then elements the faster code hands to the library.
  std::mt19937 rng(11);
  std::function<json(int)> element = [&](int depth) {
    json e = json::array({std::string("t") + std::to_string(rng() % 5)});
    if (rng() % 2) {
      json attrs = json::object();
      for (int k = rng() % 4; k > 0; --k) {
        const std::string name = "a" + std::to_string(rng() % 6);
        switch (rng() % 5) {
          case 0: attrs[name] = random_text(rng, 6); break;
          case 1: attrs[name] = static_cast<int>(rng() % 1000) - 500; break;
          case 2: attrs[name] = 0.25; break;
          case 3: attrs[name] = (rng() % 2) == 1; break;
          default: attrs[name] = nullptr;
        }
      }
      e.push_back(attrs);
    }
    for (int k = rng() % 4; k > 0; --k) e.push_back(depth > 0 && rng() % 2 ? element(depth - 1) : json(random_text(rng, 8)));
    return e;
  };
  json docs = json::array();
  for (int i = 0; i < 60; ++i) docs.push_back(element(3));
  // An element whose tag is an array of strings (deepJoin flattens it), and an empty
  // attribute object: both the library's way; and nesting 20 deep, also the library's.
  docs.push_back(json::parse(R"([["a", "b"], {"x": "1"}, ["c", {}, "text"]])"));
  json deep = "leaf";
  for (int i = 0; i < 20; ++i) deep = json::array({"d", deep});
  docs.push_back(deep);
  docs.push_back(json::parse(R"([["a", "b"], {"x": "1"}, ["c", {}, "text"]])"));
  auto [folded, own] = std_both_ways(fmt::format("[std.manifestXmlJsonml(d) for d in {}]", docs.dump()));
  REQUIRE(own.size() == docs.size());
  CHECK(folded == own);
  CHECK(own.back() == "<ab x=\"1\"><c>text</c></ab>");
}

TEST_CASE("jsonnet std: the JSON and YAML manifests and the type tests give the library's answers",
          "[render][jsonnet-std]") {
  // Random values of every JSON type: text with what JSON and YAML quote (and trailing
  // newlines, which YAML writes as a block), empty and nested arrays and objects, and
  // keys YAML would leave bare or not.
  std::mt19937 rng(5);
  std::function<json(int)> value = [&](int depth) -> json {
    switch (rng() % (depth > 0 ? 9 : 6)) {
      case 0: return nullptr;
      case 1: return (rng() % 2) == 1;
      case 2: return static_cast<int>(rng() % 2000) - 1000;
      case 3: return 0.5 * (static_cast<int>(rng() % 100) - 50);
      case 4: return random_text(rng, 8) + ((rng() % 3) == 0 ? "\n" : "");
      case 5: return std::string();
      case 6: {
        json a = json::array();
        for (int k = rng() % 4; k > 0; --k) a.push_back(value(depth - 1));
        return a;
      }
      default: {
        json o = json::object();
        static const std::vector<std::string> keys = {"a", "b-c", "1", "true", "x y", "0x1f", "2026-11-29", ""};
        for (int k = rng() % 4; k > 0; --k) o[keys[rng() % keys.size()] + (rng() % 2 ? "" : random_text(rng, 3))] = value(depth - 1);
        return o;
      }
    }
  };
  json values = json::array();
  for (int i = 0; i < 150; ++i) values.push_back(value(3));
  auto [folded, own] = std_both_ways(fmt::format(
      "local vs = {}; [[std.manifestJson(v), std.manifestJsonMinified(v), std.manifestJsonEx(v, '  ', '\\n', ' = '),"
      " std.manifestYamlDoc(v), std.manifestYamlDoc(v, true), std.manifestYamlDoc(v, quote_keys=false),"
      " std.manifestYamlStream([v, v]), std.toString(v),"
      " [std.isString(v), std.isNumber(v), std.isBoolean(v), std.isObject(v), std.isArray(v), std.isFunction(v)]]"
      " for v in vs] + [[std.isFunction(std.length), std.toString('x'), std.manifestJson([]), std.manifestJson({{}}),"
      " std.manifestYamlDoc([[]]), std.manifestYamlDoc({{ a: [], b: {{}}, c: [[1]] }}),"
      // The flags are read only where the library reads them.
      " std.manifestYamlDoc([1, [2], 'x\n'], quote_keys=error 'q', indent_array_in_object=error 'i'),"
      " std.manifestYamlDoc({{ a: 1, b: [] }}, indent_array_in_object=error 'i')]]",
      values.dump()));
  REQUIRE(own.size() == values.size() + 1);
  for (size_t i = 0; i < own.size(); ++i) {
    INFO((i < values.size() ? values[i] : json("(fixed cases)")).dump());
    CHECK(folded[i] == own[i]);
  }
  // The manifests agree with what gaia's own JSON reader makes of them.
  for (size_t i = 0; i < values.size(); ++i) CHECK(json::parse(own[i][1].get<std::string>()) == values[i]);
}

TEST_CASE("jsonnet std: slices and flattened arrays are the library's", "[render][jsonnet-std]") {
  // Every bound from absent to past the end, steps 1 to 4, on strings and arrays; the
  // odd ones (fractions, negatives, a zero step, other types) go the library's way and
  // are tried where they do not fail there.
  std::string cases = "[";
  for (const char* subject : {"'abcdefghij'", "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]", "''", "[]", "'x'"})
    for (const char* from : {"", "0", "1", "3", "9", "10", "12"})
      for (const char* to : {"", "0", "2", "5", "10", "15"})
        for (const char* by : {"", ":1", ":2", ":3", ":4"})
          cases += fmt::format("{}[{}:{}{}], std.slice({}, {}, {}, {}),", subject, from, to, by, subject,
                               *from ? from : "null", *to ? to : "null", *by ? by + 1 : "null");
  // A NUL character indexes to '' in libjsonnet 0.18, so the library's slice drops it;
  // a start past any length is empty.
  cases += "'a\\u0000b\\u0000c'[0:4], 'a\\u0000b'[1:], 'abc'[1e19:], [1, 2][1e19:],";
  cases += "std.flattenArrays([[1, 2], [], [[3]], ['a']]), std.flattenArrays([]),"
           "std.flattenArrays([[null], [{ a: 1 }]]), std.slice([1, 2, 3], 0.0, 2.0, 1.0)]";
  auto [folded, own] = std_both_ways(cases);
  REQUIRE(own.size() > 2000);
  CHECK(folded == own);
  CHECK(own[own.size() - 4] == json::parse(R"([1, 2, [3], "a"])"));
  // Refused alike: a fractional bound, a zero step, a null among the arrays.
  for (const char* bad : {"[1, 2, 3][0.5:]", "std.slice([1, 2], 0, 2, 0)", "std.flattenArrays([[1], null])",
                          "std.slice(5, 0, 1, 1)", "std.manifestYamlDoc({ a: [1] }, indent_array_in_object='x')",
                          "std.manifestYamlDoc({ a: 1 }, quote_keys=null)"}) {
    TempApp app("{}", fmt::format("function(config, deps, app) {}\n", bad));
    INFO(bad);
    CHECK_FALSE(evaluate_app(app));
  }
}

TEST_CASE("jsonnet std: sorts, sets and uniq give the library's order", "[render][jsonnet-std]") {
  // Random lists of text (duplicates, quotes, control characters, a NUL, non-ASCII) and
  // of numbers (duplicates, -0 beside 0, fractions), sorted by themselves and by key
  // functions; objects by a field; and lists the library refuses to sort.
  std::mt19937 rng(3);
  json lists = json::array();
  for (int i = 0; i < 60; ++i) {
    json l = json::array();
    const int n = static_cast<int>(rng() % 70);
    for (int k = 0; k < n; ++k) {
      if (i % 2) l.push_back(random_text(rng, 3) + (rng() % 20 == 0 ? "\xc3\xa9" : ""));
      else l.push_back(static_cast<double>(static_cast<int>(rng() % 20) - 10) / ((rng() % 3) + 1));
    }
    lists.push_back(l);
  }
  int natives = 0;
  auto [folded, own] = std_both_ways(fmt::format(
      "local ls = {}; [[std.sort(l), std.set(l), std.uniq(std.sort(l)), std.sort(l, keyF=function(x) std.toString(x)),"
      " std.sort([{{ k: x, i: i }} for i in std.range(0, std.length(l) - 1) for x in [l[i]]], function(o) o.k)]"
      " for l in ls] + [std.sort([0, -0, 1, -0, 0]), std.sort(['b', 'a\\u0000', 'a', '']), std.sort([[2], [1]]),"
      " std.sort([3], keyF=null), std.sort([])]",
      lists.dump()), &natives);
  REQUIRE(own.size() == lists.size() + 5);
  for (size_t i = 0; i < own.size(); ++i) {
    INFO(i << (i < lists.size() ? " " + lists[i].dump() : std::string(" (fixed cases)")));
    CHECK(folded[i] == own[i]);
  }
  CHECK(natives > 100);  // The natives took most sorts.
  // The order the native gives: stable, by code point or by value.
  using Order = std::vector<size_t>;
  CHECK(jsonnet_sort_order(R"(["b", "a", "b", "a", "B"])") == Order{4, 1, 3, 0, 2});
  CHECK(jsonnet_sort_order(R"([2, -0, 0, 1.5, -3])") == Order{4, 1, 2, 3, 0});
  CHECK_FALSE(jsonnet_sort_order(R"([1, "a"])"));
  CHECK_FALSE(jsonnet_sort_order(R"([[1], [0]])"));
  CHECK_FALSE(jsonnet_sort_order("[\"\xed\xa0\x80\"]"));  // A lone surrogate: not UTF-8.
  CHECK(own[lists.size() + 1] == json::parse(R"(["", "a", "a\u0000", "b"])"));
  // Mixed keys are refused alike.
  TempApp mixed("{}", "function(config, deps, app) std.sort([1, 'a'])\n");
  CHECK_FALSE(evaluate_app(mixed));
}
