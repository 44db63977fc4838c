#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include "lib/selector.hpp"

using namespace gaia;

namespace {

std::vector<LabelRequirement> parse_ok(const std::string& text) {
  auto r = parse_selector(text);
  INFO(text << (r ? "" : " -> " + r.error().message));
  REQUIRE(r.has_value());
  return *r;
}

SelectorError parse_bad(const std::string& text) {
  auto r = parse_selector(text);
  INFO(text);
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

}  // namespace

TEST_CASE("selector: every kubectl form parses", "[selector]") {
  auto s = parse_ok("app=hdfs, tier != batch,gpu-model,!spot, zone in (z1, z2),rack notin (r3),x==y");
  REQUIRE(s.size() == 7);
  CHECK(s[0] == LabelRequirement{"app", "In", {"hdfs"}});
  CHECK(s[1] == LabelRequirement{"tier", "NotIn", {"batch"}});
  CHECK(s[2] == LabelRequirement{"gpu-model", "Exists", {}});
  CHECK(s[3] == LabelRequirement{"spot", "DoesNotExist", {}});
  CHECK(s[4] == LabelRequirement{"zone", "In", {"z1", "z2"}});
  CHECK(s[5] == LabelRequirement{"rack", "NotIn", {"r3"}});
  CHECK(s[6] == LabelRequirement{"x", "In", {"y"}});
  CHECK(parse_ok("gaia.io/app=web")[0].key == "gaia.io/app");
  CHECK(parse_ok("").empty());
  CHECK(parse_ok("   ").empty());
  CHECK(parse_ok("k=")[0].values == std::vector<std::string>{""});
  // A key named like the operator is still a key.
  CHECK(parse_ok("in")[0] == LabelRequirement{"in", "Exists", {}});
  CHECK(parse_ok("index=1")[0].key == "index");
}

TEST_CASE("selector: errors give the column and a hint", "[selector]") {
  auto e = parse_bad("app=hdfs,");
  CHECK(e.column == 10);
  CHECK(e.message.find("after ','") != std::string::npos);
  e = parse_bad("app=hdfs role=x");
  CHECK(e.column == 10);
  CHECK_FALSE(e.hint.empty());
  e = parse_bad("zone in (z1,z2");
  CHECK(e.message.find("')'") != std::string::npos);
  e = parse_bad("zone in z1");
  CHECK(e.message.find("'('") != std::string::npos);
  e = parse_bad("-bad=1");
  CHECK(e.column == 1);
  e = parse_bad("k=v@");
  CHECK(e.message.find("'@'") != std::string::npos);
  e = parse_bad("a/b/c=1");
  CHECK(e.message.find("one '/'") != std::string::npos);
  e = parse_bad("k<5");
  CHECK(e.column == 2);
}

TEST_CASE("selector: matching follows Kubernetes semantics", "[selector]") {
  std::map<std::string, std::string> labels = {{"app", "hdfs"}, {"zone", "z1"}};
  CHECK(selector_matches(parse_ok("app=hdfs"), labels));
  CHECK_FALSE(selector_matches(parse_ok("app=web"), labels));
  CHECK(selector_matches(parse_ok("tier!=batch"), labels));  // Absent key matches !=.
  CHECK_FALSE(selector_matches(parse_ok("app!=hdfs"), labels));
  CHECK(selector_matches(parse_ok("zone in (z2,z1)"), labels));
  CHECK_FALSE(selector_matches(parse_ok("zone notin (z1)"), labels));
  CHECK(selector_matches(parse_ok("zone,!gpu"), labels));
  CHECK_FALSE(selector_matches(parse_ok("gpu"), labels));
  CHECK_FALSE(selector_matches(parse_ok("app=hdfs,zone=z2"), labels));
  CHECK(selector_matches({}, labels));
}

TEST_CASE("selector: format_selector round-trips", "[selector]") {
  rc::check("parse(format(s)) == s", [] {
    const std::vector<std::string> keys = {"app", "gaia.io/role", "zone", "disk", "a-b_c.d"};
    const std::vector<std::string> values = {"x", "hdfs", "z1", "a.b", "A-1"};
    const std::vector<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist"};
    auto n = *rc::gen::inRange(0, 5);
    std::vector<LabelRequirement> sel;
    for (int i = 0; i < n; ++i) {
      LabelRequirement r;
      r.key = *rc::gen::elementOf(keys);
      r.op = *rc::gen::elementOf(ops);
      if (r.op == "In" || r.op == "NotIn") {
        auto m = *rc::gen::inRange(1, 4);
        for (int k = 0; k < m; ++k) r.values.push_back(*rc::gen::elementOf(values));
      }
      sel.push_back(r);
    }
    auto back = parse_selector(format_selector(sel));
    RC_ASSERT(back.has_value());
    RC_ASSERT(*back == sel);
  });
}

TEST_CASE("selector: label key and value rules", "[selector]") {
  CHECK(label_key_problem("disk").empty());
  CHECK(label_key_problem("gaia.io/app").empty());
  CHECK_FALSE(label_key_problem("").empty());
  CHECK_FALSE(label_key_problem("Gaia.IO/app").empty());
  CHECK_FALSE(label_key_problem(std::string(64, 'a')).empty());
  CHECK(label_value_problem("").empty());
  CHECK_FALSE(label_value_problem("a b").empty());
  CHECK_FALSE(label_value_problem("-x").empty());
}
