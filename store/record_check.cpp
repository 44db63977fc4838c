#include "store/record_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <string_view>

#include "lib/app_summary.hpp"
#include "lib/hash.hpp"
#include "lib/state.hpp"
#include "lib/state_apply.hpp"
#include "lib/timeline.hpp"

namespace gaia {

namespace {

using nlohmann::json;

bool starts(std::string_view key, std::string_view prefix) { return key.starts_with(prefix); }

// A decimal integer, the whole value.
std::optional<int64_t> integer(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// The problem json::parse finds, or nothing.
std::optional<std::string> json_problem(const KeyValue& kv) {
  try {
    json parsed = json::parse(kv.value);
    (void)parsed;
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

template <class T>
std::optional<std::string> decode_problem(const KeyValue& kv) {
  try {
    T decoded = json::parse(kv.value).get<T>();
    (void)decoded;
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

// "<scope>/<key>" after config/, with both parts present.
bool config_key_ok(std::string_view rest) {
  auto slash = rest.find('/');
  return slash != std::string_view::npos && slash > 0 && slash + 1 < rest.size();
}

// labels/app/<tenant>/<app>/<key> or labels/tenant/<tenant>/<key>.
bool label_key_ok(std::string_view rest) {
  size_t parts = 1;
  for (char c : rest) parts += c == '/' ? 1 : 0;
  if (rest.starts_with("app/")) return parts >= 4;
  if (rest.starts_with("tenant/")) return parts >= 3;
  return false;
}

int64_t event_seq_of(std::string_view key) {
  return integer(key.substr(std::string_view("events/").size())).value_or(0);
}

}  // namespace

std::optional<std::string> record_problem(const KeyValue& kv) {
  std::string_view key = kv.key;
  if (starts(key, k_quarantine_prefix) || starts(key, "heartbeats/")) return std::nullopt;
  // The records a ClusterState is made of decode exactly as a load decodes them.
  if (starts(key, "nodes/") || starts(key, "tenants/") || starts(key, "apps/") || starts(key, "instances/") ||
      starts(key, "settings/") || key == keys::k_seq || key == keys::k_profile) {
    ClusterState scratch;
    auto applied = apply_put(scratch, kv);
    if (applied) return std::nullopt;
    return applied.error().empty() ? std::string("cannot be decoded") : applied.error().front().message;
  }
  if (starts(key, "status/apps/")) return decode_problem<AppStatus>(kv);
  if (starts(key, keys::k_app_summaries)) {
    auto s = decode_app_summary(kv);
    if (!s) return s.error().empty() ? std::string("cannot be decoded") : s.error().front().message;
    return std::nullopt;
  }
  if (starts(key, "events/")) return decode_problem<TimelineEvent>(kv);
  if (key == keys::k_event_retention) {
    auto n = integer(kv.value);
    if (!n || *n < 1) return fmt::format("event retention '{}' is not a whole number of events", kv.value);
    return std::nullopt;
  }
  if (starts(key, "config/")) {
    if (!config_key_ok(key.substr(7))) return std::string("the key is not config/<scope>/<key>");
    return json_problem(kv);
  }
  if (starts(key, "labels/")) {
    if (!label_key_ok(key.substr(7)))
      return std::string("the key is not labels/app/<tenant>/<app>/<key> or labels/tenant/<tenant>/<key>");
    return std::nullopt;  // A label's value is plain text.
  }
  if (starts(key, "bundles/")) {
    if (auto p = json_problem(kv)) return p;
    if (content_hash(kv.value) != key.substr(8)) return std::string("its content does not match its hash");
    return std::nullopt;
  }
  // The rest of gaia's records are JSON documents: the journal, the simulated world, the
  // leader's record.
  if (starts(key, "meta/") || starts(key, "journal/") || starts(key, "sim/")) return json_problem(kv);
  return std::nullopt;
}

Result<RecordScan> find_bad_records(Store& store) {
  RecordScan scan;
  const size_t page = store.read_page_size();
  RangeRequest request = RangeRequest::prefix("", 0, page);
  for (;;) {
    auto got = store.read(request);
    if (!got) return fail(got.error().to_diagnostic());
    scan.revision = got->revision;
    scan.records += static_cast<int64_t>(got->kvs.size());
    for (const auto& kv : got->kvs)
      if (auto why = record_problem(kv)) scan.bad.push_back(BadRecord{kv.key, *why, kv.mod_revision});
    if (!got->more || got->kvs.empty()) return scan;
    request.key = got->kvs.back().key + std::string(1, '\0');
    request.revision = got->revision;
  }
}

Result<std::optional<std::string>> quarantine_record(Store& store, const BadRecord& bad) {
  auto current = store.get(bad.key);
  if (!current) return fail(current.error().to_diagnostic());
  if (!*current || (*current)->mod_revision != bad.mod_revision) return std::optional<std::string>();
  std::string target = fmt::format("{}{}@{}", k_quarantine_prefix, bad.key, bad.mod_revision);
  Txn txn;
  txn.compares.push_back({bad.key, bad.mod_revision});
  txn.puts.push_back({target, (*current)->value});
  if (bad.key == keys::k_seq) {
    // Without the sequence, the next commit would number its events from 1 and write
    // over the oldest ones: it continues from the newest event there is.
    int64_t newest = 0;
    RangeRequest request = RangeRequest::prefix("events/", 0, store.read_page_size());
    request.keys_only = true;
    for (;;) {
      auto got = store.read(request);
      if (!got) return fail(got.error().to_diagnostic());
      for (const auto& kv : got->kvs) newest = std::max(newest, event_seq_of(kv.key));
      if (!got->more || got->kvs.empty()) break;
      request.key = got->kvs.back().key + std::string(1, '\0');
      request.revision = got->revision;
    }
    txn.puts.push_back({bad.key, std::to_string(newest)});
  } else {
    txn.deletes.push_back({bad.key});
  }
  // The app summaries were counted with the record as it was: without the marker, the
  // next commit writes every summary again (lib/app_summary.hpp).
  if (starts(bad.key, "apps/") || starts(bad.key, "status/apps/") || starts(bad.key, "instances/") ||
      starts(bad.key, keys::k_app_summaries))
    txn.deletes.push_back({keys::k_apps_summary_marker});
  auto done = store.txn(txn);
  if (!done) return fail(done.error().to_diagnostic());
  if (!done->succeeded) return std::optional<std::string>();
  return std::optional<std::string>(target);
}

}  // namespace gaia
