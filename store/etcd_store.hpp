#pragma once
// The Store on an etcd v3 cluster, spoken to through etcd's JSON gateway (grpc-gateway,
// /v3/... over HTTP or HTTPS) with libcurl, so gaia needs no gRPC stack. Every Store call
// maps onto one gateway request (docs/store.md "## etcd" has the table): read is a range,
// txn is a txn with mod_revision compares, changes_since reads a watch up to the current
// revision, watch keeps one open (store/etcd_watch.hpp), leases are etcd leases.
// Revisions are etcd's own, so they agree with etcdctl; a fresh etcd starts at revision
// 1, not 0.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "lib/store.hpp"

namespace gaia {

class EtcdGateway;  // store/etcd_gateway.hpp: endpoints, failover, auth, retries.

struct EtcdOptions {
  // Client URLs of the cluster's members ("http://10.0.0.1:2379"; a bare "host:port"
  // gets https:// when a CA file is set, http:// otherwise). Requests go to one member
  // and move to the next when it cannot be reached.
  std::vector<std::string> endpoints;
  // Bounds each request to a member, from connecting to the end of the answer. A member
  // that is up but does not answer in time fails the call with StoreErrc::Timeout.
  std::chrono::milliseconds request_timeout{5000};
  // Bounds connecting alone (at most request_timeout), so a dead member's address that
  // drops packets costs this long before the next member is tried.
  std::chrono::milliseconds connect_timeout{2000};
  // Requests that are safe to repeat (reads, keep-alives) are retried this many times,
  // with jittered exponential back-off, when the cluster is briefly unable to serve
  // (no leader, a leader change, too many requests, a dropped connection).
  int read_retries = 3;
  std::chrono::milliseconds retry_backoff{50};
  // A watch that hears nothing for this long checks that its member still serves (one
  // cheap read there), and moves to another member when it does not, so a watch left on
  // a member that froze or lost its quorum does not wait forever.
  std::chrono::milliseconds watch_idle{10000};

  // etcd authentication: with a username, the store gets a token from
  // /v3/auth/authenticate and sends it with every request, fetching a new one when etcd
  // reports it invalid (tokens expire). The password is never part of a message.
  std::string username;
  std::string password;

  // TLS (https:// endpoints): CA bundle, client certificate and key (PEM files).
  std::filesystem::path ca_file;
  std::filesystem::path cert_file;
  std::filesystem::path key_file;
  // Skips verifying the server's certificate; never on unless asked for.
  bool insecure_skip_tls_verify = false;

  // The server's limits on one transaction (etcd's --max-txn-ops, default 128, which
  // bounds the compares and the operations separately, and --max-request-bytes, default
  // 1.5 MiB). A Store transaction is atomic, so one that exceeds them is refused with
  // StoreErrc::TooLarge before it is sent, never split. Raise these only
  // together with the server's flags.
  size_t max_txn_ops = 128;
  size_t max_request_bytes = 1572864;
};

class EtcdStore final : public Store {
 public:
  // Checks the options and contacts the cluster (authenticating when a username is
  // set), so a wrong address, certificate or password fails here, clearly.
  static StoreResult<std::unique_ptr<EtcdStore>> open(EtcdOptions options);
  ~EtcdStore() override;
  EtcdStore(const EtcdStore&) = delete;
  EtcdStore& operator=(const EtcdStore&) = delete;

  StoreResult<RangeResponse> read(const RangeRequest& request) override;
  StoreResult<int64_t> revision() override;
  StoreResult<TxnResult> txn(const Txn& txn) override;
  // etcd builds a whole range answer in memory, then the gateway turns it into JSON:
  // state of tens of thousands of keys is read in pages.
  size_t read_page_size() const override { return 5000; }
  TxnLimits txn_limits() const override { return {m_options.max_txn_ops, m_options.max_request_bytes}; }
  StoreResult<std::vector<Event>> changes_since(int64_t from_revision, std::string_view prefix,
                                                size_t limit = 0) override;
  // A native etcd watch on a thread of its own, which reconnects (to other members too)
  // from where it was when a connection drops (store/etcd_watch.hpp). The watch shares
  // this store's connection settings and may outlive it.
  StoreResult<std::unique_ptr<Watch>> watch(std::string_view prefix, int64_t from_revision) override;
  StoreResult<void> compact(int64_t revision) override;
  StoreResult<int64_t> grant(std::chrono::seconds ttl) override;
  StoreResult<void> keep_alive(int64_t lease) override;
  StoreResult<void> revoke(int64_t lease) override;

 private:
  EtcdStore(std::shared_ptr<EtcdGateway> gateway, EtcdOptions options);
  // The oldest revision a watch can still start at (etcd's compact revision), learnt
  // from a watch that starts at revision 1.
  StoreResult<int64_t> oldest_revision();
  // The Compacted error for a read or watch of `revision`, with the oldest revision.
  StoreError compacted(int64_t revision, StoreError fallback);

  // Shared with the watches, which may outlive the store.
  std::shared_ptr<EtcdGateway> m_gateway;
  EtcdOptions m_options;
};

}  // namespace gaia
