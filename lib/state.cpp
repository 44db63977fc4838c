#include "lib/state.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <iterator>
#include <ctime>
#include <future>
#include <random>
#include <set>

#include "lib/app_summary.hpp"
#include "lib/codec.hpp"
#include "lib/huge_pages.hpp"
#include "lib/record_encode.hpp"
#include "lib/journal.hpp"
#include "lib/state_apply.hpp"
#include "lib/threads.hpp"

namespace gaia {

namespace keys {
std::string node(const std::string& name) { return "nodes/" + name; }
std::string tenant(const std::string& name) { return "tenants/" + name; }
std::string app(const std::string& tenant, const std::string& name) { return "apps/" + tenant + "/" + name; }
std::string instance(const Instance& i) { return "instances/" + i.key(); }
std::string event(int64_t seq) { return fmt::format("{}{:020d}", k_timeline_prefix, seq); }
std::string setting(const std::string& name) { return "settings/" + name; }
std::string heartbeat(const std::string& node) { return "heartbeats/" + node; }
std::string bundle(const std::string& hash) { return "bundles/" + hash; }
std::string app_status(const std::string& tenant, const std::string& name) {
  return "status/apps/" + tenant + "/" + name;
}
}  // namespace keys

void to_json(nlohmann::json& j, const AppRecord& a) {
  j = nlohmann::json{{"tenant", a.tenant},     {"name", a.name},       {"version", a.version},
                     {"status", a.status},     {"workload", a.workload}, {"document", a.document},
                     {"dependencies", a.dependencies}, {"spec_dir", a.spec_dir}, {"source", a.source},
                     {"op", a.op},             {"created", a.created}, {"updated", a.updated}};
  if (!a.scale.empty()) j["scale"] = a.scale;
  if (!a.failed_roles.empty()) j["failed_roles"] = a.failed_roles;
  if (!a.render_inputs.empty()) j["render_inputs"] = a.render_inputs;
  if (!a.bundle.empty()) j["bundle"] = a.bundle;
  if (!a.app.empty() && a.app != a.name) j["app"] = a.app;
  if (!a.exports.empty()) j["exports"] = a.exports;
  if (!a.dependency_ranges.empty()) {
    auto& r = j["requires"] = nlohmann::json::array();
    for (const auto& q : a.dependency_ranges) {
      nlohmann::json e{{"name", q.name}, {"range", q.range}};
      if (!q.release.empty() && q.release != q.name) e["release"] = q.release;
      if (!q.alias.empty()) e["alias"] = q.alias;
      r.push_back(std::move(e));
    }
  }
}

void from_json(const nlohmann::json& j, AppRecord& a) {
  AppRecord d;
  a.tenant = j.value("tenant", d.tenant);
  a.name = j.value("name", d.name);
  a.version = j.value("version", d.version);
  a.status = j.value("status", d.status);
  a.workload = j.value("workload", d.workload);
  a.document = j.value("document", d.document);
  a.dependencies = j.value("dependencies", d.dependencies);
  a.spec_dir = j.value("spec_dir", d.spec_dir);
  a.source = j.value("source", d.source);
  a.op = j.value("op", d.op);
  a.created = j.value("created", d.created);
  a.updated = j.value("updated", d.updated);
  a.scale = j.value("scale", d.scale);
  a.failed_roles = j.value("failed_roles", d.failed_roles);
  a.render_inputs = j.value("render_inputs", d.render_inputs);
  a.bundle = j.value("bundle", d.bundle);
  a.app = j.value("app", d.app);
  a.exports = j.value("exports", d.exports);
  a.dependency_ranges.clear();
  if (auto it = j.find("requires"); it != j.end() && it->is_array())
    for (const auto& q : *it)
      a.dependency_ranges.push_back({q.at("name").get<std::string>(), q.at("range").get<std::string>(),
                                     q.value("release", std::string()), q.value("alias", std::string())});
}

int desired_replicas(const AppRecord& app, const Role& role) {
  auto it = app.scale.find(role.name);
  return it != app.scale.end() ? it->second : role.replicas;
}

RunningApp running_app_of(const AppRecord& a) {
  // Degraded apps serve their dependents (controllers/app_health.hpp): one stuck
  // instance does not make an app unusable.
  bool usable = a.status == "Ready" || a.status == "Degraded";
  return RunningApp{a.tenant, a.name, a.version, a.workload.outputs, usable, a.dependency_ranges, a.app, a.exports};
}

void to_json(nlohmann::json& j, const AppStatus& s) {
  j = nlohmann::json{{"status", s.status}, {"time", s.time}, {"op", s.op}};
  if (!s.failed_roles.empty()) j["failed_roles"] = s.failed_roles;
}

void from_json(const nlohmann::json& j, AppStatus& s) {
  s.status = j.value("status", std::string("Deploying"));
  s.failed_roles = j.value("failed_roles", std::map<std::string, std::string>{});
  s.time = j.value("time", "");
  s.op = j.value("op", "");
}

void to_json(nlohmann::json& j, const TimelineEvent& e) {
  j = nlohmann::json{{"seq", e.seq},   {"time", e.time},         {"type", e.type},
                     {"reason", e.reason}, {"message", e.message}, {"op", e.op}};
  // Object fields only when set, so JSON lines stay short and filterable with jq.
  if (!e.tenant.empty()) j["tenant"] = e.tenant;
  if (!e.app.empty()) j["app"] = e.app;
  if (!e.role.empty()) j["role"] = e.role;
  if (!e.instance.empty()) j["instance"] = e.instance;
  if (!e.node.empty()) j["node"] = e.node;
}

void from_json(const nlohmann::json& j, TimelineEvent& e) {
  e.seq = j.value("seq", int64_t{0});
  e.time = j.value("time", "");
  e.type = j.value("type", "Normal");
  e.reason = j.value("reason", "");
  e.message = j.value("message", "");
  e.op = j.value("op", "");
  e.tenant = j.value("tenant", "");
  e.app = j.value("app", "");
  e.role = j.value("role", "");
  e.instance = j.value("instance", "");
  e.node = j.value("node", "");
}

std::string dependency_id(const std::string& tenant, const std::string& dependency) {
  // Release names are DNS labels: a '/' can only separate a tenant.
  return dependency.find('/') == std::string::npos ? tenant + "/" + dependency : dependency;
}

const AppRecord* ClusterState::find_app(const std::string& tenant, const std::string& name) const {
  auto it = apps.find(dependency_id(tenant, name));
  return it == apps.end() ? nullptr : &it->second;
}

Instance* ClusterState::find_instance(const std::string& key) {
  for (auto& i : snapshot.instances)
    if (i.key() == key) return &i;
  return nullptr;
}
const Instance* ClusterState::find_instance(const std::string& key) const {
  return const_cast<ClusterState*>(this)->find_instance(key);
}
Node* ClusterState::find_node(const std::string& name) {
  for (auto& n : snapshot.nodes)
    if (n.name == name) return &n;
  return nullptr;
}
const Node* ClusterState::find_node(const std::string& name) const {
  return const_cast<ClusterState*>(this)->find_node(name);
}

bool Batch::empty() const {
  return put_nodes.empty() && delete_nodes.empty() && put_tenants.empty() && put_apps.empty() && delete_apps.empty() &&
         put_instances.empty() && delete_instances.empty() && !profile && put_settings.empty() &&
         put_bundles.empty() && events.empty();
}

TimelineEvent& Batch::event(std::string reason, std::string message, std::string type) {
  TimelineEvent e;
  e.reason = std::move(reason);
  e.message = std::move(message);
  e.type = std::move(type);
  events.push_back(std::move(e));
  return events.back();
}

TimelineEvent& Batch::instance_event(const Instance& i, std::string reason, std::string message, std::string type) {
  return instance_event_at(i, i.node, std::move(reason), std::move(message), std::move(type));
}

TimelineEvent& Batch::instance_event_at(const Instance& i, const std::string& node, std::string reason,
                                        std::string message, std::string type) {
  auto& e = event(std::move(reason), std::move(message), std::move(type));
  e.tenant = i.tenant;
  e.app = i.app;
  e.role = i.role;
  e.instance = i.key();
  e.node = node;
  return e;
}

void Batch::put_instance(const Instance& i) {
  // Field by field rather than by key(): a planner putting thousands of instances (a
  // rebalance) formatted a key per put already in the batch.
  for (auto& x : put_instances)
    if (x.ordinal == i.ordinal && x.role == i.role && x.app == i.app && x.tenant == i.tenant) {
      x = i;
      return;
    }
  put_instances.push_back(i);
}

State::State(Store& store, const Clock& clock, StateOptions options)
    : m_store(store), m_clock(clock), m_options(std::move(options)) {}

State::~State() {
  if (m_state_file_writer.valid()) m_state_file_writer.wait();
}

namespace {

Diagnostic store_diag(const StoreError& e) { return e.to_diagnostic(); }

// Every key under `prefix` at `revision`, page by page, and the revision they were read
// at (the store's current one when `revision` is 0).
StoreResult<std::pair<std::vector<KeyValue>, int64_t>> read_all(Store& store, std::string_view prefix,
                                                                 int64_t revision, size_t page_size = 0) {
  std::vector<KeyValue> out;
  // In the pages the store prefers (etcd: bounded answers), or the caller's when the
  // store has no preference, all at one revision.
  const size_t preferred = store.read_page_size();
  RangeRequest request = RangeRequest::prefix(prefix, revision, preferred ? preferred : page_size);
  for (;;) {
    auto page = store.read(request);
    if (!page) return std::unexpected(page.error());
    // Later pages read at the first page's revision, so the pages agree.
    request.revision = page->revision;
    bool more = page->more && !page->kvs.empty();
    if (more) request.key = page->kvs.back().key + std::string(1, '\0');
    std::move(page->kvs.begin(), page->kvs.end(), std::back_inserter(out));
    if (!more) return std::pair(std::move(out), page->revision);
  }
}

// Instance records per read of a full load, for a store without a page size of its own.
constexpr size_t k_instance_page = 8192;


}  // namespace

Result<ClusterState> State::load() {
  if (!m_options.follow_changes) return load_all();
  auto shared = load_shared();
  if (!shared) return fail(shared.error());
  return ClusterState(**shared);
}

Result<std::shared_ptr<const ClusterState>> State::load_shared() {
  if (!m_options.follow_changes) {
    auto st = load_all();
    if (!st) return fail(st.error());
    return std::make_shared<const ClusterState>(std::move(*st));
  }
  std::lock_guard lock(m_cache_mutex);
  // The first load of a process with a state file starts from the file, if it is good.
  const bool first = !m_state_file_tried && !m_options.state_file.empty();
  m_state_file_tried = true;
  if (first && !m_cache && load_state_file()) return std::shared_ptr<const ClusterState>(m_cache);
  if (m_cache) {
    auto fresh = refresh_cache();
    if (!fresh) return fail(fresh.error());
    if (*fresh) {
      // The changes read for the kept files serve no one once the store moved on.
      if (m_options.kept_changes) m_options.kept_changes->store_at(m_cache->revision);
      return std::shared_ptr<const ClusterState>(m_cache);
    }
  }
  m_records.clear();
  auto st = load_all(m_options.state_file.empty() ? nullptr : &m_records);
  if (!st) return fail(st.error());
  m_cache = std::make_shared<ClusterState>(std::move(*st));
  if (first) save_state_file();
  return std::shared_ptr<const ClusterState>(m_cache);
}

void State::prefetch() {
  if (m_options.follow_changes) (void)load_shared();
}

Result<ClusterState> State::load_all(std::map<std::string, KeyValue>* records) {
  // One revision for every read: the first fixes it, the others read the store as it
  // was then, so they agree however many writers commit meanwhile. Only a compaction
  // of that very revision, or a half-applied journal commit, makes it start over.
  for (int attempt = 0; attempt < 20; ++attempt) {
    ClusterState st;
    int64_t at = 0;
    bool again = false;
    LabelPool pool;  // The instances of a role share their labels (lib/labels.hpp).
    // The instances (the bulk: 50,000 take 80 ms of CPU) are decoded on other threads
    // while the other records are read and applied, and the nodes likewise (5,000 take
    // about 20 ms through nlohmann). Their errors, if any, come first, as they are read
    // first. Every way out of an attempt waits for both, as they write into `st`.
    std::vector<Instance> instances;
    LabelPool instance_labels;  // The decoding thread's own.
    std::future<Result<void>> decoding;
    std::future<Result<std::vector<Node>>> nodes;
    auto join = [&]() -> std::optional<Diagnostics> {
      std::optional<Diagnostics> first;
      if (decoding.valid())
        if (auto d = decoding.get(); !d) first = d.error();
      if (nodes.valid())
        if (auto n = nodes.get(); !n && !first) first = n.error();
      return first;
    };
    auto failed = [&](Diagnostics errors) -> Result<ClusterState> {
      if (auto first = join()) return fail(std::move(*first));
      return fail(std::move(errors));
    };
    if (records) records->clear();
    for (auto prefix : k_state_prefixes) {
      // The instances in pages: a store with one connection serves one read at a time,
      // and the command's own thread reads meanwhile (the config center, the apps to
      // resolve against), which waited 40 ms behind one read of 60,000 records.
      auto kvs = read_all(m_store, prefix, at, prefix == "instances/" ? k_instance_page : 0);
      // History gone meanwhile, or (a store restored from a backup) a revision the
      // store has not reached: read it all again from the current revision.
      if (!kvs && (kvs.error().code == StoreErrc::Compacted || kvs.error().code == StoreErrc::FutureRevision)) {
        again = true;
        break;
      }
      if (!kvs) return failed({store_diag(kvs.error())});
      at = kvs->second;
      if (prefix == "instances/") {
        // Room for a few more, so the instances the next commits add are merged into
        // the kept state in place (apply_changes) rather than into a new list.
        instances.reserve(kvs->first.size() + kvs->first.size() / 16 + 64);
        advise_huge_pages(instances);
        // No journal key is here. One machine core: decoded here, in turn.
        auto decode = [&instances, &instance_labels, rows = std::move(kvs->first)]() -> Result<void> {
          return decode_instances(instances, rows, instance_labels, worker_threads());
        };
        if (worker_threads() > 1) decoding = std::async(std::launch::async, std::move(decode));
        else if (auto r = decode(); !r) return failed(r.error());
        continue;
      }
      if (records && prefix != "instances/" && prefix != "nodes/")
        for (const auto& kv : kvs->first) records->emplace_hint(records->end(), kv.key, kv);
      if (prefix == "nodes/") {
        nodes = std::async(worker_threads() > 1 ? std::launch::async : std::launch::deferred,
                           [rows = std::move(kvs->first)] { return decode_nodes(rows); });
        continue;
      }
      for (const auto& kv : kvs->first) {
        if (kv.key == k_journal_key) {
          // A commit larger than one transaction is half applied: finish it, then read
          // again, so no decision is ever made on half a change (lib/journal.hpp).
          if (auto r = roll_forward(m_store); !r) return failed({store_diag(r.error())});
          again = true;
          break;
        }
        if (auto r = apply_put(st, kv, /*in_order=*/true, &pool); !r) return failed(r.error());
      }
      if (again) break;
    }
    if (again) {
      (void)join();  // Read again whatever they found.
      continue;
    }
    if (decoding.valid())
      if (auto d = decoding.get(); !d) return failed(d.error());
    if (nodes.valid()) {
      auto n = nodes.get();
      if (!n) return fail(n.error());
      st.snapshot.nodes = std::move(*n);
    }
    st.snapshot.instances = std::move(instances);
    st.revision = at;
    return st;
  }
  return fail(Diagnostic{{}, "", "the store kept changing while it was read", "retry; many writers are active"});
}

std::shared_ptr<const ClusterState> State::release_kept() {
  std::lock_guard lock(m_cache_mutex);
  return std::exchange(m_cache, nullptr);
}

Result<bool> State::refresh_cache() {
  const ClusterState& cached = *m_cache;
  // A store behind the cache was re-created or restored from a backup: the cache
  // describes a past that no longer exists. One far ahead has more changes to replay
  // than a fresh read costs. Either way, read it afresh.
  auto current = m_store.revision();
  if (!current) {
    m_cache.reset();
    return fail(store_diag(current.error()));
  }
  if (*current < cached.revision || *current - cached.revision > k_max_replay_revisions) {
    m_cache.reset();
    return false;
  }
  if (*current == cached.revision) return true;
  // Changes the watch already delivered are in the store's history too: one read of
  // everything since the cached revision brings the state to the store's current one;
  // everything but the timeline's events, which the state does not hold (most of what
  // a submit writes). The changes after `current` are left for the next refresh, as a
  // revision that wrote only events would end the read below where it stands.
  auto changes = m_store.changes_since_skipping(cached.revision + 1, k_timeline_prefix);
  if (changes)
    std::erase_if(*changes, [&](const Event& e) { return e.revision() > *current; });
  if (!changes) {
    // Whatever failed, the next load starts from a full read rather than repeating a
    // request that may be too large to ever succeed.
    m_cache.reset();
    // Compacted: the history it needs is gone; read it afresh now.
    if (changes.error().code == StoreErrc::Compacted || changes.error().code == StoreErrc::FutureRevision)
      return false;
    return fail(store_diag(changes.error()));
  }
  for (const auto& e : *changes) {
    if (e.kv.key == k_journal_key && e.type == EventType::Put) {
      // Half a large commit: let a full read finish it (lib/journal.hpp).
      m_cache.reset();
      return false;
    }
  }
  // The state file's writer holds the kept state only while it encodes it.
  if (m_state_file_encoded.valid()) m_state_file_encoded.wait();
  // A holder of the kept state (load_shared) sees it unchanged: the changes go to a copy.
  if (m_cache.use_count() > 1) m_cache = std::make_shared<ClusterState>(*m_cache);
  ClusterState& st = *m_cache;
  if (auto r = apply_changes(st, *changes); !r) {
    m_cache.reset();
    return fail(r.error());
  }
  st.revision = *current;
  if (!m_options.state_file.empty()) apply_to_records(m_records, *changes);
  return true;
}

Result<bool> State::wait_for_change(std::string_view prefix, std::chrono::milliseconds timeout) {
  if (!m_watch || m_watch_prefix != prefix) {
    int64_t from = 0;
    {
      std::lock_guard lock(m_cache_mutex);
      if (m_cache) from = m_cache->revision;
    }
    const int64_t from_cache = from;
    if (from == 0) {
      auto rev = m_store.revision();
      if (!rev) return fail(store_diag(rev.error()));
      from = *rev;
    }
    auto watch = m_store.watch(prefix, from + 1);
    if (!watch) return fail(store_diag(watch.error()));
    m_watch = std::move(*watch);
    m_watch_prefix = std::string(prefix);
    // Without a loaded state, a new watch cannot tell what changed before it began, so
    // it says "maybe" once and the caller reads.
    if (from_cache == 0) return true;
  }
  int64_t seen = 0;
  {
    std::lock_guard lock(m_cache_mutex);
    if (m_cache) seen = m_cache->revision;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto events = m_watch->next(std::max(left, std::chrono::milliseconds(0)));
    if (!events) {
      // A watch that failed stays failed; the next call starts a new one from the state
      // then known (a compacted start revision is then behind us).
      m_watch.reset();
      if (events.error().code == StoreErrc::Compacted) return true;
      return fail(store_diag(events.error()));
    }
    // Changes the last load already saw (this process's own commits among them) are
    // not news.
    if (!events->empty() && events->back().revision() > seen) return true;
    if (left.count() <= 0) return false;
  }
}

namespace {

// The app record as the apps/ key holds it: everything but what the status key holds and
// the bookkeeping of when and by whom it was written, so two records with the same spec
// compare equal.
nlohmann::json spec_json(const AppRecord& a) {
  nlohmann::json j = a;
  for (const char* field : {"status", "failed_roles", "op", "created", "updated"}) j.erase(field);
  return j;
}

struct BundleFates {
  std::set<std::string> live;     // Referenced by some app once the batch is applied.
  std::set<std::string> dropped;  // Referenced before, by no app after.
};

// Which spec bundles the apps refer to after `batch` is applied to `base`, and which
// they no longer do. A bundle still referenced by any app is never dropped.
BundleFates bundle_fates(const ClusterState& base, const Batch& batch) {
  std::map<std::string, std::string> referenced;  // App id -> bundle, after the batch.
  for (const auto& [id, a] : base.apps) referenced[id] = a.bundle;
  for (const auto& [t, n] : batch.delete_apps) referenced.erase(t + "/" + n);
  for (const auto& a : batch.put_apps) referenced[a.tenant + "/" + a.name] = a.bundle;
  BundleFates out;
  for (const auto& [id, hash] : referenced)
    if (!hash.empty()) out.live.insert(hash);
  for (const auto& [id, a] : base.apps)
    if (!a.bundle.empty() && !out.live.count(a.bundle)) out.dropped.insert(a.bundle);
  return out;
}

}  // namespace

Result<bool> State::commit(const ClusterState& base, Batch batch, const std::string& op, CommitReceipt* receipt) {
  if (receipt) *receipt = CommitReceipt{};
  Txn txn;
  txn.compares.push_back({keys::k_seq, base.seq_revision});
  std::string now = now_rfc3339();
  for (const auto& n : batch.put_nodes) txn.puts.push_back({keys::node(n.name), nlohmann::json(n).dump()});
  for (const auto& n : batch.delete_nodes) {
    txn.deletes.push_back({keys::node(n)});
    txn.deletes.push_back({keys::heartbeat(n)});
  }
  for (const auto& t : batch.put_tenants) txn.puts.push_back({keys::tenant(t.name), nlohmann::json(t).dump()});
  // The summaries of the apps put, as their records will be stored (lib/app_summary.hpp).
  std::vector<AppSummary> apps_after;
  apps_after.reserve(batch.put_apps.size());
  for (auto& a : batch.put_apps) {
    // The spec record is written only when the spec changed; an observation (status,
    // failed roles) rewrites just the small status key.
    const AppRecord* before = base.find_app(a.tenant, a.name);
    const bool spec_changed = !before || spec_json(*before) != spec_json(a);
    apps_after.push_back(app_summary(spec_changed ? a : *before, 0));
    apps_after.back().status = a.status;
    if (spec_changed) {
      if (a.created.empty()) a.created = before ? before->created : now;
      a.updated = now;
      if (a.op.empty()) a.op = op;
      apps_after.back().created = a.created;
      nlohmann::json record = a;
      record.erase("status");
      record.erase("failed_roles");
      txn.puts.push_back({keys::app(a.tenant, a.name), record.dump()});
      if (receipt) receipt->apps.push_back({a.tenant, a.name, a.created, a.updated, a.op});
    }
    // The status key goes with every spec write too: a record written before the split
    // carried its status inside, which the new record no longer does.
    if (spec_changed || before->status != a.status || before->failed_roles != a.failed_roles) {
      AppStatus status{a.status, a.failed_roles, now, op};
      txn.puts.push_back({keys::app_status(a.tenant, a.name), nlohmann::json(status).dump()});
    }
  }
  for (const auto& [t, n] : batch.delete_apps) {
    txn.deletes.push_back({keys::app(t, n)});
    txn.deletes.push_back({keys::app_status(t, n)});
  }
  // Spec bundles: new ones are written; one that no app refers to after this batch
  // (its app was deleted or re-submitted from other files) goes in the same commit.
  auto bundles = bundle_fates(base, batch);
  for (const auto& hash : bundles.dropped) txn.deletes.push_back({keys::bundle(hash)});
  for (const auto& [hash, content] : batch.put_bundles)
    if (bundles.live.count(hash)) txn.puts.push_back({keys::bundle(hash), content});
  for (const auto& i : batch.put_instances) txn.puts.push_back({keys::instance(i), encode_instance(i)});
  for (const auto& k : batch.delete_instances) txn.deletes.push_back({"instances/" + k});
  if (batch.profile) txn.puts.push_back({keys::k_profile, nlohmann::json(*batch.profile).dump()});
  for (const auto& [name, value] : batch.put_settings) txn.puts.push_back({keys::setting(name), value.dump()});
  int64_t seq = base.seq;
  // Bounded retention: each new event retires the one that fell out of the window. A
  // batch with more events than the window holds (a cluster of 100,000 nodes adds as
  // many NodeAdded events) retires its own oldest ones at once: those are never written,
  // and only events that are already stored are deleted.
  const int64_t retention = m_options.event_retention;
  const int64_t oldest_kept = base.seq + static_cast<int64_t>(batch.events.size()) - retention + 1;
  for (auto& e : batch.events) {
    e.seq = ++seq;
    if (e.time.empty()) e.time = now;
    if (e.op.empty()) e.op = op;
    if (e.seq >= oldest_kept) txn.puts.push_back({keys::event(e.seq), encode_event(e)});
    const int64_t retired = e.seq - retention;
    if (retired > 0 && retired <= base.seq) txn.deletes.push_back({keys::event(retired)});
  }
  // The sequence key moves on every commit, even one without events, so it is the one
  // compare that detects any concurrent write.
  txn.puts.push_back({keys::k_seq, std::to_string(seq)});
  // The app summaries follow, with the marker at this sequence. Summaries not kept since
  // the marker (an older gaia wrote, a record was quarantined) are all written again,
  // and those of apps that are gone deleted.
  std::vector<std::string> stale_keys;
  if (!summaries_kept(base)) {
    auto stored = read_all(m_store, keys::k_app_summaries, 0);
    if (!stored) return fail(store_diag(stored.error()));
    for (auto& kv : stored->first) stale_keys.push_back(std::move(kv.key));
  }
  add_summary_writes(base, batch, apps_after, seq, stale_keys, txn);
  // One transaction when the store takes it whole, else through the journal, so a
  // submit of hundreds of instances and events stays one atomic step on etcd too.
  static std::atomic<uint64_t> counter{0};
  std::string id = fmt::format("{}-{}-{}", seq, ::getpid(), counter.fetch_add(1));
  int64_t revision = 0;
  auto r = commit_any_size(m_store, txn, id, &revision, receipt ? &receipt->revision : nullptr);
  if (!r) return fail(store_diag(r.error()));
  if (*r) m_last_commit_revision.store(revision);
  return *r;
}

Result<ClusterState> State::update(const std::string& op,
                                   const std::function<Result<void>(const ClusterState&, Batch&)>& decide,
                                   int attempts) {
  // Decided on the shared state: the one copy is the state returned.
  auto st = update_shared(op, decide, attempts);
  if (!st) return fail(st.error());
  return ClusterState(**st);
}

Result<std::shared_ptr<const ClusterState>> State::update_shared(
    const std::string& op, const std::function<Result<void>(const ClusterState&, Batch&)>& decide, int attempts) {
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto st = load_shared();
    if (!st) return fail(st.error());
    Batch batch;
    if (auto d = decide(**st, batch); !d) return fail(d.error());
    if (batch.empty()) return st;
    auto ok = commit(**st, std::move(batch), op);
    if (!ok) return fail(ok.error());
    if (*ok) {
      // Let go first, so the kept state takes the commit in place rather than in a copy.
      st->reset();
      return load_shared();
    }
  }
  return fail(Diagnostic{.location = {},
                         .path = "",
                         .message = fmt::format("gave up after {} conflicting concurrent writes", attempts),
                         .hint = "another gaia process keeps changing the store; retry when it is done",
                         .code = "store.conflict"});
}

Result<std::vector<TimelineEvent>> State::events_after(int64_t after, size_t limit) {
  // Events of a half-applied commit would arrive out of order: finish it first.
  if (auto r = roll_forward(m_store); !r) return fail(store_diag(r.error()));
  // Only the keys after `after`: a follower's poll costs what is new, not the whole
  // timeline (up to event_retention keys). Event keys are zero-padded, so key order is
  // sequence order, and "events0" is the first key past every "events/...".
  std::vector<TimelineEvent> out;
  const size_t page_size = m_store.read_page_size();
  RangeRequest request = RangeRequest::interval(keys::event(after) + std::string(1, '\0'), "events0", 0,
                                                limit && page_size ? std::min(limit, page_size) : limit ? limit : page_size);
  for (;;) {
    auto page = m_store.read(request);
    if (!page) return fail(store_diag(page.error()));
    for (const auto& kv : page->kvs) {
      try {
        out.push_back(nlohmann::json::parse(kv.value).get<TimelineEvent>());
      } catch (const std::exception& e) {
        return fail(Diagnostic{{}, kv.key, fmt::format("corrupt event in the store: {}", e.what()),
                               "`gaia store check --quarantine` sets it aside"});
      }
      if (limit && out.size() >= limit) return out;
    }
    if (!page->more || page->kvs.empty()) return out;
    request.key = page->kvs.back().key + std::string(1, '\0');
    request.revision = page->revision;
  }
}

Result<std::optional<std::string>> State::bundle(const std::string& hash) {
  auto kv = m_store.get(keys::bundle(hash));
  if (!kv) return fail(store_diag(kv.error()));
  if (!*kv) return std::optional<std::string>();
  return std::optional<std::string>((*kv)->value);
}

Result<void> State::write_heartbeats(const std::vector<std::string>& nodes, const std::string& agent) {
  if (nodes.empty()) return {};
  // Plain puts, outside the sequence compare: a beat must never make a concurrent
  // command's commit conflict, nor conflict itself.
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(m_clock.now().time_since_epoch()).count();
  std::string value = nlohmann::json{{"at_ms", now}, {"agent", agent}}.dump();
  // Beats need no atomicity: as many transactions as the store's limits ask for.
  const TxnLimits limits = m_store.txn_limits();
  Txn txn;
  auto flush = [&]() -> Result<void> {
    if (txn.puts.empty()) return {};
    auto r = m_store.txn(txn);
    txn.puts.clear();
    if (!r) return fail(store_diag(r.error()));
    return {};
  };
  for (const auto& n : nodes) {
    txn.puts.push_back({keys::heartbeat(n), value});
    if (!txn_fits(txn, limits)) {
      Put last = txn.puts.back();
      txn.puts.pop_back();
      if (auto f = flush(); !f) return f;
      txn.puts.push_back(last);
    }
  }
  return flush();
}

Result<int64_t> State::last_seq() {
  auto kv = m_store.get(keys::k_seq);
  if (!kv) return fail(store_diag(kv.error()));
  return *kv ? std::stoll((*kv)->value) : 0;
}

std::vector<RunningApp> State::list(const std::string& tenant) const { return list_prefix(tenant + "/"); }

std::vector<RunningApp> State::list_all() const { return list_prefix(""); }

std::vector<RunningApp> State::list_prefix(const std::string& tenant_prefix) const {
  std::vector<RunningApp> out;
  // The records and their statuses at one revision, so an app is never paired with
  // another moment's status.
  auto kvs = m_store.read(RangeRequest::prefix("apps/" + tenant_prefix));
  if (!kvs) return out;
  auto statuses = m_store.read(RangeRequest::prefix("status/apps/" + tenant_prefix, kvs->revision));
  std::map<std::string, std::string> status_of;
  if (statuses) {
    for (const auto& kv : statuses->kvs) {
      try {
        status_of[kv.key.substr(std::string_view("status/").size())] =
            nlohmann::json::parse(kv.value).get<AppStatus>().status;
      } catch (const std::exception&) {
      }
    }
  }
  for (const auto& kv : kvs->kvs) {
    try {
      auto a = nlohmann::json::parse(kv.value).get<AppRecord>();
      if (auto it = status_of.find(kv.key); it != status_of.end()) a.status = it->second;
      out.push_back(running_app_of(a));
    } catch (const std::exception&) {
      // A corrupt record is reported by load(); resolution simply does not reuse it.
    }
  }
  return out;
}

namespace {

// UTC broken-down time; fmt 9 would format a time_point in local time.
std::tm utc(Clock::time_point t) {
  std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return tm;
}

}  // namespace

std::string State::now_rfc3339() const {
  auto t = m_clock.now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
  return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03d}Z", utc(t), ms);
}

std::string new_operation_id(const Clock& clock) {
  std::random_device rd;
  return fmt::format("op-{:%Y%m%dT%H%M%S}-{:04x}", utc(clock.now()), rd() & 0xffff);
}

}  // namespace gaia
