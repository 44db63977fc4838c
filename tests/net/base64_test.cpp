#include "net/base64.hpp"

#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include "lib/store.hpp"

using namespace gaia;

TEST_CASE("base64 matches RFC 4648's test vectors", "[store][base64]") {
  // RFC 4648 section 10.
  const std::pair<const char*, const char*> vectors[] = {
      {"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},         {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, encoded] : vectors) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == std::optional<std::string>(plain));
  }
  // Bytes outside ASCII, and the two characters beyond letters and digits.
  CHECK(base64_encode(std::string("\0", 1)) == "AA==");
  CHECK(base64_encode("\xff\xfe\xfd") == "//79");
  CHECK(base64_encode("\xfb\xef\xbe") == "++++");
  CHECK(base64_decode("//79") == std::optional<std::string>("\xff\xfe\xfd"));
}

TEST_CASE("base64 decoding rejects what is not canonical base64", "[store][base64]") {
  for (const char* bad : {"Zg=", "Zg", "Z", "Zm9v!", "Zm9v YmFy", "Zg==Zg==", "=Zg=", "Z===",
                          "Zh==", "Zm9=", "Zm=v", "Zm9\n"})
    CHECK_FALSE(base64_decode(bad).has_value());
}

TEST_CASE("property: base64 decoding inverts encoding for any bytes", "[store][base64]") {
  bool ok = rc::check("decode(encode(x)) == x", [](const std::string& bytes) {
    std::string encoded = base64_encode(bytes);
    RC_ASSERT(encoded.size() == (bytes.size() + 2) / 3 * 4);
    RC_ASSERT(base64_decode(encoded) == std::optional<std::string>(bytes));
  });
  REQUIRE(ok);
}

TEST_CASE("prefix range ends increment the last byte below 0xff", "[store][base64]") {
  CHECK(prefix_range_end("apps/") == "apps0");
  CHECK(prefix_range_end("a") == "b");
  CHECK(prefix_range_end("a\xff") == "b");
  CHECK(prefix_range_end("a\xfe\xff\xff") == "a\xff");
  // No key sorts after every key starting with these: "\0" means "to the end" to etcd.
  CHECK(prefix_range_end("") == std::string(1, '\0'));
  CHECK(prefix_range_end("\xff\xff") == std::string(1, '\0'));
  // The range a prefix request covers: everything starting with it, nothing else.
  auto apps = RangeRequest::prefix("apps/");
  CHECK(apps.contains("apps/"));
  CHECK(apps.contains("apps/x\xff"));
  CHECK_FALSE(apps.contains("apps0"));
  CHECK_FALSE(apps.contains("app"));
  CHECK(RangeRequest::prefix("").contains(std::string(1, '\0')));
}
