#include "net/http.hpp"

#include <curl/curl.h>

#include "net/curl_library.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <fmt/format.h>
#include <mutex>

namespace gaia::http {

// Idle libcurl handles. A handle keeps its connections alive between requests, so
// handing it back here and borrowing it again saves a TCP (and TLS) handshake per call.
struct Client::Pool {
  std::mutex mutex;
  std::vector<CURL*> idle;

  ~Pool() {
    for (CURL* handle : idle) curl().easy_cleanup(handle);
  }
};

namespace {

struct Transfer {
  CURL* handle = nullptr;
  const Request* request = nullptr;
  std::string body;
  bool stopped = false;
  Headers headers;
};

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

// Called by libcurl once per header line of the answer, the status line included.
size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t length = size * count;
  std::string_view line(data, length);
  // A new status line starts another answer (after a 100 Continue or a redirect): only
  // the headers of the last one describe the body.
  if (line.starts_with("HTTP/")) {
    transfer->headers.clear();
    return length;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return length;  // The blank line that ends them.
  std::string name(trim(line.substr(0, colon)));
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  transfer->headers.emplace_back(std::move(name), std::string(trim(line.substr(colon + 1))));
  return length;
}

// A PEM text handed to libcurl from memory; it copies the bytes, so `pem` need only
// live through the call.
void set_blob(CURL* handle, CURLoption option, const std::string& pem) {
  curl_blob blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
  curl().easy_setopt(handle, option, &blob);
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  size_t length = size * count;
  if (transfer->request->on_data) {
    long status = 0;
    curl().easy_getinfo(transfer->handle, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      if (!transfer->request->on_data(std::string_view(data, length))) {
        transfer->stopped = true;
        return 0;  // Anything but `length` makes libcurl end the transfer.
      }
      return length;
    }
  }
  transfer->body.append(data, length);
  return length;
}

bool is_tls_failure(CURLcode rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      return true;
    default:
      return false;
  }
}

// Runs the transfer in a multi handle of its own, so that waiting for data can be
// interrupted: by the request's cancellation (which wakes the wait) and by its on_tick
// (called between waits). Sets *cancelled when the cancellation ended it.
CURLcode perform_interruptible(CURL* handle, const Request& request, Transfer& transfer,
                               bool* cancelled) {
  CURLM* multi = curl().multi_init();
  if (multi == nullptr) return CURLE_OUT_OF_MEMORY;
  curl().multi_add_handle(multi, handle);
  Cancellation* cancellation = request.cancellation;
  bool attached = cancellation == nullptr || cancellation->attach(multi);
  CURLcode rc = CURLE_OK;
  if (!attached) {
    *cancelled = true;
    rc = CURLE_ABORTED_BY_CALLBACK;
  }
  auto tick = std::max(std::chrono::milliseconds(1), request.tick_interval);
  auto next_tick = std::chrono::steady_clock::now() + tick;
  while (attached) {
    int running = 0;
    if (curl().multi_perform(multi, &running) != CURLM_OK) {
      rc = CURLE_FAILED_INIT;
      break;
    }
    bool finished = running == 0;
    int left = 0;
    while (CURLMsg* message = curl().multi_info_read(multi, &left)) {
      if (message->msg == CURLMSG_DONE) {
        rc = message->data.result;
        finished = true;
      }
    }
    if (finished) break;
    if (cancellation != nullptr && cancellation->cancelled()) {
      *cancelled = true;
      rc = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    auto now = std::chrono::steady_clock::now();
    if (request.on_tick && now >= next_tick) {
      next_tick = now + tick;
      if (!request.on_tick()) {
        transfer.stopped = true;
        rc = CURLE_WRITE_ERROR;
        break;
      }
    }
    int wait_ms = 1000;
    if (request.on_tick)
      wait_ms = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - now).count(), 1, 1000));
    curl().multi_poll(multi, nullptr, 0, wait_ms, nullptr);
  }
  if (cancellation != nullptr && attached) cancellation->detach(multi);
  curl().multi_remove_handle(multi, handle);
  curl().multi_cleanup(multi);
  return rc;
}

// Frees a header list however the request ends.
struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl().slist_free_all(list); }
  void add(const std::string& line) { list = curl().slist_append(list, line.c_str()); }
};

}  // namespace

bool available(std::string* why) { return open_curl(why) != nullptr; }

void Cancellation::cancel() {
  std::lock_guard lock(m_mutex);
  m_cancelled.store(true);
  for (void* multi : m_waiting) curl().multi_wakeup(static_cast<CURLM*>(multi));
}

bool Cancellation::attach(void* multi) {
  std::lock_guard lock(m_mutex);
  if (m_cancelled.load()) return false;
  m_waiting.push_back(multi);
  return true;
}

void Cancellation::detach(void* multi) {
  std::lock_guard lock(m_mutex);
  std::erase(m_waiting, multi);
}

Client::Client(TlsOptions tls) : m_tls(std::move(tls)), m_pool(std::make_unique<Pool>()) {
  // libcurl is opened by the first client, not at start (net/curl_library.hpp); a
  // process without it fails each request with the reason.
  open_curl(&m_unavailable);
}

Client::~Client() = default;

const std::string* Response::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key == name) return &value;
  return nullptr;
}

std::expected<Response, HttpError> Client::send(const Request& request) {
  return perform(request, request.method);
}

std::expected<Response, HttpError> Client::post(const Request& request) { return perform(request, "POST"); }

std::expected<Response, HttpError> Client::perform(const Request& request, const std::string& method) {
  if (!m_unavailable.empty())
    return std::unexpected(HttpError{HttpErrc::Other, fmt::format("{} {}: {}", method, request.url, m_unavailable),
                                     0, "", false});
  CURL* handle = nullptr;
  {
    std::lock_guard lock(m_pool->mutex);
    if (!m_pool->idle.empty()) {
      handle = m_pool->idle.back();
      m_pool->idle.pop_back();
    }
  }
  if (handle == nullptr) handle = curl().easy_init();
  if (handle == nullptr)
    return std::unexpected(HttpError{HttpErrc::Other,
                                     fmt::format("{} {}: libcurl could not create a handle",
                                                 method, request.url),
                                     0, "", false});
  // Whatever happens, the handle goes back to the pool with its connections. Its options
  // are reset before each use, so nothing of this request (headers) lingers in it.
  struct Return {
    Pool& pool;
    CURL* handle;
    ~Return() {
      std::lock_guard lock(pool.mutex);
      pool.idle.push_back(handle);
    }
  } give_back{*m_pool, handle};
  curl().easy_reset(handle);

  Transfer transfer{handle, &request, {}, false, {}};
  bool bodiless = method == "GET" || method == "HEAD";
  bool with_body = !bodiless && (!request.body.empty() || method != "DELETE");
  HeaderList headers;
  if (with_body) headers.add("Content-Type: " + request.content_type);
  // libcurl asks large POSTs to wait for "100 Continue"; that only costs a round trip.
  headers.add("Expect:");
  for (const auto& [name, value] : request.headers) headers.add(name + ": " + value);

  char error_buffer[CURL_ERROR_SIZE] = {0};
  // A zero timeout leaves the exchange unbounded (libcurl's 0); connecting stays bounded.
  auto timeout_ms = std::max<long>(0, static_cast<long>(request.timeout.count()));
  auto connect_ms = std::max<long>(1, static_cast<long>(request.connect_timeout.count()));
  if (timeout_ms > 0) connect_ms = std::min(connect_ms, timeout_ms);
  curl().easy_setopt(handle, CURLOPT_URL, request.url.c_str());
  curl().easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
  // curl_easy_reset above returned the handle to a plain GET, so each request sets
  // only what differs from that and nothing of an earlier method lingers.
  if (method == "HEAD") {
    curl().easy_setopt(handle, CURLOPT_NOBODY, 1L);
  } else if (method != "GET") {
    if (with_body) {
      curl().easy_setopt(handle, CURLOPT_POST, 1L);
      curl().easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.data());
      curl().easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    }
    // The body is sent as for a POST, under the method's own name.
    if (method != "POST") curl().easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  curl().easy_setopt(handle, CURLOPT_HTTPHEADER, headers.list);
  curl().easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl().easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
  // Timeouts must not use signals: the client is used from several threads.
  curl().easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
  // A long-lived stream over a path that silently died (a cut cable, a rebooted host)
  // is noticed by TCP keep-alive probes rather than never.
  curl().easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
  curl().easy_setopt(handle, CURLOPT_TCP_KEEPIDLE, 10L);
  curl().easy_setopt(handle, CURLOPT_TCP_KEEPINTVL, 5L);
  // The servers this client talks to are named explicitly; a proxy from the environment
  // (http_proxy) would only get between gaia and its store.
  curl().easy_setopt(handle, CURLOPT_PROXY, "");
  curl().easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_write);
  curl().easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
  curl().easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
  curl().easy_setopt(handle, CURLOPT_HEADERDATA, &transfer);
  curl().easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
  // Text in memory wins over a file; the options are the client's, the same for every
  // request, so a pooled handle never carries another client's trust or identity.
  if (!m_tls.ca_pem.empty())
    set_blob(handle, CURLOPT_CAINFO_BLOB, m_tls.ca_pem);
  else if (!m_tls.ca_file.empty())
    curl().easy_setopt(handle, CURLOPT_CAINFO, m_tls.ca_file.c_str());
  if (!m_tls.cert_pem.empty()) {
    set_blob(handle, CURLOPT_SSLCERT_BLOB, m_tls.cert_pem);
    curl().easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM");
  } else if (!m_tls.cert_file.empty()) {
    curl().easy_setopt(handle, CURLOPT_SSLCERT, m_tls.cert_file.c_str());
  }
  if (!m_tls.key_pem.empty()) {
    set_blob(handle, CURLOPT_SSLKEY_BLOB, m_tls.key_pem);
    curl().easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM");
  } else if (!m_tls.key_file.empty()) {
    curl().easy_setopt(handle, CURLOPT_SSLKEY, m_tls.key_file.c_str());
  }
  if (m_tls.insecure_skip_verify) {
    curl().easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 0L);
    curl().easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 0L);
  }

  bool cancelled = false;
  CURLcode rc = request.cancellation != nullptr || request.on_tick
                    ? perform_interruptible(handle, request, transfer, &cancelled)
                    : curl().easy_perform(handle);
  long status = 0;
  curl().easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &status);
  if (cancelled)
    return std::unexpected(HttpError{HttpErrc::Cancelled, fmt::format("{} {}: cancelled", method, request.url),
                                     0, "", true});
  if (rc == CURLE_WRITE_ERROR && transfer.stopped)
    return Response{status, "", true, std::move(transfer.headers)};
  if (rc == CURLE_OK) {
    if (status >= 200 && status < 300)
      return Response{status, std::move(transfer.body), false, std::move(transfer.headers)};
    HttpError error{HttpErrc::Status, fmt::format("{} {}: HTTP status {}", method, request.url, status),
                    status, std::move(transfer.body), true};
    for (const auto& [name, value] : transfer.headers)
      if (name == "retry-after") error.retry_after = value;
    return std::unexpected(std::move(error));
  }

  // Whether any of the request can have reached the server: libcurl counts the bytes of
  // the requests it issued, and times the moment a transfer was about to start sending.
  long request_size = 0;
  curl_off_t pretransfer_us = 0, connect_us = 0;
  curl().easy_getinfo(handle, CURLINFO_REQUEST_SIZE, &request_size);
  curl().easy_getinfo(handle, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
  curl().easy_getinfo(handle, CURLINFO_CONNECT_TIME_T, &connect_us);
  bool maybe_sent = request_size > 0 || pretransfer_us > 0;
  std::string detail = error_buffer[0] != '\0' ? std::string(error_buffer) : curl().easy_strerror(rc);

  HttpError error;
  error.maybe_sent = maybe_sent;
  switch (rc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      error.code = HttpErrc::CannotConnect;
      error.maybe_sent = false;
      error.message = fmt::format("{} {}: cannot connect ({})", method, request.url, detail);
      break;
    case CURLE_OPERATION_TIMEDOUT:
      if (!maybe_sent && connect_us == 0) {
        error.code = HttpErrc::CannotConnect;
        error.message = fmt::format("{} {}: no connection within {} ms", method, request.url, connect_ms);
      } else {
        error.code = HttpErrc::Timeout;
        error.message = fmt::format("{} {}: no answer within {} ms", method, request.url, timeout_ms);
      }
      break;
    default:
      // A TLS alert from the server after the handshake (TLS 1.3 asks for the client's
      // certificate only then) is a refusal of the credentials, not a broken exchange.
      if (is_tls_failure(rc) || std::string_view(detail).find(" alert ") != std::string_view::npos) {
        error.code = HttpErrc::Tls;
        // A handshake that failed carried no request; a failure after it (rare) might have.
        error.maybe_sent = maybe_sent && rc != CURLE_SSL_CONNECT_ERROR &&
                           rc != CURLE_PEER_FAILED_VERIFICATION;
        error.message = fmt::format("{} {}: TLS failure ({})", method, request.url, detail);
      } else {
        error.code = HttpErrc::Other;
        error.message = fmt::format("{} {}: {}", method, request.url, detail);
      }
  }
  return std::unexpected(std::move(error));
}

}  // namespace gaia::http
