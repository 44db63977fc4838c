#include "controllers/submit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "controllers/app_health.hpp"
#include "controllers/lifecycle.hpp"
#include "controllers/replicas.hpp"
#include "controllers/rollout.hpp"
#include "controllers/scheduler.hpp"
#include "lib/codec.hpp"
#include "lib/huge_pages.hpp"

namespace gaia {

namespace {

using Bits = unsigned __int128;

std::string submit_app_key(const std::string& tenant, const std::string& name) { return tenant + "/" + name; }

// The lowest address of `prefix` not in `used`, skipping the network address and, for
// IPv4, the broadcast address. Scans at most a million candidates: an instance subnet
// with that many instances on one node is not a case worth more code.
std::string first_free(const IpPrefix& prefix, const UsedAddresses& used) {
  int max_len = IpAddress::max_length(prefix.address.family);
  int host_bits = max_len - prefix.length;
  if (host_bits < 2) return "";
  // Bits are left-aligned in 128: one host step is 1 << (128 - max_len).
  Bits step = static_cast<Bits>(1) << (128 - max_len);
  Bits count = host_bits >= 64 ? (static_cast<Bits>(1) << 63) : (static_cast<Bits>(1) << host_bits);
  // IPv6 has no broadcast address, so its last address is usable.
  Bits end = prefix.address.family == IpFamily::V4 ? count - 1 : count;
  for (Bits k = 1; k < end && k < 1000000; ++k) {
    Bits candidate = prefix.address.bits + k * step;
    if (!used.contains(candidate)) return IpAddress{prefix.address.family, candidate}.to_string();
  }
  return "";
}

// Readiness of every app in one pass over the instances (controllers/app_health.hpp).
struct Readiness {
  AppHealthIndex health;
  explicit Readiness(const ClusterState& s) : health(s) {}
  // Only the apps in `apps` ("tenant/name"); asking about another answers as for an app
  // without instances.
  Readiness(const ClusterState& s, const std::unordered_set<std::string>& apps) : health(s, apps) {}
  // Every instance serves (the AppReady of a report).
  bool ready(const ClusterState& s, const std::string& tenant, const std::string& name) const {
    const AppRecord* a = s.find_app(tenant, name);
    return a && health.ready(*a);
  }
  // Each role has the instances it needs placed or serving: its dependents may be
  // placed. One datanode waiting for its node does not hold up hbase.
  bool placed(const ClusterState& s, const std::string& tenant, const std::string& name) const {
    const AppRecord* a = s.find_app(tenant, name);
    return a && health.placed(*a);
  }
};

std::string status_of(const ClusterState&, const Readiness& r, const AppRecord& a) { return r.health.status(a); }

std::string waiting_reason(const std::vector<std::string>& not_ready, const ClusterState& s, const std::string& tenant) {
  std::vector<std::string> parts;
  for (const auto& d : not_ready)
    parts.push_back(s.find_app(tenant, d) ? d : d + " (not deployed)");
  return fmt::format("waiting for dependency {} to be placed", fmt::join(parts, ", "));
}

// Where the instances of one role live, found by looking their addresses up in the
// topology table: per node, switch, rack and zone, the first instance seen there.
struct NearIndex {
  struct Example {
    std::string key, address, node;
  };
  std::unordered_map<std::string, Example> domain[4];  // node, switch, rack, zone
  size_t located = 0;
};

// Records where `x` lives (if placed with a known address) in the index.
void add_near_example(NearIndex& index, const Instance& x, const TopologyTable& topology) {
  if (x.node.empty() || x.address.empty()) return;
  auto parsed = parse_address(x.address);
  if (!parsed) return;
  auto m = topology.longest_match(*parsed);
  if (!m) return;
  const TopologyEntry& e = *m->value;
  NearIndex::Example ex{x.key(), x.address, e.node};
  const std::string* values[4] = {&e.node, &e.switch_, &e.rack, &e.zone};
  for (int t = 0; t < 4; ++t)
    if (!values[t]->empty()) index.domain[t].try_emplace(*values[t], ex);
  ++index.located;
}

// How close `node` is to the instances of the `near` role in `index`: the closest
// shared domain (node, switch, rack, zone) and an instance found there.
std::string format_locality(const NearIndex& index, const std::string& near, const Node& node) {
  if (index.located == 0) return fmt::format("no {} instance with a known address yet", near);
  static constexpr const char* kLevels[] = {"same node", "same switch", "same rack", "same zone"};
  const std::string* mine[4] = {&node.name, &node.switch_, &node.rack, &node.zone};
  for (int t = 0; t < 4; ++t) {
    if (mine[t]->empty()) continue;
    auto hit = index.domain[t].find(*mine[t]);
    if (hit == index.domain[t].end()) continue;
    const auto& ex = hit->second;
    return fmt::format("{}{} as {} ({} on {})", kLevels[t], t == 0 ? "" : " " + *mine[t], ex.key, ex.address, ex.node);
  }
  const auto& any = index.domain[0].begin()->second;
  return fmt::format("no {} instance in its zone, rack or switch (one is {} on {})", near, any.key, any.node);
}

}  // namespace

// What plan_submit builds for its decisions and SubmitPlanner keeps from one
// submission to the next: valid for the state it was built on as changed by the plans
// made with it, and nothing else.
struct PlanCaches {
  // The scheduler's index, kept from one app (and round) to the next while the
  // snapshot changes only by appended instances and applied placements.
  KeptIndex kept;
  std::unordered_map<std::string, UsedAddresses> used;  // Node -> addresses in use.
  bool used_built = false;

  void reset() {
    kept.reset();
    used.clear();
    used_built = false;
  }
};

namespace {

struct Work {
  // The working state, changed in place into the state after the submission.
  ClusterState& state;
  PlanCaches& caches;
  SubmitOutcome out;
  // Instance key -> position in the snapshot, built on the first lookup of a key
  // that is not in `added` (the instances this submission created, until then).
  std::unordered_map<std::string, size_t> index, added;
  bool indexed = false;
  std::unordered_map<std::string, size_t> put_index;  // Instance key -> position in put_instances.
  std::unordered_map<std::string, UsedAddresses>& used = caches.used;
  bool& used_built = caches.used_built;
  std::optional<TopologyTable> topology;
  // "tenant/app/role" -> (address, instance key) of its placed instances, built on first
  // use and dropped when an instance of the role moves.
  std::unordered_map<std::string, NearIndex> near_cache;
  std::unordered_map<std::string, size_t> node_index;  // Node name -> position in the snapshot.
  std::map<std::string, size_t> other_index;  // App id -> position in out.others.
  AppReport* current = nullptr;  // The submitted app being scheduled.
  std::unordered_set<std::string> attempted, requeued;
  ScheduleTuning tuning;
  KeptIndex& kept = caches.kept;

  Work(ClusterState& s, PlanCaches& c, const ScheduleTuning& t) : state(s), caches(c), tuning(t) {
    for (size_t k = 0; k < state.snapshot.nodes.size(); ++k) node_index[state.snapshot.nodes[k].name] = k;
  }

  // The state after the submission, as plan_submit returns it.
  void done() {
    finish();
    out.after = std::move(state);
    out.after.seq += static_cast<int64_t>(out.batch.events.size());
  }

  // Instances went or moved in the list: the key index is built again when next
  // needed, and the scheduler's index starts again.
  void reindex() {
    index.clear();
    added.clear();
    indexed = false;
    kept.reset();
  }

  // Schedules `keys` on the working state and applies the decision.
  void schedule_and_apply(const std::vector<std::string>& keys) {
    if (!tuning.keep_index) {
      apply(schedule(state.snapshot, keys, tuning));
      return;
    }
    Decision d = schedule(state.snapshot, keys, tuning, kept);
    // A victim is evicted as the lifecycle says (a stateful one keeps its node until its
    // copy stops), which the index did not do: the next call indexes afresh.
    if (!d.preemptions.empty()) kept.reset();
    apply(d);
  }

  Instance* find(const std::string& key) {
    if (!indexed) {
      // Most lookups are of instances this submission created: the key of every
      // instance of the cluster is hashed only when another one is asked for (a victim).
      if (auto it = added.find(key); it != added.end()) return &state.snapshot.instances[it->second];
      for (size_t k = 0; k < state.snapshot.instances.size(); ++k) index[state.snapshot.instances[k].key()] = k;
      added.clear();
      indexed = true;
    }
    auto it = index.find(key);
    return it == index.end() ? nullptr : &state.snapshot.instances[it->second];
  }

  void add_instance(Instance i) {
    (indexed ? index : added)[i.key()] = state.snapshot.instances.size();
    state.snapshot.instances.push_back(std::move(i));
  }

  void put_instance(const Instance& i) {
    std::string key = i.key();
    auto& dels = out.batch.delete_instances;
    dels.erase(std::remove(dels.begin(), dels.end(), key), dels.end());
    auto it = put_index.find(key);
    if (it != put_index.end()) {
      out.batch.put_instances[it->second] = i;
      return;
    }
    put_index[key] = out.batch.put_instances.size();
    out.batch.put_instances.push_back(i);
  }

  // Addresses in use per node, read once from the snapshot and kept up to date after.
  void ensure_used() {
    if (used_built) return;
    for (const auto& i : state.snapshot.instances)
      if (!i.node.empty() && !i.address.empty())
        if (auto a = parse_address(i.address)) used[i.node].insert(a->bits);
    used_built = true;
  }

  UsedAddresses& used_on(const std::string& node) {
    ensure_used();
    return used[node];
  }

  void release_address(const Instance& i) {
    if (i.node.empty() || i.address.empty()) return;
    if (auto a = parse_address(i.address)) used_on(i.node).erase(a->bits);
  }

  std::string take_address(const Node& node) {
    if (node.instance_subnet.empty()) return "";
    auto prefix = parse_cidr(node.instance_subnet);
    if (!prefix) return "";
    auto& u = used_on(node.name);
    std::string a = first_free(*prefix, u);
    if (!a.empty()) u.insert(parse_address(a)->bits);
    return a;
  }

  AppReport& report_for(const Instance& i, const std::string& action) {
    if (current && current->tenant == i.tenant && current->name == i.app) return *current;
    for (auto& r : out.apps)
      if (r.tenant == i.tenant && r.name == i.app) return r;
    std::string id = submit_app_key(i.tenant, i.app);
    auto it = other_index.find(id);
    if (it != other_index.end()) return out.others[it->second];
    const AppRecord* a = state.find_app(i.tenant, i.app);
    other_index[id] = out.others.size();
    AppReport r;
    r.tenant = i.tenant;
    r.name = i.app;
    r.version = a ? a->version : "";
    r.action = action;
    out.others.push_back(std::move(r));
    return out.others.back();
  }

  TimelineEvent& event(const Instance& i, std::string reason, std::string message, std::string type = "Normal") {
    auto& e = out.batch.event(std::move(reason), std::move(message), std::move(type));
    e.tenant = i.tenant;
    e.app = i.app;
    e.role = i.role;
    e.instance = i.key();
    e.node = i.node;
    return e;
  }

  void add_near(NearIndex& index, const Instance& x) {
    if (x.node.empty() || x.address.empty()) return;
    if (!topology) topology = node_topology(state.snapshot.nodes);
    add_near_example(index, x, *topology);
  }

  NearIndex& near_index(const std::string& tenant, const std::string& app, const std::string& role) {
    std::string key = tenant + "/" + app + "/" + role;
    auto it = near_cache.find(key);
    if (it != near_cache.end()) return it->second;
    NearIndex& index = near_cache[key];
    for (const auto& x : state.snapshot.instances)
      if (x.tenant == tenant && x.app == app && x.role == role) add_near(index, x);
    return index;
  }

  // How close `node` is to the instances of the role's `near` target, found through the
  // topology table from their addresses (docs/cluster-file.md). O(1) per placement once
  // the target's index is built.
  std::string locality(const Instance& i, const Node& node) {
    auto role = state.snapshot.roles.find(fmt::format("{}/{}/{}", i.tenant, i.app, i.role));
    if (role == state.snapshot.roles.end() || role->second.near.empty()) return "";
    const std::string& near = role->second.near;
    auto slash = near.find('/');
    if (slash == std::string::npos) return "";
    const NearIndex& index = near_index(i.tenant, near.substr(0, slash), near.substr(slash + 1));
    return format_locality(index, near, node);
  }

  // Applies a scheduling decision to the working state and records it.
  void apply(const Decision& d) {
    for (const auto& p : d.preemptions) {
      Instance* v = find(p.victim);
      if (!v) continue;
      std::string node = v->node;
      near_cache.erase(v->tenant + "/" + v->app + "/" + v->role);
      // A stateful victim keeps its node (and address) until its copy has stopped.
      Instance before = *v;
      evict_instance(*v, fmt::format("preempted by {} on {}", p.preemptor, node));
      if (v->node.empty()) release_address(before);
      put_instance(*v);
      auto& e = event(*v, "Preempted",
                      fmt::format("evicted from {} to make room for {} (higher priority)", node, p.preemptor), "Warning");
      e.node = node;
      report_for(*v, "affected").preempted.push_back({p.victim, node, p.preemptor});
      requeued.insert(p.victim);
      ++out.preempted;
    }
    for (const auto& p : d.placements) {
      Instance* i = find(p.instance);
      if (!i) continue;
      auto ni = node_index.find(p.node);
      const Node* node = ni == node_index.end() ? nullptr : &state.snapshot.nodes[ni->second];
      bind_instance(*i, p.node);
      i->ports = p.ports;
      for (const auto& b : p.volumes) i->volumes.push_back(b);
      i->address = node ? take_address(*node) : "";
      if (auto c = near_cache.find(i->tenant + "/" + i->app + "/" + i->role); c != near_cache.end()) add_near(c->second, *i);
      put_instance(*i);
      std::string near = node ? locality(*i, *node) : "";
      event(*i, "Scheduled",
            fmt::format("placed on {} (score {:.1f}), address {}{}", p.node, p.score,
                        i->address.empty() ? "none" : i->address, near.empty() ? "" : "; " + near));
      report_for(*i, "affected").placed.push_back({p.instance, p.node, i->address, p.score, near});
      ++out.placed;
    }
    for (const auto& u : d.unschedulable) {
      Instance* i = find(u.instance);
      if (!i) continue;
      // A victim that fits nowhere else keeps the story of why it is pending.
      std::string reason = u.reason;
      if (i->pending_reason.starts_with("preempted by ")) {
        std::string first = i->pending_reason.substr(0, i->pending_reason.find(';'));
        reason = first + "; then " + u.reason;
      }
      if (i->pending_reason != reason || i->state != InstanceState::Pending) {
        // With two instances of one key (a leftover beside a new one), the key may find
        // one that holds a node, which the scheduler's index counted as held.
        if (occupies_node(*i)) kept.reset();
        i->pending_reason = reason;
        i->state = InstanceState::Pending;
        put_instance(*i);
        event(*i, "FailedScheduling", u.reason, "Warning");
      }
      report_for(*i, "affected").pending.push_back({u.instance, reason});
    }
  }

  // Sets the app's status from its instances (an event when it changes).
  void set_app_status(const std::string& tenant, const std::string& name, const Readiness& r) {
    auto it = state.apps.find(submit_app_key(tenant, name));
    if (it == state.apps.end()) return;
    std::string status = status_of(state, r, it->second);
    if (it->second.status == status) return;
    std::string previous = it->second.status;
    it->second.status = status;
    auto& v = out.batch.put_apps;
    bool found = false;
    for (auto& a : v)
      if (a.tenant == tenant && a.name == name) {
        a.status = status;
        found = true;
      }
    if (!found) {
      v.push_back(it->second);
      v.back().op.clear();  // The commit stamps the operation making this change.
    }
    if (previous == "Updating") {
      auto& done = out.batch.event("RolledOut", fmt::format("every instance runs workload {}",
                                                            it->second.workload.hash.substr(0, 12)));
      done.tenant = tenant;
      done.app = name;
    }
    if (status == "Updating") {
      size_t outdated = 0;
      for (const auto& role : r.health.roles(it->second)) outdated += static_cast<size_t>(role.outdated);
      auto& e = out.batch.event(
          "RollingOut", fmt::format("{} instance(s) of an older render are replaced in batches keeping min_available",
                                    outdated));
      e.tenant = tenant;
      e.app = name;
      return;
    }
    app_status_event(status, r.health.summary(it->second), tenant, name, out.batch);
  }

  // Schedules pending instances whose dependencies are ready, round after round while a
  // round makes progress: a round may make an app ready (so its waiting dependents can
  // go next) or evict victims (which are retried). Each instance is tried once per call
  // unless it was evicted since. `scope` limits it to some apps (victims always count).
  void reschedule(const std::set<std::string>* scope) {
    for (int round = 0; round < 16; ++round) {
      Readiness r(state);
      std::vector<std::string> keys;
      for (auto& i : state.snapshot.instances) {
        if (i.state != InstanceState::Pending) continue;
        std::string key = i.key();
        bool victim = requeued.count(key) > 0;
        if (!victim && scope && !scope->count(submit_app_key(i.tenant, i.app))) continue;
        if (attempted.count(key) && !victim) continue;
        // A stateful instance whose volume sits on a down node can only go back there:
        // it waits for the node rather than failing every filter on every pass.
        if (!i.volumes.empty()) {
          std::string wait = waiting_for_volume_node(state, i);
          if (!wait.empty()) {
            if (i.pending_reason != wait) {
              i.pending_reason = wait;
              put_instance(i);
              event(i, "Waiting", wait, "Warning");
            }
            continue;
          }
        }
        std::vector<std::string> not_ready;
        if (const AppRecord* a = state.find_app(i.tenant, i.app))
          for (const auto& dep : a->dependencies)
            if (!r.placed(state, i.tenant, dep)) not_ready.push_back(dep);
        if (!not_ready.empty()) {
          std::string reason = waiting_reason(not_ready, state, i.tenant);
          if (i.pending_reason != reason) {
            i.pending_reason = reason;
            put_instance(i);
            event(i, "Waiting", reason);
          }
          continue;
        }
        keys.push_back(std::move(key));
      }
      if (keys.empty()) return;
      for (const auto& k : keys) {
        attempted.insert(k);
        requeued.erase(k);
      }
      schedule_and_apply(keys);
    }
  }

  // Statuses and report totals of every app the batch touched.
  void finish() {
    std::set<std::pair<std::string, std::string>> touched;
    for (const auto& i : out.batch.put_instances) touched.insert({i.tenant, i.app});
    for (const auto& a : out.batch.put_apps) touched.insert({a.tenant, a.name});
    std::unordered_set<std::string> ids;
    for (const auto& [tenant, name] : touched) ids.insert(submit_app_key(tenant, name));
    Readiness r(state, ids);
    for (const auto& [tenant, name] : in_event_order(out.batch, touched)) set_app_status(tenant, name, r);
    refresh_reports(out, state);
    // Pending instances of the reported apps as they stand at the end (an instance tried
    // twice is counted once).
    std::set<std::string> reported;
    for (const auto& rep : out.apps) reported.insert(submit_app_key(rep.tenant, rep.name));
    for (const auto& rep : out.others) reported.insert(submit_app_key(rep.tenant, rep.name));
    out.pending = 0;
    for (const auto& i : state.snapshot.instances)
      if (i.state == InstanceState::Pending && reported.count(submit_app_key(i.tenant, i.app))) ++out.pending;
  }
};

}  // namespace

std::string allocate_address(const Node& node, const std::vector<Instance>& instances) {
  if (node.instance_subnet.empty()) return "";
  auto prefix = parse_cidr(node.instance_subnet);
  if (!prefix) return "";
  UsedAddresses used;
  for (const auto& i : instances) {
    if (i.node != node.name || i.address.empty()) continue;
    if (auto a = parse_address(i.address)) used.insert(a->bits);
  }
  return first_free(*prefix, used);
}

AddressBook::AddressBook(const std::vector<Instance>& instances) {
  for (const auto& i : instances)
    if (!i.node.empty() && !i.address.empty())
      if (auto a = parse_address(i.address)) m_used[i.node].insert(a->bits);
}

std::string AddressBook::allocate(const Node& node) {
  if (node.instance_subnet.empty()) return "";
  auto prefix = parse_cidr(node.instance_subnet);
  if (!prefix) return "";
  auto& used = m_used[node.name];
  std::string a = first_free(*prefix, used);
  if (!a.empty()) used.insert(parse_address(a)->bits);
  return a;
}

void AddressBook::release(const std::string& node, const std::string& address) {
  if (node.empty() || address.empty()) return;
  if (auto a = parse_address(address)) m_used[node].erase(a->bits);
}

TopologyTable node_topology(const std::vector<Node>& nodes) {
  TopologyTable table;
  for (const auto& n : nodes) {
    TopologyEntry e{n.name, n.instance_subnet, n.switch_, n.rack, n.zone};
    if (!n.instance_subnet.empty())
      if (auto p = parse_cidr(n.instance_subnet)) table.insert(*p, e);
    if (!n.address.empty())
      if (auto a = parse_address(n.address)) {
        e.subnet = "";
        table.insert(IpPrefix{*a, IpAddress::max_length(a->family)}, e);
      }
  }
  return table;
}

std::string waiting_for_volume_node(const ClusterState& state, const Instance& i) {
  for (const auto& b : i.volumes) {
    const Node* n = state.find_node(b.node);
    if (n && n->state == NodeState::Down) return fmt::format("waiting for node {} (holds volume {})", b.node, b.volume);
  }
  return "";
}

std::string locality_text(const ClusterState& state, const Instance& i, const Node& node) {
  auto role = state.snapshot.roles.find(fmt::format("{}/{}/{}", i.tenant, i.app, i.role));
  if (role == state.snapshot.roles.end() || role->second.near.empty()) return "";
  const std::string& near = role->second.near;
  auto slash = near.find('/');
  if (slash == std::string::npos) return "";
  std::string near_app = near.substr(0, slash), near_role = near.substr(slash + 1);
  TopologyTable topology = node_topology(state.snapshot.nodes);
  NearIndex index;
  for (const auto& x : state.snapshot.instances)
    if (x.tenant == i.tenant && x.app == near_app && x.role == near_role) add_near_example(index, x, topology);
  return format_locality(index, near, node);
}


void refresh_reports(SubmitOutcome& out, const ClusterState& state) {
  // Only the reported apps are counted: a submit reports a few apps of a cluster of
  // thousands, and this runs after every decision.
  std::unordered_set<std::string> ids;
  for (const auto* reps : {&out.apps, &out.others})
    for (const auto& rep : *reps)
      if (const AppRecord* a = state.find_app(rep.tenant, rep.name)) ids.insert(a->tenant + "/" + a->name);
  AppHealthIndex health(state, ids);
  auto totals = [&](AppReport& rep) {
    const AppRecord* a = state.find_app(rep.tenant, rep.name);
    if (!a) return;
    std::tie(rep.instances, rep.running) = health.totals(*a);
    rep.ready = health.ready(*a);
    rep.status = health.status(*a);
  };
  for (auto& rep : out.apps) totals(rep);
  for (auto& rep : out.others) totals(rep);
}


ClusterState apply_batch(ClusterState state, const Batch& batch) {
  auto& nodes = state.snapshot.nodes;
  // Indexed by name: `gaia cluster create` of 100,000 nodes puts every node in one
  // batch, and a search per put (or per delete) was quadratic in the cluster size.
  if (!batch.put_nodes.empty()) {
    std::unordered_map<std::string, size_t> at;
    at.reserve(nodes.size() + batch.put_nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) at.emplace(nodes[k].name, k);
    for (const auto& n : batch.put_nodes) {
      if (auto it = at.find(n.name); it != at.end()) {
        nodes[it->second] = n;
      } else {
        at.emplace(n.name, nodes.size());
        nodes.push_back(n);
      }
    }
  }
  if (!batch.delete_nodes.empty()) {
    std::unordered_set<std::string> gone(batch.delete_nodes.begin(), batch.delete_nodes.end());
    std::erase_if(nodes, [&](const Node& n) { return gone.count(n.name) > 0; });
  }
  for (const auto& n : batch.delete_nodes) state.heartbeats.erase(n);
  for (const auto& t : batch.put_tenants) {
    auto it = std::find_if(state.snapshot.tenants.begin(), state.snapshot.tenants.end(),
                           [&](const Tenant& x) { return x.name == t.name; });
    if (it != state.snapshot.tenants.end()) *it = t;
    else state.snapshot.tenants.push_back(t);
  }
  for (const auto& [t, n] : batch.delete_apps) {
    state.apps.erase(submit_app_key(t, n));
    std::string prefix = submit_app_key(t, n) + "/";
    std::erase_if(state.snapshot.roles, [&](const auto& kv) { return kv.first.starts_with(prefix); });
  }
  for (const auto& a : batch.put_apps) {
    state.apps[submit_app_key(a.tenant, a.name)] = a;
    for (const auto& role : a.workload.roles) state.snapshot.roles[submit_app_key(a.tenant, a.name) + "/" + role.name] = role;
  }
  std::unordered_set<std::string> deleted(batch.delete_instances.begin(), batch.delete_instances.end());
  std::unordered_map<std::string, const Instance*> puts;
  for (const auto& i : batch.put_instances) puts[i.key()] = &i;
  std::vector<Instance> instances;
  instances.reserve(state.snapshot.instances.size() + puts.size());
  advise_huge_pages(instances);
  for (auto& i : state.snapshot.instances) {
    std::string key = i.key();
    if (auto it = puts.find(key); it != puts.end()) {
      instances.push_back(*it->second);
      puts.erase(it);
    } else if (!deleted.count(key)) {
      instances.push_back(std::move(i));
    }
  }
  for (const auto& i : batch.put_instances)
    if (puts.count(i.key())) instances.push_back(i);
  state.snapshot.instances = std::move(instances);
  if (batch.profile) state.snapshot.profile = *batch.profile;
  for (const auto& [name, value] : batch.put_settings) {
    state.settings[name] = value;
    if (name == keys::k_kept_claims_setting) state.snapshot.kept_claims = value.get<std::vector<KeptVolume>>();
    else if (name == keys::k_storage_classes_setting) state.snapshot.storage_classes = value.get<std::vector<StorageClass>>();
  }
  state.seq += static_cast<int64_t>(batch.events.size());
  return state;
}

void merge_batch(Batch& into, Batch more) {
  // Indexed by key: reconcile() merges every controller's batch on every pass, and a
  // batch touching every instance (the sim usage model's first run) made a linear
  // search per put quadratic in the cluster size.
  auto merge_keyed = [](auto& puts, auto& dels, auto& more_puts, auto& more_dels, auto key_of) {
    using Key = std::decay_t<decltype(key_of(puts.front()))>;
    if (!more_dels.empty()) {
      std::set<Key> gone(more_dels.begin(), more_dels.end());
      std::erase_if(puts, [&](const auto& p) { return gone.count(key_of(p)) > 0; });
      std::set<Key> known(dels.begin(), dels.end());
      for (const auto& d : more_dels)
        if (known.insert(d).second) dels.push_back(d);
    }
    if (more_puts.empty()) return;
    std::map<Key, size_t> at;
    for (size_t k = 0; k < puts.size(); ++k) at.emplace(key_of(puts[k]), k);
    std::set<Key> put_keys;
    for (auto& p : more_puts) {
      Key k = key_of(p);
      if (auto it = at.find(k); it != at.end()) {
        puts[it->second] = std::move(p);
      } else {
        at.emplace(k, puts.size());
        puts.push_back(std::move(p));
      }
      put_keys.insert(std::move(k));
    }
    if (!dels.empty()) std::erase_if(dels, [&](const auto& d) { return put_keys.count(d) > 0; });
  };
  merge_keyed(into.put_instances, into.delete_instances, more.put_instances, more.delete_instances,
              [](const Instance& i) { return i.key(); });
  merge_keyed(into.put_nodes, into.delete_nodes, more.put_nodes, more.delete_nodes,
              [](const Node& n) { return n.name; });
  merge_keyed(into.put_apps, into.delete_apps, more.put_apps, more.delete_apps,
              [](const AppRecord& a) { return std::pair{a.tenant, a.name}; });
  std::vector<std::string> no_tenant_deletes, none;
  merge_keyed(into.put_tenants, no_tenant_deletes, more.put_tenants, none, [](const Tenant& t) { return t.name; });
  if (more.profile) into.profile = std::move(more.profile);
  for (auto& [name, value] : more.put_settings) into.put_settings[name] = std::move(value);
  for (auto& e : more.events) into.events.push_back(std::move(e));
}

namespace {

// How many instances `apps` ask for at most: the room a working copy keeps for them.
size_t instances_asked(const std::vector<AppToDeploy>& apps) {
  size_t more = 0;
  for (const auto& a : apps)
    for (const auto& role : a.record.workload.roles) more += static_cast<size_t>(std::max(0, desired_replicas(a.record, role)));
  return more;
}

// plan_submit's decision, made on w.state in place.
void submit_apps(Work& w, const std::vector<AppToDeploy>& apps) {
  std::set<std::string> submitted;
  // Reports are filled in place: reserve so pointers into out.apps stay valid.
  w.out.apps.reserve(apps.size());
  for (const auto& to_deploy : apps) {
    AppRecord rec = to_deploy.record;
    std::string id = submit_app_key(rec.tenant, rec.name);
    submitted.insert(id);
    w.out.apps.push_back(AppReport{rec.tenant, rec.name, rec.version, "deploy", {}, {}, {}, {}, {}, {}, 0, 0, false, ""});
    AppReport& report = w.out.apps.back();
    const AppRecord* existing = w.state.find_app(rec.tenant, rec.name);
    if (existing && existing->workload.hash == rec.workload.hash && existing->version == rec.version) {
      report.action = "unchanged";
      for (const auto& i : w.state.snapshot.instances)
        if (i.tenant == rec.tenant && i.app == rec.name && i.state == InstanceState::Pending)
          report.pending.push_back({i.key(), i.pending_reason});
      continue;
    }
    // Ordinals (by role) the app already has and keeps.
    std::set<std::pair<std::string, int>> kept_ordinals;
    if (existing) {
      report.action = "update";
      // A changed app keeps its instances: the rollout controller replaces the outdated
      // ones in batches that keep each role's min_available (controllers/rollout.hpp),
      // stateful ones with their volumes. Only what the new render no longer has goes
      // now: roles it dropped and ordinals beyond its replica counts. When the roles
      // render exactly as before (only config reads' revisions moved, say), the
      // instances already run the new workload and just take its hash.
      bool same_roles = roles_unchanged(*existing, rec);
      // A `gaia scale` override outlives an update of the spec: the user set that count
      // for a reason (40 datanodes holding data), and a new version saying 3 must not
      // delete the other 37 with their volumes. It goes only with its role, or when the
      // user clears it (`gaia scale APP/ROLE --reset`).
      for (const auto& [role_name, count] : existing->scale) {
        const Role* role = nullptr;
        for (const auto& r : rec.workload.roles)
          if (r.name == role_name) role = &r;
        if (!role || role->kind == "batch") continue;
        rec.scale[role_name] = count;
        if (count != role->replicas)
          report.scale_kept.push_back(fmt::format("{}: {} replica(s) set by gaia scale (the spec says {})", role_name,
                                                  count, role->replicas));
      }
      std::map<std::string, int> wanted;
      for (const auto& role : rec.workload.roles) wanted[role.name] = desired_replicas(rec, role);
      // Read the addresses in use before the loop below moves instances out.
      w.ensure_used();
      std::set<std::string> volumes_kept_on;
      bool claims_kept = false;
      std::vector<Instance> kept;
      for (auto& i : w.state.snapshot.instances) {
        if (i.tenant != rec.tenant || i.app != rec.name) {
          kept.push_back(std::move(i));
          continue;
        }
        auto want = wanted.find(i.role);
        if (want != wanted.end() && i.ordinal < want->second) {
          kept_ordinals.insert({i.role, i.ordinal});
          if (i.hash != rec.workload.hash) {
            if (same_roles) {
              i.hash = rec.workload.hash;
              w.put_instance(i);
            } else {
              report.rolling.push_back(i.key());
            }
          }
          kept.push_back(std::move(i));
          continue;
        }
        w.out.batch.delete_instances.push_back(i.key());
        report.removed.push_back(i.key());
        w.release_address(i);
        // Its volumes stay on their nodes as kept volumes, as on a scale down
        // (controllers/replicas.hpp): a new spec's lower count is no request to delete
        // data. `gaia scale --delete-volumes` or deleting the app removes them.
        std::vector<std::string> volumes;
        for (const auto& v : i.volumes) {
          KeptVolume k{i.tenant, i.app, i.role, i.ordinal, v.volume, v.group, v.size_bytes, v.iops};
          if (claim_binding(v)) {
            w.state.snapshot.kept_claims.push_back(std::move(k));
            claims_kept = true;
          } else if (Node* n = w.state.find_node(v.node)) {
            n->kept_volumes.push_back(std::move(k));
            volumes_kept_on.insert(n->name);
          } else {
            continue;
          }
          volumes.push_back(fmt::format("{} {}", v.volume, volume_place(v.node, v.group)));
        }
        std::string note = volumes.empty() ? "" : fmt::format("; its volumes are kept: {}", fmt::join(volumes, ", "));
        w.event(i, "Removed",
                want == wanted.end()
                    ? fmt::format("role {} is not in version {} (workload {}){}", i.role, rec.version,
                                  rec.workload.hash.substr(0, 12), note)
                    : fmt::format("beyond the {} replica(s) of version {} (workload {}){}", want->second, rec.version,
                                  rec.workload.hash.substr(0, 12), note));
      }
      for (const auto& name : volumes_kept_on)
        if (const Node* n = w.state.find_node(name)) w.out.batch.put_nodes.push_back(*n);
      if (claims_kept)
        w.out.batch.put_settings[keys::k_kept_claims_setting] = nlohmann::json(w.state.snapshot.kept_claims);
      w.state.snapshot.instances = std::move(kept);
      w.reindex();
      std::string prefix = id + "/";
      std::erase_if(w.state.snapshot.roles, [&](const auto& kv) { return kv.first.starts_with(prefix); });
      w.near_cache.clear();
    }
    rec.status = "Progressing";
    rec.created = existing ? existing->created : "";
    // What `gaia export` granted stays: a resubmit must not cut off other tenants.
    if (existing) rec.exports = existing->exports;
    std::string previous_version = existing ? existing->version : "";
    w.state.apps[id] = rec;
    for (const auto& role : rec.workload.roles) w.state.snapshot.roles[id + "/" + role.name] = role;
    w.out.batch.put_apps.push_back(rec);
    {
      auto& e = w.out.batch.event(
          previous_version.empty() ? "Submitted" : "Updated",
          previous_version.empty()
              ? fmt::format("version {}, workload {}", rec.version, rec.workload.hash.substr(0, 12))
              : fmt::format("{} -> {} (workload {}){}", previous_version, rec.version, rec.workload.hash.substr(0, 12),
                            report.scale_kept.empty()
                                ? ""
                                : fmt::format("; scale overrides kept: {}", fmt::join(report.scale_kept, "; "))));
      e.tenant = rec.tenant;
      e.app = rec.name;
      auto& r = w.out.batch.event("Rendered", fmt::format("{} role(s), {} config read(s), hash {}",
                                                          rec.workload.roles.size(), rec.workload.reads.size(),
                                                          rec.workload.hash));
      r.tenant = rec.tenant;
      r.app = rec.name;
    }
    // (role, ordinal) of this app with kept volumes on some node, found in one pass.
    std::set<std::pair<std::string, int>> waiting_volumes;
    if (existing) {
      auto note = [&](const KeptVolume& k) {
        if (k.tenant == rec.tenant && k.app == rec.name) waiting_volumes.insert({k.role, k.ordinal});
      };
      for (const auto& n : w.state.snapshot.nodes) std::for_each(n.kept_volumes.begin(), n.kept_volumes.end(), note);
      std::for_each(w.state.snapshot.kept_claims.begin(), w.state.snapshot.kept_claims.end(), note);
    }
    std::vector<std::string> not_ready;
    if (!rec.dependencies.empty()) {
      // Only the dependencies are asked about: a pass over every app's instances per
      // submitted app was a tenth of a large submission.
      std::unordered_set<std::string> deps;
      // A dependency may name another tenant's app ("platform/db"): the app id is the
      // one find_app resolves it to.
      for (const auto& d : rec.dependencies) deps.insert(dependency_id(rec.tenant, d));
      Readiness readiness(w.state, deps);
      for (const auto& d : rec.dependencies)
        if (!readiness.placed(w.state, rec.tenant, d)) not_ready.push_back(d);
    }
    std::vector<std::string> keys;
    for (const auto& role : rec.workload.roles) {
      // One instance made, the others copied from it: the replicas share its labels.
      std::optional<Instance> first;
      for (int k = 0, n = desired_replicas(rec, role); k < n; ++k) {
        if (kept_ordinals.count({role.name, k})) continue;
        // An ordinal whose volumes an earlier scale down kept is left to the replicas
        // controller, which creates it with them (on the node holding its data).
        if (waiting_volumes.count({role.name, k}) && !volumes_to_reattach(w.state, rec, role, k).empty()) continue;
        if (!first) {
          first = new_instance(rec.tenant, rec.name, rec.version, role, k);
          first->hash = rec.workload.hash;
          if (!not_ready.empty()) first->pending_reason = waiting_reason(not_ready, w.state, rec.tenant);
        }
        Instance i = *first;
        i.ordinal = k;
        keys.push_back(i.key());
        w.put_instance(i);
        w.add_instance(std::move(i));
      }
    }
    if (!not_ready.empty() && !keys.empty()) {
      for (const auto& k : keys) report.pending.push_back({k, w.find(k)->pending_reason});
      auto& e = w.out.batch.event("Waiting", waiting_reason(not_ready, w.state, rec.tenant), "Warning");
      e.tenant = rec.tenant;
      e.app = rec.name;
    } else if (!keys.empty()) {
      w.current = &report;
      for (const auto& k : keys) w.attempted.insert(k);
      w.schedule_and_apply(keys);
      // Victims of this app's preemptions go back to the queue at once: they may fit
      // elsewhere. Instances of submitted apps are retried too, since a victim's
      // eviction may have freed what they needed.
      if (!w.requeued.empty()) w.reschedule(&submitted);
      w.current = nullptr;
    }
  }
}

}  // namespace

SubmitOutcome plan_submit(const ClusterState& state, const std::vector<AppToDeploy>& apps,
                          const ScheduleTuning& tuning) {
  // Room for the instances the submission creates, made before the copy (which fills
  // the room it finds): growing a list of every instance moves them all.
  ClusterState work;
  work.snapshot.instances.reserve(state.snapshot.instances.size() + instances_asked(apps));
  advise_huge_pages(work.snapshot.instances);
  work = state;
  PlanCaches caches;
  Work w(work, caches, tuning);
  submit_apps(w, apps);
  w.done();
  return std::move(w.out);
}

SubmitOutcome reschedule_pending(const ClusterState& state, const ScheduleTuning& tuning) {
  ClusterState work = state;
  PlanCaches caches;
  Work w(work, caches, tuning);
  w.reschedule(nullptr);
  for (auto& r : w.out.others) r.action = "reschedule";
  w.done();
  return std::move(w.out);
}

SubmitPlanner::SubmitPlanner(const ScheduleTuning& tuning) : m_tuning(tuning), m_caches(std::make_unique<PlanCaches>()) {}
SubmitPlanner::~SubmitPlanner() = default;
SubmitPlanner::SubmitPlanner(SubmitPlanner&&) noexcept = default;
SubmitPlanner& SubmitPlanner::operator=(SubmitPlanner&&) noexcept = default;

SubmitOutcome SubmitPlanner::plan(const ClusterState& state, const std::vector<AppToDeploy>& apps) {
  m_caches->reset();
  return plan_on(state, apps);
}

SubmitOutcome SubmitPlanner::plan_next(const ClusterState& last_after, const std::vector<AppToDeploy>& apps) {
  // A state that is not the last outcome's is a bug of the caller: what the planner kept
  // would decide on a cluster that is not there (an address handed out twice).
  if (!m_last || last_after.snapshot.instances.data() != m_last->instances ||
      last_after.snapshot.instances.size() != m_last->count || last_after.seq != m_last->seq ||
      last_after.snapshot.nodes.data() != m_last->nodes)
    throw std::logic_error("SubmitPlanner::plan_next: the state is not the after of this planner's last outcome");
  return plan_on(last_after, apps);
}

void SubmitPlanner::give_back(ClusterState&& spare) {
  // Kept whole: the next working copy is assigned over it, and its lists and their
  // elements' strings keep their room, which that assignment reuses.
  m_spare = std::move(spare);
}

SubmitOutcome SubmitPlanner::plan_on(const ClusterState& state, const std::vector<AppToDeploy>& apps) {
  ClusterState work = std::move(m_spare);
  m_spare = ClusterState{};
  const size_t room = state.snapshot.instances.size() + instances_asked(apps);
  if (work.snapshot.instances.capacity() < room) {
    // The list grows by half again, so the next few submissions find room too.
    work.snapshot.instances.reserve(room + room / 2);
    advise_huge_pages(work.snapshot.instances);
  }
  work = state;
  Work w(work, *m_caches, m_tuning);
  try {
    submit_apps(w, apps);
    w.done();
  } catch (...) {
    // Half a plan changed what was kept (addresses released, instances indexed): it
    // holds for no state now, and plan_next refuses until plan() starts over.
    m_caches->reset();
    m_last.reset();
    throw;
  }
  m_last = Last{w.out.after.snapshot.instances.data(), w.out.after.snapshot.instances.size(), w.out.after.seq,
                w.out.after.snapshot.nodes.data()};
  return std::move(w.out);
}

Instance new_instance(const std::string& tenant, const std::string& app, const std::string& version,
                      const Role& role, int ordinal) {
  Instance i;
  i.tenant = tenant;
  i.app = app;
  i.role = role.name;
  i.ordinal = ordinal;
  i.request = role.resources;
  if (role.burstable()) i.limit = role.limit();
  i.priority = role.priority;
  Labels::Map labels = role.labels;
  labels["gaia.io/app"] = app;
  labels["gaia.io/role"] = role.name;
  labels["gaia.io/tenant"] = tenant;
  labels["gaia.io/version"] = version;
  i.labels = std::move(labels);
  i.state = InstanceState::Pending;
  return i;
}

}  // namespace gaia
