#include "lib/app_summary.hpp"

#include <fmt/format.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "lib/journal.hpp"
#include "lib/json_scan.hpp"

namespace gaia {

namespace keys {
std::string app_summary(const std::string& tenant, const std::string& name) {
  return std::string(k_app_summaries) + tenant + "/" + name;
}
}  // namespace keys

void to_json(nlohmann::json& j, const AppSummary& s) {
  // Every field, always, in one order: the fast decoder below follows that shape.
  j = nlohmann::json{{"tenant", s.tenant},     {"name", s.name},         {"app", s.app},
                     {"version", s.version},   {"status", s.status},     {"created", s.created},
                     {"priority", s.priority}, {"spec_dir", s.spec_dir}, {"dependencies", s.dependencies},
                     {"desired", s.desired},   {"serving", s.serving}};
}

void from_json(const nlohmann::json& j, AppSummary& s) {
  s.tenant = j.at("tenant").get<std::string>();
  s.name = j.at("name").get<std::string>();
  s.app = j.value("app", "");
  s.version = j.value("version", "");
  s.status = j.value("status", "");
  s.created = j.value("created", "");
  s.priority = j.value("priority", "");
  s.spec_dir = j.value("spec_dir", "");
  s.dependencies = j.value("dependencies", std::vector<std::string>{});
  s.desired = j.value("desired", 0);
  s.serving = j.value("serving", 0);
}

AppSummary app_summary(const AppRecord& a, int serving) {
  AppSummary s;
  s.tenant = a.tenant;
  s.name = a.name;
  s.app = a.app;
  s.version = a.version;
  s.status = a.status;
  s.created = a.created;
  s.priority = a.workload.priority.to_string();
  s.spec_dir = a.spec_dir;
  s.dependencies = a.dependencies;
  for (const auto& r : a.workload.roles) s.desired += desired_replicas(a, r);
  s.serving = serving;
  return s;
}

std::vector<AppSummary> app_summaries_of(const AppsState& state) {
  std::vector<AppSummary> out;
  out.reserve(state.apps.size());
  for (const auto& [id, a] : state.apps) out.push_back(app_summary(a, state.serving_count(id)));
  return out;
}

namespace {

// The record as to_json writes it, without building a JSON document: a listing decodes
// 10,000 of them. False for anything else (another order is fine; an unknown key, an
// escape or a float is not), which nlohmann then decodes.
bool scan_app_summary(std::string_view text, AppSummary& s) {
  JsonScanner in(text);
  bool has_tenant = false, has_name = false;
  bool ok = in.object([&](std::string_view key) {
    if (key == "tenant") return has_tenant = in.string(s.tenant);
    if (key == "name") return has_name = in.string(s.name);
    if (key == "app") return in.string(s.app);
    if (key == "version") return in.string(s.version);
    if (key == "status") return in.string(s.status);
    if (key == "created") return in.string(s.created);
    if (key == "priority") return in.string(s.priority);
    if (key == "spec_dir") return in.string(s.spec_dir);
    if (key == "desired") return in.integer(s.desired);
    if (key == "serving") return in.integer(s.serving);
    if (key == "dependencies") {
      s.dependencies.clear();
      return in.array([&] {
        std::string d;
        if (!in.string(d)) return false;
        s.dependencies.push_back(std::move(d));
        return true;
      });
    }
    return false;
  });
  return ok && has_tenant && has_name && in.at_end();
}

}  // namespace

Result<AppSummary> decode_app_summary(const KeyValue& kv) {
  AppSummary s;
  if (scan_app_summary(kv.value, s)) return s;
  try {
    return nlohmann::json::parse(kv.value).get<AppSummary>();
  } catch (const std::exception& e) {
    return fail(Diagnostic{{}, kv.key, fmt::format("corrupt app summary in the store: {}", e.what()),
                           "the next command that changes the cluster writes every summary again"});
  }
}

namespace {

// "tenant/app" of an instance key ("ordinal.role.app.tenant"); empty when the key has
// fewer parts.
std::string app_id_of_instance_key(std::string_view key) {
  size_t last = key.rfind('.');
  if (last == std::string_view::npos || last == 0) return {};
  size_t before = key.rfind('.', last - 1);
  if (before == std::string_view::npos) return {};
  return fmt::format("{}/{}", key.substr(last + 1), key.substr(before + 1, last - before - 1));
}

struct Counts {
  int before = 0, after = 0;
};

}  // namespace

void add_summary_writes(const ClusterState& base, const Batch& batch, const std::vector<AppSummary>& apps_after,
                        int64_t seq, const std::vector<std::string>& stale_keys, Txn& txn) {
  const bool repair = !summaries_kept(base);
  // The apps whose summary may change, with their serving instances before and after.
  std::unordered_map<std::string, Counts> touched;
  std::unordered_map<std::string, const AppSummary*> after;  // Put by this batch.
  std::unordered_set<std::string> deleted;
  for (const auto& a : apps_after) after[a.tenant + "/" + a.name] = &a;
  for (const auto& [t, n] : batch.delete_apps) {
    std::string id = t + "/" + n;
    if (!after.count(id)) deleted.insert(id);
  }
  if (repair) {
    for (const auto& [id, a] : base.apps) touched[id];
  } else {
    for (const auto& id : deleted) touched[id];
    for (const auto& i : batch.put_instances) touched[i.tenant + "/" + i.app];
    for (const auto& k : batch.delete_instances)
      if (auto id = app_id_of_instance_key(k); !id.empty()) touched[id];
  }
  for (const auto& [id, a] : after) touched[id];
  if (!touched.empty()) {
    // The instances this batch replaces or deletes count before it, not after.
    std::unordered_set<std::string> replaced(batch.delete_instances.begin(), batch.delete_instances.end());
    for (const auto& i : batch.put_instances) replaced.insert(i.key());
    // A commit usually touches a few apps, and this pass visits every instance: a few
    // comparisons of the names beat building and hashing an id per instance.
    struct Few {
      std::string_view tenant, app;
      Counts* counts;
    };
    std::vector<Few> few;
    if (touched.size() <= 8)
      for (auto& [id, counts] : touched) {
        size_t slash = id.find('/');
        few.push_back({std::string_view(id).substr(0, slash), std::string_view(id).substr(slash + 1), &counts});
      }
    std::string id, key;
    for (const auto& i : base.snapshot.instances) {
      Counts* counts = nullptr;
      if (!few.empty()) {
        for (const Few& f : few)
          if (f.app == i.app && f.tenant == i.tenant) {
            counts = f.counts;
            break;
          }
      } else {
        id.assign(i.tenant).append("/").append(i.app);
        if (auto it = touched.find(id); it != touched.end()) counts = &it->second;
      }
      if (!counts) continue;
      const int s = serving(i) ? 1 : 0;
      counts->before += s;
      if (!replaced.empty()) {
        key.clear();
        i.key_into(key);
        if (replaced.count(key)) continue;
      }
      counts->after += s;
    }
    for (const auto& i : batch.put_instances)
      if (serving(i)) ++touched[i.tenant + "/" + i.app].after;
  }

  // Keys this commit puts or deletes: a transaction names each key once (etcd refuses
  // a request that names one twice).
  std::unordered_set<std::string> handled;
  for (const auto& [id, counts] : touched) {
    std::string key = std::string(keys::k_app_summaries) + id;
    if (deleted.count(id)) {
      txn.deletes.push_back({key});
      handled.insert(std::move(key));
      continue;
    }
    auto was = base.apps.find(id);
    std::optional<AppSummary> next;
    if (auto it = after.find(id); it != after.end()) next = *it->second;
    else if (was != base.apps.end()) next = app_summary(was->second, 0);
    // Instances of an app without a record (its delete came first) are listed nowhere.
    if (!next) continue;
    next->serving = counts.after;
    if (!repair && was != base.apps.end() && app_summary(was->second, counts.before) == *next) continue;
    txn.puts.push_back({key, nlohmann::json(*next).dump()});
    handled.insert(std::move(key));
  }
  if (repair) {
    // Summaries of apps an earlier writer deleted without deleting their summary.
    for (const auto& k : stale_keys)
      if (!handled.count(k)) txn.deletes.push_back({k});
  }
  txn.compares.push_back({keys::k_apps_summary_marker, base.apps_summary_revision});
  txn.puts.push_back({keys::k_apps_summary_marker, std::to_string(seq)});
}

Result<std::optional<std::vector<AppSummary>>> read_app_summaries(Store& store, const std::string& tenant_prefix) {
  using Out = std::optional<std::vector<AppSummary>>;
  for (int attempt = 0; attempt < 20; ++attempt) {
    // The sequence, the marker and the journal at one revision, which the summaries are
    // then read at. A half-applied journal commit is finished first, as a load does.
    auto meta = store.read(RangeRequest::prefix("meta/"));
    if (!meta) return fail(meta.error().to_diagnostic());
    auto journal = store.read(RangeRequest{k_journal_key, "", meta->revision});
    if (!journal && journal.error().code == StoreErrc::Compacted) continue;
    if (!journal) return fail(journal.error().to_diagnostic());
    if (!journal->kvs.empty()) {
      if (auto r = roll_forward(store); !r) return fail(r.error().to_diagnostic());
      continue;
    }
    std::optional<std::string> seq, marker;
    for (const auto& kv : meta->kvs) {
      if (kv.key == keys::k_seq) seq = kv.value;
      else if (kv.key == keys::k_apps_summary_marker) marker = kv.value;
    }
    if (!marker || marker != seq.value_or("0")) return Out();
    std::vector<AppSummary> out;
    RangeRequest request =
        RangeRequest::prefix(std::string(keys::k_app_summaries) + tenant_prefix, meta->revision, store.read_page_size());
    bool again = false;
    for (;;) {
      auto got = store.read(request);
      if (!got && got.error().code == StoreErrc::Compacted) {
        again = true;
        break;
      }
      if (!got) return fail(got.error().to_diagnostic());
      for (const auto& kv : got->kvs) {
        auto s = decode_app_summary(kv);
        if (!s) return Out();
        out.push_back(std::move(*s));
      }
      if (!got->more || got->kvs.empty()) break;
      request.key = got->kvs.back().key + std::string(1, '\0');
    }
    if (again) continue;
    return Out(std::move(out));
  }
  return fail(Diagnostic{{}, "", "the store kept changing while it was read", "retry; many writers are active"});
}

}  // namespace gaia
