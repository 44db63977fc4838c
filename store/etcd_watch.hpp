#pragma once
// The Watch of EtcdStore: one etcd watch (POST /v3/watch, a stream of JSON lines) kept
// open by a thread of its own, which queues the events as they arrive; next() waits for
// that queue. When the connection drops (a member killed, restarted, frozen or cut off)
// the thread connects again, to the next member when one fails, and resumes after the
// last revision it queued, so nothing is lost or repeated; only when no member has served
// it for longer than the request timeout does the watch fail (docs/store.md "## etcd").

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lib/store.hpp"
#include "net/http.hpp"

namespace gaia {

class EtcdGateway;

class EtcdWatch final : public Watch {
 public:
  // Starts following `prefix` from `from_revision` (>= 1) at once.
  EtcdWatch(std::shared_ptr<EtcdGateway> gateway, std::string prefix, int64_t from_revision);
  // Ends the stream and the thread within milliseconds, whatever they are waiting for.
  ~EtcdWatch() override;
  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  StoreResult<std::vector<Event>> next(std::chrono::milliseconds timeout) override;
  int64_t revision() const override;

 private:
  // How one connection ended, for the thread's decision to go on or give up.
  struct Outcome {
    bool served = false;                  // etcd created the watch on this connection.
    std::optional<StoreError> error;      // Why it ended, unless the watch just went idle.
    bool permanent = false;               // Connecting again cannot help.
  };
  void run();
  Outcome follow_once(int64_t next_revision);
  void fail(StoreError error);
  // Sleeps up to `duration`; false when the watch is being destroyed.
  bool pause(std::chrono::milliseconds duration);

  std::shared_ptr<EtcdGateway> m_gateway;
  const std::string m_prefix;
  http::Cancellation m_cancellation;

  mutable std::mutex m_mutex;
  std::condition_variable m_changed;
  std::vector<Event> m_queue;          // Whole revisions, oldest first.
  int64_t m_queued_revision;           // Every change up to it is queued or returned.
  int64_t m_returned_revision;         // Every change up to it is returned (revision()).
  std::optional<StoreError> m_failure; // Set once; the watch then stays failed.
  bool m_stopping = false;

  std::thread m_thread;  // Last: it starts once everything above is ready.
};

}  // namespace gaia
