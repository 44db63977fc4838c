#include "lib/store.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace gaia {

std::string StoreError::to_string() const {
  if (hint.empty()) return message;
  return fmt::format("{} (hint: {})", message, hint);
}

Diagnostic StoreError::to_diagnostic() const {
  return Diagnostic{.location = {}, .path = "", .message = message, .hint = hint};
}

StoreResult<int64_t> Store::put(std::string_view key, std::string_view value, int64_t lease) {
  Txn t;
  t.puts.push_back(Put{std::string(key), std::string(value), lease});
  auto r = txn(t);
  if (!r) return std::unexpected(r.error());
  return r->revision;
}

StoreResult<int64_t> Store::del(std::string_view key) {
  Txn t;
  t.deletes.push_back(Delete{std::string(key), false});
  auto r = txn(t);
  if (!r) return std::unexpected(r.error());
  return r->revision;
}

StoreResult<int64_t> Store::del_prefix(std::string_view prefix) {
  Txn t;
  t.deletes.push_back(Delete{std::string(prefix), true});
  auto r = txn(t);
  if (!r) return std::unexpected(r.error());
  return r->revision;
}

size_t txn_request_bytes(const Txn& txn) {
  size_t bytes = 0;
  for (const auto& c : txn.compares) bytes += c.key.size() + 24;
  for (const auto& d : txn.deletes) bytes += 2 * d.key.size() + 16;
  for (const auto& p : txn.puts) bytes += p.key.size() + p.value.size() + 24;
  return bytes;
}

bool txn_fits(const Txn& txn, const TxnLimits& limits) {
  if (limits.max_ops > 0 &&
      (txn.compares.size() > limits.max_ops || txn.puts.size() + txn.deletes.size() > limits.max_ops))
    return false;
  return limits.max_bytes == 0 || txn_request_bytes(txn) <= limits.max_bytes;
}

std::optional<StoreError> validate_txn(const Txn& txn) {
  auto invalid = [](std::string message, std::string hint = {}) {
    return StoreError{StoreErrc::InvalidArgument, std::move(message), std::move(hint), 0};
  };
  for (const auto& c : txn.compares) {
    if (c.key.empty()) return invalid("transaction compares an empty key");
    if (c.mod_revision < 0)
      return invalid(fmt::format("compare on '{}' expects mod_revision {}; revisions are >= 0",
                                 c.key, c.mod_revision));
  }
  std::vector<std::string_view> put_keys;
  for (const auto& p : txn.puts) {
    if (p.key.empty()) return invalid("transaction puts an empty key");
    if (p.lease < 0) return invalid(fmt::format("put of '{}' names lease {}", p.key, p.lease));
    put_keys.push_back(p.key);
  }
  std::sort(put_keys.begin(), put_keys.end());
  auto dup = std::adjacent_find(put_keys.begin(), put_keys.end());
  if (dup != put_keys.end())
    return invalid(fmt::format("key '{}' is put more than once in one transaction", *dup),
                   "merge the puts into one");
  for (const auto& d : txn.deletes) {
    // An empty prefix means "every key", which is allowed; an empty single key is not.
    if (d.key.empty() && !d.prefix) return invalid("transaction deletes an empty key");
    for (const auto& p : txn.puts) {
      bool overlaps = d.prefix ? p.key.starts_with(d.key) : p.key == d.key;
      if (overlaps)
        return invalid(
            fmt::format("key '{}' is both put and deleted in one transaction", p.key),
            "the outcome would depend on the order; drop the delete or the put");
    }
  }
  return std::nullopt;
}

}  // namespace gaia
