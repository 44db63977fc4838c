#include "lib/state_apply.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "lib/app_summary.hpp"
#include "lib/codec.hpp"
#include "lib/huge_pages.hpp"
#include "lib/instance_scan.hpp"
#include "lib/journal.hpp"

namespace gaia {

namespace {

constexpr std::string_view k_nodes = "nodes/";
constexpr std::string_view k_tenants = "tenants/";
constexpr std::string_view k_apps = "apps/";
constexpr std::string_view k_app_status = "status/apps/";
constexpr std::string_view k_instances = "instances/";
constexpr std::string_view k_settings = "settings/";
constexpr std::string_view k_heartbeats = "heartbeats/";

Diagnostic corrupt(std::string_view key, const std::exception& e) {
  return Diagnostic{{},
                    std::string(key),
                    fmt::format("corrupt record in the store: {}", e.what()),
                    "`gaia store check --quarantine` sets it aside so every command works again (its bytes "
                    "are kept under quarantine/); or bring back a backup with `gaia store restore FILE`"};
}

// Inserts or replaces `value` in `list`, kept sorted by `name_of`. A full load feeds keys
// in order, so the common case appends.
template <class T, class Name>
void upsert(std::vector<T>& list, T value, const std::string& name, Name name_of) {
  if (list.empty() || name_of(list.back()) < name) {
    list.push_back(std::move(value));
    return;
  }
  auto it = std::lower_bound(list.begin(), list.end(), name,
                             [&](const T& x, const std::string& n) { return name_of(x) < n; });
  if (it != list.end() && name_of(*it) == name) *it = std::move(value);
  else list.insert(it, std::move(value));
}

template <class T, class Name>
void erase(std::vector<T>& list, const std::string& name, Name name_of) {
  auto it = std::lower_bound(list.begin(), list.end(), name,
                             [&](const T& x, const std::string& n) { return name_of(x) < n; });
  if (it != list.end() && name_of(*it) == name) list.erase(it);
}

const std::string& node_name(const Node& n) { return n.name; }
const std::string& tenant_name(const Tenant& t) { return t.name; }
std::string instance_name(const Instance& i) { return i.key(); }

void erase_roles(ClusterState& st, const std::string& app_id) {
  std::string prefix = app_id + "/";
  auto it = st.snapshot.roles.lower_bound(prefix);
  while (it != st.snapshot.roles.end() && it->first.starts_with(prefix)) it = st.snapshot.roles.erase(it);
}

Result<void> put_app(ClusterState& st, const KeyValue& kv) {
  try {
    auto j = nlohmann::json::parse(kv.value);
    auto a = j.get<AppRecord>();
    std::string id = a.tenant + "/" + a.name;
    // The app's status lives in its own key (status/apps/...); a record written before
    // that split still carries one, which the status key, when there is one, overrides.
    if (auto old = st.apps.find(id); old != st.apps.end() && !j.contains("status")) {
      a.status = old->second.status;
      a.failed_roles = old->second.failed_roles;
    }
    erase_roles(st, id);
    for (const auto& role : a.workload.roles) st.snapshot.roles[id + "/" + role.name] = role;
    st.apps.insert_or_assign(id, std::move(a));
  } catch (const std::exception& e) {
    return fail(corrupt(kv.key, e));
  }
  return {};
}

Result<void> put_app_status(ClusterState& st, const KeyValue& kv) {
  auto it = st.apps.find(kv.key.substr(k_app_status.size()));
  // A status without its app (the app's delete came first) describes nothing.
  if (it == st.apps.end()) return {};
  try {
    auto status = nlohmann::json::parse(kv.value).get<AppStatus>();
    it->second.status = std::move(status.status);
    it->second.failed_roles = std::move(status.failed_roles);
  } catch (const std::exception& e) {
    return fail(corrupt(kv.key, e));
  }
  return {};
}

template <class T>
Result<T> decode(const KeyValue& kv, LabelPool* pool = nullptr) {
  // Instance records, the bulk of a load, take the fast path when they are of the shape
  // gaia writes; otherwise, and for every other record, nlohmann decodes as always.
  if constexpr (std::is_same_v<T, Instance>)
    if (auto scanned = scan_instance(kv.value, pool)) return std::move(*scanned);
  try {
    return nlohmann::json::parse(kv.value).get<T>();
  } catch (const std::exception& e) {
    return fail(corrupt(kv.key, e));
  }
}

}  // namespace

Result<void> decode_instances(std::vector<Instance>& out, const std::vector<KeyValue>& kvs, LabelPool& pool,
                              unsigned threads) {
  const size_t base = out.size(), n = kvs.size();
  // Below this a thread costs more than it saves.
  constexpr size_t k_per_thread = 4096;
  const size_t parts = std::clamp<size_t>(std::min<size_t>(threads, n / k_per_thread), 1, 8);
  out.resize(base + n);
  // Part p decodes records [p*n/parts, (p+1)*n/parts) through a pool of its own (the
  // first through the caller's); its first failure is kept with its position.
  std::vector<LabelPool> pools(parts - 1);
  std::vector<std::optional<std::pair<size_t, Diagnostics>>> failed(parts);
  auto work = [&](size_t p) {
    LabelPool& mine = p == 0 ? pool : pools[p - 1];
    for (size_t k = p * n / parts, end = (p + 1) * n / parts; k < end; ++k) {
      auto i = decode<Instance>(kvs[k], &mine);
      if (!i) {
        failed[p] = std::pair(k, std::move(i.error()));
        return;
      }
      out[base + k] = std::move(*i);
    }
  };
  std::vector<std::future<void>> helpers;
  for (size_t p = 1; p < parts; ++p) helpers.push_back(std::async(std::launch::async, work, p));
  work(0);
  for (auto& h : helpers) h.get();
  for (auto& f : failed)
    if (f) {
      out.resize(base);
      return fail(std::move(f->second));
    }
  // The other parts' labels are made the caller's pool's, so a role's instances share
  // one map whichever part decoded them (the scheduler's index compares them by pointer).
  for (size_t p = 1; p < parts; ++p) {
    std::unordered_map<const void*, Labels> adopted;
    for (size_t k = p * n / parts, end = (p + 1) * n / parts; k < end; ++k) {
      Labels& l = out[base + k].labels;
      auto [it, fresh] = adopted.try_emplace(&l.map());
      if (fresh) it->second = pool.adopt(l);
      l = it->second;
    }
  }
  return {};
}

Result<std::vector<Node>> decode_nodes(const std::vector<KeyValue>& kvs) {
  std::vector<Node> out;
  out.reserve(kvs.size());
  for (const auto& kv : kvs) {
    auto n = decode<Node>(kv);
    if (!n) return fail(n.error());
    out.push_back(std::move(*n));
  }
  return out;
}

Result<void> apply_put(ClusterState& st, const KeyValue& kv, bool in_order, LabelPool* pool) {
  std::string_view key = kv.key;
  if (key.starts_with(k_instances)) {
    auto i = decode<Instance>(kv, pool);
    if (!i) return fail(i.error());
    if (in_order) st.snapshot.instances.push_back(std::move(*i));
    else upsert(st.snapshot.instances, std::move(*i), std::string(key.substr(k_instances.size())), instance_name);
  } else if (key.starts_with(k_nodes)) {
    auto n = decode<Node>(kv);
    if (!n) return fail(n.error());
    if (in_order) st.snapshot.nodes.push_back(std::move(*n));
    else upsert(st.snapshot.nodes, std::move(*n), std::string(key.substr(k_nodes.size())), node_name);
  } else if (key.starts_with(k_tenants)) {
    auto t = decode<Tenant>(kv);
    if (!t) return fail(t.error());
    if (in_order) st.snapshot.tenants.push_back(std::move(*t));
    else upsert(st.snapshot.tenants, std::move(*t), std::string(key.substr(k_tenants.size())), tenant_name);
  } else if (key.starts_with(k_apps)) {
    return put_app(st, kv);
  } else if (key.starts_with(k_app_status)) {
    return put_app_status(st, kv);
  } else if (key == keys::k_seq) {
    try {
      st.seq = std::stoll(kv.value);
    } catch (const std::exception& e) {
      return fail(corrupt(key, e));
    }
    st.seq_revision = kv.mod_revision;
  } else if (key == keys::k_apps_summary_marker) {
    // Derived bookkeeping: an unreadable marker only means the summaries are written
    // again by the next commit.
    int64_t v = -1;
    auto [end, ec] = std::from_chars(kv.value.data(), kv.value.data() + kv.value.size(), v);
    st.apps_summary_seq = ec == std::errc() && end == kv.value.data() + kv.value.size() ? v : -1;
    st.apps_summary_revision = kv.mod_revision;
  } else if (key == keys::k_profile) {
    auto p = decode<SchedulerProfile>(kv);
    if (!p) return fail(p.error());
    st.snapshot.profile = std::move(*p);
  } else if (key.starts_with(k_settings)) {
    std::string name(key.substr(k_settings.size()));
    try {
      auto j = nlohmann::json::parse(kv.value);
      // Two settings are cluster facts every decision reads, so they live in the
      // snapshot too.
      if (name == keys::k_storage_classes_setting) st.snapshot.storage_classes = j.get<std::vector<StorageClass>>();
      else if (name == keys::k_kept_claims_setting) st.snapshot.kept_claims = j.get<std::vector<KeptVolume>>();
      st.settings[name] = std::move(j);
    } catch (const std::exception& e) {
      return fail(corrupt(key, e));
    }
  } else if (key.starts_with(k_heartbeats)) {
    // A heartbeat only informs the node health check: an unreadable one is skipped (the
    // next beat rewrites it) rather than failing every command.
    try {
      auto j = nlohmann::json::parse(kv.value);
      st.heartbeats[std::string(key.substr(k_heartbeats.size()))] =
          Heartbeat{j.value("at_ms", int64_t{0}), j.value("agent", std::string())};
    } catch (const std::exception&) {
      st.heartbeats.erase(std::string(key.substr(k_heartbeats.size())));
    }
  }
  return {};
}

void apply_delete(ClusterState& st, std::string_view key) {
  if (key.starts_with(k_instances)) {
    erase(st.snapshot.instances, std::string(key.substr(k_instances.size())), instance_name);
  } else if (key.starts_with(k_nodes)) {
    erase(st.snapshot.nodes, std::string(key.substr(k_nodes.size())), node_name);
  } else if (key.starts_with(k_tenants)) {
    erase(st.snapshot.tenants, std::string(key.substr(k_tenants.size())), tenant_name);
  } else if (key.starts_with(k_apps)) {
    std::string id(key.substr(k_apps.size()));
    erase_roles(st, id);
    st.apps.erase(id);
  } else if (key.starts_with(k_app_status)) {
    // The app's own delete removes it; a status deleted alone leaves the last one known.
  } else if (key == keys::k_seq) {
    st.seq = 0;
    st.seq_revision = 0;
  } else if (key == keys::k_apps_summary_marker) {
    st.apps_summary_seq = -1;
    st.apps_summary_revision = 0;
  } else if (key == keys::k_profile) {
    st.snapshot.profile = SchedulerProfile{};
  } else if (key.starts_with(k_settings)) {
    std::string name(key.substr(k_settings.size()));
    if (name == keys::k_storage_classes_setting) st.snapshot.storage_classes.clear();
    else if (name == keys::k_kept_claims_setting) st.snapshot.kept_claims.clear();
    st.settings.erase(name);
  } else if (key.starts_with(k_heartbeats)) {
    st.heartbeats.erase(std::string(key.substr(k_heartbeats.size())));
  }
}

namespace {

// Applies the final fates of changed keys (`changes`: name -> the new value, or nothing
// for a delete) to `list`, sorted by `name_of`, in one pass: replace or drop the changed
// ones in place, then merge the new ones (already sorted, as map keys) behind them. One
// by one, a commit of 100,000 nodes would insert each in the middle of the list.
template <class T, class NameInto>
void merge_changes(std::vector<T>& list, std::map<std::string, std::optional<T>>& changes, NameInto name_into) {
  if (changes.empty()) return;
  // Names are written into one buffer for the searches' comparisons: an instance's name
  // is made from its fields, and a string per comparison cost more than the merge.
  std::string buf;
  auto before = [&](const T& x, const std::string& n) {
    name_into(x, buf);
    return buf < n;
  };
  std::vector<T> added;
  std::vector<size_t> dropped;  // Positions, ascending (changes come in name order).
  for (auto& [name, value] : changes) {
    auto it = std::lower_bound(list.begin(), list.end(), name, before);
    bool present = false;
    if (it != list.end()) {
      name_into(*it, buf);
      present = buf == name;
    }
    if (present && value) *it = std::move(*value);
    else if (present) dropped.push_back(static_cast<size_t>(it - list.begin()));
    else if (value) added.push_back(std::move(*value));
  }
  if (!dropped.empty()) {
    size_t to = dropped.front(), d = 0;
    for (size_t from = dropped.front(); from < list.size(); ++from) {
      if (d < dropped.size() && dropped[d] == from) {
        ++d;
        continue;
      }
      if (to != from) list[to] = std::move(list[from]);
      ++to;
    }
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(to), list.end());
  }
  if (!added.empty()) {
    // The new names are sorted (map order) and none is in the list: each goes where a
    // binary search of the list puts it. Only the names the searches compare are
    // computed, not one per element of the list.
    std::vector<size_t> at;
    at.reserve(added.size());
    auto from = list.begin();
    std::string name;
    for (const auto& a : added) {
      name_into(a, name);
      from = std::lower_bound(from, list.end(), name, before);
      at.push_back(static_cast<size_t>(from - list.begin()));
    }
    // Merged in place from the back, within the room the list has (a loaded state
    // keeps some, State::load_all): a new list of 50,000 instances cost a fresh
    // allocation the kernel faults in page by page, the moves, and freeing the old one,
    // a twentieth of a submit. Without room the list grows once here.
    const size_t old_size = list.size(), count = added.size();
    if (list.capacity() < old_size + count) {
      // No room (a copy of a kept state is made without any): one pass into a new list
      // with room for the next merges, rather than moving every element twice, once
      // to grow the list and once to open the gaps.
      std::vector<T> merged;
      merged.reserve(old_size + count + (old_size + count) / 16);
      advise_huge_pages(merged);
      size_t src = 0;
      for (size_t j = 0; j < count; ++j) {
        for (; src < at[j]; ++src) merged.push_back(std::move(list[src]));
        merged.push_back(std::move(added[j]));
      }
      for (; src < old_size; ++src) merged.push_back(std::move(list[src]));
      list = std::move(merged);
      return;
    }
    list.resize(old_size + count);
    size_t src = old_size, dst = old_size + count;
    for (size_t j = count; j-- > 0;) {
      while (src > at[j]) list[--dst] = std::move(list[--src]);
      list[--dst] = std::move(added[j]);
    }
  }
}

}  // namespace

Result<void> apply_changes(ClusterState& st, const std::vector<Event>& changes) {
  // The final fate of every changed instance and node key, in event order (a later
  // change of the same key wins); nothing for a delete.
  std::map<std::string, std::optional<Instance>> instances;
  std::map<std::string, std::optional<Node>> nodes;
  LabelPool pool;
  for (const auto& e : changes) {
    std::string_view key = e.kv.key;
    if (key.starts_with(k_instances)) {
      std::string name(key.substr(k_instances.size()));
      if (e.type == EventType::Delete) {
        instances[name] = std::nullopt;
      } else {
        auto i = decode<Instance>(e.kv, &pool);
        if (!i) return fail(i.error());
        instances[name] = std::move(*i);
      }
    } else if (key.starts_with(k_nodes)) {
      std::string name(key.substr(k_nodes.size()));
      if (e.type == EventType::Delete) {
        nodes[name] = std::nullopt;
      } else {
        auto n = decode<Node>(e.kv);
        if (!n) return fail(n.error());
        nodes[name] = std::move(*n);
      }
    } else if (e.type == EventType::Delete) {
      apply_delete(st, key);
    } else if (auto r = apply_put(st, e.kv); !r) {
      return r;
    }
  }
  merge_changes(st.snapshot.instances, instances, [](const Instance& i, std::string& out) { i.key_into(out); });
  merge_changes(st.snapshot.nodes, nodes, [](const Node& n, std::string& out) { out.assign(n.name); });
  return {};
}

bool is_state_record(std::string_view key) {
  if (key.starts_with("instances/") || key.starts_with("nodes/") || key == k_journal_key) return false;
  for (auto prefix : k_state_prefixes)
    if (key.starts_with(prefix)) return true;
  return false;
}

void apply_to_records(std::map<std::string, KeyValue>& records, const std::vector<Event>& changes) {
  for (const auto& e : changes) {
    if (!is_state_record(e.kv.key)) continue;
    if (e.type == EventType::Delete) records.erase(e.kv.key);
    else records.insert_or_assign(e.kv.key, e.kv);
  }
}

}  // namespace gaia
