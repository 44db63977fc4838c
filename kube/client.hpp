#pragma once
// A client of the Kubernetes REST API over net/http.hpp (libcurl): JSON in and out,
// authentication from a kubeconfig (kube/kubeconfig.hpp), and the API's failure modes
// coded so callers can decide (docs/kubernetes.md):
// - 429 Too Many Requests (except from pods/eviction, where it is a disruption budget's
//   refusal) and 5xx (500, 502, 503, 504) are retried here with
//   exponential back-off and full jitter, honouring Retry-After (capped), up to
//   RetryPolicy::attempts; so are failures to connect. What is left after that
//   comes back as an error.
// - 409 is never retried here: a Conflict (stale resourceVersion) must be re-decided by
//   the caller on fresh data, and AlreadyExists means the object is there.
// - A watch streams events to a callback; 410 Gone (the resourceVersion was compacted
//   away), whether as the HTTP status or as an ERROR event, comes back as ApiErrc::Gone
//   so the caller relists.
// Messages name the method and path, never a header (the token) or a request body.

#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kube/kubeconfig.hpp"
#include "net/http.hpp"

namespace gaia::kube {

enum class ApiErrc {
  Unavailable,      // No connection, a reset, or 5xx after every retry: try later.
  Timeout,          // No answer in time: try later (the request may have been applied).
  TooManyRequests,  // 429 after every retry, or an eviction refused by a disruption budget.
  Unauthorized,     // 401: the token or certificate is not accepted.
  Forbidden,        // 403: authenticated, but not allowed.
  NotFound,         // 404.
  AlreadyExists,    // 409 with reason AlreadyExists (a create of a name that exists).
  Conflict,         // 409 otherwise: a stale resourceVersion, a field owned by another manager.
  Gone,             // 410: the resourceVersion asked for was compacted; relist.
  Invalid,          // 400 and 422: the object was refused as it is.
  Tls,              // The server's certificate was not trusted (or ours refused).
  Cancelled,        // The caller's cancellation ended it.
  Other,
};
std::string_view api_errc_name(ApiErrc c);

struct ApiError {
  ApiErrc code = ApiErrc::Other;
  long status = 0;      // HTTP status, 0 when there was no answer.
  std::string reason;   // The Status object's reason ("Conflict", "AlreadyExists"...).
  // "PUT /api/v1/namespaces/a/pods/x: 409 Conflict: the object has been modified...":
  // method, path, status and the server's message; never a header or a body we sent.
  std::string message;
  bool retryable() const {
    return code == ApiErrc::Unavailable || code == ApiErrc::Timeout || code == ApiErrc::TooManyRequests;
  }
};

template <class T>
using ApiResult = std::expected<T, ApiError>;

struct RetryPolicy {
  int attempts = 6;                                // Tries in all, the first included.
  std::chrono::milliseconds base{100};             // First back-off (before jitter).
  std::chrono::milliseconds cap{5000};             // Longest back-off, Retry-After included.
  std::chrono::milliseconds timeout{10000};        // Per request.
  std::chrono::milliseconds connect_timeout{3000};
};

// One event of a watch: type ADDED, MODIFIED, DELETED or BOOKMARK, and the object.
struct WatchEvent {
  std::string type;
  nlohmann::json object;
};

class Client {
 public:
  explicit Client(ClusterConfig config, RetryPolicy retry = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The requests, to a path below the server ("/api/v1/namespaces/x/pods"), with any
  // query string already in the path. Bodies are JSON; answers parsed JSON (an empty
  // answer is null).
  ApiResult<nlohmann::json> get(const std::string& path);
  ApiResult<nlohmann::json> create(const std::string& path, const nlohmann::json& body);   // POST
  ApiResult<nlohmann::json> replace(const std::string& path, const nlohmann::json& body);  // PUT
  // PATCH with application/merge-patch+json.
  ApiResult<nlohmann::json> merge_patch(const std::string& path, const nlohmann::json& patch);
  // Server-side apply: PATCH application/apply-patch+yaml with ?fieldManager=...&force=...
  ApiResult<nlohmann::json> apply(const std::string& path, const nlohmann::json& object,
                                  const std::string& field_manager, bool force = true);
  // DELETE, with an optional DeleteOptions body (gracePeriodSeconds, preconditions).
  ApiResult<nlohmann::json> remove(const std::string& path, const nlohmann::json& options = nullptr);
  // Any method; for the subresources above (binding and eviction are POSTs).
  ApiResult<nlohmann::json> request(std::string_view method, const std::string& path,
                                    const nlohmann::json* body = nullptr,
                                    std::string_view content_type = "application/json");

  // Streams the watch at `path` (which carries ?watch=1&resourceVersion=...) and calls
  // on_event for each event until the server ends the stream (returns success), on_event
  // returns false (success), `idle` passes without a byte (Timeout; servers send
  // bookmarks, so silence means a dead connection), the cancellation fires (Cancelled),
  // or it fails (Gone on 410, as status or ERROR event). Not retried: the caller
  // resumes from the last resourceVersion it saw.
  ApiResult<void> watch(const std::string& path, const std::function<bool(const WatchEvent&)>& on_event,
                        http::Cancellation* cancellation = nullptr,
                        std::chrono::milliseconds idle = std::chrono::milliseconds(60000));

  const ClusterConfig& config() const { return m_config; }
  // Requests retried after a 429, a 5xx or a failed connection, since construction.
  int retries() const;

  // For tests: replaces the sleep between retries (which otherwise really sleeps).
  void set_sleep(std::function<void(std::chrono::milliseconds)> sleep);

 private:
  struct Impl;
  ClusterConfig m_config;
  std::unique_ptr<Impl> m_impl;
};

// Percent-encodes a query value (label selectors carry '=' and ',').
std::string url_encode(std::string_view value);

}  // namespace gaia::kube
