#include "kube/client.hpp"

// cpp-httplib is a compiled library whose classes change shape with these switches: they
// must match how it was built (its pkg-config file defines them), or the server objects
// here would not be the library's.
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
#define CPPHTTPLIB_OPENSSL_SUPPORT
#endif
#ifndef CPPHTTPLIB_ZLIB_SUPPORT
#define CPPHTTPLIB_ZLIB_SUPPORT
#endif
#ifndef CPPHTTPLIB_BROTLI_SUPPORT
#define CPPHTTPLIB_BROTLI_SUPPORT
#endif
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/temp_dir.hpp"

using namespace gaia;
using namespace std::chrono_literals;
using kube::ApiErrc;
using nlohmann::json;

namespace {

// What a handler saw of one request.
struct Seen {
  std::string method;
  std::string target;  // Path and query, as sent.
  std::string body;
  std::string content_type;
  std::string authorization;
  std::string accept;
};

// A cpp-httplib server (plain or TLS) on 127.0.0.1 and a free port, listening on its own
// thread until the test ends. Records every request; the test installs handlers with on().
class TestServer {
 public:
  TestServer() : TestServer(std::make_unique<httplib::Server>(), "http") {}
  TestServer(std::unique_ptr<httplib::Server> server, std::string scheme)
      : m_server(std::move(server)), m_scheme(std::move(scheme)) {}
  ~TestServer() {
    m_stopping = true;
    m_server->stop();
    if (m_thread.joinable()) m_thread.join();
  }

  // Answers every method and path with `handler`.
  void on(std::function<void(const httplib::Request&, httplib::Response&)> handler) {
    auto record = [this, handler](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard lock(m_mutex);
        std::string target = req.path;
        if (!req.params.empty()) {
          std::string query;
          for (const auto& [name, value] : req.params) query += (query.empty() ? "?" : "&") + name + "=" + value;
          target += query;
        }
        m_seen.push_back(Seen{req.method, target, req.body, req.get_header_value("Content-Type"),
                              req.get_header_value("Authorization"), req.get_header_value("Accept")});
      }
      handler(req, res);
    };
    m_server->Get(".*", record);
    m_server->Post(".*", record);
    m_server->Put(".*", record);
    m_server->Patch(".*", record);
    m_server->Delete(".*", record);
  }

  void start() {
    m_port = m_server->bind_to_any_port("127.0.0.1");
    REQUIRE(m_port > 0);
    m_thread = std::thread([this] { m_server->listen_after_bind(); });
    // stop() only stops a server that is running: wait for it, or a test that ends
    // before its first request would wait on the listening thread for ever.
    while (!m_server->is_running()) std::this_thread::sleep_for(1ms);
  }

  std::string url() const { return fmt::format("{}://127.0.0.1:{}", m_scheme, m_port); }
  std::vector<Seen> seen() {
    std::lock_guard lock(m_mutex);
    return m_seen;
  }
  // Long-running handlers (streams) poll this to end when the test does.
  bool stopping() const { return m_stopping.load(); }

 private:
  std::unique_ptr<httplib::Server> m_server;
  std::string m_scheme;
  int m_port = 0;
  std::thread m_thread;
  std::mutex m_mutex;
  std::vector<Seen> m_seen;
  std::atomic<bool> m_stopping{false};
};

// A port nothing listens on: bound by the kernel's choice, then closed unused.
int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

kube::ClusterConfig config_for(const std::string& url, const std::string& token = "secret-token-42") {
  kube::ClusterConfig config;
  config.server = url;
  config.token = token;
  config.context = "dev";
  config.source = "/home/me/.kube/config";
  return config;
}

kube::RetryPolicy fast_retries(int attempts = 6) {
  kube::RetryPolicy policy;
  policy.attempts = attempts;
  policy.base = 10ms;
  policy.cap = 5000ms;
  policy.timeout = 3000ms;
  return policy;
}

std::string status_body(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

// Records the sleeps between retries instead of sleeping.
struct SleepLog {
  std::mutex mutex;
  std::vector<std::chrono::milliseconds> sleeps;
  void attach(kube::Client& client) {
    client.set_sleep([this](std::chrono::milliseconds d) {
      std::lock_guard lock(mutex);
      sleeps.push_back(d);
    });
  }
};

}  // namespace

TEST_CASE("kube client: methods with their headers and bodies", "[kube][client]") {
  TestServer server;
  server.on([](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/empty") return;  // 200 without a body.
    res.set_content(json{{"kind", "Pod"}, {"method", req.method}}.dump(), "application/json");
  });
  server.start();
  kube::Client client(config_for(server.url()), fast_retries());

  auto pod = client.get("/api/v1/namespaces/a/pods/x");
  REQUIRE(pod);
  CHECK((*pod)["kind"] == "Pod");
  auto empty = client.get("/empty");
  REQUIRE(empty);
  CHECK(empty->is_null());
  REQUIRE(client.create("/api/v1/namespaces/a/pods", json{{"metadata", {{"name", "x"}}}}));
  REQUIRE(client.replace("/api/v1/namespaces/a/pods/x", json{{"spec", json::object()}}));
  REQUIRE(client.merge_patch("/api/v1/namespaces/a/pods/x", json{{"metadata", {{"labels", {{"a", "b"}}}}}}));
  REQUIRE(client.apply("/api/v1/namespaces/a/configmaps/c", json{{"data", {{"k", "v"}}}}, "gaia ctl", false));
  REQUIRE(client.apply("/api/v1/namespaces/a/configmaps/c?dryRun=All", json::object(), "gaia"));
  REQUIRE(client.remove("/api/v1/namespaces/a/pods/x", json{{"gracePeriodSeconds", 0}}));
  REQUIRE(client.remove("/api/v1/namespaces/a/pods/y"));
  REQUIRE(client.request("POST", "/api/v1/namespaces/a/pods/x/binding", nullptr));

  auto seen = server.seen();
  REQUIRE(seen.size() == 10);
  for (const auto& s : seen) {
    CHECK(s.authorization == "Bearer secret-token-42");
    CHECK(s.accept == "application/json");
  }
  CHECK(seen[0].method == "GET");
  CHECK(seen[0].target == "/api/v1/namespaces/a/pods/x");
  CHECK(seen[0].body.empty());
  CHECK(seen[2].method == "POST");
  CHECK(json::parse(seen[2].body) == json{{"metadata", {{"name", "x"}}}});
  CHECK(seen[2].content_type == "application/json");
  CHECK(seen[3].method == "PUT");
  CHECK(seen[4].method == "PATCH");
  CHECK(seen[4].content_type == "application/merge-patch+json");
  CHECK(seen[5].method == "PATCH");
  CHECK(seen[5].content_type == "application/apply-patch+yaml");
  // httplib decodes the query: the field manager's blank arrived intact.
  CHECK(seen[5].target == "/api/v1/namespaces/a/configmaps/c?fieldManager=gaia ctl&force=false");
  CHECK(json::parse(seen[5].body) == json{{"data", {{"k", "v"}}}});
  CHECK(seen[6].target == "/api/v1/namespaces/a/configmaps/c?dryRun=All&fieldManager=gaia&force=true");
  CHECK(seen[7].method == "DELETE");
  CHECK(json::parse(seen[7].body) == json{{"gracePeriodSeconds", 0}});
  CHECK(seen[8].method == "DELETE");
  CHECK(seen[8].body.empty());
  CHECK(seen[9].method == "POST");
  CHECK(seen[9].body.empty());
  CHECK(client.retries() == 0);
}

TEST_CASE("kube client: without a token no Authorization header is sent", "[kube][client]") {
  TestServer server;
  server.on([](const httplib::Request&, httplib::Response& res) { res.set_content("{}", "application/json"); });
  server.start();
  kube::Client client(config_for(server.url(), ""), fast_retries());
  REQUIRE(client.get("/version"));
  CHECK(server.seen().at(0).authorization.empty());
}

TEST_CASE("kube client: statuses are coded and messages name the method and path and the server's message",
          "[kube][client]") {
  TestServer server;
  server.on([](const httplib::Request& req, httplib::Response& res) {
    if (req.path == "/exists") {
      res.status = 409;
      res.set_content(status_body(409, "AlreadyExists", "pods \"x\" already exists"), "application/json");
    } else if (req.path == "/conflict") {
      res.status = 409;
      res.set_content(status_body(409, "Conflict", "the object has been modified"), "application/json");
    } else if (req.path == "/gone") {
      res.status = 410;
      res.set_content(status_body(410, "Expired", "too old resource version"), "application/json");
    } else if (req.path == "/missing") {
      res.status = 404;
      res.set_content("not json at all", "text/plain");
    } else if (req.path == "/invalid") {
      res.status = 422;
      res.set_content(status_body(422, "Invalid", "spec.containers: Required value"), "application/json");
    } else if (req.path == "/forbidden") {
      res.status = 403;
      res.set_content(status_body(403, "Forbidden", "cannot create pods"), "application/json");
    } else if (req.path == "/unauthorized") {
      res.status = 401;
      res.set_content(status_body(401, "Unauthorized", "Unauthorized"), "application/json");
    } else if (req.path == "/notjson") {
      res.set_content("<html>", "text/html");
    }
  });
  server.start();
  kube::Client client(config_for(server.url()), fast_retries());
  SleepLog log;
  log.attach(client);

  auto exists = client.create("/exists", json::object());
  REQUIRE_FALSE(exists);
  CHECK(exists.error().code == ApiErrc::AlreadyExists);
  CHECK(exists.error().status == 409);
  CHECK(exists.error().reason == "AlreadyExists");
  CHECK_FALSE(exists.error().retryable());

  auto conflict = client.replace("/conflict", json{{"password", "body-secret"}});
  REQUIRE_FALSE(conflict);
  CHECK(conflict.error().code == ApiErrc::Conflict);
  CHECK(conflict.error().message == "PUT /conflict: 409 Conflict: the object has been modified");

  auto gone = client.get("/gone");
  REQUIRE_FALSE(gone);
  CHECK(gone.error().code == ApiErrc::Gone);

  auto missing = client.get("/missing");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == ApiErrc::NotFound);
  CHECK(missing.error().message == "GET /missing: 404 Not Found");

  auto invalid = client.merge_patch("/invalid", json::object());
  REQUIRE_FALSE(invalid);
  CHECK(invalid.error().code == ApiErrc::Invalid);
  CHECK_THAT(invalid.error().message, Catch::Contains("Required value"));

  auto forbidden = client.create("/forbidden", json::object());
  REQUIRE_FALSE(forbidden);
  CHECK(forbidden.error().code == ApiErrc::Forbidden);

  auto unauthorized = client.get("/unauthorized");
  REQUIRE_FALSE(unauthorized);
  CHECK(unauthorized.error().code == ApiErrc::Unauthorized);
  CHECK_THAT(unauthorized.error().message,
             Catch::Contains("credentials of context 'dev'") && Catch::Contains("/home/me/.kube/config"));

  auto not_json = client.get("/notjson");
  REQUIRE_FALSE(not_json);
  CHECK(not_json.error().code == ApiErrc::Other);

  // None of these is retried, and no message carries the token or a body sent.
  CHECK(client.retries() == 0);
  CHECK(log.sleeps.empty());
  CHECK(server.seen().size() == 8);
  for (const auto* r : {&exists, &conflict, &gone, &missing, &invalid, &forbidden, &unauthorized, &not_json}) {
    CHECK_THAT(r->error().message, !Catch::Contains("secret-token-42"));
    CHECK_THAT(r->error().message, !Catch::Contains("body-secret"));
  }
}

TEST_CASE("kube client: 429 and 5xx are retried with back-off honouring Retry-After", "[kube][client]") {
  TestServer server;
  std::atomic<int> calls{0};
  std::atomic<int> failures_left{0};
  std::string retry_after = "2";
  int failure_status = 429;
  server.on([&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    if (failures_left.fetch_sub(1) > 0) {
      res.status = failure_status;
      if (!retry_after.empty()) res.set_header("Retry-After", retry_after);
      res.set_content(status_body(failure_status, "TooManyRequests", "slow down"), "application/json");
      return;
    }
    res.set_content(R"({"ok":true})", "application/json");
  });
  server.start();

  SECTION("429 twice with Retry-After: 2, then success") {
    failures_left = 2;
    kube::Client client(config_for(server.url()), fast_retries());
    SleepLog log;
    log.attach(client);
    auto r = client.create("/api/v1/namespaces/a/pods", json::object());
    REQUIRE(r);
    CHECK((*r)["ok"] == true);
    CHECK(calls == 3);
    CHECK(client.retries() == 2);
    REQUIRE(log.sleeps.size() == 2);
    CHECK(log.sleeps[0] == 2000ms);  // The jittered back-off (at most 10 ms) is less.
    CHECK(log.sleeps[1] == 2000ms);
  }
  SECTION("a Retry-After beyond the cap waits the cap") {
    failures_left = 1;
    retry_after = "600";
    auto policy = fast_retries();
    policy.cap = 300ms;
    kube::Client client(config_for(server.url()), policy);
    SleepLog log;
    log.attach(client);
    REQUIRE(client.get("/x"));
    REQUIRE(log.sleeps.size() == 1);
    CHECK(log.sleeps[0] == 300ms);
  }
  SECTION("a 503 storm exhausts the attempts: Unavailable, back-off within its bounds") {
    failures_left = 1000;
    failure_status = 503;
    retry_after = "";
    auto policy = fast_retries(5);
    policy.cap = 50ms;
    kube::Client client(config_for(server.url()), policy);
    SleepLog log;
    log.attach(client);
    auto r = client.replace("/api/v1/namespaces/a/pods/x", json::object());
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Unavailable);
    CHECK(r.error().status == 503);
    CHECK(r.error().retryable());
    CHECK_THAT(r.error().message, Catch::StartsWith("PUT /api/v1/namespaces/a/pods/x: 503 Service Unavailable"));
    CHECK_THAT(r.error().message, Catch::Contains("after 5 attempts"));
    CHECK(calls == 5);
    CHECK(client.retries() == 4);
    REQUIRE(log.sleeps.size() == 4);
    // Full jitter: each at most base * 2^n, capped.
    CHECK(log.sleeps[0] <= 10ms);
    CHECK(log.sleeps[1] <= 20ms);
    CHECK(log.sleeps[2] <= 40ms);
    CHECK(log.sleeps[3] <= 50ms);
  }
  SECTION("429 after every attempt is TooManyRequests") {
    failures_left = 1000;
    retry_after = "";
    kube::Client client(config_for(server.url()), fast_retries(3));
    SleepLog log;
    log.attach(client);
    auto r = client.get("/x");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::TooManyRequests);
    CHECK(calls == 3);
  }
  SECTION("the real sleep is used when none is set") {
    failures_left = 1;
    retry_after = "";
    kube::Client client(config_for(server.url()), fast_retries());
    REQUIRE(client.get("/x"));
    CHECK(client.retries() == 1);
  }
}

TEST_CASE("kube client: requests from several threads at once", "[kube][client]") {
  TestServer server;
  std::atomic<int> calls{0};
  server.on([&](const httplib::Request&, httplib::Response& res) {
    // Every third request is turned away once; the client retries it.
    if (++calls % 3 == 0) {
      res.status = 503;
      return;
    }
    res.set_content(R"({"ok":true})", "application/json");
  });
  server.start();
  kube::Client client(config_for(server.url()), fast_retries(10));
  client.set_sleep([](std::chrono::milliseconds) {});
  std::atomic<int> succeeded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i)
        if (client.get("/x")) ++succeeded;
    });
  for (auto& t : threads) t.join();
  CHECK(succeeded == 40);
  CHECK(client.retries() == calls - 40);
}

TEST_CASE("kube client: connection failures and timeouts", "[kube][client]") {
  SECTION("nothing listening: retried, then Unavailable; nothing secret in the message") {
    int port = free_port();
    kube::Client client(config_for(fmt::format("http://127.0.0.1:{}", port)), fast_retries(3));
    SleepLog log;
    log.attach(client);
    auto r = client.create("/api/v1/namespaces", json{{"token", "body-secret"}});
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Unavailable);
    CHECK(r.error().status == 0);
    CHECK(client.retries() == 2);
    CHECK_THAT(r.error().message, Catch::StartsWith("POST /api/v1/namespaces: "));
    CHECK_THAT(r.error().message, !Catch::Contains("secret"));
  }
  SECTION("no answer in time: a GET is retried, a POST is not") {
    TestServer server;
    server.on([&](const httplib::Request&, httplib::Response& res) {
      for (int i = 0; i < 30 && !server.stopping(); ++i) std::this_thread::sleep_for(10ms);
      res.set_content("{}", "application/json");
    });
    server.start();
    auto policy = fast_retries(2);
    policy.timeout = 100ms;
    kube::Client client(config_for(server.url()), policy);
    SleepLog log;
    log.attach(client);
    auto got = client.get("/slow");
    REQUIRE_FALSE(got);
    CHECK(got.error().code == ApiErrc::Timeout);
    CHECK(client.retries() == 1);
    auto posted = client.create("/slow", json::object());
    REQUIRE_FALSE(posted);
    CHECK(posted.error().code == ApiErrc::Timeout);
    CHECK(client.retries() == 1);
  }
}

TEST_CASE("kube client: a watch streams events until the server or the caller or silence ends it",
          "[kube][client][watch]") {
  TestServer server;
  // Each path is a script: the lines to send, in chunks, then what to do.
  server.on([&](const httplib::Request& req, httplib::Response& res) {
    std::string event_a = json{{"type", "ADDED"}, {"object", {{"metadata", {{"name", "a"}}}}}}.dump() + "\n";
    std::string event_b = json{{"type", "MODIFIED"}, {"object", {{"metadata", {{"name", "b"}}}}}}.dump() + "\n";
    std::string gone =
        json{{"type", "ERROR"}, {"object", json::parse(status_body(410, "Expired", "too old resource version"))}}
            .dump() +
        "\n";
    if (req.path == "/status410") {
      res.status = 410;
      res.set_content(status_body(410, "Gone", "compacted"), "application/json");
      return;
    }
    std::string path = req.path;
    res.set_chunked_content_provider("application/json", [&server, path, event_a, event_b, gone](
                                                              size_t, httplib::DataSink& sink) {
      // The first event split across two writes: lines are joined before parsing.
      sink.write(event_a.data(), 10);
      std::this_thread::sleep_for(20ms);
      sink.write(event_a.data() + 10, event_a.size() - 10);
      sink.write(event_b.data(), event_b.size());
      if (path == "/gone") sink.write(gone.data(), gone.size());
      if (path == "/silent" || path == "/cancel" || path == "/gone") {
        for (int i = 0; i < 300 && !server.stopping(); ++i) std::this_thread::sleep_for(10ms);
        return false;
      }
      sink.done();
      return true;
    });
  });
  server.start();
  kube::Client client(config_for(server.url()), fast_retries());
  std::vector<std::string> names;
  auto collect = [&](const kube::WatchEvent& e) {
    names.push_back(e.type + " " + e.object["metadata"]["name"].get<std::string>());
    return true;
  };

  SECTION("the server ends the stream: success, every event seen") {
    auto r = client.watch("/api/v1/pods?watch=1", collect);
    REQUIRE(r);
    CHECK(names == std::vector<std::string>{"ADDED a", "MODIFIED b"});
    CHECK(server.seen().at(0).authorization == "Bearer secret-token-42");
  }
  SECTION("the caller stops: success") {
    auto r = client.watch("/api/v1/pods?watch=1", [&](const kube::WatchEvent& e) {
      collect(e);
      return false;
    });
    REQUIRE(r);
    CHECK(names == std::vector<std::string>{"ADDED a"});
  }
  SECTION("an ERROR event with code 410 is Gone, after the events before it") {
    auto started = std::chrono::steady_clock::now();
    auto r = client.watch("/gone", collect);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Gone);
    CHECK(r.error().status == 410);
    CHECK_THAT(r.error().message, Catch::Contains("too old resource version"));
    CHECK(names == std::vector<std::string>{"ADDED a", "MODIFIED b"});
    CHECK(std::chrono::steady_clock::now() - started < 2s);
  }
  SECTION("an HTTP 410 is Gone") {
    auto r = client.watch("/status410", collect);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Gone);
  }
  SECTION("silence longer than idle: Timeout") {
    auto started = std::chrono::steady_clock::now();
    auto r = client.watch("/silent", collect, nullptr, 300ms);
    auto elapsed = std::chrono::steady_clock::now() - started;
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Timeout);
    CHECK(names.size() == 2);
    CHECK(elapsed >= 300ms);
    CHECK(elapsed < 2s);
  }
  SECTION("a cancellation from another thread ends it at once") {
    http::Cancellation cancellation;
    std::thread canceller([&] {
      std::this_thread::sleep_for(200ms);
      cancellation.cancel();
    });
    auto started = std::chrono::steady_clock::now();
    auto r = client.watch("/cancel", collect, &cancellation);
    auto elapsed = std::chrono::steady_clock::now() - started;
    canceller.join();
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Cancelled);
    CHECK(elapsed < 1500ms);
    CHECK(names.size() == 2);
  }
  SECTION("nothing listening: Unavailable, not retried") {
    int port = free_port();
    kube::Client dead(config_for(fmt::format("http://127.0.0.1:{}", port)), fast_retries());
    auto r = dead.watch("/api/v1/pods?watch=1", collect);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == ApiErrc::Unavailable);
    CHECK(dead.retries() == 0);
  }
}

namespace {

// A self-signed certificate for 127.0.0.1 (and optionally one for a client), made with
// the openssl command in a scratch folder.
struct Pki {
  test::TempDir dir{"gaia-kube-tls"};
  bool make(const std::string& name, const std::string& cn) {
    std::string command = fmt::format(
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN={1} -addext subjectAltName=IP:127.0.0.1 "
        "-keyout '{0}/{2}.key' -out '{0}/{2}.crt' >/dev/null 2>&1",
        dir.path().string(), cn, name);
    return std::system(command.c_str()) == 0;
  }
  std::string crt(const std::string& name) const { return (dir.path() / (name + ".crt")).string(); }
  std::string key(const std::string& name) const { return (dir.path() / (name + ".key")).string(); }
  std::string read(const std::string& file) const {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
};

}  // namespace

TEST_CASE("kube client: TLS with the kubeconfig's certificate authority and client certificate",
          "[kube][client][tls]") {
  Pki pki;
  REQUIRE(pki.make("server", "127.0.0.1"));
  REQUIRE(pki.make("stranger", "127.0.0.1"));
  REQUIRE(pki.make("client", "gaia"));

  SECTION("server authentication") {
    TestServer server(std::make_unique<httplib::SSLServer>(pki.crt("server").c_str(), pki.key("server").c_str()),
                      "https");
    server.on([](const httplib::Request&, httplib::Response& res) { res.set_content("{\"ok\":1}", "application/json"); });
    server.start();

    auto trusted = config_for(server.url());
    trusted.ca_pem = pki.read(pki.crt("server"));
    kube::Client good(trusted, fast_retries());
    auto r = good.get("/version");
    REQUIRE(r);
    CHECK((*r)["ok"] == 1);

    auto wrong = config_for(server.url());
    wrong.ca_pem = pki.read(pki.crt("stranger"));
    kube::Client bad(wrong, fast_retries());
    auto refused = bad.get("/version");
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == ApiErrc::Tls);
    CHECK_FALSE(refused.error().retryable());
    CHECK(bad.retries() == 0);
    CHECK_THAT(refused.error().message,
               Catch::Contains("not trusted by the certificate-authority of context 'dev'"));
    CHECK_THAT(refused.error().message, !Catch::Contains("secret-token-42"));

    auto insecure = config_for(server.url());
    insecure.insecure_skip_tls_verify = true;
    kube::Client skipping(insecure, fast_retries());
    CHECK(skipping.get("/version"));
  }
  SECTION("client certificates from memory") {
    TestServer server(std::make_unique<httplib::SSLServer>(pki.crt("server").c_str(), pki.key("server").c_str(),
                                                           pki.crt("client").c_str()),
                      "https");
    server.on([](const httplib::Request&, httplib::Response& res) { res.set_content("{}", "application/json"); });
    server.start();

    auto with_cert = config_for(server.url(), "");
    with_cert.ca_pem = pki.read(pki.crt("server"));
    with_cert.client_cert_pem = pki.read(pki.crt("client"));
    with_cert.client_key_pem = pki.read(pki.key("client"));
    kube::Client good(with_cert, fast_retries());
    CHECK(good.get("/version"));

    auto without = with_cert;
    without.client_cert_pem.clear();
    without.client_key_pem.clear();
    kube::Client anonymous(without, fast_retries(1));
    auto refused = anonymous.get("/version");
    REQUIRE_FALSE(refused);
    CHECK((refused.error().code == ApiErrc::Tls || refused.error().code == ApiErrc::Unavailable));
    CHECK_THAT(refused.error().message, !Catch::Contains("PRIVATE KEY"));
  }
}

TEST_CASE("kube client: url_encode keeps the unreserved characters only", "[kube][client]") {
  CHECK(kube::url_encode("app=web,tier in (a,b)") == "app%3Dweb%2Ctier%20in%20%28a%2Cb%29");
  CHECK(kube::url_encode("AZaz09-._~") == "AZaz09-._~");
  CHECK(kube::url_encode("a/b?c&d") == "a%2Fb%3Fc%26d");
  CHECK(kube::url_encode("\xc3\xa9") == "%C3%A9");
  CHECK(kube::url_encode("") == "");
}

TEST_CASE("kube client: error code names", "[kube][client]") {
  CHECK(kube::api_errc_name(ApiErrc::Gone) == "gone");
  CHECK(kube::api_errc_name(ApiErrc::TooManyRequests) == "too many requests");
}
