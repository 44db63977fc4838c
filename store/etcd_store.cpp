#include "store/etcd_store.hpp"
#include "store/store_errors.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "net/base64.hpp"
#include "store/etcd_gateway.hpp"
#include "store/etcd_watch.hpp"

namespace gaia {

using nlohmann::json;

namespace {

// etcd has no empty key; "\0" is the smallest key, and as a range end it means "to the
// end", so the range ["\0", "\0") is every key.
const std::string kZeroKey(1, '\0');

std::string b64(std::string_view bytes) { return base64_encode(bytes); }

// int64 fields go to the gateway as JSON strings, the form it sends them in.
std::string str(int64_t n) { return std::to_string(n); }

// The request fields selecting every key that starts with `prefix`.
json prefix_range(std::string_view prefix) {
  return json{{"key", b64(prefix.empty() ? kZeroKey : prefix)},
              {"range_end", b64(prefix_range_end(prefix))}};
}

int64_t header_revision(const json& answer) {
  return answer.contains("header") ? json_int64(answer["header"], "revision") : 0;
}

StoreResult<std::vector<KeyValue>> decode_kvs(const json& answer, const EtcdGateway& gateway) {
  std::vector<KeyValue> out;
  if (!answer.contains("kvs")) return out;
  for (const auto& kv : answer["kvs"]) {
    auto decoded = decode_kv(kv, gateway.current_endpoint());
    if (!decoded) return std::unexpected(decoded.error());
    out.push_back(std::move(*decoded));
  }
  return out;
}

const char* const kCompactedHint = "re-read the current state and follow changes from its revision";

}  // namespace

EtcdStore::EtcdStore(std::shared_ptr<EtcdGateway> gateway, EtcdOptions options)
    : m_gateway(std::move(gateway)), m_options(std::move(options)) {}

EtcdStore::~EtcdStore() = default;

StoreResult<std::unique_ptr<EtcdStore>> EtcdStore::open(EtcdOptions options) {
  auto gateway = EtcdGateway::create(options);
  if (!gateway) return std::unexpected(gateway.error());
  if (auto connected = (*gateway)->connect(); !connected) return std::unexpected(connected.error());
  // The gateway keeps the normalised options; the store reads its limits from there.
  EtcdOptions normalised = (*gateway)->options();
  return std::unique_ptr<EtcdStore>(
      new EtcdStore(std::shared_ptr<EtcdGateway>(std::move(*gateway)), std::move(normalised)));
}

StoreError EtcdStore::compacted(int64_t revision, StoreError fallback) {
  auto oldest = oldest_revision();
  if (!oldest) return fallback;
  return store_error(StoreErrc::Compacted,
               fmt::format("revision {} has been compacted; oldest available is {}", revision, *oldest),
               kCompactedHint, *oldest);
}

StoreResult<RangeResponse> EtcdStore::read(const RangeRequest& request) {
  if (request.revision < 0)
    return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                 fmt::format("cannot read at revision {}; revisions are >= 0", request.revision)));
  // etcd refuses an empty key. No key is empty, so the single key "" names nothing: the
  // request still goes out, as a count of key "\0", so a bad revision fails as for any
  // key. As the start of a range, "\0" (the smallest key) means the same as "".
  bool nothing = request.key.empty() && request.range_end.empty();
  json range = {{"key", b64(request.key.empty() ? kZeroKey : request.key)}};
  if (!request.range_end.empty()) range["range_end"] = b64(request.range_end);
  if (request.revision > 0) range["revision"] = str(request.revision);
  if (request.limit > 0) range["limit"] = str(static_cast<int64_t>(request.limit));
  if (request.keys_only) range["keys_only"] = true;
  if (request.count_only || nothing) range["count_only"] = true;

  StoreResult<json> answer;
  if (request.revision > 1) {
    // etcd compacting at C still serves reads at C, but gaia counts C as discarded (its
    // deletes are gone from the history, see compact()), so a read at R must fail when
    // R - 1 is compacted in etcd's terms. A read-only txn asks both at once, atomically
    // and without a raft round: the range, and a one-key look at R - 1 over the same
    // keys (the same permissions).
    json guard = {{"key", range["key"]}, {"revision", str(request.revision - 1)},
                  {"limit", "1"}, {"keys_only", true}};
    if (range.contains("range_end")) guard["range_end"] = range["range_end"];
    json body = {{"success", json::array({json{{"request_range", range}}, json{{"request_range", guard}}})}};
    auto txn = m_gateway->call("/v3/kv/txn", body, Idempotence::Safe);
    if (txn) {
      const json& responses = txn->value("responses", json::array());
      if (responses.empty() || !responses[0].is_object() || !responses[0].contains("response_range"))
        return std::unexpected(store_error(StoreErrc::Io,
                                     fmt::format("etcd at {} answered a read without its range",
                                                 m_gateway->current_endpoint())));
      answer = responses[0]["response_range"];
    } else {
      answer = std::unexpected(txn.error());
    }
  } else {
    answer = m_gateway->call("/v3/kv/range", range, Idempotence::Safe);
  }
  if (!answer) {
    if (answer.error().code == StoreErrc::Compacted)
      return std::unexpected(compacted(request.revision, answer.error()));
    return std::unexpected(answer.error());
  }
  RangeResponse out;
  out.revision = request.revision > 0 ? request.revision : header_revision(*answer);
  if (nothing) return out;
  auto kvs = decode_kvs(*answer, *m_gateway);
  if (!kvs) return std::unexpected(kvs.error());
  out.kvs = std::move(*kvs);
  out.more = answer->value("more", false);
  out.count = json_int64(*answer, "count");
  return out;
}

StoreResult<int64_t> EtcdStore::revision() {
  // Every answer carries the store revision; counting one key is the cheapest question.
  auto answer = m_gateway->call("/v3/kv/range", json{{"key", b64(kZeroKey)}, {"count_only", true}},
                                Idempotence::Safe);
  if (!answer) return std::unexpected(answer.error());
  return header_revision(*answer);
}

StoreResult<TxnResult> EtcdStore::txn(const Txn& txn) {
  if (auto invalid = validate_txn(txn)) return std::unexpected(std::move(*invalid));
  // A Store transaction is one atomic change; splitting it to fit etcd's limits would
  // let others see (and a crash leave) half of it, so it is refused instead.
  const std::string split_hint =
      "a transaction is atomic, so gaia does not split it: change fewer keys at once, or raise "
      "etcd's --max-txn-ops together with the store's max_txn_ops";
  if (txn.compares.size() > m_options.max_txn_ops)
    return std::unexpected(store_error(StoreErrc::TooLarge,
                                 fmt::format("transaction has {} compares; etcd allows at most {} "
                                             "in one transaction",
                                             txn.compares.size(), m_options.max_txn_ops),
                                 split_hint));
  size_t operations = txn.puts.size() + txn.deletes.size();
  if (operations > m_options.max_txn_ops)
    return std::unexpected(store_error(StoreErrc::TooLarge,
                                 fmt::format("transaction has {} operations (puts and deletes); "
                                             "etcd allows at most {} in one transaction",
                                             operations, m_options.max_txn_ops),
                                 split_hint));
  if (size_t bytes = txn_request_bytes(txn); bytes > m_options.max_request_bytes)
    return std::unexpected(store_error(StoreErrc::TooLarge,
                                 fmt::format("transaction is about {} bytes; etcd accepts at most {} "
                                             "in one request",
                                             bytes, m_options.max_request_bytes),
                                 "write fewer or smaller values at once, or raise etcd's "
                                 "--max-request-bytes together with the store's max_request_bytes"));

  json compares = json::array();
  for (const auto& c : txn.compares) {
    if (c.mod_revision == 0) {
      // "Must not exist": a missing key has create_revision 0, and an existing one never
      // has, whatever happened to it before.
      compares.push_back({{"key", b64(c.key)}, {"target", "CREATE"}, {"result", "EQUAL"},
                          {"create_revision", "0"}});
    } else {
      compares.push_back({{"key", b64(c.key)}, {"target", "MOD"}, {"result", "EQUAL"},
                          {"mod_revision", str(c.mod_revision)}});
    }
  }
  // Deletes go first, then puts, in request order: etcd applies operations in order, so
  // events inside the revision come out as the Store promises.
  json success = json::array();
  for (const auto& d : txn.deletes) {
    json request = d.prefix ? prefix_range(d.key) : json{{"key", b64(d.key)}};
    success.push_back({{"request_delete_range", std::move(request)}});
  }
  for (const auto& p : txn.puts) {
    json request = {{"key", b64(p.key)}, {"value", b64(p.value)}};
    // A put without a lease detaches the key from any lease, as the Store wants.
    if (p.lease != 0) request["lease"] = str(p.lease);
    success.push_back({{"request_put", std::move(request)}});
  }
  json body = {{"compare", std::move(compares)}, {"success", std::move(success)}};
  auto answer = m_gateway->call("/v3/kv/txn", body, Idempotence::Unsafe);
  if (!answer) {
    if (answer.error().code == StoreErrc::LeaseNotFound) {
      auto leased = std::find_if(txn.puts.begin(), txn.puts.end(), [](const Put& p) { return p.lease != 0; });
      if (leased != txn.puts.end())
        return std::unexpected(store_error(StoreErrc::LeaseNotFound,
                                     fmt::format("cannot attach '{}' to lease {}: the lease has "
                                                 "expired or does not exist",
                                                 leased->key, leased->lease),
                                     "grant a new lease and retry"));
    }
    return std::unexpected(answer.error());
  }
  return TxnResult{answer->value("succeeded", false), header_revision(*answer)};
}

StoreResult<std::vector<Event>> EtcdStore::changes_since(int64_t from_revision,
                                                         std::string_view prefix, size_t limit) {
  // etcd reads start_revision 0 as "from now on"; the Store means "from the beginning",
  // and revision 1 is the first etcd has.
  int64_t start = std::max<int64_t>(from_revision, 1);
  // The watch starts one revision early, and that revision's events are dropped: etcd
  // answers "compacted" only for a start *before* its compact revision C, but it has
  // already dropped the deletes made at C, so gaia counts C as discarded too (oldest
  // available = C + 1, see compact()) and needs etcd's verdict on start - 1.
  int64_t watch_start = std::max<int64_t>(start - 1, 1);
  // The watch covers every key, not just the prefix: a watch never says that history is
  // exhausted, but the last event of the whole store is at the revision current when the
  // watch was created (every revision has events), so reading up to it is reading
  // everything. Other keys' events are dropped here.
  json create = {{"create_request",
                  {{"key", b64(kZeroKey)}, {"range_end", b64(kZeroKey)},
                   {"start_revision", str(watch_start)}}}};
  std::vector<Event> events;
  int64_t target = 0;
  auto done = m_gateway->stream("/v3/watch", create, Idempotence::Safe,
                                [&](const json& result) -> StoreResult<bool> {
    if (int64_t compacted = json_int64(result, "compact_revision"); compacted > 0)
      return std::unexpected(store_error(StoreErrc::Compacted,
                                   fmt::format("revision {} has been compacted; oldest available is {}",
                                               from_revision, compacted + 1),
                                   kCompactedHint, compacted + 1));
    if (result.value("created", false)) {
      target = header_revision(result);
      // Nothing to read when no revision at or after `start` exists yet.
      if (!result.value("canceled", false)) return target >= start;
    }
    if (result.value("canceled", false))
      return std::unexpected(store_error(StoreErrc::Io,
                                   fmt::format("etcd at {} cancelled the watch: {}",
                                               m_gateway->current_endpoint(),
                                               result.value("cancel_reason", std::string("no reason given")))));
    if (!result.contains("events")) return true;
    int64_t last = 0;
    for (const auto& e : result["events"]) {
      auto kv = decode_kv(e.value("kv", json::object()), m_gateway->current_endpoint());
      if (!kv) return std::unexpected(kv.error());
      last = kv->mod_revision;
      if (kv->mod_revision < start || !kv->key.starts_with(prefix)) continue;
      EventType type = e.value("type", std::string("PUT")) == "DELETE" ? EventType::Delete : EventType::Put;
      events.push_back(Event{type, std::move(*kv)});
    }
    // etcd sends the events of one revision in one message (a watcher catching up gets
    // whole revisions per batch, a synced one each revision as it commits), so stopping
    // after a message never splits a revision.
    if (limit > 0 && events.size() >= limit) {
      int64_t cut = events[limit - 1].revision();
      std::erase_if(events, [&](const Event& e) { return e.revision() > cut; });
      return false;
    }
    return last < target;
  });
  if (!done) return std::unexpected(done.error());
  return events;
}

StoreResult<std::unique_ptr<Watch>> EtcdStore::watch(std::string_view prefix, int64_t from_revision) {
  if (from_revision < 1)
    return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                 fmt::format("a watch starts at revision {}; revisions start at 1", from_revision)));
  return std::unique_ptr<Watch>(std::make_unique<EtcdWatch>(m_gateway, std::string(prefix), from_revision));
}

StoreResult<int64_t> EtcdStore::oldest_revision() {
  int64_t oldest = 1;
  json create = {{"create_request",
                  {{"key", b64(kZeroKey)}, {"range_end", b64(kZeroKey)}, {"start_revision", "1"}}}};
  auto done = m_gateway->stream("/v3/watch", create, Idempotence::Safe,
                                [&](const json& result) -> StoreResult<bool> {
    if (int64_t compacted = json_int64(result, "compact_revision"); compacted > 0) {
      oldest = compacted + 1;
      return false;
    }
    // An empty store (revision 1) has nothing to send; otherwise the first events prove
    // that nothing was compacted.
    if (result.value("created", false)) return header_revision(result) > 1;
    return false;
  });
  if (!done) return std::unexpected(done.error());
  return oldest;
}

StoreResult<void> EtcdStore::compact(int64_t revision) {
  // etcd compacting at C keeps the puts made at C but drops its deletes, so C would be
  // half there. Compacting at revision - 1 keeps `revision` whole, as the Store promises
  // (changes_since(revision) keeps working), and changes_since counts etcd's compact
  // revision as discarded to match.
  auto current = this->revision();
  if (!current) return std::unexpected(current.error());
  if (revision > *current)
    return std::unexpected(store_error(StoreErrc::FutureRevision,
                                 fmt::format("cannot compact to revision {}: the current revision is {}",
                                             revision, *current)));
  // Before revision 2 there is nothing to discard (revision 1 is etcd's empty start);
  // only asking for less than what is already gone is an error.
  if (revision <= 1) {
    auto oldest = oldest_revision();
    if (!oldest) return std::unexpected(oldest.error());
    if (revision >= *oldest || revision == 1) return {};
    return std::unexpected(store_error(StoreErrc::Compacted,
                                 fmt::format("revision {} has been compacted; oldest available is {}",
                                             revision, *oldest),
                                 "", *oldest));
  }
  auto answer = m_gateway->call("/v3/kv/compaction", json{{"revision", str(revision - 1)}},
                                Idempotence::Unsafe);
  if (answer) return {};
  StoreError failure = answer.error();
  if (failure.code == StoreErrc::Compacted) {
    auto oldest = oldest_revision();
    if (!oldest) return std::unexpected(failure);
    // Compacting to where history already starts changes nothing, which is no error.
    if (revision == *oldest) return {};
    return std::unexpected(store_error(StoreErrc::Compacted,
                                 fmt::format("revision {} has been compacted; oldest available is {}",
                                             revision, *oldest),
                                 "", *oldest));
  }
  return std::unexpected(failure);
}

StoreResult<int64_t> EtcdStore::grant(std::chrono::seconds ttl) {
  if (ttl.count() <= 0)
    return std::unexpected(store_error(StoreErrc::InvalidArgument,
                                 fmt::format("lease TTL must be positive, got {}s", ttl.count())));
  auto answer = m_gateway->call("/v3/lease/grant", json{{"TTL", str(ttl.count())}}, Idempotence::Unsafe);
  if (!answer) return std::unexpected(answer.error());
  int64_t id = json_int64(*answer, "ID");
  std::string refused = answer->value("error", std::string());
  if (id <= 0 || !refused.empty())
    return std::unexpected(store_error(StoreErrc::Io,
                                 fmt::format("etcd at {} granted no lease: {}", m_gateway->current_endpoint(),
                                             refused.empty() ? "the answer has no lease ID" : refused)));
  return id;
}


StoreResult<void> EtcdStore::keep_alive(int64_t lease) {
  std::optional<int64_t> ttl;
  auto done = m_gateway->stream("/v3/lease/keepalive", json{{"ID", str(lease)}}, Idempotence::Safe,
                                [&](const json& result) -> StoreResult<bool> {
    ttl = json_int64(result, "TTL");
    return false;
  });
  if (!done) return std::unexpected(done.error());
  if (!ttl)
    return std::unexpected(store_error(StoreErrc::Io,
                                 fmt::format("etcd at {} ended the keep-alive of lease {} without an "
                                             "answer",
                                             m_gateway->current_endpoint(), lease)));
  // etcd answers a renewal of an unknown lease with TTL 0 rather than an error.
  if (*ttl <= 0) return std::unexpected(lease_not_found(lease));
  return {};
}

StoreResult<void> EtcdStore::revoke(int64_t lease) {
  auto answer = m_gateway->call("/v3/lease/revoke", json{{"ID", str(lease)}}, Idempotence::Unsafe);
  if (!answer) {
    if (answer.error().code == StoreErrc::LeaseNotFound) return std::unexpected(lease_not_found(lease));
    return std::unexpected(answer.error());
  }
  return {};
}

}  // namespace gaia
