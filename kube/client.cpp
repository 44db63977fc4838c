#include "kube/client.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <mutex>
#include <optional>
#include <thread>

namespace gaia::kube {

std::string_view api_errc_name(ApiErrc c) {
  switch (c) {
    case ApiErrc::Unavailable: return "unavailable";
    case ApiErrc::Timeout: return "timeout";
    case ApiErrc::TooManyRequests: return "too many requests";
    case ApiErrc::Unauthorized: return "unauthorized";
    case ApiErrc::Forbidden: return "forbidden";
    case ApiErrc::NotFound: return "not found";
    case ApiErrc::AlreadyExists: return "already exists";
    case ApiErrc::Conflict: return "conflict";
    case ApiErrc::Gone: return "gone";
    case ApiErrc::Invalid: return "invalid";
    case ApiErrc::Tls: return "tls";
    case ApiErrc::Cancelled: return "cancelled";
    case ApiErrc::Other: return "other";
  }
  return "unknown";
}

namespace {

using std::chrono::milliseconds;

std::string_view status_text(long status) {
  switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

ApiErrc code_for_status(long status, std::string_view reason) {
  switch (status) {
    case 400:
    case 422: return ApiErrc::Invalid;
    case 401: return ApiErrc::Unauthorized;
    case 403: return ApiErrc::Forbidden;
    case 404: return ApiErrc::NotFound;
    case 409: return reason == "AlreadyExists" ? ApiErrc::AlreadyExists : ApiErrc::Conflict;
    case 410: return ApiErrc::Gone;
    case 429: return ApiErrc::TooManyRequests;
    default: return status >= 500 && status < 600 ? ApiErrc::Unavailable : ApiErrc::Other;
  }
}

bool retried_status(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// The text after "METHOD URL: " in an http::HttpError message: what went wrong, which
// this client prefixes with the method and the path alone.
std::string http_detail(const http::HttpError& error, std::string_view method, std::string_view url) {
  std::string prefix = fmt::format("{} {}: ", method, url);
  if (error.message.starts_with(prefix)) return error.message.substr(prefix.size());
  return error.message;
}

// Retry-After in seconds; an HTTP date (rare from an API server) is not honoured.
std::optional<milliseconds> retry_after(std::string_view value) {
  int seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (ec != std::errc() || end != value.data() + value.size() || seconds < 0) return std::nullopt;
  return milliseconds(static_cast<int64_t>(seconds) * 1000);
}

// The error for an answer outside 2xx: its code from the status (and the Status object's
// reason), its message from the Status object's message when the body is one.
ApiError status_error(std::string_view method, const std::string& path, long status, const std::string& body,
                      const ClusterConfig& config) {
  ApiError error;
  error.status = status;
  std::string server_message;
  auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object()) {
    if (auto it = json.find("reason"); it != json.end() && it->is_string()) error.reason = *it;
    if (auto it = json.find("message"); it != json.end() && it->is_string()) server_message = *it;
  }
  error.code = code_for_status(status, error.reason);
  std::string head = fmt::format("{} {}: {}", method, path, status);
  if (auto text = status_text(status); !text.empty()) head += fmt::format(" {}", text);
  if (status == 401) {
    error.message = fmt::format("{}: the credentials of context '{}' ({}) were refused", head, config.context,
                                config.source);
    if (!server_message.empty()) error.message += fmt::format(" ({})", server_message);
  } else {
    error.message = server_message.empty() ? head : fmt::format("{}: {}", head, server_message);
  }
  return error;
}

// The error for an exchange that got no answer (or was cut).
ApiError transport_error(std::string_view method, const std::string& path, const std::string& url,
                         const http::HttpError& failure, const ClusterConfig& config) {
  ApiError error;
  std::string detail = http_detail(failure, method, url);
  switch (failure.code) {
    case http::HttpErrc::CannotConnect:
    case http::HttpErrc::Other: error.code = ApiErrc::Unavailable; break;
    case http::HttpErrc::Timeout: error.code = ApiErrc::Timeout; break;
    case http::HttpErrc::Cancelled: error.code = ApiErrc::Cancelled; break;
    case http::HttpErrc::Tls:
      error.code = ApiErrc::Tls;
      if (detail.starts_with("TLS failure (") && detail.ends_with(")")) detail = detail.substr(13, detail.size() - 14);
      error.message = fmt::format(
          "{} {}: TLS with {} failed ({}): the server's certificate is not trusted by the "
          "certificate-authority of context '{}' in {} (check it is the cluster's CA), or the server refused "
          "the client certificate",
          method, path, config.server, detail, config.context, config.source);
      return error;
    case http::HttpErrc::Status: return status_error(method, path, failure.status, failure.body, config);
  }
  error.message = fmt::format("{} {}: {}", method, path, detail);
  return error;
}

}  // namespace

struct Client::Impl {
  http::Client http;
  RetryPolicy retry;
  std::atomic<int> retries{0};
  std::mutex mutex;  // Guards rng and sleep.
  std::mt19937 rng{std::random_device{}()};
  std::function<void(milliseconds)> sleep = [](milliseconds d) { std::this_thread::sleep_for(d); };

  Impl(http::TlsOptions tls, RetryPolicy policy) : http(std::move(tls)), retry(policy) {}

  // Full jitter: uniform in [0, min(cap, base * 2^attempt)], so clients retrying after
  // the same failure spread out instead of returning together; Retry-After, capped, as
  // the least.
  milliseconds backoff(int attempt, std::optional<milliseconds> at_least) {
    int64_t base = std::max<int64_t>(0, retry.base.count());
    int64_t cap = std::max<int64_t>(0, retry.cap.count());
    int64_t ceiling = base;
    for (int i = 0; i < attempt && ceiling < cap; ++i) ceiling *= 2;
    ceiling = std::min(ceiling, cap);
    int64_t wait = 0;
    {
      std::lock_guard lock(mutex);
      wait = std::uniform_int_distribution<int64_t>(0, ceiling)(rng);
    }
    if (at_least) wait = std::max(wait, std::min<int64_t>(at_least->count(), cap));
    return milliseconds(wait);
  }

  void pause(milliseconds d) {
    std::function<void(milliseconds)> f;
    {
      std::lock_guard lock(mutex);
      f = sleep;
    }
    f(d);
  }
};

Client::Client(ClusterConfig config, RetryPolicy retry) : m_config(std::move(config)) {
  http::TlsOptions tls;
  tls.ca_pem = m_config.ca_pem;
  tls.cert_pem = m_config.client_cert_pem;
  tls.key_pem = m_config.client_key_pem;
  tls.insecure_skip_verify = m_config.insecure_skip_tls_verify;
  m_impl = std::make_unique<Impl>(std::move(tls), retry);
}

Client::~Client() = default;

int Client::retries() const { return m_impl->retries.load(); }

void Client::set_sleep(std::function<void(std::chrono::milliseconds)> sleep) {
  std::lock_guard lock(m_impl->mutex);
  m_impl->sleep = std::move(sleep);
}

ApiResult<nlohmann::json> Client::request(std::string_view method, const std::string& path,
                                          const nlohmann::json* body, std::string_view content_type) {
  http::Request req;
  req.method = std::string(method);
  req.url = m_config.server + path;
  if (body != nullptr && method != "GET") req.body = body->dump();
  req.content_type = std::string(content_type);
  req.headers.emplace_back("Accept", "application/json");
  if (!m_config.token.empty()) req.headers.emplace_back("Authorization", "Bearer " + m_config.token);
  req.timeout = m_impl->retry.timeout;
  req.connect_timeout = m_impl->retry.connect_timeout;

  int attempts = std::max(1, m_impl->retry.attempts);
  for (int attempt = 0;; ++attempt) {
    auto answer = m_impl->http.send(req);
    if (answer) {
      if (answer->body.empty()) return nlohmann::json();
      auto json = nlohmann::json::parse(answer->body, nullptr, false);
      if (json.is_discarded())
        return std::unexpected(ApiError{ApiErrc::Other, answer->status, "",
                                        fmt::format("{} {}: the answer ({}) is not JSON", method, path, answer->status)});
      return json;
    }
    const http::HttpError& failure = answer.error();
    // What may be sent again: an answer saying "later", a request that surely never
    // left, and a GET whatever became of it (reading twice changes nothing).
    bool again = false;
    std::optional<milliseconds> at_least;
    switch (failure.code) {
      case http::HttpErrc::Status:
        // An eviction's 429 is a disruption budget saying no, not an overloaded server:
        // waiting here would only hold up the cycle, which retries on its next pass.
        again = retried_status(failure.status) && !(failure.status == 429 && path.ends_with("/eviction"));
        if (again && !failure.retry_after.empty()) at_least = retry_after(failure.retry_after);
        break;
      case http::HttpErrc::CannotConnect: again = true; break;
      case http::HttpErrc::Other:
      case http::HttpErrc::Timeout: again = method == "GET"; break;
      default: break;
    }
    if (!again || attempt + 1 >= attempts) {
      ApiError error = transport_error(method, path, req.url, failure, m_config);
      if (again && attempts > 1) error.message += fmt::format(" (after {} attempts)", attempts);
      return std::unexpected(std::move(error));
    }
    m_impl->pause(m_impl->backoff(attempt, at_least));
    m_impl->retries.fetch_add(1);
  }
}

ApiResult<nlohmann::json> Client::get(const std::string& path) { return request("GET", path); }

ApiResult<nlohmann::json> Client::create(const std::string& path, const nlohmann::json& body) {
  return request("POST", path, &body);
}

ApiResult<nlohmann::json> Client::replace(const std::string& path, const nlohmann::json& body) {
  return request("PUT", path, &body);
}

ApiResult<nlohmann::json> Client::merge_patch(const std::string& path, const nlohmann::json& patch) {
  return request("PATCH", path, &patch, "application/merge-patch+json");
}

ApiResult<nlohmann::json> Client::apply(const std::string& path, const nlohmann::json& object,
                                        const std::string& field_manager, bool force) {
  // JSON is YAML, so the object goes as it is under apply-patch+yaml.
  std::string target = fmt::format("{}{}fieldManager={}&force={}", path,
                                   path.find('?') == std::string::npos ? '?' : '&', url_encode(field_manager),
                                   force ? "true" : "false");
  return request("PATCH", target, &object, "application/apply-patch+yaml");
}

ApiResult<nlohmann::json> Client::remove(const std::string& path, const nlohmann::json& options) {
  return request("DELETE", path, options.is_null() ? nullptr : &options);
}

ApiResult<void> Client::watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event,
                              http::Cancellation* cancellation, std::chrono::milliseconds idle) {
  http::Request req;
  req.method = "GET";
  req.url = m_config.server + path;
  req.headers.emplace_back("Accept", "application/json");
  if (!m_config.token.empty()) req.headers.emplace_back("Authorization", "Bearer " + m_config.token);
  req.timeout = milliseconds(0);  // A watch is endless; silence is bounded by `idle`.
  req.connect_timeout = std::min(m_impl->retry.connect_timeout, std::max(idle, milliseconds(1)));
  req.cancellation = cancellation;
  req.tick_interval = std::clamp(idle / 10, milliseconds(5), milliseconds(1000));

  std::string pending;
  std::optional<ApiError> failed;
  bool idle_expired = false;
  auto last_byte = std::chrono::steady_clock::now();

  // One line of the stream: an event, or an ERROR carrying a Status. False ends the
  // watch (the caller had enough, or it failed).
  auto handle_line = [&](std::string_view line) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    if (line.empty()) return true;
    auto json = nlohmann::json::parse(line, nullptr, false);
    if (!json.is_object() || !json.contains("type") || !json["type"].is_string()) {
      failed = ApiError{ApiErrc::Other, 200, "", fmt::format("GET {}: the watch sent a line that is not an event", path)};
      return false;
    }
    WatchEvent event{json["type"].get<std::string>(), json.value("object", nlohmann::json())};
    if (event.type == "ERROR") {
      long code = 0;
      std::string reason, message;
      if (event.object.is_object()) {
        if (auto it = event.object.find("code"); it != event.object.end() && it->is_number_integer())
          code = it->get<long>();
        if (auto it = event.object.find("reason"); it != event.object.end() && it->is_string()) reason = *it;
        if (auto it = event.object.find("message"); it != event.object.end() && it->is_string()) message = *it;
      }
      ApiError error;
      error.status = code;
      error.reason = reason;
      error.code = code == 0 ? ApiErrc::Other : code_for_status(code, reason);
      error.message = fmt::format("GET {}: the watch ended with an error event{}{}", path,
                                  code != 0 ? fmt::format(" {}", code) : "",
                                  message.empty() ? "" : fmt::format(": {}", message));
      failed = std::move(error);
      return false;
    }
    return on_event(event);
  };

  bool caller_stopped = false;
  req.on_data = [&](std::string_view chunk) {
    last_byte = std::chrono::steady_clock::now();
    pending.append(chunk);
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (!handle_line(std::string_view(pending).substr(start, nl - start))) {
        if (!failed) caller_stopped = true;
        return false;
      }
    }
    pending.erase(0, start);
    return true;
  };
  // on_data and on_tick run on this thread, between waits of the transfer.
  req.on_tick = [&] {
    if (std::chrono::steady_clock::now() - last_byte < idle) return true;
    idle_expired = true;
    return false;
  };

  auto answer = m_impl->http.send(req);
  if (failed) return std::unexpected(std::move(*failed));
  if (!answer) return std::unexpected(transport_error("GET", path, req.url, answer.error(), m_config));
  if (caller_stopped) return {};
  if (idle_expired)
    return std::unexpected(ApiError{ApiErrc::Timeout, 0, "",
                                    fmt::format("GET {}: nothing arrived on the watch for {} ms", path, idle.count())});
  // The server ended the stream; a last line without its newline still counts.
  if (!pending.empty()) {
    handle_line(pending);
    if (failed) return std::unexpected(std::move(*failed));
  }
  return {};
}

std::string url_encode(std::string_view value) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    auto byte = static_cast<unsigned char>(c);
    bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += c;
    } else {
      out += '%';
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xF];
    }
  }
  return out;
}

}  // namespace gaia::kube
