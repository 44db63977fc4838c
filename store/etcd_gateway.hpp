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
#include "net/http.hpp"

namespace gaia {

// Whether a request may be sent again after it might have reached a member.
enum class Idempotence {
  Safe,    // Reads, keep-alives: repeating them changes nothing.
  Unsafe,  // Writes: repeated only when the first attempt surely never left this process.
};

// How a stream is run (EtcdGateway::stream); the defaults suit a short read of a stream
// (changes_since, a keep-alive), the rest is for a watch that runs until it is ended.
struct StreamControl {
  // No bound on the whole exchange (only on connecting); on_tick bounds silence instead.
  bool endless = false;
  // Whether failures before any result was handed on are retried with back-off here. A
  // watch retries by itself, so it can be ended between attempts.
  bool retry = true;
  // Passed to the request (http::Request::on_tick, ::cancellation).
  std::function<bool()> on_tick;
  http::Cancellation* cancellation = nullptr;
  // Kept set to the member the stream goes to (also while it runs, for on_tick), for
  // messages and failover.
  std::string* endpoint = nullptr;
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
                           Idempotence idempotence, const ResultHandler& on_result,
                           const StreamControl& control = {});

  // The member requests go to first right now ("http://127.0.0.1:2379"), for messages.
  std::string current_endpoint() const;
  // Moves later requests off `endpoint` when it is the first member right now: it timed
  // out or dropped a stream, and the next member may serve better.
  void avoid(const std::string& endpoint);
  // Whether `endpoint` itself serves a read within the request timeout (a count of one
  // key, once, with the token): how a silent watch checks the member it listens to. An
  // answer refusing the token counts, as the member did answer.
  StoreResult<void> check(const std::string& endpoint, http::Cancellation* cancellation);
  // Maps an error etcd reported inside an answer (a watch's cancel_reason) the way
  // failed requests are mapped.
  StoreError explain(const std::string& message, const std::string& endpoint,
                     std::string_view path) const;
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

// A key-value as the gateway sends it (base64 key and value, int64s as strings); fails
// naming `endpoint` when the key or value is not base64.
StoreResult<KeyValue> decode_kv(const nlohmann::json& kv, std::string_view endpoint);

}  // namespace gaia
