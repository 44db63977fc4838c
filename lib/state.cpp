#include "lib/state.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <random>

#include "lib/codec.hpp"
#include "lib/journal.hpp"

namespace gaia {

namespace keys {
std::string node(const std::string& name) { return "nodes/" + name; }
std::string tenant(const std::string& name) { return "tenants/" + name; }
std::string app(const std::string& tenant, const std::string& name) { return "apps/" + tenant + "/" + name; }
std::string instance(const Instance& i) { return "instances/" + i.key(); }
std::string event(int64_t seq) { return fmt::format("events/{:020d}", seq); }
std::string setting(const std::string& name) { return "settings/" + name; }
std::string heartbeat(const std::string& node) { return "heartbeats/" + node; }
}  // namespace keys

void to_json(nlohmann::json& j, const AppRecord& a) {
  j = nlohmann::json{{"tenant", a.tenant},     {"name", a.name},       {"version", a.version},
                     {"status", a.status},     {"workload", a.workload}, {"document", a.document},
                     {"dependencies", a.dependencies}, {"spec_dir", a.spec_dir}, {"source", a.source},
                     {"op", a.op},             {"created", a.created}, {"updated", a.updated}};
  if (!a.scale.empty()) j["scale"] = a.scale;
  if (!a.failed_roles.empty()) j["failed_roles"] = a.failed_roles;
  if (!a.render_inputs.empty()) j["render_inputs"] = a.render_inputs;
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

const AppRecord* ClusterState::find_app(const std::string& tenant, const std::string& name) const {
  auto it = apps.find(tenant + "/" + name);
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
         events.empty();
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
  std::string key = i.key();
  for (auto& x : put_instances)
    if (x.key() == key) {
      x = i;
      return;
    }
  put_instances.push_back(i);
}

State::State(Store& store, const Clock& clock, StateOptions options)
    : m_store(store), m_clock(clock), m_options(options) {}

namespace {

Diagnostic store_diag(const StoreError& e) { return e.to_diagnostic(); }

template <class T>
Result<void> decode_all(const std::vector<KeyValue>& kvs, std::vector<T>& out) {
  for (const auto& kv : kvs) {
    try {
      out.push_back(nlohmann::json::parse(kv.value).get<T>());
    } catch (const std::exception& e) {
      return fail(Diagnostic{{}, kv.key, fmt::format("corrupt record in the store: {}", e.what()),
                             "the store was modified by something other than gaia; restore it from a backup"});
    }
  }
  return {};
}

}  // namespace

Result<ClusterState> State::load() {
  // Read everything at one revision: retry if a writer committed between the ranges.
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto before = m_store.revision();
    if (!before) return fail(store_diag(before.error()));
    ClusterState st;
    st.revision = *before;
    auto nodes = m_store.range("nodes/");
    auto tenants = m_store.range("tenants/");
    auto apps = m_store.range("apps/");
    auto instances = m_store.range("instances/");
    auto seq = m_store.get(keys::k_seq);
    auto journal = m_store.get(k_journal_key);
    auto profile = m_store.get(keys::k_profile);
    auto settings = m_store.range("settings/");
    auto heartbeats = m_store.range("heartbeats/");
    for (auto* r : {&nodes, &tenants, &apps, &instances, &settings, &heartbeats})
      if (!*r) return fail(store_diag(r->error()));
    if (!seq) return fail(store_diag(seq.error()));
    if (!journal) return fail(store_diag(journal.error()));
    if (!profile) return fail(store_diag(profile.error()));
    if (*journal) {
      // A commit larger than one transaction is half applied: finish it, then read
      // again, so no decision is ever made on half a change (lib/journal.hpp).
      if (auto r = roll_forward(m_store); !r) return fail(store_diag(r.error()));
      continue;
    }
    auto after = m_store.revision();
    if (!after) return fail(store_diag(after.error()));
    if (*after != *before) continue;
    if (auto r = decode_all(*nodes, st.snapshot.nodes); !r) return fail(r.error());
    if (auto r = decode_all(*tenants, st.snapshot.tenants); !r) return fail(r.error());
    if (auto r = decode_all(*instances, st.snapshot.instances); !r) return fail(r.error());
    std::vector<AppRecord> app_list;
    if (auto r = decode_all(*apps, app_list); !r) return fail(r.error());
    for (auto& a : app_list) {
      for (const auto& role : a.workload.roles) st.snapshot.roles[a.tenant + "/" + a.name + "/" + role.name] = role;
      st.apps.emplace(a.tenant + "/" + a.name, std::move(a));
    }
    if (*seq) {
      st.seq = std::stoll((*seq)->value);
      st.seq_revision = (*seq)->mod_revision;
    }
    if (*profile) {
      try {
        st.snapshot.profile = nlohmann::json::parse((*profile)->value).get<SchedulerProfile>();
      } catch (const std::exception& e) {
        return fail(Diagnostic{{}, keys::k_profile, fmt::format("corrupt scheduler profile: {}", e.what()), ""});
      }
    }
    try {
      for (const auto& kv : *settings) st.settings[kv.key.substr(9)] = nlohmann::json::parse(kv.value);
    } catch (const std::exception& e) {
      return fail(Diagnostic{{}, "settings/", fmt::format("corrupt record in the store: {}", e.what()),
                             "the store was modified by something other than gaia; restore it from a backup"});
    }
    // A heartbeat only informs the node health check: an unreadable one is skipped (the
    // next beat rewrites it) rather than failing every command.
    for (const auto& kv : *heartbeats) {
      try {
        auto j = nlohmann::json::parse(kv.value);
        st.heartbeats[kv.key.substr(11)] = Heartbeat{j.value("at_ms", int64_t{0}), j.value("agent", std::string())};
      } catch (const std::exception&) {
      }
    }
    return st;
  }
  return fail(Diagnostic{{}, "", "the store kept changing while it was read", "retry; many writers are active"});
}

Result<bool> State::commit(const ClusterState& base, Batch batch, const std::string& op) {
  Txn txn;
  txn.compares.push_back({keys::k_seq, base.seq_revision});
  std::string now = now_rfc3339();
  for (const auto& n : batch.put_nodes) txn.puts.push_back({keys::node(n.name), nlohmann::json(n).dump()});
  for (const auto& n : batch.delete_nodes) {
    txn.deletes.push_back({keys::node(n)});
    txn.deletes.push_back({keys::heartbeat(n)});
  }
  for (const auto& t : batch.put_tenants) txn.puts.push_back({keys::tenant(t.name), nlohmann::json(t).dump()});
  for (auto& a : batch.put_apps) {
    if (a.created.empty()) a.created = now;
    a.updated = now;
    if (a.op.empty()) a.op = op;
    txn.puts.push_back({keys::app(a.tenant, a.name), nlohmann::json(a).dump()});
  }
  for (const auto& [t, n] : batch.delete_apps) txn.deletes.push_back({keys::app(t, n)});
  for (const auto& i : batch.put_instances) txn.puts.push_back({keys::instance(i), nlohmann::json(i).dump()});
  for (const auto& k : batch.delete_instances) txn.deletes.push_back({"instances/" + k});
  if (batch.profile) txn.puts.push_back({keys::k_profile, nlohmann::json(*batch.profile).dump()});
  for (const auto& [name, value] : batch.put_settings) txn.puts.push_back({keys::setting(name), value.dump()});
  int64_t seq = base.seq;
  for (auto& e : batch.events) {
    e.seq = ++seq;
    if (e.time.empty()) e.time = now;
    if (e.op.empty()) e.op = op;
    txn.puts.push_back({keys::event(e.seq), nlohmann::json(e).dump()});
    // Bounded retention: each new event retires the one that fell out of the window.
    if (e.seq > m_options.event_retention) txn.deletes.push_back({keys::event(e.seq - m_options.event_retention)});
  }
  // The sequence key moves on every commit, even one without events, so it is the one
  // compare that detects any concurrent write.
  txn.puts.push_back({keys::k_seq, std::to_string(seq)});
  // One transaction when the store takes it whole, else through the journal, so a
  // submit of hundreds of instances and events stays one atomic step on etcd too.
  static std::atomic<uint64_t> counter{0};
  std::string id = fmt::format("{}-{}-{}", seq, ::getpid(), counter.fetch_add(1));
  auto r = commit_any_size(m_store, txn, id);
  if (!r) return fail(store_diag(r.error()));
  return *r;
}

Result<ClusterState> State::update(const std::string& op,
                                   const std::function<Result<void>(const ClusterState&, Batch&)>& decide,
                                   int attempts) {
  for (int attempt = 0; attempt < attempts; ++attempt) {
    auto st = load();
    if (!st) return fail(st.error());
    Batch batch;
    if (auto d = decide(*st, batch); !d) return fail(d.error());
    if (batch.empty()) return st;
    auto ok = commit(*st, std::move(batch), op);
    if (!ok) return fail(ok.error());
    if (*ok) return load();
  }
  return fail(Diagnostic{{}, "", fmt::format("gave up after {} conflicting concurrent writes", attempts),
                         "another gaia process keeps changing the store; retry when it is done"});
}

Result<std::vector<TimelineEvent>> State::events_after(int64_t after, size_t limit) {
  // Events of a half-applied commit would arrive out of order: finish it first.
  if (auto r = roll_forward(m_store); !r) return fail(store_diag(r.error()));
  auto kvs = m_store.range("events/");
  if (!kvs) return fail(store_diag(kvs.error()));
  std::vector<TimelineEvent> out;
  std::string from = keys::event(after);
  for (const auto& kv : *kvs) {
    if (kv.key <= from) continue;
    try {
      out.push_back(nlohmann::json::parse(kv.value).get<TimelineEvent>());
    } catch (const std::exception& e) {
      return fail(Diagnostic{{}, kv.key, fmt::format("corrupt event in the store: {}", e.what()), ""});
    }
    if (limit && out.size() >= limit) break;
  }
  return out;
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

std::vector<RunningApp> State::list(const std::string& tenant) const {
  std::vector<RunningApp> out;
  auto kvs = m_store.range(keys::app(tenant, ""));
  if (!kvs) return out;
  for (const auto& kv : *kvs) {
    try {
      auto a = nlohmann::json::parse(kv.value).get<AppRecord>();
      out.push_back(RunningApp{a.tenant, a.name, a.version, a.workload.outputs, a.status == "Ready"});
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
