#include "lib/leader.hpp"

#include <nlohmann/json.hpp>

namespace gaia {

LeaderElection::LeaderElection(Store& store, std::string key, std::string holder, std::chrono::seconds ttl)
    : m_store(store), m_key(std::move(key)), m_holder(std::move(holder)), m_ttl(ttl) {}

LeaderElection::~LeaderElection() {
  // Best effort: a runner that ends without resigning is replaced after the TTL anyway.
  if (m_lease) (void)resign();
}

StoreResult<bool> LeaderElection::try_lead(const std::string& since) {
  if (m_lease) {
    auto alive = m_store.keep_alive(m_lease);
    if (alive) {
      // The lease lives, but the key must still be ours (nobody may delete it, but a
      // store restored from a backup might hold someone else's).
      auto kv = m_store.get(m_key);
      if (!kv) return std::unexpected(kv.error());
      if (*kv && (*kv)->lease == m_lease) return true;
    } else if (alive.error().code != StoreErrc::LeaseNotFound) {
      return std::unexpected(alive.error());
    }
    m_lease = 0;  // Expired: leadership is lost; compete again below.
  }
  auto lease = m_store.grant(m_ttl);
  if (!lease) return std::unexpected(lease.error());
  nlohmann::json value{{"holder", m_holder}, {"since", since}};
  Txn t;
  t.compares.push_back(Compare{m_key, 0});
  t.puts.push_back(Put{m_key, value.dump(), *lease});
  auto r = m_store.txn(t);
  if (!r || !r->succeeded) {
    (void)m_store.revoke(*lease);
    if (!r) return std::unexpected(r.error());
    return false;
  }
  m_lease = *lease;
  return true;
}

StoreResult<void> LeaderElection::resign() {
  if (!m_lease) return {};
  int64_t lease = m_lease;
  m_lease = 0;
  auto r = m_store.revoke(lease);
  if (!r && r.error().code != StoreErrc::LeaseNotFound) return r;
  return {};
}

StoreResult<std::optional<LeaderInfo>> LeaderElection::current(Store& store, const std::string& key) {
  auto kv = store.get(key);
  if (!kv) return std::unexpected(kv.error());
  if (!*kv) return std::optional<LeaderInfo>{};
  LeaderInfo info;
  info.lease = (*kv)->lease;
  auto j = nlohmann::json::parse((*kv)->value, nullptr, false);
  if (j.is_object()) {
    info.holder = j.value("holder", "");
    info.since = j.value("since", "");
  }
  return std::optional<LeaderInfo>{info};
}

}  // namespace gaia
