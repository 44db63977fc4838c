#include "store/etcd_store.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "store/etcd_gateway.hpp"

#include "net/http.hpp"
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
// operator would with etcdctl; once auth is enabled, with a token of `as_root`'s password.
std::string admin(const std::string& endpoint, const std::string& path, const std::string& body,
                  const std::string& as_root = "") {
  http::Client client;
  http::Request request;
  request.url = endpoint + path;
  request.body = body;
  if (!as_root.empty()) {
    std::string token = nlohmann::json::parse(admin(
        endpoint, "/v3/auth/authenticate", fmt::format(R"({{"name":"root","password":"{}"}})", as_root)))["token"];
    request.headers.emplace_back("Authorization", token);
  }
  auto r = client.post(request);
  if (!r) FAIL(path << ": " << r.error().message << " " << r.error().body);
  return r->body;
}

// Reads `watch` until `count` events came or `within` passed, failing on an error.
std::vector<Event> collect(Watch& watch, size_t count, std::chrono::milliseconds within = 10s) {
  std::vector<Event> all;
  auto deadline = std::chrono::steady_clock::now() + within;
  while (all.size() < count && std::chrono::steady_clock::now() < deadline) {
    auto batch = watch.next(200ms);
    if (!batch) FAIL(batch.error().to_string());
    all.insert(all.end(), batch->begin(), batch->end());
  }
  return all;
}

// Waits for the watch to fail, for at most `within`; the error, or nothing if it did not.
std::optional<StoreError> failure_of(Watch& watch, std::chrono::milliseconds within) {
  auto deadline = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < deadline) {
    auto batch = watch.next(100ms);
    if (!batch) return batch.error();
  }
  return std::nullopt;
}

std::vector<std::pair<EventType, std::string>> shape(const std::vector<Event>& events) {
  std::vector<std::pair<EventType, std::string>> out;
  for (const auto& e : events) out.emplace_back(e.type, e.kv.key);
  return out;
}

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
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
    CHECK(r.error().code == StoreErrc::TooLarge);
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
    CHECK(r.error().code == StoreErrc::TooLarge);
    CHECK_THAT(r.error().message, Catch::Contains("129 compares"));
  }

  SECTION("more bytes than --max-request-bytes allows") {
    auto r = store->txn(puts(1, std::string(2 << 20, 'x')));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::TooLarge);
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
    CHECK(ops.error().code == StoreErrc::TooLarge);
    CHECK_THAT(ops.error().message, Catch::Contains(server.endpoint()));
    CHECK_THAT(ops.error().hint, Catch::Contains("--max-txn-ops"));
    // etcd refuses requests over --max-request-bytes, and its gRPC layer refuses even
    // larger ones (over the limit plus 512 KiB) before etcd sees them.
    for (size_t size : {size_t{1700000}, size_t{3} << 20}) {
      auto bytes = loose->txn(puts(1, std::string(size, 'x')));
      REQUIRE_FALSE(bytes);
      CHECK(bytes.error().code == StoreErrc::TooLarge);
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

TEST_CASE("etcd store reports a dead member as unavailable, naming it", "[store][etcd]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  must(store->put("k", "v"));
  server.kill();

  StoreResult<std::optional<KeyValue>> read;
  auto elapsed = timed([&] { read = store->get("k"); });
  REQUIRE_FALSE(read);
  CHECK(read.error().code == StoreErrc::Unavailable);
  CHECK_THAT(read.error().message, Catch::Contains("cannot reach etcd"));
  CHECK_THAT(read.error().message, Catch::Contains(server.endpoint()));
  CHECK_THAT(read.error().hint, Catch::Contains("check that etcd runs"));
  // A few quick retries with back-off, not a wait for a timeout.
  CHECK(elapsed < 2000ms);

  auto write = store->put("k", "w");
  REQUIRE_FALSE(write);
  CHECK(write.error().code == StoreErrc::Unavailable);
  CHECK_THAT(write.error().message, Catch::Contains(server.endpoint()));

  auto reopened = EtcdStore::open(options_for(server));
  REQUIRE_FALSE(reopened);
  CHECK(reopened.error().code == StoreErrc::Unavailable);
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
  CHECK(r.error().code == StoreErrc::Unavailable);
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
    // A watch sends the token too, and gets a new one when its own has expired.
    std::this_thread::sleep_for(2500ms);
    auto watch = must(store->watch("k", 1));
    auto events = collect(*watch, 2);
    REQUIRE(events.size() == 2);
    CHECK(events.back().kv.value == "w");
    // An open watch outlives its token, and connecting again after a restart, with the
    // token long expired, fetches a new one.
    std::this_thread::sleep_for(2500ms);
    server.restart();
    must(store->put("k", "x"));
    auto resumed = collect(*watch, 1);
    REQUIRE(resumed.size() == 1);
    CHECK(resumed[0].kv.value == "x");
  }

  SECTION("a user without permission on a key is refused, reading and watching") {
    admin(server.endpoint(), "/v3/auth/role/add", R"({"name":"apps-only"})", "s3cret-pw");
    // Keys "apps/" up to "apps0" (base64), read and write.
    admin(server.endpoint(), "/v3/auth/role/grant",
          R"({"name":"apps-only","perm":{"permType":"READWRITE","key":"YXBwcy8=","range_end":"YXBwczA="}})",
          "s3cret-pw");
    admin(server.endpoint(), "/v3/auth/user/add", R"({"name":"app","password":"app-pw"})", "s3cret-pw");
    admin(server.endpoint(), "/v3/auth/user/grant", R"({"user":"app","role":"apps-only"})", "s3cret-pw");
    EtcdOptions limited = options;
    limited.username = "app";
    limited.password = "app-pw";
    auto store = open_or_fail(limited);
    must(store->put("apps/a", "1"));
    auto denied = store->get("nodes/n1");
    REQUIRE_FALSE(denied);
    CHECK(denied.error().code == StoreErrc::Unauthenticated);
    CHECK_THAT(denied.error().message, Catch::Contains("user 'app' may not"));
    CHECK_THAT(denied.error().to_string(), !Catch::Contains("app-pw"));
    auto watch = must(store->watch("nodes/", 1));
    auto refused = watch->next(5s);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == StoreErrc::Unauthenticated);
    auto allowed = must(store->watch("apps/", 1));
    CHECK(must(allowed->next(5s)).size() == 1);
  }

  SECTION("a wrong password fails at open, without the password in the message") {
    EtcdOptions wrong = options;
    wrong.password = "not-the-pw";
    auto r = EtcdStore::open(wrong);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Unauthenticated);
    CHECK_THAT(r.error().message, Catch::Contains("credentials of user 'root' were rejected"));
    CHECK_THAT(r.error().to_string(), !Catch::Contains("not-the-pw"));
  }

  SECTION("no credentials: the cluster's demand for them is explained") {
    auto r = EtcdStore::open(options_for(server));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == StoreErrc::Unauthenticated);
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
  // A watch connects the same way.
  CHECK(must(must(store->watch("", 1))->next(5s)).size() == 1);

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

TEST_CASE("etcd store reads ranges at a revision with limits, counts and keys only", "[store][etcd]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  must(store->put("a", "1"));                  // 2
  must(store->put("b", "2"));                  // 3
  int64_t three = must(store->put("c", "3"));  // 4
  must(store->put("a", "4"));                  // 5
  int64_t now = must(store->del("b"));         // 6

  auto past = must(store->read(RangeRequest::prefix("", three)));
  CHECK(past.revision == three);
  CHECK(gaia::testing::keys_of(past.kvs) == std::vector<std::string>{"a", "b", "c"});
  CHECK(past.kvs[0].value == "1");
  CHECK(past.count == 3);
  CHECK_FALSE(past.more);

  auto current = must(store->read(RangeRequest::prefix("")));
  CHECK(current.revision == now);
  CHECK(gaia::testing::keys_of(current.kvs) == std::vector<std::string>{"a", "c"});
  CHECK(current.kvs[0].value == "4");
  CHECK(current.kvs[0].mod_revision == 5);
  CHECK(current.kvs[0].version == 2);

  auto limited = must(store->read(RangeRequest::prefix("", three, 2)));
  CHECK(gaia::testing::keys_of(limited.kvs) == std::vector<std::string>{"a", "b"});
  CHECK(limited.more);
  CHECK(limited.count == 3);

  RangeRequest count = RangeRequest::prefix("", three);
  count.count_only = true;
  auto counted = must(store->read(count));
  CHECK(counted.kvs.empty());
  CHECK(counted.count == 3);

  RangeRequest keys = RangeRequest::prefix("");
  keys.keys_only = true;
  auto keyed = must(store->read(keys));
  REQUIRE(keyed.kvs.size() == 2);
  CHECK(keyed.kvs[0].key == "a");
  CHECK(keyed.kvs[0].value.empty());
  CHECK(keyed.kvs[0].mod_revision == 5);

  // Single keys, an interval with an exclusive end, "\0" as "to the end", the empty key.
  RangeRequest one;
  one.key = "a";
  one.revision = 2;
  auto first = must(store->read(one));
  REQUIRE(first.kvs.size() == 1);
  CHECK(first.kvs[0].value == "1");
  CHECK(gaia::testing::keys_of(must(store->read(RangeRequest::interval("a", "c", three))).kvs) ==
        std::vector<std::string>{"a", "b"});
  CHECK(must(store->read(RangeRequest::interval("b", std::string(1, '\0')))).kvs.size() == 1);
  CHECK(must(store->read(RangeRequest{})).kvs.empty());

  RangeRequest future = RangeRequest::prefix("", now + 1);
  auto ahead = store->read(future);
  REQUIRE_FALSE(ahead);
  CHECK(ahead.error().code == StoreErrc::FutureRevision);

  // After compact(R), R is still readable and R - 1 is not, as in every backend, though
  // etcd itself would still serve R - 1.
  must(store->compact(5));
  CHECK(must(store->read(RangeRequest::prefix("", 5))).kvs.size() == 3);
  auto gone = store->read(RangeRequest::prefix("", 4));
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == StoreErrc::Compacted);
  CHECK(gone.error().compact_revision == 5);
  CHECK_THAT(gone.error().message, Catch::Contains("revision 4 has been compacted"));
}

TEST_CASE("etcd watch delivers puts and deletes in order, whole revisions", "[store][etcd][watch]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  must(store->put("k/a", "1"));                       // 2
  int64_t from = must(store->put("other", "x"));      // 3
  must(store->put("k/b", "2"));                       // 4
  must(store->del("k/a"));                            // 5

  // Changes made before the watch existed come first.
  auto watch = must(store->watch("k/", from));
  CHECK(watch->revision() == from - 1);
  auto before = collect(*watch, 2);
  CHECK(shape(before) == decltype(shape(before)){{EventType::Put, "k/b"}, {EventType::Delete, "k/a"}});
  CHECK(before[0].kv.value == "2");
  CHECK(before[1].revision() == 5);
  CHECK(watch->revision() == 5);

  must(store->put("k/c", "3"));  // 6
  Txn t;
  t.deletes.push_back(Delete{"k/b", false});
  t.puts.push_back(Put{"k/d", "4", 0});
  t.puts.push_back(Put{"k/e", "5", 0});
  must(store->txn(t));  // 7
  must(store->put("elsewhere", "y"));  // 8
  auto after = collect(*watch, 4);
  CHECK(shape(after) == decltype(shape(after)){{EventType::Put, "k/c"},
                                               {EventType::Delete, "k/b"},
                                               {EventType::Put, "k/d"},
                                               {EventType::Put, "k/e"}});
  CHECK(after[3].revision() == 7);
  CHECK(watch->revision() == 7);
  // Nothing more, and nothing twice.
  CHECK(must(watch->next(300ms)).empty());

  // A watch from the future waits for it; one below revision 1 is refused.
  auto later = must(store->watch("k/", 9));
  CHECK(must(later->next(200ms)).empty());
  must(store->put("k/f", "6"));  // 9
  CHECK(collect(*later, 1).at(0).kv.key == "k/f");
  CHECK(store->watch("k/", 0).error().code == StoreErrc::InvalidArgument);

  // Catching up over etcd's batches of 1000 revisions keeps every event, in order.
  for (int i = 0; i < 1100; ++i) must(store->put("bulk", std::to_string(i)));
  auto bulk = must(store->watch("bulk", 1));
  auto all = collect(*bulk, 1100, 20s);
  REQUIRE(all.size() == 1100);
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i].kv.value == std::to_string(i));
}

TEST_CASE("etcd watch from a compacted revision fails with Compacted", "[store][etcd][watch]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  must(store->put("a", "1"));  // 2
  must(store->put("b", "2"));  // 3
  must(store->del("a"));       // 4
  must(store->put("c", "3"));  // 5
  must(store->compact(4));

  auto kept = must(store->watch("", 4));
  auto events = collect(*kept, 2);
  CHECK(shape(events) == decltype(shape(events)){{EventType::Delete, "a"}, {EventType::Put, "c"}});

  auto gone = must(store->watch("", 3));
  auto failed = failure_of(*gone, 5s);
  REQUIRE(failed);
  CHECK(failed->code == StoreErrc::Compacted);
  CHECK(failed->compact_revision == 4);
  // A failed watch stays failed.
  auto again = gone->next(10ms);
  REQUIRE_FALSE(again);
  CHECK(again.error().code == StoreErrc::Compacted);
}

TEST_CASE("etcd watch survives a restart of the member, losing and repeating nothing",
          "[store][etcd][watch]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  must(store->put("w/a", "1"));  // 2
  auto watch = must(store->watch("w/", 2));
  CHECK(collect(*watch, 1).size() == 1);
  must(store->put("w/b", "2"));  // 3, maybe queued, maybe not yet, when the member dies

  server.restart();
  must(store->put("w/c", "3"));  // 4
  must(store->del("w/a"));       // 5
  auto events = collect(*watch, 3);
  CHECK(shape(events) == decltype(shape(events)){{EventType::Put, "w/b"},
                                                 {EventType::Put, "w/c"},
                                                 {EventType::Delete, "w/a"}});
  // Twice, to be sure the second connection is followed as the first was.
  server.restart();
  must(store->put("w/d", "4"));  // 6
  auto more = collect(*watch, 1);
  REQUIRE(more.size() == 1);
  CHECK(more[0].revision() == 6);
  CHECK(must(watch->next(300ms)).empty());
  CHECK(watch->revision() == 6);
}

TEST_CASE("etcd watch moves to a member that answers", "[store][etcd][watch]") {
  EtcdServer server;
  EtcdOptions options = options_for(server);
  options.endpoints = {dead_endpoint(), server.endpoint()};
  auto store = open_or_fail(options);
  must(store->put("k", "v"));
  auto watch = must(store->watch("", 1));
  CHECK(collect(*watch, 1).size() == 1);
}

TEST_CASE("etcd watch fails only when no member has served it for the request timeout",
          "[store][etcd][watch]") {
  EtcdServer server;
  EtcdOptions options = options_for(server);
  options.request_timeout = 1000ms;
  auto store = open_or_fail(options);
  int64_t now = must(store->put("k", "v"));

  SECTION("every member dead: Unavailable") {
    auto watch = must(store->watch("", now + 1));
    CHECK(must(watch->next(200ms)).empty());
    server.kill();
    std::optional<StoreError> failed;
    auto elapsed = timed([&] { failed = failure_of(*watch, 10s); });
    REQUIRE(failed);
    CHECK(failed->code == StoreErrc::Unavailable);
    CHECK_THAT(failed->message, Catch::Contains(server.endpoint()));
    CHECK(elapsed >= 900ms);
    CHECK(elapsed < 3000ms);
  }

  SECTION("a quiet watch on a healthy member keeps its stream, across a compaction") {
    options.watch_idle = 300ms;
    auto quiet = open_or_fail(options);
    auto watch = must(quiet->watch("q/", now + 1));
    CHECK(must(watch->next(1000ms)).empty());
    for (int i = 0; i < 5; ++i) must(quiet->put("other", std::to_string(i)));
    // Connecting again from revision now + 1 would now be refused as compacted.
    must(quiet->compact(must(quiet->revision())));
    CHECK(must(watch->next(1000ms)).empty());
    must(quiet->put("q/x", "1"));
    CHECK(collect(*watch, 1).size() == 1);
  }

  SECTION("a frozen member: Timeout, once the watch noticed its silence") {
    options.watch_idle = 1000ms;
    options.request_timeout = 500ms;
    auto frozen = open_or_fail(options);
    auto watch = must(frozen->watch("", now + 1));
    CHECK(must(watch->next(200ms)).empty());
    server.pause();
    auto failed = failure_of(*watch, 10s);
    server.resume();
    REQUIRE(failed);
    CHECK(failed->code == StoreErrc::Timeout);
    CHECK_THAT(failed->message, Catch::Contains(server.endpoint()));
  }
}

TEST_CASE("etcd watch ends its thread at once when destroyed", "[store][etcd][watch]") {
  EtcdServer server;
  auto store = open_or_fail(options_for(server));
  size_t threads = thread_count();

  // Waiting on a silent stream.
  auto watch = must(store->watch("", must(store->revision()) + 1));
  CHECK(must(watch->next(100ms)).empty());
  CHECK(timed([&] { watch.reset(); }) < 200ms);
  CHECK(thread_count() == threads);

  // Waiting for a frozen member to create the watch.
  server.pause();
  watch = must(store->watch("", 1));
  std::this_thread::sleep_for(100ms);
  CHECK(timed([&] { watch.reset(); }) < 200ms);
  server.resume();

  // Waiting between attempts to reach a dead member.
  server.kill();
  watch = must(store->watch("", 1));
  std::this_thread::sleep_for(300ms);
  CHECK(timed([&] { watch.reset(); }) < 200ms);
  CHECK(thread_count() == threads);

  // A watch may outlive its store.
  EtcdServer other;
  auto second = open_or_fail(options_for(other));
  must(second->put("k", "v"));
  watch = must(second->watch("", 1));
  second.reset();
  CHECK(collect(*watch, 1).size() == 1);
}

TEST_CASE("etcd errors keep their kind", "[store][etcd]") {
  EtcdOptions options;
  options.endpoints = {"http://127.0.0.1:2379"};
  auto gateway = must(EtcdGateway::create(options));
  auto code = [&](const char* message) { return gateway->explain(message, "http://m:2379", "/v3/kv/range").code; };
  CHECK(code("etcdserver: no leader") == StoreErrc::Unavailable);
  CHECK(code("etcdserver: leader changed") == StoreErrc::Unavailable);
  CHECK(code("etcdserver: request timed out") == StoreErrc::Timeout);
  CHECK(code("etcdserver: permission denied") == StoreErrc::Unauthenticated);
  CHECK(code("etcdserver: user name is empty") == StoreErrc::Unauthenticated);
  CHECK(code("etcdserver: authentication failed, invalid user ID or password") == StoreErrc::Unauthenticated);
  CHECK(code("etcdserver: invalid auth token") == StoreErrc::Unauthenticated);
  CHECK(code("etcdserver: too many operations in txn request") == StoreErrc::TooLarge);
  CHECK(code("etcdserver: request is too large") == StoreErrc::TooLarge);
  CHECK(code("mvcc: required revision has been compacted") == StoreErrc::Compacted);
  CHECK(code("mvcc: required revision is a future revision") == StoreErrc::FutureRevision);
  CHECK(code("etcdserver: requested lease not found") == StoreErrc::Io);  // Needs gRPC's NotFound.
  CHECK(gateway->explain("etcdserver: no leader", "http://m:2379", "/v3/kv/range").message ==
        "etcd at http://m:2379: etcdserver: no leader");
}
