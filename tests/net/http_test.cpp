#include "net/http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/store/etcd_server.hpp"

using namespace gaia;
using gaia::testing::EtcdServer;
using namespace std::chrono_literals;

namespace {

http::Request range_request(const std::string& endpoint) {
  http::Request request;
  request.url = endpoint + "/v3/kv/range";
  request.body = R"({"key":"AA==","count_only":true})";
  request.timeout = 2000ms;
  return request;
}

// A port with nothing listening on it.
std::string dead_endpoint() {
  return fmt::format("http://127.0.0.1:{}", gaia::testing::free_port_pair().first);
}

}  // namespace

TEST_CASE("http client posts and classifies failures", "[store][http]") {
  EtcdServer server;
  http::Client client;

  SECTION("a 2xx answer comes back whole") {
    auto r = client.post(range_request(server.endpoint()));
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK_THAT(r->body, Catch::Contains("\"revision\":\"1\""));
  }

  SECTION("another status is an error carrying the server's explanation") {
    auto request = range_request(server.endpoint());
    request.body = "{";
    auto r = client.post(request);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == http::HttpErrc::Status);
    CHECK(r.error().status == 400);
    CHECK_THAT(r.error().body, Catch::Contains("unexpected EOF"));
  }

  SECTION("nothing listening: cannot connect, and surely not sent; no header in the message") {
    auto request = range_request(dead_endpoint());
    request.headers.emplace_back("Authorization", "secret-token");
    auto r = client.post(request);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == http::HttpErrc::CannotConnect);
    CHECK_FALSE(r.error().maybe_sent);
    CHECK_THAT(r.error().message, Catch::Contains(request.url));
    CHECK_THAT(r.error().message, !Catch::Contains("secret-token"));
  }

  SECTION("a server that does not answer: timeout within the request's bound") {
    server.pause();
    auto request = range_request(server.endpoint());
    request.timeout = 300ms;
    auto started = std::chrono::steady_clock::now();
    auto r = client.post(request);
    auto elapsed = std::chrono::steady_clock::now() - started;
    server.resume();
    REQUIRE_FALSE(r);
    CHECK(r.error().code == http::HttpErrc::Timeout);
    CHECK(r.error().maybe_sent);
    CHECK(elapsed < 1500ms);
    CHECK_THAT(r.error().message, Catch::Contains("within 300 ms"));
  }

  SECTION("TLS to a plain HTTP port fails the handshake, before anything is sent") {
    std::string url = server.endpoint();
    url.replace(0, 4, "https");
    auto r = client.post(range_request(url));
    REQUIRE_FALSE(r);
    CHECK(r.error().code == http::HttpErrc::Tls);
    CHECK_FALSE(r.error().maybe_sent);
  }

  SECTION("a streamed answer is handed over as it arrives and can be cut short") {
    // A watch never ends by itself: only the reader stopping ends the exchange.
    http::Request request;
    request.url = server.endpoint() + "/v3/watch";
    request.body = R"({"create_request":{"key":"AA==","range_end":"AA=="}})";
    request.timeout = 5000ms;
    std::string seen;
    request.on_data = [&](std::string_view chunk) {
      seen.append(chunk);
      return seen.find('\n') == std::string::npos;
    };
    auto started = std::chrono::steady_clock::now();
    auto r = client.post(request);
    REQUIRE(r);
    CHECK(r->stopped);
    CHECK(r->body.empty());
    CHECK_THAT(seen, Catch::Contains("\"created\":true"));
    CHECK(std::chrono::steady_clock::now() - started < 2000ms);
  }

  SECTION("a cancellation ends a silent stream at once, from another thread, and stays") {
    http::Request request;
    request.url = server.endpoint() + "/v3/watch";
    request.body = R"({"create_request":{"key":"AA==","range_end":"AA=="}})";
    request.timeout = 0ms;  // Unbounded: only the cancellation ends it.
    request.on_data = [](std::string_view) { return true; };
    http::Cancellation cancellation;
    request.cancellation = &cancellation;
    std::thread canceller([&] {
      std::this_thread::sleep_for(300ms);
      cancellation.cancel();
    });
    auto started = std::chrono::steady_clock::now();
    auto r = client.post(request);
    auto elapsed = std::chrono::steady_clock::now() - started;
    canceller.join();
    REQUIRE_FALSE(r);
    CHECK(r.error().code == http::HttpErrc::Cancelled);
    CHECK(elapsed >= 250ms);
    CHECK(elapsed < 1000ms);
    started = std::chrono::steady_clock::now();
    auto again = client.post(request);
    REQUIRE_FALSE(again);
    CHECK(again.error().code == http::HttpErrc::Cancelled);
    CHECK(std::chrono::steady_clock::now() - started < 100ms);
    // The client itself is fine afterwards.
    CHECK(client.post(range_request(server.endpoint())));
  }

  SECTION("on_tick is called while a stream is silent and can end it") {
    http::Request request;
    request.url = server.endpoint() + "/v3/watch";
    request.body = R"({"create_request":{"key":"AA==","range_end":"AA=="}})";
    request.timeout = 0ms;
    request.on_data = [](std::string_view) { return true; };
    request.tick_interval = 20ms;
    auto started = std::chrono::steady_clock::now();
    int ticks = 0;
    request.on_tick = [&] {
      ++ticks;
      return std::chrono::steady_clock::now() - started < 300ms;
    };
    auto r = client.post(request);
    auto elapsed = std::chrono::steady_clock::now() - started;
    REQUIRE(r);
    CHECK(r->stopped);
    CHECK(ticks >= 5);
    CHECK(elapsed >= 300ms);
    CHECK(elapsed < 1000ms);
  }
}

namespace {

// A bare HTTP/1.1 server on 127.0.0.1 that records each request as it came over the
// wire (request line, headers, body) and answers every one with the same canned answer,
// then closes the connection. Raw sockets rather than a library, so the test sees
// exactly what the client sent: a GET must carry no body and no Content-Type.
class RecordingServer {
 public:
  explicit RecordingServer(std::string answer) : m_answer(std::move(answer)) {
    m_listener = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(m_listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(m_listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(m_listener, 8) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    socklen_t len = sizeof addr;
    ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&addr), &len);
    m_port = ntohs(addr.sin_port);
    m_thread = std::thread([this] { serve(); });
  }
  ~RecordingServer() {
    ::shutdown(m_listener, SHUT_RDWR);
    ::close(m_listener);
    m_thread.join();
  }

  std::string url(const std::string& path) const { return fmt::format("http://127.0.0.1:{}{}", m_port, path); }
  std::vector<std::string> requests() {
    std::lock_guard lock(m_mutex);
    return m_requests;
  }

 private:
  void serve() {
    for (;;) {
      int fd = ::accept(m_listener, nullptr, nullptr);
      if (fd < 0) return;
      std::string seen;
      char buffer[4096];
      // The head, then as many body bytes as Content-Length announces.
      size_t wanted = std::string::npos;
      while (wanted == std::string::npos || seen.size() < wanted) {
        ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0) break;
        seen.append(buffer, static_cast<size_t>(n));
        size_t end = seen.find("\r\n\r\n");
        if (wanted == std::string::npos && end != std::string::npos) {
          size_t length = 0;
          std::string lower = seen.substr(0, end);
          for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          if (size_t at = lower.find("content-length:"); at != std::string::npos)
            length = std::stoul(lower.substr(at + 15));
          wanted = end + 4 + length;
        }
      }
      {
        std::lock_guard lock(m_mutex);
        m_requests.push_back(seen);
      }
      ::send(fd, m_answer.data(), m_answer.size(), MSG_NOSIGNAL);
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
    }
  }

  std::string m_answer;
  int m_listener = -1;
  int m_port = 0;
  std::thread m_thread;
  std::mutex m_mutex;
  std::vector<std::string> m_requests;
};

std::string answer(std::string_view status_line, std::string_view extra_headers, std::string_view body) {
  return fmt::format("HTTP/1.1 {}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}", status_line, body.size(),
                     extra_headers, body);
}

}  // namespace

TEST_CASE("http client sends each method and reads the answer's headers", "[http]") {
  RecordingServer server(answer("200 OK", "X-Custom-Thing:   Some Value  \r\nContent-Type: application/json\r\n",
                                "{\"ok\":true}"));
  http::Client client;

  SECTION("GET sends neither a body nor a Content-Type, and headers come back lower-cased") {
    http::Request request;
    request.method = "GET";
    request.url = server.url("/api/v1/pods");
    request.body = "ignored";
    request.headers.emplace_back("Accept", "application/json");
    auto r = client.send(request);
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body == "{\"ok\":true}");
    REQUIRE(r->header("x-custom-thing") != nullptr);
    CHECK(*r->header("x-custom-thing") == "Some Value");
    REQUIRE(r->header("content-type") != nullptr);
    CHECK(*r->header("content-type") == "application/json");
    CHECK(r->header("X-Custom-Thing") == nullptr);  // Names are lower-cased.
    auto seen = server.requests();
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].starts_with("GET /api/v1/pods HTTP/1.1\r\n"));
    CHECK_THAT(seen[0], Catch::Contains("Accept: application/json"));
    CHECK_THAT(seen[0], !Catch::Contains("Content-Type"));
    CHECK_THAT(seen[0], !Catch::Contains("ignored"));
  }

  SECTION("PUT, PATCH and DELETE send the body under their own name") {
    for (std::string method : {"PUT", "PATCH", "DELETE"}) {
      http::Request request;
      request.method = method;
      request.url = server.url("/x");
      request.body = "{\"m\":\"" + method + "\"}";
      request.content_type = "application/merge-patch+json";
      REQUIRE(client.send(request));
    }
    auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].starts_with("PUT /x HTTP/1.1\r\n"));
    CHECK(seen[0].ends_with("{\"m\":\"PUT\"}"));
    CHECK(seen[1].starts_with("PATCH /x HTTP/1.1\r\n"));
    CHECK(seen[1].ends_with("{\"m\":\"PATCH\"}"));
    CHECK_THAT(seen[1], Catch::Contains("Content-Type: application/merge-patch+json"));
    CHECK(seen[2].starts_with("DELETE /x HTTP/1.1\r\n"));
    CHECK(seen[2].ends_with("{\"m\":\"DELETE\"}"));
  }

  SECTION("DELETE without a body sends none; a reused handle forgets the method before") {
    http::Request request;
    request.method = "DELETE";
    request.url = server.url("/gone");
    REQUIRE(client.send(request));
    request.method = "GET";
    REQUIRE(client.send(request));
    request.method = "PATCH";  // post() POSTs whatever the method says.
    request.body = "{}";
    REQUIRE(client.post(request));
    auto seen = server.requests();
    REQUIRE(seen.size() == 3);
    CHECK(seen[0].starts_with("DELETE /gone HTTP/1.1\r\n"));
    CHECK_THAT(seen[0], !Catch::Contains("Content-Length"));
    CHECK_THAT(seen[0], !Catch::Contains("Content-Type"));
    CHECK(seen[1].starts_with("GET /gone HTTP/1.1\r\n"));
    CHECK(seen[2].starts_with("POST /gone HTTP/1.1\r\n"));
  }
}

TEST_CASE("http client keeps Retry-After of an error answer and no header in the message", "[http]") {
  RecordingServer server(answer("429 Too Many Requests", "Retry-After: 3\r\n", "{\"reason\":\"TooManyRequests\"}"));
  http::Client client;
  http::Request request;
  request.method = "GET";
  request.url = server.url("/api/v1/nodes");
  request.headers.emplace_back("Authorization", "Bearer secret-token");
  auto r = client.send(request);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == http::HttpErrc::Status);
  CHECK(r.error().status == 429);
  CHECK(r.error().retry_after == "3");
  CHECK_THAT(r.error().body, Catch::Contains("TooManyRequests"));
  CHECK_THAT(r.error().message, Catch::StartsWith("GET " + request.url));
  CHECK_THAT(r.error().message, !Catch::Contains("secret-token"));
}
