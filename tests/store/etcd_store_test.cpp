#include "store/etcd_store.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "store/http.hpp"
#include "tests/store/etcd_server.hpp"
#include "tests/store/store_contract.hpp"

using namespace gaia;
using gaia::testing::EtcdServer;
using gaia::testing::must;
using namespace std::chrono_literals;

namespace {

EtcdOptions options_for(const EtcdServer& server) {
  EtcdOptions options;
  options.endpoints = {server.endpoint()};
  options.request_timeout = 5000ms;
  return options;
}

std::unique_ptr<EtcdStore> open_or_fail(EtcdOptions options) {
  auto store = EtcdStore::open(std::move(options));
  if (!store) FAIL(store.error().to_string());
  return std::move(*store);
}

// Each contract section gets its own etcd: a member starts in about a tenth of a second,
// and only a fresh one has revision 1, no history, no compaction and no leases left by
// an earlier section (an expiring lease would move the revision under the next one).
class EtcdBackend final : public gaia::testing::StoreBackend {
 public:
  std::unique_ptr<Store> open(std::shared_ptr<const Clock>) override {
    return open_or_fail(options_for(m_server));
  }
  int64_t initial_revision() const override { return 1; }
  bool leases_use_server_clock() const override { return true; }

 private:
  EtcdServer m_server;
};

}  // namespace

TEST_CASE("etcd store satisfies the Store contract", "[store][etcd]") {
  gaia::testing::run_store_contract([] { return std::make_unique<EtcdBackend>(); });
}

namespace {

// A port with nothing listening on it.
std::string dead_endpoint() {
  return fmt::format("http://127.0.0.1:{}", gaia::testing::free_port_pair().first);
}

Txn puts(int count, const std::string& value = "v") {
  Txn t;
  for (int i = 0; i < count; ++i) t.puts.push_back(Put{fmt::format("bulk/{:04}", i), value, 0});
  return t;
}

template <class F>
std::chrono::milliseconds timed(F&& body) {
  auto started = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started);
}

// POSTs to the gateway directly, for setting a server up (users, auth) the way an
// operator would with etcdctl.
void admin(const std::string& endpoint, const std::string& path, const std::string& body) {
  http::Client client;
  http::Request request;
  request.url = endpoint + path;
  request.body = body;
  auto r = client.post(request);
  if (!r) FAIL(path << ": " << r.error().message << " " << r.error().body);
}

}  // namespace

TEST_CASE("etcd store refuses transactions beyond etcd's limits instead of splitting them",
          "[store][etcd]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  int64_t before = must(store->revision());

  SECTION("more operations than --max-txn-ops allows") {
    auto r = store->txn(puts(129));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::InvalidArgument);
    CHECK(r.error().message ==
          "transaction has 129 operations (puts and deletes); etcd allows at most 128 in one "
          "transaction");
    CHECK_THAT(r.error().hint, Catch::Contains("does not split"));
    CHECK(must(store->revision()) == before);
    // Exactly at the limit is fine, and atomic.
    auto ok = must(store->txn(puts(128)));
    CHECK(ok.succeeded);
    CHECK(ok.revision == before + 1);
    CHECK(must(store->range("bulk/")).size() == 128);
  }

  SECTION("more compares than --max-txn-ops allows") {
    Txn t;
    for (int i = 0; i < 129; ++i) t.compares.push_back(Compare{fmt::format("c/{}", i), 0});
    auto r = store->txn(t);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::InvalidArgument);
    CHECK_THAT(r.error().message, Catch::Contains("129 compares"));
  }

  SECTION("more bytes than --max-request-bytes allows") {
    auto r = store->txn(puts(1, std::string(2 << 20, 'x')));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::InvalidArgument);
    CHECK_THAT(r.error().message, Catch::Contains("etcd accepts at most 1572864"));
    CHECK(must(store->revision()) == before);
  }

  SECTION("the server's own refusal maps the same way when the client's limits are raised") {
    EtcdOptions options = options_for(server);
    options.max_txn_ops = 1000;
    options.max_request_bytes = 8 << 20;
    auto loose = open_or_fail(options);
    auto ops = loose->txn(puts(129));
    REQUIRE_FALSE(ops);
    CHECK(ops.error().code == StoreErrc::InvalidArgument);
    CHECK_THAT(ops.error().message, Catch::Contains(server.endpoint()));
    CHECK_THAT(ops.error().hint, Catch::Contains("--max-txn-ops"));
    // etcd refuses requests over --max-request-bytes, and its gRPC layer refuses even
    // larger ones (over the limit plus 512 KiB) before etcd sees them.
    for (size_t size : {size_t{1700000}, size_t{3} << 20}) {
      auto bytes = loose->txn(puts(1, std::string(size, 'x')));
      REQUIRE_FALSE(bytes);
      CHECK(bytes.error().code == StoreErrc::InvalidArgument);
      CHECK_THAT(bytes.error().hint, Catch::Contains("--max-request-bytes"));
    }
    CHECK(must(store->revision()) == before);
  }
}

TEST_CASE("etcd store changes_since reads past etcd's watch batches of 1000 revisions",
          "[store][etcd]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  for (int i = 0; i < 1100; ++i) must(store->put(i % 2 ? "odd" : "even", std::to_string(i)));
  auto all = must(store->changes_since(1, ""));
  REQUIRE(all.size() == 1100);
  CHECK(all.back().revision() == 1101);
  CHECK(all.back().kv.value == "1099");
  auto odd = must(store->changes_since(1, "odd"));
  CHECK(odd.size() == 550);
  auto limited = must(store->changes_since(1050, "", 10));
  REQUIRE(limited.size() == 10);
  CHECK(limited.front().revision() == 1050);
}

TEST_CASE("etcd store reports a paused member as a timeout naming it", "[store][etcd]") {
  EtcdServer server;
  EtcdOptions options = options_for(server);
  options.request_timeout = 500ms;
  auto store = open_or_fail(options);
  must(store->put("k", "v"));
  server.pause();

  StoreResult<std::optional<KeyValue>> read;
  auto elapsed = timed([&] { read = store->get("k"); });
  REQUIRE_FALSE(read);
  CHECK(read.error().code == StoreErrc::Timeout);
  CHECK_THAT(read.error().message, Catch::Contains(server.endpoint()));
  CHECK_THAT(read.error().message, Catch::Contains("within 500 ms"));
  // A timeout is not retried: the member is up but stuck, and the caller waits once.
  CHECK(elapsed < 1500ms);

  StoreResult<int64_t> write;
  elapsed = timed([&] { write = store->put("k", "w"); });
  REQUIRE_FALSE(write);
  CHECK(write.error().code == StoreErrc::Timeout);
  CHECK_THAT(write.error().hint, Catch::Contains("may or may not have been applied"));
  CHECK(elapsed < 1500ms);

  server.resume();
  // The write reached the member before it froze, and a resumed member applies it:
  // exactly the ambiguity the Timeout code tells callers about.
  CHECK(must(store->get("k")).has_value());
}

TEST_CASE("etcd store reports a dead member as an I/O error naming it", "[store][etcd]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  must(store->put("k", "v"));
  server.kill();

  StoreResult<std::optional<KeyValue>> read;
  auto elapsed = timed([&] { read = store->get("k"); });
  REQUIRE_FALSE(read);
  CHECK(read.error().code == StoreErrc::Io);
  CHECK_THAT(read.error().message, Catch::Contains("cannot reach etcd"));
  CHECK_THAT(read.error().message, Catch::Contains(server.endpoint()));
  CHECK_THAT(read.error().hint, Catch::Contains("check that etcd runs"));
  // A few quick retries with back-off, not a wait for a timeout.
  CHECK(elapsed < 2000ms);

  auto write = store->put("k", "w");
  REQUIRE_FALSE(write);
  CHECK(write.error().code == StoreErrc::Io);
  CHECK_THAT(write.error().message, Catch::Contains(server.endpoint()));

  auto reopened = EtcdStore::open(options_for(server));
  REQUIRE_FALSE(reopened);
  CHECK(reopened.error().code == StoreErrc::Io);
}

TEST_CASE("etcd store moves to the next endpoint when one cannot be reached", "[store][etcd]") {
  EtcdServer server;
  std::string dead = dead_endpoint();
  EtcdOptions options = options_for(server);
  options.endpoints = {dead, server.endpoint()};
  auto store = open_or_fail(options);
  must(store->put("k", "v"));
  CHECK(must(store->get("k"))->value == "v");
  CHECK(must(store->changes_since(1, "")).size() == 1);

  server.kill();
  auto r = store->get("k");
  REQUIRE_FALSE(r);
  CHECK(r.error().code == StoreErrc::Io);
  // Every member tried is named, with why it failed.
  CHECK_THAT(r.error().message, Catch::Contains(dead));
  CHECK_THAT(r.error().message, Catch::Contains(server.endpoint()));
}

TEST_CASE("etcd store checks its options before any I/O", "[store][etcd]") {
  EtcdOptions none;
  auto r = EtcdStore::open(none);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == StoreErrc::InvalidArgument);
  CHECK(r.error().message == "no etcd endpoint given");

  EtcdOptions ftp;
  ftp.endpoints = {"ftp://127.0.0.1:2379"};
  CHECK(EtcdStore::open(ftp).error().code == StoreErrc::InvalidArgument);

  EtcdOptions with_password;
  with_password.endpoints = {"http://root:hunter2@127.0.0.1:2379"};
  auto credentials = EtcdStore::open(with_password);
  REQUIRE_FALSE(credentials);
  CHECK(credentials.error().code == StoreErrc::InvalidArgument);
  CHECK_THAT(credentials.error().message, !Catch::Contains("hunter2"));

  // A bare host:port is a plain HTTP endpoint.
  EtcdServer server;
  EtcdOptions bare;
  bare.endpoints = {server.endpoint().substr(std::string("http://").size()) + "/"};
  auto store = open_or_fail(bare);
  CHECK(must(store->revision()) == 1);
}

TEST_CASE("etcd store authenticates, refreshes expired tokens, and never shows the password",
          "[store][etcd]") {
  // Tokens live one second without use, so the test can watch one expire.
  EtcdServer::Options server_options;
  server_options.extra_args = {"--auth-token-ttl", "1"};
  EtcdServer server(server_options);
  admin(server.endpoint(), "/v3/auth/user/add", R"({"name":"root","password":"s3cret-pw"})");
  admin(server.endpoint(), "/v3/auth/user/grant", R"({"user":"root","role":"root"})");
  admin(server.endpoint(), "/v3/auth/enable", "{}");

  EtcdOptions options = options_for(server);
  options.username = "root";
  options.password = "s3cret-pw";
  SECTION("requests carry a token, and an expired one is replaced") {
    auto store = open_or_fail(options);
    must(store->put("k", "v"));
    CHECK(must(store->get("k"))->value == "v");
    // Let the token expire (etcd drops unused tokens within a second of their TTL); the
    // next requests fetch a new one: a watch first, whose refusal comes inside the
    // stream, then a plain request.
    std::this_thread::sleep_for(2500ms);
    CHECK(must(store->changes_since(1, "")).size() == 1);
    std::this_thread::sleep_for(2500ms);
    CHECK(must(store->put("k", "w")) > 0);
    CHECK(must(store->get("k"))->value == "w");
  }

  SECTION("a wrong password fails at open, without the password in the message") {
    EtcdOptions wrong = options;
    wrong.password = "not-the-pw";
    auto r = EtcdStore::open(wrong);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Io);
    CHECK_THAT(r.error().message, Catch::Contains("credentials of user 'root' were rejected"));
    CHECK_THAT(r.error().to_string(), !Catch::Contains("not-the-pw"));
  }

  SECTION("no credentials: the cluster's demand for them is explained") {
    auto r = EtcdStore::open(options_for(server));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Io);
    CHECK_THAT(r.error().message, Catch::Contains("requires authentication"));
    CHECK_THAT(r.error().hint, Catch::Contains("username and password"));
  }
}


TEST_CASE("etcd store speaks TLS with a CA file and a client certificate", "[store][etcd]") {
  gaia::test::TempDir certs("gaia-etcd-certs");
  gaia::testing::make_test_certificates(certs.path());
  auto file = [&](const char* name) { return certs.path() / name; };
  EtcdServer::Options server_options;
  server_options.cert_file = file("server.pem");
  server_options.key_file = file("server.key");
  server_options.client_tls = {file("ca.pem"), file("client.pem"), file("client.key"), false};
  server_options.extra_args = {"--client-cert-auth", "--trusted-ca-file", file("ca.pem").string()};
  EtcdServer server(server_options);
  REQUIRE(server.endpoint().starts_with("https://"));

  EtcdOptions options = options_for(server);
  options.ca_file = file("ca.pem");
  options.cert_file = file("client.pem");
  options.key_file = file("client.key");
  auto store = open_or_fail(options);
  must(store->put("k", "v"));
  CHECK(must(store->get("k"))->value == "v");
  CHECK(must(store->changes_since(1, "")).size() == 1);

  SECTION("a server certificate not signed by the given CA is refused") {
    EtcdOptions untrusting = options;
    untrusting.ca_file = file("client.pem");  // Not a CA at all.
    auto r = EtcdStore::open(untrusting);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Io);
    CHECK_THAT(r.error().message, Catch::Contains("TLS"));
    CHECK_THAT(r.error().hint, Catch::Contains("CA file"));
  }

  SECTION("without a client certificate the server refuses the client") {
    EtcdOptions anonymous = options;
    anonymous.cert_file.clear();
    anonymous.key_file.clear();
    auto r = EtcdStore::open(anonymous);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Io);
  }

  SECTION("insecure mode skips the server check, and only when asked") {
    EtcdOptions insecure = options;
    insecure.ca_file.clear();
    CHECK_FALSE(EtcdStore::open(insecure));
    insecure.insecure_skip_tls_verify = true;
    auto r = open_or_fail(insecure);
    CHECK(must(r->get("k"))->value == "v");
  }
}
