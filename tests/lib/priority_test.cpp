#include "lib/priority.hpp"

#include <catch2/catch.hpp>

using gaia::Band;
using gaia::parse_priority;
using gaia::Priority;

TEST_CASE("parse_priority reads bands, levels and non-preemptible", "[priority]") {
  auto sys = parse_priority("sys").value();
  CHECK(sys.band == Band::Sys);
  CHECK(sys.level == 100);
  CHECK(sys.preemptible);

  auto prod = parse_priority("prod:200").value();
  CHECK(prod.band == Band::Prod);
  CHECK(prod.level == 200);

  auto np = parse_priority("nonprod:10:non-preemptible").value();
  CHECK(np.band == Band::Nonprod);
  CHECK(np.level == 10);
  CHECK_FALSE(np.preemptible);

  CHECK(parse_priority("nonprod:0").value().level == 0);
  CHECK(parse_priority("nonprod:1000").value().level == 1000);
}

TEST_CASE("parse_priority explains what was expected", "[priority]") {
  CHECK_THAT(parse_priority("urgent").error(), Catch::Contains("unknown priority band 'urgent'"));
  CHECK_THAT(parse_priority("").error(), Catch::Contains("expected sys, prod or nonprod"));
  CHECK_THAT(parse_priority("prod:1001").error(), Catch::Contains("bad priority level '1001'"));
  CHECK_THAT(parse_priority("prod:-1").error(), Catch::Contains("from 0 to 1000"));
  CHECK_THAT(parse_priority("prod:1x").error(), Catch::Contains("bad priority level '1x'"));
  CHECK_THAT(parse_priority("prod:").error(), Catch::Contains("bad priority level ''"));
  CHECK_THAT(parse_priority("prod:1:np").error(), Catch::Contains("unknown priority option 'np'"));
  CHECK_THAT(parse_priority("prod:1:non-preemptible").error(), Catch::Contains("only nonprod work"));
  CHECK_THAT(parse_priority("nonprod:1:non-preemptible:x").error(), Catch::Contains("too many ':' parts"));
}

TEST_CASE("priorities order by band, then level", "[priority]") {
  auto p = [](const char* text) { return parse_priority(text).value(); };
  CHECK(p("nonprod:1000") < p("prod:0"));
  CHECK(p("prod:1000") < p("sys:0"));
  CHECK(p("prod:100") < p("prod:101"));
  CHECK(p("prod") == p("prod:100"));
  CHECK_FALSE(p("sys") < p("sys"));
  CHECK(p("nonprod:5:non-preemptible") != p("nonprod:5"));
}

TEST_CASE("to_string round-trips through parse_priority", "[priority]") {
  for (const char* text : {"sys", "prod", "nonprod", "prod:200", "nonprod:0", "nonprod:50:non-preemptible",
                           "nonprod:100:non-preemptible"}) {
    INFO(text);
    auto parsed = parse_priority(text);
    REQUIRE(parsed.has_value());
    CHECK(parsed->to_string() == text);
    CHECK(parse_priority(parsed->to_string()).value() == *parsed);
  }
  CHECK(parse_priority("prod:100").value().to_string() == "prod");
}
