#pragma once
// A small HTTP client over libcurl, enough for etcd's JSON gateway and the Kubernetes API:
// send a request (POST, GET, PUT, PATCH, DELETE) with a body, read the answer whole or as
// a stream, with a timeout per request and TLS options. Failures come back coded (cannot
// connect, timeout, TLS, HTTP status) so callers can decide what is safe to retry, and
// their messages name the method and URL but never a header or a body: request headers
// carry credentials (etcd's auth token, a bearer token), and bodies may carry passwords.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gaia::http {

struct TlsOptions {
  // PEM file of the certificate authorities to trust; the system's store when empty.
  std::filesystem::path ca_file;
  // PEM client certificate and its key, for servers that require client authentication.
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  // Skips verifying the server's certificate and name. Only for experiments: anyone on
  // the path can then impersonate the server. Never turned on by default.
  bool insecure_skip_verify = false;
  // The same as PEM text held in memory (a kubeconfig's *-data fields), so secrets need
  // not be written to a file first. When set, each is used instead of its file.
  std::string ca_pem = {};
  std::string cert_pem = {};
  std::string key_pem = {};
};

// Ends posts in progress from another thread at once: a watch's reader may be waiting
// on a stream that stays silent for minutes, and destroying the watch must not wait for
// it. Once cancelled it stays cancelled, and posts started with it end at once too.
class Cancellation {
 public:
  Cancellation() = default;
  Cancellation(const Cancellation&) = delete;
  Cancellation& operator=(const Cancellation&) = delete;
  // Thread-safe and idempotent.
  void cancel();
  bool cancelled() const { return m_cancelled.load(); }

  // For the client: registers the libcurl multi handle a post waits in, so cancel() can
  // wake it; false when already cancelled.
  bool attach(void* multi);
  void detach(void* multi);

 private:
  std::atomic<bool> m_cancelled{false};
  std::mutex m_mutex;
  std::vector<void*> m_waiting;
};

struct Request {
  // Used by Client::send; Client::post always POSTs. GET and HEAD never send a body;
  // PUT, PATCH and DELETE send `body` when it is not empty (DELETE may go without one).
  std::string method = "POST";
  std::string url;
  std::string body;
  // Sent as Content-Type with a body, and with POST, PUT and PATCH even when it is empty.
  std::string content_type = "application/json";
  // Extra headers as (name, value). Values are secret as far as this client knows
  // (Authorization): they never appear in an error message.
  std::vector<std::pair<std::string, std::string>> headers;
  // Bounds the whole exchange, from connecting to the last byte of the answer; zero means
  // no bound, for an endless stream (a watch) that is ended by on_data or on_tick.
  std::chrono::milliseconds timeout{5000};
  // Bounds connecting (TCP and TLS handshake) alone; at most `timeout`.
  std::chrono::milliseconds connect_timeout{2000};
  // When set, the answer's body is handed over in pieces as it arrives instead of being
  // collected into Response::body; returning false ends the exchange early, which is not
  // an error (how a reader of an endless stream, like a watch, stops). Only called for
  // 2xx answers; other answers are collected for the error.
  std::function<bool(std::string_view)> on_data;
  // When set, called about every tick_interval while the exchange runs (also while no
  // data arrives); returning false ends it early, as on_data returning false does. How
  // a reader bounds silence itself: the first answer of a stream, or an idle stream.
  std::function<bool()> on_tick;
  std::chrono::milliseconds tick_interval{50};
  // When set, cancelling it ends the exchange within milliseconds with
  // HttpErrc::Cancelled, even while it waits for data.
  Cancellation* cancellation = nullptr;
};

// Response headers as (name, value), names lower-cased, values without surrounding
// blanks, in the order the server sent them (the last answer's only, after a redirect or
// a 100 Continue).
using Headers = std::vector<std::pair<std::string, std::string>>;

struct Response {
  long status = 0;
  std::string body;  // Empty when Request::on_data took the body.
  bool stopped = false;  // on_data returned false and the exchange was cut short.
  Headers headers;

  // The value of the first header named `name` (lower-case), or nothing.
  const std::string* header(std::string_view name) const;
};

// Whether this process can make HTTP requests: opens libcurl the first time
// (net/curl_library.hpp). False, with the reason in *why, when the library is missing or
// too old. Callers that need HTTP check it when they start, so that a missing library
// is an error at once rather than a request failure that looks like a server down.
bool available(std::string* why = nullptr);

enum class HttpErrc {
  CannotConnect,  // No connection was made (refused, unresolvable, connect timed out).
  Timeout,        // Connected, but the exchange did not finish within Request::timeout.
  Tls,            // The TLS handshake or certificate check failed.
  Status,         // The server answered with a status outside 2xx.
  Other,          // Anything else libcurl reports (a reset connection, a bad URL...).
  Cancelled,      // Request::cancellation was cancelled.
};

struct HttpError {
  HttpErrc code = HttpErrc::Other;
  // "POST http://127.0.0.1:2379/v3/kv/range: connection refused (...)": the URL and what
  // went wrong; never headers or bodies.
  std::string message;
  long status = 0;    // For HttpErrc::Status.
  std::string body;   // For HttpErrc::Status: the server's explanation, if any.
  // False only when the request certainly did not reach the server (no connection, or
  // the TLS handshake failed), so even a non-idempotent request may be sent again.
  bool maybe_sent = true;
  // For HttpErrc::Status: the answer's Retry-After header as sent ("3", or an HTTP date),
  // empty when there was none; servers under load (429, 503) say when to come back.
  std::string retry_after = {};
};

class Client {
 public:
  explicit Client(TlsOptions tls = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends the request with request.method. Thread-safe: each call borrows a libcurl
  // handle from a small pool, so concurrent calls run in parallel and reuse kept-alive
  // connections.
  std::expected<Response, HttpError> send(const Request& request);
  // Sends request.body with POST, whatever request.method says.
  std::expected<Response, HttpError> post(const Request& request);

 private:
  std::expected<Response, HttpError> perform(const Request& request, const std::string& method);

  struct Pool;
  TlsOptions m_tls;
  std::unique_ptr<Pool> m_pool;
  std::string m_unavailable;  // Why no request can be made (libcurl missing), or empty.
};

}  // namespace gaia::http
