#include "lib/quantity.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <limits>
#include <string>

using gaia::format_bytes;
using gaia::format_bytes_short;
using gaia::format_cpu;
using gaia::parse_bytes;
using gaia::parse_count;
using gaia::parse_cpu;

namespace {

struct Good {
  const char* text;
  int64_t value;
};
struct Bad {
  const char* text;
  const char* fragment;  // Must appear in the error.
};

}  // namespace

TEST_CASE("parse_cpu reads cores and millicores", "[quantity]") {
  const Good cases[] = {
      {"2", 2000},          {"0.5", 500},     {"500m", 500},    {"1e3", 1000000}, {"0", 0},
      {"0.001", 1},         {"1.5e3m", 1500}, {"2.000", 2000},  {".25", 250},     {" 3 ", 3000},
      {"1E3", 1000000},     {"5e-3", 5},      {"250e-3", 250},   {"0m", 0},
      {"9223372036854775807m", std::numeric_limits<int64_t>::max()},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_cpu(c.text);
    if (!parsed) INFO(parsed.error());
    REQUIRE(parsed.has_value());
    CHECK(*parsed == c.value);
  }
}

TEST_CASE("parse_cpu rejects bad input with a clear reason", "[quantity]") {
  const Bad cases[] = {
      {"0.0001", "\"0.0001\" is not a whole number of millicores"},
      {"1.5m", "not a whole number of millicores"},
      {"250e-3m", "not a whole number of millicores"},
      {"-1", "\"-1\" is negative"},
      {"1e30", "\"1e30\" is too large"},
      {"9223372036854775808m", "too large"},
      {"", "empty cpu quantity"},
      {"   ", "empty cpu quantity"},
      {"abc", "\"abc\" is not a cpu quantity: expected cores (e.g. 2, 0.5, 1e3) or millicores"},
      {"5Gi", "\"Gi\" is a memory suffix, not a cpu one"},
      {"2k", "\"k\" is a memory suffix"},
      {"2 cores", "\"2 cores\" is not a cpu quantity"},
      {"1..5", "not a cpu quantity"},
      {".", "not a cpu quantity"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_cpu(c.text);
    REQUIRE_FALSE(parsed.has_value());
    CHECK_THAT(parsed.error(), Catch::Contains(c.fragment));
  }
}

TEST_CASE("parse_bytes reads binary and decimal suffixes", "[quantity]") {
  const Good cases[] = {
      {"8Gi", 8LL << 30},
      {"512M", 512000000},
      {"1e9", 1000000000},
      {"1.5Gi", 1610612736},
      {"100", 100},
      {"1Ki", 1024},
      {"1k", 1000},
      {"1K", 1000},
      {"0", 0},
      {"0Gi", 0},
      {"1Mi", 1 << 20},
      {"2Ti", 2LL << 40},
      {"3Pi", 3LL << 50},
      {"7Ei", 7LL << 60},
      {"1T", 1000000000000LL},
      {"1P", 1000000000000000LL},
      {"9E", 9000000000000000000LL},
      {"1E", 1000000000000000000LL},
      {"0.5", 1},             // Fractions of a byte round up, as in Kubernetes.
      {"1.0001k", 1001},      // 1000.1 bytes rounds up.
      {"1e-9", 1},
      {"2.5e3", 2500},
      {"9223372036854775807", std::numeric_limits<int64_t>::max()},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_bytes(c.text);
    if (!parsed) INFO(parsed.error());
    REQUIRE(parsed.has_value());
    CHECK(*parsed == c.value);
  }
}

TEST_CASE("parse_bytes rejects bad input with a clear reason and hint", "[quantity]") {
  const Bad cases[] = {
      {"-5Mi", "\"-5Mi\" is negative"},
      {"9Ei", "\"9Ei\" is too large"},
      {"8Ei", "too large"},
      {"10E", "too large"},
      {"9223372036854775808", "too large"},
      {"1e400", "too large"},
      {"8GB", "\"8GB\" is not a quantity: expected a number with an optional suffix Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, "
              "T, P, E (e.g. 512Mi, 8Gi, 1e9); did you mean 8G or 8Gi?"},
      {"8gb", "did you mean 8G or 8Gi?"},
      {"8g", "did you mean 8G or 8Gi?"},
      {"100kb", "did you mean 100k or 100Ki?"},
      {"4KiB", "did you mean 4Ki?"},
      {"4gi", "did you mean 4Gi?"},
      {"100m", "did you mean 100Mi or 100M?"},
      {"", "empty byte quantity"},
      {"lots", "\"lots\" is not a quantity"},
      {"8 Gi", "\"8 Gi\" is not a quantity"},
      {"1Zi", "\"1Zi\" is not a quantity"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto parsed = parse_bytes(c.text);
    REQUIRE_FALSE(parsed.has_value());
    CHECK_THAT(parsed.error(), Catch::Contains(c.fragment));
  }
  // The hint is only offered when there is something plausible to suggest.
  CHECK_THAT(parse_bytes("1Zi").error(), !Catch::Contains("did you mean"));
  CHECK_THAT(parse_bytes(std::string(200, '1')).error(), Catch::Contains("longer than 128 characters"));
}

TEST_CASE("parse_count accepts whole non-negative numbers only", "[quantity]") {
  CHECK(parse_count("0").value() == 0);
  CHECK(parse_count("2").value() == 2);
  CHECK(parse_count("1e2").value() == 100);
  CHECK(parse_count("2.0").value() == 2);
  CHECK_THAT(parse_count("1.5").error(), Catch::Contains("\"1.5\" is not a whole number"));
  CHECK_THAT(parse_count("-1").error(), Catch::Contains("negative"));
  CHECK_THAT(parse_count("2Gi").error(), Catch::Contains("\"2Gi\" is not a count"));
  CHECK_THAT(parse_count("").error(), Catch::Contains("empty count"));
  CHECK_THAT(parse_count("1e19").error(), Catch::Contains("too large"));
}

TEST_CASE("format_cpu and format_bytes give canonical spellings", "[quantity]") {
  CHECK(format_cpu(0) == "0");
  CHECK(format_cpu(500) == "500m");
  CHECK(format_cpu(2000) == "2");
  CHECK(format_cpu(2500) == "2500m");
  CHECK(format_bytes(0) == "0");
  CHECK(format_bytes(100) == "100");
  CHECK(format_bytes(1024) == "1Ki");
  CHECK(format_bytes(8LL << 30) == "8Gi");
  CHECK(format_bytes(1536LL << 20) == "1536Mi");
  CHECK(format_bytes(1000000000) == "1000000000");
  CHECK(format_bytes(7LL << 60) == "7Ei");
  CHECK(format_bytes_short(512) == "512");
  CHECK(format_bytes_short(1536LL << 20) == "1.5Gi");
  CHECK(format_bytes_short(8LL << 30) == "8Gi");
  CHECK(format_bytes_short((1LL << 30) - 1) == "1Gi");
  CHECK(format_bytes_short(2355) == "2.3Ki");
}

TEST_CASE("property: parsing a formatted quantity gives it back", "[quantity]") {
  CHECK(rc::check("cpu", [](int64_t raw) {
    int64_t millis = raw == std::numeric_limits<int64_t>::min() ? 0 : (raw < 0 ? -raw : raw);
    auto back = parse_cpu(format_cpu(millis));
    RC_ASSERT(back.has_value());
    RC_ASSERT(*back == millis);
  }));
  CHECK(rc::check("bytes", [](int64_t raw, uint8_t shift) {
    // Shifting left makes exact binary multiples (and so suffixes) common.
    int64_t bytes = raw == std::numeric_limits<int64_t>::min() ? 0 : (raw < 0 ? -raw : raw);
    int s = shift % 64;
    if (s > 0 && bytes <= (std::numeric_limits<int64_t>::max() >> s)) bytes <<= s;
    auto back = parse_bytes(format_bytes(bytes));
    RC_ASSERT(back.has_value());
    RC_ASSERT(*back == bytes);
  }));
}
