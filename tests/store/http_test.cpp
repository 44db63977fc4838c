#include "store/http.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

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
