#include "controllers/rebalance.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "controllers/explain.hpp"
#include "controllers/migrate.hpp"
#include "controllers/migration.hpp"
#include "controllers/node_ops.hpp"
#include "controllers/scheduler.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {

std::string role_id(const Instance& i) { return i.tenant + "/" + i.app + "/" + i.role; }

void add(Resources& to, const Resources& r) {
  to.cpu_millis += r.cpu_millis;
  to.memory_bytes += r.memory_bytes;
  to.gpu += r.gpu;
}

// Requests on each node, by node name.
std::unordered_map<std::string, Resources> allocated(const ClusterState& state) {
  std::unordered_map<std::string, Resources> out;
  for (const auto& i : state.snapshot.instances)
    if (occupies_node(i)) add(out[i.node], i.request);
  return out;
}

bool not_larger(const Resources& a, const Resources& b) {
  return a.cpu_millis <= b.cpu_millis && a.memory_bytes <= b.memory_bytes && a.gpu <= b.gpu;
}

double weight(const Resources& r) {
  return static_cast<double>(r.cpu_millis) / 1000.0 + static_cast<double>(r.memory_bytes) / (1024.0 * 1024 * 1024) / 4.0 +
         static_cast<double>(r.gpu) * 8.0;
}

// Takes an instance off its node in a trial snapshot; fresh volume bindings will be made
// where it lands (its data is copied).
void take_off(Instance& i) {
  std::string from = i.node;
  std::erase_if(i.volumes, [&](const VolumeBinding& v) { return v.node == from; });
  i.node.clear();
  i.address.clear();
  i.ports.clear();
  i.state = InstanceState::Pending;
}

// Schedules `keys` on `snap`; the placements when every one is placed without evicting
// anyone, else nothing.
std::optional<std::vector<Placement>> place_all(const Snapshot& snap, const std::vector<std::string>& keys) {
  Decision d = schedule(snap, keys);
  if (!d.preemptions.empty() || d.placements.size() != keys.size()) return std::nullopt;
  return d.placements;
}

// Packed: most-allocated first, and no pull toward spreading a role's replicas, which
// would undo the packing.
void pack(Snapshot& s) {
  s.profile.strategy = "stack";
  s.profile.w_spread = 0;
}

double rate_of(double cpu_used, double cpu_cap, double mem_used, double mem_cap) {
  if (cpu_cap <= 0 || mem_cap <= 0) return 0;
  return 50.0 * (cpu_used / cpu_cap + mem_used / mem_cap);
}

// A node the defragmentation may empty, with what it holds.
struct Source {
  size_t node = 0;             // Index in the snapshot's nodes.
  std::vector<size_t> members;  // Indexes of its instances in the snapshot.
  Resources used;
  double load = 0;
};

struct Planner {
  const ClusterState& base;
  RebalanceOptions options;
  int64_t now_ms;
  ClusterState work;
  RebalancePlan plan;
  AddressBook addresses;
  std::unordered_map<std::string, size_t> at;  // Instance key -> index in work's instances.
  // Instances moved (or claimed) by this plan and nodes that received them: nothing
  // moves twice, and a node that received instances is not emptied.
  std::unordered_set<std::string> moved, targets;
  std::unordered_set<std::string> fitted;  // Nodes a pending instance was given.
  // Running instances of each role that may still leave at once: running minus
  // min_available (running counted on nodes that are not down).
  std::unordered_map<std::string, int> allowance;

  Planner(const ClusterState& state, const RebalanceOptions& o, int64_t now)
      : base(state), options(o), now_ms(now), work(state), addresses(state.snapshot.instances) {
    const auto& instances = work.snapshot.instances;
    at.reserve(instances.size());
    for (size_t k = 0; k < instances.size(); ++k) at.emplace(instances[k].key(), k);
    std::unordered_set<std::string> down;
    for (const auto& n : work.snapshot.nodes)
      if (n.state == NodeState::Down) down.insert(n.name);
    for (const auto& i : instances)
      if (i.state == InstanceState::Running && !down.count(i.node)) ++allowance[role_id(i)];
    for (auto& [id, n] : allowance) {
      auto r = work.snapshot.roles.find(id);
      if (r != work.snapshot.roles.end()) n -= r->second.min_available;
    }
  }

  int budget() const { return options.max_moves - static_cast<int>(plan.moves.size()); }

  int allowance_of(const Instance& i) const {
    auto it = allowance.find(role_id(i));
    return it == allowance.end() ? 0 : it->second;
  }

  // Only running instances move: one starting or stopping is left alone this time, and
  // so is one whose migrate_times is spent.
  bool movable(const Instance& i) const {
    if (options.partial) {
      // The controller moves on its own: never an instance with data on its node
      // (moving it copies the data and stops it meanwhile), nor one that was moved and
      // started again within `settle_ms`, so it does not undo a `gaia migrate --to` (or
      // its own last move) at once.
      if (!i.volumes.empty()) return false;
      if (options.settle_ms > 0 && i.migrations > 0 && i.started_ms > 0 && now_ms - i.started_ms < options.settle_ms)
        return false;
    }
    return i.state == InstanceState::Running && !i.node.empty() && !moved.count(i.key()) &&
           migrate_times_refusal(work, i).empty();
  }

  Instance& instance(const std::string& key) { return work.snapshot.instances[at.at(key)]; }

  void move(const Placement& p, const std::string& purpose) {
    Instance& i = instance(p.instance);
    std::string from = i.node;
    if (i.state == InstanceState::Running) --allowance[role_id(i)];
    move_instance(work, plan.batch, i, p, addresses, "rebalance: " + purpose, true, now_ms);
    moved.insert(p.instance);
    targets.insert(p.node);
    plan.moves.push_back({p.instance, from, p.node, purpose});
  }

  // Tries to make room for pending instance `pending` on one node.
  bool make_room(const Instance& pending) {
    const std::string key = pending.key();
    auto e = explain(work.snapshot, key);
    if (!e) return false;
    auto used = allocated(work);
    struct Option {
      std::string node;
      std::vector<const Instance*> movers;
    };
    std::vector<Option> found;
    for (const auto& ne : e->nodes) {
      if (ne.feasible || ne.failures.empty()) continue;
      bool only_resources = std::all_of(ne.failures.begin(), ne.failures.end(),
                                        [](const FilterFailureInfo& f) { return f.filter == "ResourceFit"; });
      if (!only_resources) continue;
      const Node* node = work.find_node(ne.node);
      if (!node || node->state != NodeState::Ready) continue;
      Resources u = used[node->name];
      int64_t need_cpu = pending.request.cpu_millis - (node->capacity.cpu_millis - u.cpu_millis);
      int64_t need_mem = pending.request.memory_bytes - (node->capacity.memory_bytes - u.memory_bytes);
      int64_t need_gpu = pending.request.gpu - (node->capacity.gpu - u.gpu);
      std::vector<const Instance*> candidates;
      for (const auto& i : work.snapshot.instances)
        // Only work of the pending instance's priority or lower makes room for it.
        if (i.node == node->name && movable(i) && not_larger(i.request, pending.request) &&
            i.priority.rank() <= pending.priority.rank() &&
            !(i.tenant == pending.tenant && i.app == pending.app && i.role == pending.role))
          candidates.push_back(&i);
      // Largest first: the fewest moves that cover the shortfall.
      std::sort(candidates.begin(), candidates.end(), [](const Instance* a, const Instance* b) {
        double wa = weight(a->request), wb = weight(b->request);
        return wa != wb ? wa > wb : a->key() < b->key();
      });
      std::vector<const Instance*> movers;
      std::unordered_map<std::string, int> taken;  // Of each role's allowance.
      for (const Instance* c : candidates) {
        if (need_cpu <= 0 && need_mem <= 0 && need_gpu <= 0) break;
        bool helps = (need_cpu > 0 && c->request.cpu_millis > 0) || (need_mem > 0 && c->request.memory_bytes > 0) ||
                     (need_gpu > 0 && c->request.gpu > 0);
        if (!helps) continue;
        int& t = taken[role_id(*c)];
        if (t >= allowance_of(*c)) continue;  // min_available holds it.
        ++t;
        movers.push_back(c);
        need_cpu -= c->request.cpu_millis;
        need_mem -= c->request.memory_bytes;
        need_gpu -= c->request.gpu;
      }
      if (need_cpu > 0 || need_mem > 0 || need_gpu > 0) continue;
      if (movers.empty() || static_cast<int>(movers.size()) > budget()) continue;
      found.push_back({node->name, std::move(movers)});
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const Option& a, const Option& b) { return a.movers.size() < b.movers.size(); });
    int tries = 0;
    for (const auto& opt : found) {
      if (tries++ >= options.max_tries) break;
      std::vector<std::string> order;
      Snapshot trial = work.snapshot;
      for (const Instance* m : opt.movers) {
        order.push_back(m->key());
        take_off(trial.instances[at.at(order.back())]);
      }
      for (auto& n : trial.nodes)
        if (n.name == opt.node) n.state = NodeState::Cordoned;
      ++plan.schedules;
      auto placements = place_all(trial, order);
      if (!placements) continue;
      // With the moves done, the pending instance must land on the node.
      for (const auto& p : *placements) {
        Instance& t = trial.instances[at.at(p.instance)];
        t.node = p.node;
        t.state = InstanceState::Placed;
        t.ports = p.ports;
        for (const auto& v : p.volumes) t.volumes.push_back(v);
      }
      for (auto& n : trial.nodes) {
        if (n.name == opt.node) n.state = NodeState::Ready;
        else if (n.state == NodeState::Ready) n.state = NodeState::Cordoned;
      }
      ++plan.schedules;
      if (!place_all(trial, {key})) continue;
      std::string purpose = fmt::format("make room for {} on {}", key, opt.node);
      for (const auto& p : *placements) move(p, purpose);
      // The pending instance is placed by the scheduler controller once the moves are
      // committed; here it only claims the room so later goals do not use it.
      Instance& claimed = instance(key);
      claimed.node = opt.node;
      claimed.state = InstanceState::Placed;
      moved.insert(key);
      fitted.insert(opt.node);
      plan.fits.push_back({key, opt.node});
      return true;
    }
    return false;
  }

  void fit_pending() {
    std::vector<const Instance*> pending;
    for (const auto& i : base.snapshot.instances)
      if (i.state == InstanceState::Pending && waiting_for_volume_node(base, i).empty() &&
          !i.pending_reason.starts_with("waiting for"))
        pending.push_back(&i);
    std::sort(pending.begin(), pending.end(), [](const Instance* a, const Instance* b) {
      if (a->priority.rank() != b->priority.rank()) return a->priority.rank() > b->priority.rank();
      double wa = weight(a->request), wb = weight(b->request);
      return wa != wb ? wa > wb : a->key() < b->key();
    });
    int tried = 0;
    for (const Instance* i : pending) {
      if (budget() <= 0 || tried++ >= options.max_tries) break;
      // Only instances the scheduler cannot place as things are: the rest need no moves.
      ++plan.schedules;
      Decision d = schedule(work.snapshot, {i->key()});
      if (!d.placements.empty()) continue;
      if (!make_room(*i))
        plan.notes.push_back(fmt::format("{} still fits nowhere: no node where moving at most {} smaller instance(s) "
                                         "frees enough room",
                                         i->key(), budget()));
    }
  }

  // One round of the defragmentation: the nodes it may empty, in order, and those to try
  // at once. prepare() returns false (with plan.stopped set) when there is nothing to do.
  struct Round {
    std::vector<Source> sources;
    std::vector<char> in_use;  // By node index: Ready and holding an instance.
    std::vector<int> chosen;   // Indexes of the sources to try first.
  };

  bool prepare(Round& r) {
    const auto& nodes = work.snapshot.nodes;
    const auto& instances = work.snapshot.instances;
    std::unordered_map<std::string, size_t> node_at;
    for (size_t n = 0; n < nodes.size(); ++n) node_at.emplace(nodes[n].name, n);
    std::vector<Source> all(nodes.size());
    std::vector<char> blocked(nodes.size(), 0);  // Holds an instance that cannot move now.
    for (size_t k = 0; k < instances.size(); ++k) {
      const Instance& i = instances[k];
      if (!occupies_node(i)) continue;
      auto n = node_at.find(i.node);
      if (n == node_at.end()) continue;
      Source& s = all[n->second];
      s.members.push_back(k);
      add(s.used, i.request);
      if (!movable(i)) blocked[n->second] = 1;
    }
    r.in_use.assign(nodes.size(), 0);
    double cpu = 0, cpu_cap = 0, mem = 0, mem_cap = 0;
    Resources free_total;
    for (size_t n = 0; n < nodes.size(); ++n) {
      Source& s = all[n];
      s.node = n;
      const Node& node = nodes[n];
      if (node.state != NodeState::Ready || s.members.empty()) continue;
      r.in_use[n] = 1;
      cpu += static_cast<double>(s.used.cpu_millis);
      mem += static_cast<double>(s.used.memory_bytes);
      cpu_cap += static_cast<double>(node.capacity.cpu_millis);
      mem_cap += static_cast<double>(node.capacity.memory_bytes);
      free_total.cpu_millis += node.capacity.cpu_millis - s.used.cpu_millis;
      free_total.memory_bytes += node.capacity.memory_bytes - s.used.memory_bytes;
      free_total.gpu += node.capacity.gpu - s.used.gpu;
      double c = node.capacity.cpu_millis ? static_cast<double>(s.used.cpu_millis) / static_cast<double>(node.capacity.cpu_millis) : 0;
      double m = node.capacity.memory_bytes
                     ? static_cast<double>(s.used.memory_bytes) / static_cast<double>(node.capacity.memory_bytes)
                     : 0;
      s.load = (c + m) / 2;
    }
    double rate = rate_of(cpu, cpu_cap, mem, mem_cap);
    if (options.target_pct > 0 && rate >= options.target_pct) {
      plan.stopped = fmt::format("target reached: allocation {:.1f}% (target {:.1f}%)", rate, options.target_pct);
      return false;
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      const std::string& name = nodes[n].name;
      if (r.in_use[n] && !blocked[n] && !fitted.count(name) && !targets.count(name))
        r.sources.push_back(std::move(all[n]));
    }
    std::sort(r.sources.begin(), r.sources.end(), [&](const Source& a, const Source& b) {
      if (a.members.size() != b.members.size()) return a.members.size() < b.members.size();
      return a.load != b.load ? a.load < b.load : nodes[a.node].name < nodes[b.node].name;
    });
    if (!options.partial) {
      // Whole nodes only: a node whose running instances min_available would not let
      // leave together with those of the nodes before it waits for a later plan.
      std::unordered_map<std::string, int> left = allowance;
      std::vector<Source> kept;
      for (auto& s : r.sources) {
        std::unordered_map<std::string, int> need;
        for (size_t k : s.members) ++need[role_id(instances[k])];
        bool ok = std::all_of(need.begin(), need.end(), [&](const auto& kv) { return left[kv.first] >= kv.second; });
        if (!ok) continue;
        for (const auto& [id, n] : need) left[id] -= n;
        kept.push_back(std::move(s));
      }
      r.sources = std::move(kept);
    }
    int in_use = static_cast<int>(std::count(r.in_use.begin(), r.in_use.end(), 1));
    if (r.sources.empty() || in_use < 2) {
      plan.stopped = "no node left to empty";
      return false;
    }
    // Which sources to try: in order, as long as the move budget lasts and the target
    // is not reached, each whose instances still fit in the room left on the other
    // nodes in use (by requests; the scheduler then judges every filter). A source that
    // does not fit is passed over: a later, smaller one may.
    int moves = 0;
    Resources need, room = free_total;
    bool over_budget = false;
    for (size_t j = 0; j < r.sources.size(); ++j) {
      const Source& s = r.sources[j];
      const Node& node = nodes[s.node];
      int after = moves + static_cast<int>(s.members.size());
      if (options.partial ? moves >= budget() : after > budget()) {
        over_budget = true;
        break;
      }
      if (static_cast<int>(r.chosen.size()) + 1 >= in_use) break;  // One node in use stays.
      Resources n2 = need, room2 = room;
      add(n2, s.used);
      room2.cpu_millis -= node.capacity.cpu_millis - s.used.cpu_millis;
      room2.memory_bytes -= node.capacity.memory_bytes - s.used.memory_bytes;
      room2.gpu -= node.capacity.gpu - s.used.gpu;
      if (n2.cpu_millis > room2.cpu_millis || n2.memory_bytes > room2.memory_bytes || n2.gpu > room2.gpu) continue;
      need = n2;
      room = room2;
      moves = after;
      r.chosen.push_back(static_cast<int>(j));
      cpu_cap -= static_cast<double>(node.capacity.cpu_millis);
      mem_cap -= static_cast<double>(node.capacity.memory_bytes);
      if (options.target_pct > 0 && rate_of(cpu, cpu_cap, mem, mem_cap) >= options.target_pct) break;
    }
    if (r.chosen.empty()) {
      plan.stopped = over_budget ? fmt::format("the move budget left ({}) is smaller than any node's instances", budget())
                                 : "the other nodes in use have no room for another node's instances";
      return false;
    }
    return true;
  }

  // Schedules every instance of the sources `chosen` (indexes into r.sources) on the
  // other nodes in use. Returns the placements when all placed without preempting
  // anyone; otherwise adds to `failed` the sources with an instance that did not place
  // (or placed only by preempting).
  // Schedules the instances `keys` (members of the sources `chosen`), taken off their
  // nodes, onto the other nodes in use, packed.
  Decision schedule_off(const Round& r, const std::vector<int>& chosen, const std::vector<std::string>& keys) {
    Snapshot trial = work.snapshot;
    std::vector<char> closed(trial.nodes.size(), 0);
    for (int j : chosen) closed[r.sources[static_cast<size_t>(j)].node] = 1;
    for (const auto& k : keys) take_off(trial.instances[at.at(k)]);
    // Onto nodes already in use only: emptying one node by filling an empty one gains
    // nothing.
    for (size_t n = 0; n < trial.nodes.size(); ++n)
      if (trial.nodes[n].state == NodeState::Ready && (closed[n] || !r.in_use[n])) trial.nodes[n].state = NodeState::Cordoned;
    pack(trial);
    ++plan.schedules;
    return schedule(trial, keys);
  }

  std::optional<std::vector<Placement>> try_sources(const Round& r, const std::vector<int>& chosen,
                                                    std::unordered_set<int>& failed) {
    std::vector<std::string> order;
    std::unordered_map<std::string, int> source_of;
    for (int j : chosen)
      for (size_t m : r.sources[static_cast<size_t>(j)].members) {
        order.push_back(work.snapshot.instances[m].key());
        source_of[order.back()] = j;
      }
    Decision d = schedule_off(r, chosen, order);
    if (d.preemptions.empty() && d.placements.size() == order.size()) return std::move(d.placements);
    for (const auto& u : d.unschedulable)
      if (auto it = source_of.find(u.instance); it != source_of.end()) failed.insert(it->second);
    for (const auto& v : d.preemptions)
      if (auto it = source_of.find(v.preemptor); it != source_of.end()) failed.insert(it->second);
    return std::nullopt;
  }

  // Records the placements of the sources `chosen` (in partial mode, as many as the
  // budget and min_available let move now); returns how many moved.
  int commit(const Round& r, const std::vector<int>& chosen, const std::vector<Placement>& placements) {
    const auto& nodes = work.snapshot.nodes;
    std::unordered_map<std::string, int> source_of;  // Instance key -> source index.
    for (int j : chosen)
      for (size_t m : r.sources[static_cast<size_t>(j)].members) source_of[work.snapshot.instances[m].key()] = j;
    std::vector<const Placement*> ordered;
    for (const auto& p : placements) ordered.push_back(&p);
    std::stable_sort(ordered.begin(), ordered.end(), [&](const Placement* a, const Placement* b) {
      return source_of.at(a->instance) < source_of.at(b->instance);
    });
    std::unordered_map<int, int> left;
    for (int j : chosen) left[j] = static_cast<int>(r.sources[static_cast<size_t>(j)].members.size());
    // Which move now: as many as the budget and min_available let (partial mode).
    std::vector<const Placement*> now;
    int budget_left = budget();
    std::unordered_map<std::string, int> allow;
    for (const Placement* p : ordered) {
      if (budget_left <= 0) break;
      const Instance& i = instance(p->instance);
      auto [a, fresh] = allow.try_emplace(role_id(i), allowance_of(i));
      if (i.state == InstanceState::Running && a->second <= 0) continue;  // min_available holds it.
      if (i.state == InstanceState::Running) --a->second;
      --budget_left;
      now.push_back(p);
    }
    // The placements were made with every instance of the sources gone; with some
    // staying, they are made again for those that move, so that what stays counts
    // (a required anti-affinity with a replica that stays, say).
    std::vector<Placement> again;
    if (now.size() < ordered.size()) {
      std::vector<std::string> keys;
      for (const Placement* p : now) keys.push_back(p->instance);
      Decision d = schedule_off(r, chosen, keys);
      if (!d.preemptions.empty() || d.placements.size() != keys.size()) {
        plan.stopped = "what the budget and min_available let move no longer fits without the rest";
        return 0;
      }
      again = std::move(d.placements);
      now.clear();
      for (const auto& p : again) now.push_back(&p);
    }
    int recorded = 0;
    for (const Placement* p : now) {
      int j = source_of.at(p->instance);
      move(*p, fmt::format("defragment: empty {}", nodes[r.sources[static_cast<size_t>(j)].node].name));
      --left[j];
      ++recorded;
    }
    for (int j : chosen)
      if (left[j] == 0) plan.emptied.push_back(nodes[r.sources[static_cast<size_t>(j)].node].name);
    return recorded;
  }

  // Rounds: schedule every instance of the chosen sources at once; while some do not
  // place, leave their sources out of this round and try the rest again. A round that
  // moves something is followed by another on the nodes that received nothing (the
  // sources left out included: the room has changed); one that moves nothing ends it.
  void defragment() {
    int tries = 0;
    while (true) {
      if (budget() <= 0) {
        plan.stopped = "the move budget is spent";
        return;
      }
      Round r;
      if (!prepare(r)) return;
      std::vector<int> chosen = r.chosen;
      bool moved_some = false;
      while (!chosen.empty()) {
        if (tries >= options.max_tries) {
          plan.stopped = fmt::format("max tries spent ({} scheduling runs)", options.max_tries);
          return;
        }
        ++tries;
        std::unordered_set<int> failed;
        if (auto placed = try_sources(r, chosen, failed)) {
          if (commit(r, chosen, *placed) == 0) {
            plan.stopped = "min_available holds back every instance that could move now";
            return;
          }
          moved_some = true;
          break;
        }
        if (failed.empty()) failed.insert(chosen.back());  // Not expected; ends the loop all the same.
        std::erase_if(chosen, [&](int j) { return failed.count(j) > 0; });
      }
      if (!moved_some) {
        plan.stopped = "no node left whose instances all fit on the others";
        return;
      }
    }
  }
};

}  // namespace

std::pair<double, int> allocation_rate(const ClusterState& state) {
  auto used = allocated(state);
  double cpu_used = 0, cpu_cap = 0, mem_used = 0, mem_cap = 0;
  int in_use = 0;
  for (const auto& n : state.snapshot.nodes) {
    auto it = used.find(n.name);
    if (n.state != NodeState::Ready || it == used.end()) continue;
    ++in_use;
    cpu_used += static_cast<double>(it->second.cpu_millis);
    mem_used += static_cast<double>(it->second.memory_bytes);
    cpu_cap += static_cast<double>(n.capacity.cpu_millis);
    mem_cap += static_cast<double>(n.capacity.memory_bytes);
  }
  return {rate_of(cpu_used, cpu_cap, mem_used, mem_cap), in_use};
}

RebalancePlan plan_rebalance(const ClusterState& state, const RebalanceOptions& options, int64_t now_ms) {
  Planner p(state, options, now_ms);
  std::tie(p.plan.allocation_before, p.plan.nodes_in_use_before) = allocation_rate(state);
  if (options.max_moves > 0) {
    p.fit_pending();
    p.defragment();
  } else {
    p.plan.stopped = "no moves allowed";
  }
  p.plan.after = apply_batch(state, p.plan.batch);
  std::tie(p.plan.allocation_after, p.plan.nodes_in_use_after) = allocation_rate(p.plan.after);
  if (options.target_pct > 0 && p.plan.allocation_after < options.target_pct)
    p.plan.notes.push_back(fmt::format("the target of {:.1f}% is not reached: {:.1f}% after these moves",
                                       options.target_pct, p.plan.allocation_after));
  return std::move(p.plan);
}

ControllerResult rebalance_controller(const ClusterState& state, const ControllerContext& ctx) {
  const ControllerOptions& o = ctx.options;
  if (o.rebalance_budget <= 0 || !o.periodic) return {};
  int64_t period = std::max<int64_t>(o.rebalance_period_ms, 1000);
  if (auto it = state.settings.find(k_rebalance_setting); it != state.settings.end() && it->second.is_object()) {
    auto last = it->second.find("last_run_ms");
    if (last != it->second.end() && last->is_number_integer()) {
      int64_t at = last->get<int64_t>();
      // A last run in the future (another runner's clock ahead) does not stall it.
      if (at <= ctx.now_ms && ctx.now_ms < at + period) return {};
    }
  }
  RebalanceOptions ro;
  ro.max_moves = o.rebalance_budget;
  ro.target_pct = o.rebalance_target_pct;
  ro.partial = true;
  ro.settle_ms = period;
  RebalancePlan p = plan_rebalance(state, ro, ctx.now_ms);
  ControllerResult out;
  out.batch = std::move(p.batch);
  out.batch.put_settings[k_rebalance_setting] = nlohmann::json{{"last_run_ms", ctx.now_ms},
                                                               {"moves", p.moves.size()},
                                                               {"allocation_before", p.allocation_before},
                                                               {"allocation_after", p.allocation_after},
                                                               {"nodes_in_use_before", p.nodes_in_use_before},
                                                               {"nodes_in_use_after", p.nodes_in_use_after},
                                                               {"stopped", p.stopped}};
  if (!p.moves.empty())
    out.batch.event("Rebalanced",
                    fmt::format("moved {} instance(s) (budget {} per period): allocation of nodes in use {:.1f}% on {} "
                                "node(s) -> {:.1f}% on {} node(s){}",
                                p.moves.size(), o.rebalance_budget, p.allocation_before, p.nodes_in_use_before,
                                p.allocation_after, p.nodes_in_use_after,
                                p.emptied.empty() ? "" : fmt::format("; emptied {}", fmt::join(p.emptied, ", "))));
  return out;
}

}  // namespace gaia
