#include "spec/condition.hpp"

#include <catch2/catch.hpp>

using gaia::spec::Condition;
using gaia::spec::evaluate_condition;
using gaia::spec::parse_condition;
using nlohmann::json;

namespace {

const json kConfig = json::parse(R"({
  "search": { "enabled": false, "shards": 3, "engine": "es" },
  "sharing": { "local_only": true },
  "mode": "hdfs",
  "flag_text": "false"
})");

bool holds(const std::string& text) {
  auto c = parse_condition(text);
  INFO(text);
  REQUIRE(c);
  auto r = evaluate_condition(*c, kConfig);
  REQUIRE(r);
  return *r;
}

}  // namespace

TEST_CASE("conditions: booleans, negation and comparisons on the evaluated config", "[condition]") {
  CHECK_FALSE(holds("search.enabled"));
  CHECK(holds("!search.enabled"));
  CHECK(holds("  ! search.enabled "));
  CHECK(holds("sharing.local_only"));
  CHECK(holds("mode == hdfs"));
  CHECK(holds("mode == 'hdfs'"));
  CHECK(holds("mode==\"hdfs\""));
  CHECK_FALSE(holds("mode != hdfs"));
  CHECK(holds("search.shards == 3"));
  CHECK(holds("search.shards == 3.0"));  // One number.
  CHECK(holds("search.shards != '3'"));  // A string is not a number.
  CHECK(holds("search.enabled == false"));
  CHECK(holds("flag_text == 'false'"));
  CHECK(holds("search.engine != local"));
}

TEST_CASE("conditions: what does not parse says why", "[condition]") {
  auto err = [](const std::string& text) {
    auto c = parse_condition(text);
    INFO(text);
    REQUIRE_FALSE(c);
    return c.error();
  };
  CHECK(err("") == "the condition is empty");
  CHECK(err("!") == "the parameter name is missing");
  CHECK_THAT(err("search..enabled"), Catch::Contains("empty part"));
  CHECK_THAT(err("search enabled"), Catch::Contains("' ' is not allowed"));
  CHECK_THAT(err("mode =="), Catch::Contains("value to compare with is missing"));
  CHECK_THAT(err("mode == 'hdfs"), Catch::Contains("no closing quote"));
  CHECK_THAT(err("mode == two words"), Catch::Contains("not one value"));
  CHECK_THAT(err("n == 1x"), Catch::Contains("not a number"));
  CHECK_THAT(err("3mode"), Catch::Contains("'3' is not allowed"));
}

TEST_CASE("conditions: an unknown parameter or a non-boolean is an error with a hint", "[condition]") {
  std::string hint;
  auto typo = evaluate_condition(*parse_condition("search.enabeld"), kConfig, &hint);
  REQUIRE_FALSE(typo);
  CHECK(typo.error() == "'search.enabeld' is not a parameter of the app's config");
  CHECK_THAT(hint, Catch::StartsWith("did you mean 'search.enabled'?"));
  CHECK_THAT(hint, Catch::Contains("parameters of search: enabled, engine, shards"));

  auto top = evaluate_condition(*parse_condition("serch.enabled"), kConfig, &hint);
  REQUIRE_FALSE(top);
  CHECK_THAT(hint, Catch::Contains("did you mean 'search'?"));

  auto deep = evaluate_condition(*parse_condition("mode.x"), kConfig, &hint);
  REQUIRE_FALSE(deep);
  CHECK_THAT(hint, Catch::Contains("mode is \"hdfs\", not an object"));

  // "false" as a string must not switch anything silently.
  auto text = evaluate_condition(*parse_condition("flag_text"), kConfig, &hint);
  REQUIRE_FALSE(text);
  CHECK(text.error() == "flag_text is \"false\", not true or false");
  CHECK(hint == "compare it: when: \"flag_text == false\"");
  auto number = evaluate_condition(*parse_condition("!search.shards"), kConfig, &hint);
  REQUIRE_FALSE(number);
  CHECK(number.error() == "search.shards is 3, not true or false");

  CHECK(gaia::spec::condition_value_text(*parse_condition("search.enabled"), kConfig) == "search.enabled is false");
}
