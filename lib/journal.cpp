#include "lib/journal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

namespace gaia {

namespace {

using nlohmann::json;

StoreError invalid(std::string message, std::string hint = {}) {
  return StoreError{StoreErrc::InvalidArgument, std::move(message), std::move(hint), 0};
}

std::string chunk_key(const std::string& id, size_t k) { return fmt::format("{}{}/{:06d}", k_journal_prefix, id, k); }

// A chunk is stored as JSON: {"puts": [[key, value, lease]...], "deletes": [[key, prefix]...]}.
json encode(const Txn& chunk) {
  json puts = json::array(), deletes = json::array();
  for (const auto& p : chunk.puts) puts.push_back(json::array({p.key, p.value, p.lease}));
  for (const auto& d : chunk.deletes) deletes.push_back(json::array({d.key, d.prefix}));
  return json{{"puts", puts}, {"deletes", deletes}};
}

std::optional<Txn> decode(const std::string& text) {
  try {
    json j = json::parse(text);
    Txn t;
    for (const auto& p : j.at("puts")) t.puts.push_back(Put{p.at(0), p.at(1), p.at(2)});
    for (const auto& d : j.at("deletes")) t.deletes.push_back(Delete{d.at(0), d.at(1)});
    return t;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Splits the operations of `ops` into transactions that fit `limits` with `reserve_ops`
// operations and `reserve_bytes` bytes left for the guard each one carries. Deletes come
// first, as inside one transaction.
StoreResult<std::vector<Txn>> split(const Txn& ops, const TxnLimits& limits, size_t reserve_ops, size_t reserve_bytes) {
  const size_t max_ops = limits.max_ops ? limits.max_ops - std::min(limits.max_ops - 1, reserve_ops) : 0;
  // A chunk travels twice: as the value of its journal key (JSON, with escaping) and as
  // the transaction that applies it, so half the bound leaves room for the escaping.
  const size_t max_bytes = limits.max_bytes ? (limits.max_bytes - std::min(limits.max_bytes / 2, reserve_bytes)) / 2 : 0;
  std::vector<Txn> out(1);
  auto room = [&](const Txn& t, size_t add_bytes) {
    bool ops_ok = max_ops == 0 || t.puts.size() + t.deletes.size() + 1 <= max_ops;
    bool bytes_ok = max_bytes == 0 || txn_request_bytes(t) + add_bytes <= max_bytes;
    return ops_ok && bytes_ok;
  };
  for (const auto& d : ops.deletes) {
    if (!room(out.back(), 2 * d.key.size() + 16)) out.emplace_back();
    out.back().deletes.push_back(d);
  }
  for (const auto& p : ops.puts) {
    size_t bytes = p.key.size() + p.value.size() + 24;
    if (max_bytes && bytes > max_bytes)
      return std::unexpected(invalid(fmt::format("the value of '{}' is {} bytes, more than one transaction of this store "
                                                 "can carry even on its own ({} bytes)",
                                                 p.key, p.value.size(), max_bytes),
                                     "raise the server's request size limit (etcd: --max-request-bytes) together "
                                     "with the store's"));
    if (!room(out.back(), bytes)) out.emplace_back();
    out.back().puts.push_back(p);
  }
  if (out.back().puts.empty() && out.back().deletes.empty()) out.pop_back();
  return out;
}

// Applies the chunks of the journal recorded at `journal_rev` from `from` on, then
// removes the journal. Each step is guarded by the journal still being that one, so a
// late helper does nothing once another finished.
StoreResult<void> apply_chunks(Store& store, const std::string& id, size_t chunks, int64_t journal_rev, size_t from,
                               std::optional<size_t> stop_after) {
  for (size_t k = from; k < chunks; ++k) {
    if (stop_after && k >= *stop_after) return {};
    auto kv = store.get(chunk_key(id, k));
    if (!kv) return std::unexpected(kv.error());
    if (!*kv) {
      // Gone: whoever finished the journal deleted its chunks. Nothing left to do.
      return {};
    }
    auto chunk = decode((*kv)->value);
    if (!chunk)
      return std::unexpected(StoreError{StoreErrc::Corrupt, fmt::format("journal chunk {} is not readable", (*kv)->key),
                                        "the store was changed by something other than gaia", 0});
    chunk->compares.push_back(Compare{k_journal_key, journal_rev});
    auto r = store.txn(*chunk);
    if (!r) return std::unexpected(r.error());
    if (!r->succeeded) return {};  // Finished by someone else meanwhile.
  }
  Txn done;
  done.compares.push_back(Compare{k_journal_key, journal_rev});
  done.deletes.push_back(Delete{k_journal_key, false});
  done.deletes.push_back(Delete{std::string(k_journal_prefix) + id + "/", true});
  auto r = store.txn(done);
  if (!r) return std::unexpected(r.error());
  return {};
}

}  // namespace

StoreResult<bool> commit_journaled(Store& store, const Txn& txn, const TxnLimits& limits, const std::string& id,
                                   std::optional<size_t> stop_after_chunks, int64_t* point_revision) {
  if (auto bad = validate_txn(txn)) return std::unexpected(*bad);
  // The puts of compared keys go into the commit point itself: they are what tells
  // every other writer (comparing the same keys) that the store changed.
  std::set<std::string> compared;
  for (const auto& c : txn.compares) compared.insert(c.key);
  Txn point;
  point.compares = txn.compares;
  point.compares.push_back(Compare{k_journal_key, 0});
  Txn rest;
  rest.deletes = txn.deletes;
  for (const auto& p : txn.puts) (compared.count(p.key) ? point.puts : rest.puts).push_back(p);
  auto chunks = split(rest, limits, 1, 256);
  if (!chunks) return std::unexpected(chunks.error());

  // 1. The chunks, where nobody reads them until the commit point names them.
  for (size_t k = 0; k < chunks->size(); ++k) {
    Txn write;
    write.puts.push_back(Put{chunk_key(id, k), encode((*chunks)[k]).dump(), 0});
    auto r = store.txn(write);
    if (!r) return std::unexpected(r.error());
  }
  auto forget = [&] {
    // Best effort: unreferenced chunks change nothing, they only take room.
    (void)store.del_prefix(std::string(k_journal_prefix) + id + "/");
  };
  // 2. The commit point.
  point.puts.push_back(Put{k_journal_key, json{{"id", id}, {"chunks", chunks->size()}}.dump(), 0});
  if (!txn_fits(point, limits)) {
    forget();
    return std::unexpected(invalid("the compares of a journaled commit do not fit one transaction"));
  }
  auto committed = store.txn(point);
  if (!committed) {
    forget();
    return std::unexpected(committed.error());
  }
  if (!committed->succeeded) {
    forget();
    return false;
  }
  if (point_revision) *point_revision = committed->revision;
  // 3 and 4. From here the change is decided: an error leaves it to the next reader.
  if (auto r = apply_chunks(store, id, chunks->size(), committed->revision, 0, stop_after_chunks); !r) {
    StoreError e = r.error();
    e.message = "the change is recorded but not all of it is applied yet: " + e.message;
    e.hint = "the next gaia command against this store completes it";
    return std::unexpected(e);
  }
  return true;
}

StoreResult<bool> roll_forward(Store& store) {
  auto kv = store.get(k_journal_key);
  if (!kv) return std::unexpected(kv.error());
  if (!*kv) return false;
  std::string id;
  size_t chunks = 0;
  try {
    json j = json::parse((*kv)->value);
    id = j.at("id").get<std::string>();
    chunks = j.at("chunks").get<size_t>();
  } catch (const std::exception&) {
    return std::unexpected(StoreError{StoreErrc::Corrupt, fmt::format("{} is not readable", k_journal_key),
                                      "the store was changed by something other than gaia", 0});
  }
  if (auto r = apply_chunks(store, id, chunks, (*kv)->mod_revision, 0, std::nullopt); !r)
    return std::unexpected(r.error());
  return true;
}

StoreResult<bool> commit_any_size(Store& store, const Txn& txn, const std::string& id, int64_t* revision,
                                  int64_t* compared_revision) {
  TxnLimits limits = store.txn_limits();
  if (revision) *revision = 0;
  if (compared_revision) *compared_revision = 0;
  if (txn_fits(txn, limits)) {
    // A change that fits still respects a journal in progress: the caller's compares
    // guard against that (the commit point moved the keys they compare).
    auto r = store.txn(txn);
    if (!r) return std::unexpected(r.error());
    if (revision && r->succeeded) *revision = r->revision;
    if (compared_revision && r->succeeded) *compared_revision = r->revision;
    return r->succeeded;
  }
  return commit_journaled(store, txn, limits, id, std::nullopt, compared_revision);
}

}  // namespace gaia
