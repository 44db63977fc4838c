#pragma once
// One leader per store, as etcd's election recipe does it: the leader owns a key
// attached to a lease it keeps alive. Whoever creates the key (a create-only put) leads;
// the others wait and try again. When the leader stops, it revokes the lease and the key
// goes at once; when it dies, the key goes when the lease expires, and a waiting runner
// takes over.
//
// Leadership is an efficiency measure, not what keeps the store consistent: every
// controller write is a compare-and-set on the timeline sequence (lib/state.hpp), so a
// runner that lost its lease mid-pass and still commits cannot undo another's work; its
// commit is re-decided on what the new leader wrote.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "lib/store.hpp"

namespace gaia {

struct LeaderInfo {
  std::string holder;  // "host:pid (op)" of the runner that holds it.
  std::string since;   // RFC 3339 time it took over, as that runner wrote it.
  int64_t lease = 0;
};

class LeaderElection {
 public:
  // `holder` names this runner in `gaia controller status` and in the waiting message.
  LeaderElection(Store& store, std::string key, std::string holder, std::chrono::seconds ttl);
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Tries once to become (or stay) leader. True when this runner leads after the call.
  // While leading, each call also keeps the lease alive, so calling it more often than
  // the TTL keeps leadership; a lease that expired meanwhile (a long pause) loses it.
  StoreResult<bool> try_lead(const std::string& since);
  // Gives leadership up now (revokes the lease), so a waiting runner need not wait for
  // the TTL.
  StoreResult<void> resign();
  bool leading() const { return m_lease != 0; }

  // Who leads now, if anyone.
  static StoreResult<std::optional<LeaderInfo>> current(Store& store, const std::string& key);

 private:
  Store& m_store;
  std::string m_key, m_holder;
  std::chrono::seconds m_ttl;
  int64_t m_lease = 0;
};

}  // namespace gaia
