#pragma once
// The transport under EtcdStore: POSTs JSON to etcd's gateway on one member of the
// cluster, moves to the next member when one cannot be reached, authenticates and
// refreshes the token, retries what is safe to retry, and turns etcd's errors into
// StoreErrors that name the member (never the password or the token).

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "lib/store.hpp"
#include "store/etcd_store.hpp"
#include "store/http.hpp"

namespace gaia {

// Whether a request may be sent again after it might have reached a member.
enum class Idempotence {
  Safe,    // Reads, keep-alives: repeating them changes nothing.
  Unsafe,  // Writes: repeated only when the first attempt surely never left this process.
};

class EtcdGateway {
 public:
  // Validates the options (at least one endpoint, each an http(s) URL) without any I/O.
  static StoreResult<std::unique_ptr<EtcdGateway>> create(EtcdOptions options);

  // Fetches a token when a username is set, otherwise checks that a member answers.
  StoreResult<void> connect();

  // POSTs `body` to `path` ("/v3/kv/range") and returns the parsed answer.
  StoreResult<nlohmann::json> call(std::string_view path, const nlohmann::json& body,
                                   Idempotence idempotence);

  // POSTs `body` to a streaming endpoint (/v3/watch, /v3/lease/keepalive), whose answer
  // is one JSON object per line, each {"result": ...} or {"error": ...}. Hands every
  // result to `on_result` until it returns false (done) or an error (which is returned).
  // A watch the server cancels because the token expired is restarted once with a new
  // token, before `on_result` has seen anything of it.
  using ResultHandler = std::function<StoreResult<bool>(const nlohmann::json& result)>;
  StoreResult<void> stream(std::string_view path, const nlohmann::json& body,
                           Idempotence idempotence, const ResultHandler& on_result);

  // The member requests go to first right now ("http://127.0.0.1:2379"), for messages.
  std::string current_endpoint() const;
  const EtcdOptions& options() const { return m_options; }

 private:
  explicit EtcdGateway(EtcdOptions options);

  // What one attempt on one member came to.
  struct Attempt {
    std::expected<http::Response, http::HttpError> result;
    std::string endpoint;
  };
  // Sends to the current member, moving on to the next while members cannot be reached;
  // when none can, the error lists each member and why.
  // `trying`, when given, names the member being tried, for a stream's line handler.
  StoreResult<Attempt> send(std::string_view path, const std::string& body,
                            const http::Request& shape, bool with_token,
                            std::string* trying = nullptr);
  // Maps a failed attempt to a StoreError, and says whether it may be retried.
  StoreError map_failure(const Attempt& attempt, std::string_view path, bool* retryable,
                         bool* token_invalid) const;
  // Maps etcd's error (gRPC code and message) to a StoreError naming the member.
  StoreError map_etcd_error(int code, const std::string& message, const std::string& endpoint,
                            std::string_view path, bool* retryable, bool* token_invalid) const;
  StoreResult<void> authenticate(std::string_view stale_token);
  std::string token() const;
  void sleep_before_retry(int attempt) const;
  void move_to_next_endpoint(size_t from);

  EtcdOptions m_options;
  http::Client m_client;
  std::atomic<size_t> m_current{0};
  mutable std::mutex m_token_mutex;
  std::string m_token;
};

// etcd's gateway sends int64 fields as JSON strings ("revision": "12"), omits them when
// zero, and some proxies re-encode them as numbers; this reads all three forms.
int64_t json_int64(const nlohmann::json& object, std::string_view field);

}  // namespace gaia
