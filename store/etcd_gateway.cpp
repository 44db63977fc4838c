#include "store/etcd_gateway.hpp"
#include "store/store_errors.hpp"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <random>
#include <thread>

#include "net/base64.hpp"

namespace gaia {

using nlohmann::json;

namespace {

// gRPC status codes etcd's gateway reports in {"code": N} (google.golang.org/grpc/codes).
constexpr int kDeadlineExceeded = 4;
constexpr int kNotFound = 5;
constexpr int kPermissionDenied = 7;
constexpr int kResourceExhausted = 8;
constexpr int kUnavailable = 14;
constexpr int kUnauthenticated = 16;

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// An endpoint as it may appear in a message: any "user:password@" is cut out, so a
// password written into a URL by mistake does not travel further.
std::string redacted(std::string_view endpoint) {
  size_t scheme = endpoint.find("://");
  size_t start = scheme == std::string_view::npos ? 0 : scheme + 3;
  size_t at = endpoint.find('@', start);
  size_t slash = endpoint.find('/', start);
  if (at == std::string_view::npos || (slash != std::string_view::npos && slash < at))
    return std::string(endpoint);
  return std::string(endpoint.substr(0, start)) + "***@" + std::string(endpoint.substr(at + 1));
}

std::string dump(const json& body) {
  // Replacing invalid UTF-8 instead of throwing: only a username could carry it, and
  // etcd would then simply not know the user.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

int64_t json_int64(const json& object, std::string_view field) {
  if (!object.is_object()) return 0;
  auto it = object.find(field);
  if (it == object.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_unsigned()) return static_cast<int64_t>(it->get<uint64_t>());
  if (it->is_string()) {
    const auto& text = it->get_ref<const std::string&>();
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc() && end == text.data() + text.size()) return value;
  }
  return 0;
}

StoreResult<KeyValue> decode_kv(const json& kv, std::string_view endpoint) {
  auto field = [&](const char* name) {
    return kv.is_object() && kv.contains(name) && kv[name].is_string()
               ? base64_decode(kv[name].get_ref<const std::string&>())
               : std::optional<std::string>(std::string());
  };
  auto key = field("key");
  auto value = field("value");
  if (!key || !value)
    return std::unexpected(store_error(StoreErrc::Io,
                                 fmt::format("etcd at {} sent a key or value that is not base64", endpoint)));
  return KeyValue{std::move(*key),
                  std::move(*value),
                  json_int64(kv, "create_revision"),
                  json_int64(kv, "mod_revision"),
                  json_int64(kv, "version"),
                  json_int64(kv, "lease")};
}

EtcdGateway::EtcdGateway(EtcdOptions options)
    : m_options(std::move(options)),
      m_client(http::TlsOptions{m_options.ca_file, m_options.cert_file, m_options.key_file,
                                m_options.insecure_skip_tls_verify}) {}

StoreResult<std::unique_ptr<EtcdGateway>> EtcdGateway::create(EtcdOptions options) {
  if (options.endpoints.empty())
    return std::unexpected(store_error(StoreErrc::InvalidArgument, "no etcd endpoint given",
                                 "name at least one client URL, e.g. http://127.0.0.1:2379"));
  bool tls = !options.ca_file.empty() || !options.cert_file.empty();
  for (auto& endpoint : options.endpoints) {
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    if (endpoint.empty())
      return std::unexpected(store_error(StoreErrc::InvalidArgument, "an etcd endpoint is empty"));
    if (!contains(endpoint, "://")) endpoint = (tls ? "https://" : "http://") + endpoint;
    if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://"))
      return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                   fmt::format("etcd endpoint '{}' is neither http:// nor https://",
                                               redacted(endpoint))));
    if (redacted(endpoint) != endpoint)
      return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                   fmt::format("etcd endpoint '{}' carries credentials",
                                               redacted(endpoint)),
                                   "give the username and password as options instead"));
  }
  if (options.username.empty() && !options.password.empty())
    return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                 "an etcd password is set without a username"));
  if (options.request_timeout.count() <= 0)
    return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                 "the etcd request timeout must be positive"));
  return std::unique_ptr<EtcdGateway>(new EtcdGateway(std::move(options)));
}

std::string EtcdGateway::current_endpoint() const {
  return m_options.endpoints[m_current.load() % m_options.endpoints.size()];
}

std::string EtcdGateway::token() const {
  std::lock_guard lock(m_token_mutex);
  return m_token;
}

void EtcdGateway::avoid(const std::string& endpoint) {
  auto it = std::find(m_options.endpoints.begin(), m_options.endpoints.end(), endpoint);
  if (it != m_options.endpoints.end())
    move_to_next_endpoint(static_cast<size_t>(it - m_options.endpoints.begin()));
}

StoreError EtcdGateway::explain(const std::string& message, const std::string& endpoint,
                                std::string_view path) const {
  bool retryable = false, token_invalid = false;
  return map_etcd_error(0, message, endpoint, path, &retryable, &token_invalid);
}

void EtcdGateway::move_to_next_endpoint(size_t from) {
  size_t next = (from + 1) % m_options.endpoints.size();
  // Only move if no other thread has moved already, so two failures do not skip a member.
  m_current.compare_exchange_strong(from, next);
}

void EtcdGateway::sleep_before_retry(int attempt) const {
  thread_local std::mt19937 rng(std::random_device{}());
  auto base = m_options.retry_backoff * (1 << std::min(attempt, 6));
  std::uniform_real_distribution<double> jitter(0.5, 1.5);
  std::this_thread::sleep_for(std::chrono::duration_cast<std::chrono::milliseconds>(base * jitter(rng)));
}

StoreResult<EtcdGateway::Attempt> EtcdGateway::send(std::string_view path, const std::string& body,
                                                    const http::Request& shape, bool with_token,
                                                    std::string* trying) {
  size_t count = m_options.endpoints.size();
  size_t start = m_current.load() % count;
  std::vector<std::string> unreachable;
  bool tls_failed = false, only_tls = true;
  for (size_t i = 0; i < count; ++i) {
    if (shape.cancellation != nullptr && shape.cancellation->cancelled()) break;
    size_t index = (start + i) % count;
    const std::string& endpoint = m_options.endpoints[index];
    if (trying != nullptr) *trying = endpoint;
    http::Request request = shape;
    request.url = endpoint + std::string(path);
    request.body = body;
    if (with_token) {
      if (auto t = token(); !t.empty()) request.headers.emplace_back("Authorization", std::move(t));
    }
    auto result = m_client.post(request);
    bool not_sent = !result && !result.error().maybe_sent &&
                    (result.error().code == http::HttpErrc::CannotConnect ||
                     result.error().code == http::HttpErrc::Tls);
    if (not_sent) {
      bool tls = result.error().code == http::HttpErrc::Tls;
      tls_failed = tls_failed || tls;
      only_tls = only_tls && tls;
      unreachable.push_back(result.error().message);
      continue;
    }
    // Later calls start at the member that answered.
    if (index != start) m_current.store(index);
    return Attempt{std::move(result), endpoint};
  }
  if (unreachable.empty())
    return std::unexpected(store_error(StoreErrc::Io, fmt::format("the request to {} was cancelled", path)));
  std::string hint = count == 1 ? "check that etcd runs and listens on this client URL"
                                : "check that etcd runs and listens on these client URLs";
  if (tls_failed)
    hint += "; a TLS failure means the CA file, client certificate or key does not match the server";
  // Members that are down or unreachable may come back, so the failure is transient
  // (Unavailable); a handshake refused by every member is a configuration to fix (Io).
  return std::unexpected(store_error(only_tls ? StoreErrc::Io : StoreErrc::Unavailable,
                               fmt::format("cannot reach etcd: {}", fmt::join(unreachable, "; ")),
                               std::move(hint)));
}

StoreError EtcdGateway::map_failure(const Attempt& attempt, std::string_view path, bool* retryable,
                                    bool* token_invalid) const {
  const http::HttpError& failure = attempt.result.error();
  const std::string& endpoint = attempt.endpoint;
  *retryable = false;
  *token_invalid = false;
  switch (failure.code) {
    case http::HttpErrc::Timeout:
      return store_error(StoreErrc::Timeout,
                   fmt::format("etcd at {} did not answer {} within {} ms", endpoint, path,
                               m_options.request_timeout.count()),
                   "the member may be overloaded, stopped or cut off; a write may or may not "
                   "have been applied, so read it back before repeating it");
    case http::HttpErrc::CannotConnect:
      // Nothing was sent: the member is down or unreachable, which passes when it is back.
      *retryable = true;
      return store_error(StoreErrc::Unavailable, fmt::format("etcd at {}: {}", endpoint, failure.message));
    case http::HttpErrc::Other:
      // A connection that broke after the request went out: the answer is lost, not the
      // member, so a read may simply be asked again, and a write may or may not have been
      // applied, which is what Timeout says (a restart of etcd mid-commit).
      *retryable = true;
      if (!failure.maybe_sent) return store_error(StoreErrc::Io, fmt::format("etcd at {}: {}", endpoint, failure.message));
      return store_error(StoreErrc::Timeout, fmt::format("etcd at {}: {}", endpoint, failure.message),
                   "the connection broke mid-request; a write may or may not have been applied, so read it "
                   "back before repeating it");
    case http::HttpErrc::Tls:
      *retryable = true;
      return store_error(StoreErrc::Io, fmt::format("etcd at {}: {}", endpoint, failure.message));
    case http::HttpErrc::Cancelled:
      return store_error(StoreErrc::Io, fmt::format("the request to etcd at {} was cancelled", endpoint));
    case http::HttpErrc::Status:
      break;
  }
  json body = json::parse(failure.body, nullptr, false);
  if (body.is_object() && body.contains("error") && body["error"].is_object()) body = body["error"];
  if (!body.is_object() || !(body.contains("message") || body.contains("error")))
    return store_error(StoreErrc::Io,
                 fmt::format("etcd at {} answered {} with HTTP status {}", endpoint, path,
                             failure.status),
                 fmt::format("is {} the client URL of an etcd v3.4 or later member?", endpoint));
  int code = static_cast<int>(json_int64(body, "code"));
  if (code == 0) code = static_cast<int>(json_int64(body, "grpc_code"));
  std::string message = body.value("message", std::string());
  if (message.empty() && body["error"].is_string()) message = body["error"].get<std::string>();
  return map_etcd_error(code, message, endpoint, path, retryable, token_invalid);
}

StoreError EtcdGateway::map_etcd_error(int code, const std::string& message,
                                       const std::string& endpoint, std::string_view path,
                                       bool* retryable, bool* token_invalid) const {
  *retryable = false;
  *token_invalid = false;
  auto at = [&](std::string_view what) { return fmt::format("etcd at {}: {}", endpoint, what); };
  // Refused credentials, tokens and permissions are Unauthenticated: repeating the
  // request cannot help, the configuration (or the cluster's roles) must change.
  if (contains(message, "invalid auth token") || contains(message, "revision of auth store is old")) {
    *token_invalid = true;
    return store_error(StoreErrc::Unauthenticated, at(message), "the authentication token was refused");
  }
  if (contains(message, "user name is empty"))
    return store_error(StoreErrc::Unauthenticated, at("the cluster requires authentication"),
                 "give the store a username and password");
  if (contains(message, "authentication failed"))
    return store_error(StoreErrc::Unauthenticated,
                 at(fmt::format("the credentials of user '{}' were rejected", m_options.username)),
                 "check the username and password");
  if (code == kPermissionDenied || contains(message, "permission denied"))
    return store_error(StoreErrc::Unauthenticated,
                 at(fmt::format("user '{}' may not do {}: {}", m_options.username, path, message)),
                 "grant the user's role read and write access to gaia's keys");
  if (code == kNotFound && contains(message, "lease not found"))
    return store_error(StoreErrc::LeaseNotFound, at(message));
  if (contains(message, "required revision has been compacted"))
    return store_error(StoreErrc::Compacted, at(message));
  if (contains(message, "required revision is a future revision"))
    return store_error(StoreErrc::FutureRevision, at(message));
  if (contains(message, "too many operations in txn request"))
    return store_error(StoreErrc::TooLarge,
                 at("the transaction has more operations than the server allows"),
                 "etcd's --max-txn-ops bounds one transaction; set EtcdOptions::max_txn_ops to it");
  // etcd checks --max-request-bytes itself; gRPC refuses even larger messages first.
  if (contains(message, "request is too large") || contains(message, "message larger than max"))
    return store_error(StoreErrc::TooLarge, at("the transaction is larger than the server allows"),
                 "etcd's --max-request-bytes bounds one request; set "
                 "EtcdOptions::max_request_bytes to it");
  if (contains(message, "duplicate key given in txn request"))
    return store_error(StoreErrc::InvalidArgument, at("the transaction writes a key twice"),
                 "merge the puts into one");
  if (contains(message, "request timed out") || code == kDeadlineExceeded) {
    // The member gave up waiting for the cluster to commit: a write may still be applied.
    *retryable = true;
    return store_error(StoreErrc::Timeout, at(message),
                 "a write may or may not have been applied; read it back before repeating it");
  }
  if (code == kResourceExhausted) {
    *retryable = true;
    return store_error(StoreErrc::Busy, at(message), "the cluster is overloaded; try again later");
  }
  // No leader, a leader change, a member not yet ready: the cluster cannot serve now but
  // applied nothing; reads are retried, and what is left is Unavailable.
  if (code == kUnavailable || contains(message, "no leader") || contains(message, "leader changed")) {
    *retryable = true;
    return store_error(StoreErrc::Unavailable, at(message),
                 "the cluster may be electing a leader or have lost its quorum");
  }
  if (code == kUnauthenticated)
    return store_error(StoreErrc::Unauthenticated, at(message), "check the username and password");
  return store_error(StoreErrc::Io, at(message.empty() ? fmt::format("error code {}", code) : message));
}

StoreResult<void> EtcdGateway::authenticate(std::string_view stale_token) {
  std::lock_guard lock(m_token_mutex);
  // Another thread may have fetched a new token while this one waited for the lock.
  if (m_token != stale_token) return {};
  json body = {{"name", m_options.username}, {"password", m_options.password}};
  http::Request shape;
  shape.timeout = m_options.request_timeout;
  shape.connect_timeout = m_options.connect_timeout;
  auto sent = send("/v3/auth/authenticate", dump(body), shape, false);
  if (!sent) return std::unexpected(sent.error());
  if (!sent->result) {
    bool retryable = false, token_invalid = false;
    return std::unexpected(map_failure(*sent, "/v3/auth/authenticate", &retryable, &token_invalid));
  }
  json answer = json::parse(sent->result->body, nullptr, false);
  std::string token = answer.is_object() ? answer.value("token", std::string()) : std::string();
  if (token.empty())
    return std::unexpected(store_error(StoreErrc::Io,
                                 fmt::format("etcd at {} answered the authentication without a token",
                                             sent->endpoint),
                                 "is authentication enabled on the cluster (etcdctl auth enable)?"));
  m_token = std::move(token);
  return {};
}

StoreResult<void> EtcdGateway::check(const std::string& endpoint, http::Cancellation* cancellation) {
  http::Request request;
  request.url = endpoint + "/v3/kv/range";
  request.body = R"({"key":"AA==","count_only":true})";
  request.timeout = m_options.request_timeout;
  request.connect_timeout = m_options.connect_timeout;
  request.cancellation = cancellation;
  if (auto t = token(); !t.empty()) request.headers.emplace_back("Authorization", std::move(t));
  Attempt attempt{m_client.post(request), endpoint};
  if (attempt.result) return {};
  bool retryable = false, token_invalid = false;
  StoreError failure = map_failure(attempt, "/v3/kv/range", &retryable, &token_invalid);
  if (token_invalid) return {};
  if (attempt.result.error().code == http::HttpErrc::CannotConnect) failure.code = StoreErrc::Unavailable;
  return std::unexpected(std::move(failure));
}

StoreResult<void> EtcdGateway::connect() {
  if (!m_options.username.empty()) return authenticate(token());
  // Any cheap read proves a member answers; key "\0" with count_only returns no data.
  auto r = call("/v3/kv/range", json{{"key", "AA=="}, {"count_only", true}}, Idempotence::Safe);
  if (!r) return std::unexpected(r.error());
  return {};
}

StoreResult<json> EtcdGateway::call(std::string_view path, const json& body,
                                    Idempotence idempotence) {
  std::string text = dump(body);
  http::Request shape;
  shape.timeout = m_options.request_timeout;
  shape.connect_timeout = m_options.connect_timeout;
  bool refreshed = false;
  for (int attempt = 0;; ++attempt) {
    std::string used_token = token();
    auto sent = send(path, text, shape, true);
    if (!sent) {
      // No member was reached, so nothing was sent: repeating is safe even for writes.
      if (attempt < m_options.read_retries) {
        sleep_before_retry(attempt);
        continue;
      }
      return std::unexpected(sent.error());
    }
    if (sent->result) {
      json answer = json::parse(sent->result->body, nullptr, false);
      if (!answer.is_object())
        return std::unexpected(store_error(StoreErrc::Io,
                                     fmt::format("etcd at {} answered {} with something that is "
                                                 "not a JSON object",
                                                 sent->endpoint, path)));
      return answer;
    }
    bool retryable = false, token_invalid = false;
    StoreError failure = map_failure(*sent, path, &retryable, &token_invalid);
    if (token_invalid && !refreshed && !m_options.username.empty()) {
      // A rejected token means the request was refused before it was applied.
      refreshed = true;
      if (auto r = authenticate(used_token); !r) return std::unexpected(r.error());
      --attempt;
      continue;
    }
    size_t index = static_cast<size_t>(std::find(m_options.endpoints.begin(), m_options.endpoints.end(),
                                                 sent->endpoint) - m_options.endpoints.begin());
    // A member that timed out or failed is not asked first next time.
    if (retryable || sent->result.error().code == http::HttpErrc::Timeout) move_to_next_endpoint(index);
    if (retryable && idempotence == Idempotence::Safe && attempt < m_options.read_retries) {
      sleep_before_retry(attempt);
      continue;
    }
    return std::unexpected(std::move(failure));
  }
}

StoreResult<void> EtcdGateway::stream(std::string_view path, const json& body,
                                      Idempotence idempotence, const ResultHandler& on_result,
                                      const StreamControl& control) {
  std::string text = dump(body);
  bool refreshed = false;
  for (int attempt = 0;; ++attempt) {
    std::string used_token = token();
    std::string buffer;
    std::optional<StoreError> failed;
    bool delivered = false, token_expired = false, done = false;
    std::string own_endpoint;
    // The member being tried, named in messages; the caller's, when it wants to know it
    // while the stream runs.
    std::string& endpoint = control.endpoint != nullptr ? *control.endpoint : own_endpoint;
    // Handles one line of the answer; false stops reading.
    auto handle_line = [&](std::string_view line) -> bool {
      if (line.find_first_not_of(" \r\t") == std::string_view::npos) return true;
      json message = json::parse(line, nullptr, false);
      if (!message.is_object()) {
        failed = store_error(StoreErrc::Io, fmt::format("etcd at {} sent a line on {} that is not JSON",
                                                  endpoint, path));
        return false;
      }
      if (message.contains("error")) {
        json e = message["error"].is_object() ? message["error"] : message;
        bool retryable = false, token_invalid = false;
        int64_t code = json_int64(e, "grpc_code");
        if (code == 0) code = json_int64(e, "code");
        failed = map_etcd_error(static_cast<int>(code), e.value("message", std::string()),
                                endpoint, path, &retryable, &token_invalid);
        return false;
      }
      const json& result = message.contains("result") ? message["result"] : message;
      std::string reason = result.is_object() ? result.value("cancel_reason", std::string()) : "";
      if (!delivered && contains(reason, "invalid auth token")) {
        token_expired = true;
        return false;
      }
      delivered = true;
      auto r = on_result(result);
      if (!r) {
        failed = std::move(r.error());
        return false;
      }
      if (!*r) done = true;
      return *r;
    };
    http::Request shape;
    shape.timeout = control.endless ? std::chrono::milliseconds(0) : m_options.request_timeout;
    shape.connect_timeout = m_options.connect_timeout;
    shape.on_tick = control.on_tick;
    shape.cancellation = control.cancellation;
    shape.on_data = [&](std::string_view chunk) {
      buffer.append(chunk);
      size_t start = 0;
      for (size_t newline; (newline = buffer.find('\n', start)) != std::string::npos; start = newline + 1) {
        if (!handle_line(std::string_view(buffer).substr(start, newline - start))) {
          buffer.clear();
          return false;
        }
      }
      buffer.erase(0, start);
      return true;
    };
    auto sent = send(path, text, shape, true, &endpoint);
    if (!sent) {
      if (control.retry && attempt < m_options.read_retries) {
        sleep_before_retry(attempt);
        continue;
      }
      return std::unexpected(sent.error());
    }
    if (!sent->result) {
      bool retryable = false, token_invalid = false;
      StoreError failure = map_failure(*sent, path, &retryable, &token_invalid);
      if (token_invalid && !refreshed && !m_options.username.empty() && !delivered) {
        refreshed = true;
        if (auto r = authenticate(used_token); !r) return std::unexpected(r.error());
        --attempt;
        continue;
      }
      // A failure after results were handed on cannot be retried here: the handler has
      // state. The caller sees the error and may start over.
      if (retryable && !delivered && idempotence == Idempotence::Safe && control.retry &&
          attempt < m_options.read_retries) {
        sleep_before_retry(attempt);
        continue;
      }
      return std::unexpected(std::move(failure));
    }
    // The member closed the stream: what is left without a final newline is a line too.
    if (!done && !failed && !token_expired && !buffer.empty()) handle_line(buffer);
    if (token_expired && !refreshed && !m_options.username.empty()) {
      refreshed = true;
      if (auto r = authenticate(used_token); !r) return std::unexpected(r.error());
      --attempt;
      continue;
    }
    if (token_expired)
      return std::unexpected(store_error(StoreErrc::Unauthenticated,
                                   fmt::format("etcd at {}: invalid auth token", endpoint),
                                   "check the username and password"));
    if (failed) return std::unexpected(std::move(*failed));
    return {};
  }
}

}  // namespace gaia
