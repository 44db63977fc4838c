// Store locations as users write them: file paths, etcd URLs (endpoints, default port,
// IPv6, TLS), the refusals (credentials in the URL never echoed, paths, queries, bad
// ports, duplicates, other schemes), and the options an etcd URL and its settings make
// (password read from its file, TLS files checked).
#include "store/store_url.hpp"

#include <catch2/catch.hpp>

#include "tests/temp_dir.hpp"

using namespace gaia;
using namespace std::chrono_literals;

namespace {

std::string error_of(std::string_view text) {
  auto r = parse_store_location(text);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == StoreErrc::InvalidArgument);
  return r.error().message + " | " + r.error().hint;
}

}  // namespace

TEST_CASE("store_url: a path is a file, an etcd URL is a cluster", "[store][store_url]") {
  for (const char* path : {"gaia.db", "/srv/gaia/staging.db", "./a://b", "etcd:/x", "etcd.db", "C:relative"}) {
    auto loc = parse_store_location(path);
    REQUIRE(loc);
    CHECK(loc->kind == StoreLocation::Kind::File);
    CHECK(loc->file == path);
    CHECK_FALSE(is_etcd_url(path));
  }
  auto one = parse_store_location("etcd://127.0.0.1:2379");
  REQUIRE(one);
  CHECK(one->kind == StoreLocation::Kind::Etcd);
  CHECK(one->etcd.endpoints == std::vector<std::string>{"127.0.0.1:2379"});
  CHECK_FALSE(one->etcd.tls);
  CHECK(one->etcd.canonical() == "etcd://127.0.0.1:2379");

  // Several endpoints keep their order (the failover order); a missing port is etcd's
  // 2379; a trailing slash is harmless; the scheme is case-insensitive.
  auto many = parse_etcd_url("ETCDS://a.example,10.0.0.2:32379,[::1]:2380/");
  REQUIRE(many);
  CHECK(many->tls);
  CHECK(many->endpoints == std::vector<std::string>{"a.example:2379", "10.0.0.2:32379", "[::1]:2380"});
  CHECK(many->canonical() == "etcds://a.example:2379,10.0.0.2:32379,[::1]:2380");
  CHECK(is_etcd_url("Etcd://x"));

  // The identity ignores the order, so both spellings share local state (the run dir).
  auto reordered = parse_etcd_url("etcds://[::1]:2380,a.example:2379,10.0.0.2:32379");
  REQUIRE(reordered);
  CHECK(reordered->identity() == many->identity());
  // Plain or TLS, the same members are the same cluster; other members are not.
  CHECK(parse_etcd_url("etcd://[::1]:2380,a.example:2379,10.0.0.2:32379")->identity() == many->identity());
  CHECK(parse_etcd_url("etcd://[::1]:2380,a.example:2379")->identity() != many->identity());
}

TEST_CASE("store_url: malformed etcd URLs are refused clearly", "[store][store_url]") {
  CHECK_THAT(error_of("etcd://"), Catch::Contains("names no endpoint"));
  CHECK_THAT(error_of("etcd://a:2379,,b:2379"), Catch::Contains("empty endpoint"));
  CHECK_THAT(error_of("etcd://a:0"), Catch::Contains("'0' is not a port"));
  CHECK_THAT(error_of("etcd://a:65536"), Catch::Contains("is not a port"));
  CHECK_THAT(error_of("etcd://a:port"), Catch::Contains("'port' is not a port"));
  CHECK_THAT(error_of("etcd://a:"), Catch::Contains("is not a port"));
  CHECK_THAT(error_of("etcd://::1:2379"), Catch::Contains("IPv6"));
  CHECK_THAT(error_of("etcd://[zz]:2379"), Catch::Contains("IPv6"));
  CHECK_THAT(error_of("etcd://[::1]x"), Catch::Contains("unexpected"));
  CHECK_THAT(error_of("etcd://a b:2379"), Catch::Contains("not a host name"));
  CHECK_THAT(error_of("etcd://a:2379/gaia"), Catch::Contains("has a path"));
  CHECK_THAT(error_of("etcd://a:2379?timeout=1s"), Catch::Contains("query"));
  CHECK_THAT(error_of("etcd://a:2379,a:2379"), Catch::Contains("lists a:2379 twice"));
  CHECK_THAT(error_of("etcd://a,a:2379"), Catch::Contains("twice"));
  CHECK_THAT(error_of(""), Catch::Contains("empty"));
}

TEST_CASE("store_url: credentials in a URL are refused and never repeated", "[store][store_url]") {
  for (const char* url : {"etcd://alice:s3cr3t-pw@127.0.0.1:2379", "etcds://alice:s3cr3t-pw@h:1,h:2",
                          "http://alice:s3cr3t-pw@127.0.0.1:2379", "etcd://s3cr3t-pw@a:1/x?y"}) {
    INFO(url);
    std::string e = error_of(url);
    CHECK(e.find("s3cr3t-pw") == std::string::npos);
    CHECK(e.find("alice") == std::string::npos);
    CHECK(e.find("***@") != std::string::npos);
  }
  CHECK_THAT(error_of("etcd://alice:s3cr3t-pw@127.0.0.1:2379"), Catch::Contains("--etcd-password-file"));
}

TEST_CASE("store_url: other schemes are refused, http:// with the etcd:// form as a hint", "[store][store_url]") {
  std::string e = error_of("http://127.0.0.1:2379");
  CHECK_THAT(e, Catch::Contains("no 'http://' stores"));
  CHECK_THAT(e, Catch::Contains("etcd://127.0.0.1:2379"));
  CHECK_THAT(error_of("https://10.0.0.1:2379"), Catch::Contains("etcds://10.0.0.1:2379"));
  CHECK_THAT(error_of("postgres://db/gaia"), Catch::Contains("file path or an etcd URL"));
}

TEST_CASE("store_url: etcd options from a URL and its settings", "[store][store_url]") {
  gaia::test::TempDir dir{"gaia-store-url"};
  auto url = *parse_etcd_url("etcd://a:1,b:2");

  auto plain = etcd_options(url, {});
  REQUIRE(plain);
  // Bare endpoints: the gateway picks http://, or https:// when a CA is set.
  CHECK(plain->endpoints == std::vector<std::string>{"a:1", "b:2"});
  CHECK(plain->username.empty());
  CHECK(plain->request_timeout == EtcdOptions{}.request_timeout);
  auto tls = etcd_options(*parse_etcd_url("etcds://a:1"), {});
  REQUIRE(tls);
  CHECK(tls->endpoints == std::vector<std::string>{"https://a:1"});

  EtcdSettings s;
  s.username = "gaia";
  s.password_file = dir.write("pw", "s3cr3t-pw\n");
  s.ca_file = dir.write("ca.pem", "not checked here\n");
  s.request_timeout = 700ms;
  auto full = etcd_options(url, s);
  REQUIRE(full);
  CHECK(full->password == "s3cr3t-pw");  // The newline an editor adds is not part of it.
  CHECK(full->username == "gaia");
  CHECK(full->ca_file == s.ca_file);
  CHECK(full->request_timeout == 700ms);
  CHECK(full->connect_timeout == 700ms);
  s.password_file = dir.write("pw-crlf", "s3cr3t-pw\r\n");
  CHECK(etcd_options(url, s)->password == "s3cr3t-pw");

  // Unreadable and empty files are named, their contents never.
  s.password_file = dir.path() / "missing";
  auto missing = etcd_options(url, s);
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("cannot read the etcd password file"));
  s.password_file = dir.write("empty", "\n");
  CHECK_THAT(etcd_options(url, s).error().message, Catch::Contains("is empty"));
  s.password_file = dir.write("pw", "s3cr3t-pw");
  s.ca_file = dir.path() / "no-ca.pem";
  auto no_ca = etcd_options(url, s);
  REQUIRE_FALSE(no_ca);
  CHECK_THAT(no_ca.error().message, Catch::Contains("no-ca.pem (--etcd-ca)"));
  CHECK(no_ca.error().message.find("s3cr3t") == std::string::npos);
}

TEST_CASE("store_url: settings that do not go together", "[store][store_url]") {
  EtcdSettings s;
  CHECK(s.empty());
  CHECK(check_etcd_settings(s));
  s.cert_file = "c.pem";
  CHECK_THAT(check_etcd_settings(s).error().message, Catch::Contains("without its key"));
  s = {};
  s.key_file = "k.pem";
  CHECK_THAT(check_etcd_settings(s).error().message, Catch::Contains("without its certificate"));
  s = {};
  s.username = "gaia";
  CHECK_THAT(check_etcd_settings(s).error().message, Catch::Contains("has no password file"));
  s = {};
  s.password_file = "pw";
  CHECK_THAT(check_etcd_settings(s).error().message, Catch::Contains("without a user"));
  CHECK_FALSE(s.empty());
}
