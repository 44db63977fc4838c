#include "controllers/rebalance.hpp"

#include <fmt/format.h>

#include <algorithm>
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

// Requests on each node, by node name.
std::unordered_map<std::string, Resources> allocated(const ClusterState& state) {
  std::unordered_map<std::string, Resources> out;
  for (const auto& i : state.snapshot.instances) {
    if (!occupies_node(i)) continue;
    Resources& r = out[i.node];
    r.cpu_millis += i.request.cpu_millis;
    r.memory_bytes += i.request.memory_bytes;
    r.gpu += i.request.gpu;
  }
  return out;
}

bool not_larger(const Resources& a, const Resources& b) {
  return a.cpu_millis <= b.cpu_millis && a.memory_bytes <= b.memory_bytes && a.gpu <= b.gpu;
}

double weight(const Resources& r) {
  return static_cast<double>(r.cpu_millis) / 1000.0 + static_cast<double>(r.memory_bytes) / (1024.0 * 1024 * 1024) / 4.0 +
         static_cast<double>(r.gpu) * 8.0;
}

// Takes `keys` off their nodes in `snap` (fresh volume bindings will be made where they
// land: their data is copied) and cordons the nodes in `closed`.
void take_off(Snapshot& snap, const std::unordered_set<std::string>& keys, const std::unordered_set<std::string>& closed) {
  for (auto& i : snap.instances) {
    if (!keys.count(i.key())) continue;
    std::string from = i.node;
    std::erase_if(i.volumes, [&](const VolumeBinding& v) { return v.node == from; });
    i.node.clear();
    i.address.clear();
    i.ports.clear();
    i.state = InstanceState::Pending;
  }
  for (auto& n : snap.nodes)
    if (closed.count(n.name) && n.state == NodeState::Ready) n.state = NodeState::Cordoned;
}

// Schedules `keys` on `snap`; the placements when every one is placed without evicting
// anyone, else nothing.
std::optional<std::vector<Placement>> place_all(const Snapshot& snap, const std::vector<std::string>& keys) {
  Decision d = schedule(snap, keys);
  if (!d.preemptions.empty() || d.placements.size() != keys.size()) return std::nullopt;
  return d.placements;
}

struct Planner {
  const ClusterState& base;
  RebalanceOptions options;
  int64_t now_ms;
  ClusterState work;
  RebalancePlan plan;
  // Instances moved by this plan and nodes that received them: nothing moves twice.
  std::unordered_set<std::string> moved, targets;

  int budget() const { return options.max_moves - static_cast<int>(plan.moves.size()); }

  bool movable(const Instance& i) const {
    return occupies_node(i) && !moved.count(i.key()) && migrate_times_refusal(work, i).empty();
  }

  void record(ClusterState& into, Batch& batch, std::vector<RebalanceMove>& moves, const std::vector<Placement>& ps,
              const std::string& purpose) {
    for (const auto& p : ps) {
      std::string from = into.find_instance(p.instance)->node;
      move_instance(into, batch, p.instance, p, "rebalance: " + purpose, true, now_ms);
      moves.push_back({p.instance, from, p.node, purpose});
    }
  }

  // Tries to make room for pending instance `key` on one node.
  bool make_room(const Instance& pending) {
    const std::string key = pending.key();
    auto e = explain(work.snapshot, key);
    if (!e) return false;
    auto used = allocated(work);
    struct Option {
      const Node* node;
      std::vector<const Instance*> movers;
    };
    std::vector<Option> options_found;
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
        if (i.node == node->name && movable(i) && not_larger(i.request, pending.request) &&
            !(i.tenant == pending.tenant && i.app == pending.app && i.role == pending.role))
          candidates.push_back(&i);
      // Largest first: the fewest moves that cover the shortfall.
      std::sort(candidates.begin(), candidates.end(), [](const Instance* a, const Instance* b) {
        double wa = weight(a->request), wb = weight(b->request);
        return wa != wb ? wa > wb : a->key() < b->key();
      });
      std::vector<const Instance*> movers;
      for (const Instance* c : candidates) {
        if (need_cpu <= 0 && need_mem <= 0 && need_gpu <= 0) break;
        bool helps = (need_cpu > 0 && c->request.cpu_millis > 0) || (need_mem > 0 && c->request.memory_bytes > 0) ||
                     (need_gpu > 0 && c->request.gpu > 0);
        if (!helps) continue;
        movers.push_back(c);
        need_cpu -= c->request.cpu_millis;
        need_mem -= c->request.memory_bytes;
        need_gpu -= c->request.gpu;
      }
      if (need_cpu > 0 || need_mem > 0 || need_gpu > 0) continue;
      if (movers.empty() || static_cast<int>(movers.size()) > budget()) continue;
      options_found.push_back({node, std::move(movers)});
    }
    std::stable_sort(options_found.begin(), options_found.end(),
                     [](const Option& a, const Option& b) { return a.movers.size() < b.movers.size(); });
    int tries = 0;
    for (const auto& opt : options_found) {
      if (tries++ >= options.max_tries) break;
      std::unordered_set<std::string> keys;
      std::vector<std::string> order;
      for (const Instance* m : opt.movers) {
        keys.insert(m->key());
        order.push_back(m->key());
      }
      Snapshot trial = work.snapshot;
      take_off(trial, keys, {opt.node->name});
      auto placements = place_all(trial, order);
      if (!placements) continue;
      // Do the moves on a copy, then check the pending instance lands on the node.
      ClusterState next = work;
      Batch batch;
      std::vector<RebalanceMove> moves;
      std::string purpose = fmt::format("make room for {} on {}", key, opt.node->name);
      record(next, batch, moves, *placements, purpose);
      Snapshot only = next.snapshot;
      for (auto& n : only.nodes)
        if (n.name != opt.node->name && n.state == NodeState::Ready) n.state = NodeState::Cordoned;
      auto fit = place_all(only, {key});
      if (!fit) continue;
      // The pending instance is placed by the scheduler controller once the moves are
      // committed; here it only claims the room so later goals do not use it.
      std::string node_name = opt.node->name;  // `opt` points into `work`, replaced below.
      Instance* p = next.find_instance(key);
      p->node = node_name;
      p->state = InstanceState::Placed;
      work = std::move(next);
      merge_batch(plan.batch, std::move(batch));
      for (auto& m : moves) {
        moved.insert(m.instance);
        targets.insert(m.to);
        plan.moves.push_back(std::move(m));
      }
      plan.fits.push_back({key, node_name});
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
      Decision d = schedule(work.snapshot, {i->key()});
      if (!d.placements.empty()) continue;
      if (!make_room(*i))
        plan.notes.push_back(fmt::format("{} still fits nowhere: no node where moving at most {} smaller instance(s) "
                                         "frees enough room",
                                         i->key(), budget()));
    }
  }

  void defragment() {
    if (budget() <= 0) return;
    auto used = allocated(work);
    std::unordered_map<std::string, int> count;
    for (const auto& i : work.snapshot.instances)
      if (occupies_node(i)) ++count[i.node];
    std::unordered_set<std::string> fitted;
    for (const auto& f : plan.fits) fitted.insert(f.node);
    std::vector<const Node*> sources;
    for (const auto& n : work.snapshot.nodes)
      if (n.state == NodeState::Ready && count[n.name] > 0 && !fitted.count(n.name) && !targets.count(n.name))
        sources.push_back(&n);
    auto load = [&](const Node* n) {
      const Resources& u = used[n->name];
      double c = n->capacity.cpu_millis ? static_cast<double>(u.cpu_millis) / static_cast<double>(n->capacity.cpu_millis) : 0;
      double m = n->capacity.memory_bytes
                     ? static_cast<double>(u.memory_bytes) / static_cast<double>(n->capacity.memory_bytes)
                     : 0;
      return (c + m) / 2;
    };
    std::sort(sources.begin(), sources.end(), [&](const Node* a, const Node* b) {
      if (count[a->name] != count[b->name]) return count[a->name] < count[b->name];
      double la = load(a), lb = load(b);
      return la != lb ? la < lb : a->name < b->name;
    });
    if (sources.size() < 2) return;
    std::unordered_set<std::string> emptied;
    int tries = 0;
    for (const Node* s : sources) {
      if (budget() <= 0 || tries >= options.max_tries) break;
      if (count[s->name] > budget() || targets.count(s->name)) continue;
      ++tries;
      std::unordered_set<std::string> keys;
      std::vector<std::string> order;
      bool all_movable = true;
      for (const auto& i : work.snapshot.instances) {
        if (i.node != s->name || !occupies_node(i)) continue;
        if (!movable(i)) all_movable = false;
        keys.insert(i.key());
        order.push_back(i.key());
      }
      if (!all_movable || order.empty()) continue;
      // Onto nodes already in use only, packed: emptying one node by filling another
      // empty one gains nothing.
      std::unordered_set<std::string> closed{s->name};
      for (const auto& n : work.snapshot.nodes)
        if (count[n.name] == 0 || emptied.count(n.name)) closed.insert(n.name);
      Snapshot trial = work.snapshot;
      take_off(trial, keys, closed);
      // Packed: most-allocated first, and no pull toward spreading a role's replicas,
      // which would undo the packing.
      trial.profile.strategy = "stack";
      trial.profile.w_spread = 0;
      auto placements = place_all(trial, order);
      if (!placements) continue;
      std::string purpose = fmt::format("defragment: empty {}", s->name);
      record(work, plan.batch, plan.moves, *placements, purpose);
      for (const auto& p : *placements) {
        ++count[p.node];
        moved.insert(p.instance);
        targets.insert(p.node);
      }
      count[s->name] = 0;
      emptied.insert(s->name);
      plan.emptied.push_back(s->name);
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
  double rate = 0;
  if (cpu_cap > 0 && mem_cap > 0) rate = 50.0 * (cpu_used / cpu_cap + mem_used / mem_cap);
  return {rate, in_use};
}

RebalancePlan plan_rebalance(const ClusterState& state, const RebalanceOptions& options, int64_t now_ms) {
  Planner p{state, options, now_ms, state, {}, {}, {}};
  std::tie(p.plan.allocation_before, p.plan.nodes_in_use_before) = allocation_rate(state);
  if (options.max_moves > 0) {
    p.fit_pending();
    p.defragment();
  }
  p.plan.after = apply_batch(state, p.plan.batch);
  std::tie(p.plan.allocation_after, p.plan.nodes_in_use_after) = allocation_rate(p.plan.after);
  return std::move(p.plan);
}

}  // namespace gaia
