#include "controllers/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "controllers/cluster_index.hpp"
#include "controllers/context.hpp"
#include "controllers/filters.hpp"
#include "controllers/node_order.hpp"
#include "controllers/preemption.hpp"
#include "controllers/scores.hpp"

namespace gaia {

namespace sched {

// Verdict of the static filters for one requirement set, shared by every role with it.
struct StaticVerdict {
  std::vector<int8_t> first_failure;  // Per node; -1 when all static filters pass.
  std::vector<int> candidates;        // Nodes passing, in index order.
};

}  // namespace sched

// What a Scheduler builds on its index and keeps up to date with its placements: kept
// with a KeptIndex as long as the index, since nothing they depend on changes between
// the calls a KeptIndex allows (nodes and tenants stay, node use changes only by the
// index's own placements).
struct KeptIndex::Caches {
  // Built at the first bounded run, then kept up to date with every placement.
  std::optional<sched::NodeOrder> order;
  std::unordered_map<std::string, sched::StaticVerdict> statics;
};

namespace {

using namespace gaia::sched;

struct HeapEntry {
  double score;
  int name_rank;
  int node;
  uint32_t stamp;
};

struct HeapLess {
  bool operator()(const HeapEntry& a, const HeapEntry& b) const {
    if (a.score != b.score) return a.score < b.score;
    return a.name_rank > b.name_rank;  // Earlier name wins ties.
  }
};

// A cursor over one class's buckets of one resource in use (controllers/node_order.hpp):
// upwards for spread (least used first), downwards from the most that still fits for
// stack. Empty buckets are passed over.
struct ClassCursor {
  const NodeOrder::Buckets* b = nullptr;
  int j = 0;
  bool down = false;
  bool done = false;
  int64_t limit = 0;  // Stack: the most use with which the request still fits.

  void settle() {
    while (j >= 0 && j < NodeOrder::kBuckets && b->nodes[static_cast<size_t>(j)].empty()) j += down ? -1 : 1;
    done = j < 0 || j >= NodeOrder::kBuckets;
  }
  void step() {
    j += down ? -1 : 1;
    settle();
  }
  // The least (spread) or most (stack) use of any node not walked past yet.
  int64_t edge() const { return down ? std::min(b->high_edge(j), limit) : b->low_edge(j); }
  const std::vector<int>& nodes() const { return b->nodes[static_cast<size_t>(j)]; }
};

ClassCursor open_cursor(const NodeOrder::Buckets& b, bool stack, int64_t limit) {
  ClassCursor c;
  c.b = &b;
  c.down = stack;
  c.limit = limit;
  if (stack && limit < 0) {
    c.done = true;
    return c;
  }
  c.j = stack ? b.bucket_of(limit) : 0;
  c.settle();
  return c;
}

struct OpenClass {
  double bound;  // At the cursors' start.
  size_t cls;
  ClassCursor cpu, mem;
};

bool same_run(const ClusterIndex& idx, int a, int b) {
  const InstIx& x = idx.insts[a];
  const InstIx& y = idx.insts[b];
  return x.role == y.role && x.inst->request == y.inst->request && x.reservation == y.reservation &&
         x.inst->priority == y.inst->priority && x.inst->priority.preemptible == y.inst->priority.preemptible &&
         x.inst->volumes.empty() && y.inst->volumes.empty();
}

class Scheduler {
 public:
  Scheduler(const Snapshot& s, const ScheduleTuning& t, ClusterIndex& idx, KeptIndex::Caches& caches)
      : m_snap(s),
        m_tuning(t),
        m_idx(idx),
        m_order(caches.order),
        m_static(caches.statics),
        m_pool(m_idx),
        m_weights(score_weights(s.profile)),
        m_stamp(m_idx.nodes.size(), 0),
        m_victim_search(m_idx, m_g) {}

  Decision run(const std::vector<std::string>& keys) {
    std::vector<int> queue;
    std::unordered_set<int> seen;
    for (const auto& key : keys) {
      int i = m_idx.instance_index(key);
      if (i < 0) {
        m_out.unschedulable.push_back({key, "unknown instance"});
        continue;
      }
      if (!seen.insert(i).second) continue;
      if (m_idx.insts[i].node >= 0) {
        m_out.unschedulable.push_back({key, fmt::format("not pending: already on node {}", m_idx.insts[i].inst->node)});
        continue;
      }
      queue.push_back(i);
    }
    return run_queue(std::move(queue));
  }

  // Every pending instance of the snapshot, as run() would take their keys, without
  // formatting and looking up a key per instance: an instance whose key an earlier
  // instance already has is left out, as the key would find the earlier one.
  Decision run_pending() {
    std::vector<int> queue;
    for (size_t i = 0; i < m_idx.insts.size(); ++i) {
      const InstIx& x = m_idx.insts[i];
      if (x.inst->state != InstanceState::Pending || m_idx.first_with_key_of(static_cast<int>(i)) != static_cast<int>(i))
        continue;
      if (x.node >= 0) {
        m_out.unschedulable.push_back({x.inst->key(), fmt::format("not pending: already on node {}", x.inst->node)});
        continue;
      }
      queue.push_back(static_cast<int>(i));
    }
    return run_queue(std::move(queue));
  }

 private:
  Decision run_queue(std::vector<int> queue) {
    // Priority first, then tenant, app, role (by each role's place in that order, worked
    // out once instead of comparing three strings per comparison) and ordinal.
    const std::vector<int>& role_order = m_idx.role_order();
    std::sort(queue.begin(), queue.end(), [&](int a, int b) {
      const InstIx& x = m_idx.insts[a];
      const InstIx& y = m_idx.insts[b];
      int64_t rx = x.inst->priority.rank(), ry = y.inst->priority.rank();
      if (rx != ry) return rx > ry;
      if (x.role != y.role) return role_order[x.role] < role_order[y.role];
      return x.inst->ordinal < y.inst->ordinal;
    });
    m_out.placements.reserve(queue.size());
    for (size_t i = 0; i < queue.size();) {
      size_t j = i + 1;
      while (j < queue.size() && same_run(m_idx, queue[i], queue[j])) ++j;
      run_group(queue, i, j);
      i = j;
    }
    return std::move(m_out);
  }

  const StaticVerdict& static_verdict(const GroupCtx& g) {
    const Role& r = *g.rq.role;
    std::string sig = fmt::format("{}\x1e", g.rq.tenant);
    for (const auto& [k, v] : r.node_selector) sig += fmt::format("{}={}\x1f", k, v);
    sig += '\x1e';
    for (const auto& t : r.required_affinity)
      if (t.target == AffinityTerm::Target::Node) sig += describe_requirements(t.match) + "\x1f";
    sig += fmt::format("\x1e{}\x1e{}", r.required_subnet, r.required_topology);
    auto [it, inserted] = m_static.try_emplace(std::move(sig));
    if (inserted) {
      StaticVerdict& v = it->second;
      v.first_failure.resize(m_idx.nodes.size());
      for (size_t n = 0; n < m_idx.nodes.size(); ++n) {
        int f = first_static_failure(m_idx, g, static_cast<int>(n));
        v.first_failure[n] = static_cast<int8_t>(f);
        if (f < 0) v.candidates.push_back(static_cast<int>(n));
      }
    }
    return it->second;
  }

  [[gnu::always_inline]] bool feasible(int node) const {
    return resources_fit(m_idx.nodes[node], m_g.rq) && (m_only_resources || first_dynamic_failure(m_idx, m_g, node) < 0);
  }

  // Takes a scored node: into the heap, or for a run of one instance only the best so
  // far (a heap of every node would be built to be read once). The fields are stored
  // one by one: building the entry on the stack and copying it stalled on every node.
  [[gnu::always_inline]] void offer(double score, int node, uint32_t stamp, bool heapify) {
    int rank = m_idx.nodes[node].name_rank;
    if (m_single) {
      if (!m_best_valid || score > m_best.score || (score == m_best.score && rank < m_best.name_rank)) {
        m_best.score = score;
        m_best.name_rank = rank;
        m_best.node = node;
        m_best.stamp = stamp;
      }
      m_best_valid = true;
      return;
    }
    HeapEntry& e = m_heap.emplace_back();
    e.score = score;
    e.name_rank = rank;
    e.node = node;
    e.stamp = stamp;
    if (heapify) std::push_heap(m_heap.begin(), m_heap.end(), HeapLess{});
  }

  // (Re)scores one node for the current run and offers it when feasible.
  void evaluate(int node) {
    uint32_t stamp = ++m_stamp[node];
    if ((*m_verdict).first_failure[node] >= 0 || !feasible(node)) return;
    offer(score_of(node), node, stamp, true);
  }

  [[gnu::always_inline]] double score_of(int node) const {
    return m_simple ? score_simple(m_idx, m_g, m_weights, node) : score_node(m_idx, m_g, m_weights, node);
  }

  // Starts scoring for the run of `inst`, of which `remaining` instances (it included)
  // are left to place.
  void start_group(int inst, size_t remaining) {
    m_pool.release_all();
    init_group(m_g, m_idx, m_pool, m_snap.profile, inst);
    m_verdict = &static_verdict(m_g);
    m_only_resources = only_resources_can_fail(m_g);
    m_simple = simple_scoring(m_g, m_weights);
    m_single = remaining == 1;
    m_best_valid = false;
    m_heap.clear();
    const std::vector<int>& nodes = nodes_to_consider();
    size_t want = nodes.size();
    int pct = m_snap.profile.percentage_of_nodes_to_score;
    if (pct > 0 && pct < 100 && nodes.size() > kMinSample)
      want = std::max(kMinSample, nodes.size() * static_cast<size_t>(pct) / 100);
    // A short run of plain instances asks for its best node per instance, from nodes
    // kept in order of their use, instead of scoring every node once for a heap.
    m_bounded = m_tuning.bounded_search && want == nodes.size() && remaining <= kBoundedRunMax && m_only_resources &&
                m_simple && m_g.rq.req.gpu == 0 &&
                std::all_of(m_weights.begin(), m_weights.end(), [](int w) { return w >= 0; });
    if (m_bounded) {
      m_window_start = 0;
      m_window_size = nodes.size();
      if (!m_order) m_order.emplace(m_idx);
      return;
    }
    m_window_start = want == nodes.size() ? 0 : m_rotation % nodes.size();
    m_window_size = want;
    m_rotation += want;
    // This loop runs for every candidate node of every run; it is the scheduler's
    // hottest code, hence the weights worked out once and the filters that cannot fail
    // for this run skipped.
    auto scan = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        int n = nodes[i];
        uint32_t stamp = ++m_stamp[n];
        if (!feasible(n)) continue;
        offer(score_of(n), n, stamp, false);
      }
    };
    // The window wraps around the end of the node list at most once.
    size_t first_end = std::min(nodes.size(), m_window_start + want);
    scan(m_window_start, first_end);
    scan(0, want - (first_end - m_window_start));
    if (!m_single) std::make_heap(m_heap.begin(), m_heap.end(), HeapLess{});
  }

  // With sampling, the nodes outside the window are scored once the window has no fit
  // left, so sampling never turns a schedulable instance into a pending one.
  bool widen_window() {
    const std::vector<int>& nodes = nodes_to_consider();
    if (m_window_size >= nodes.size()) return false;
    for (size_t i = m_window_size; i < nodes.size(); ++i) evaluate(nodes[(m_window_start + i) % nodes.size()]);
    m_window_size = nodes.size();
    return true;
  }

  // A stateful instance with volumes can only go to their node; everyone else to any
  // node passing the static filters.
  const std::vector<int>& nodes_to_consider() {
    if (!m_g.rq.sticky) return m_verdict->candidates;
    m_sticky.clear();
    int n = m_g.rq.sticky_node;
    if (n >= 0 && m_verdict->first_failure[n] < 0) m_sticky.push_back(n);
    return m_sticky;
  }

  // The best node by the bounded search of controllers/node_order.hpp: the same node
  // as scoring every candidate would choose.
  int bounded_best(double* score) {
    ++m_seen_epoch;
    if (m_seen.size() < m_idx.nodes.size()) m_seen.assign(m_idx.nodes.size(), 0);
    bool have = false;
    double best = 0;
    int best_rank = 0, best_node = -1;
    auto consider = [&](int n) {
      if (m_seen[n] == m_seen_epoch) return;
      m_seen[n] = m_seen_epoch;
      if (m_verdict->first_failure[n] >= 0 || !feasible(n)) return;
      double sc = score_of(n);
      int rank = m_idx.nodes[n].name_rank;
      if (!have || sc > best || (sc == best && rank < best_rank)) {
        have = true;
        best = sc;
        best_rank = rank;
        best_node = n;
      }
    };
    for (int n : m_order->unordered()) consider(n);
    const Request& rq = m_g.rq;
    int basis = rq.nonprod ? 1 : 0;
    const auto& classes = m_order->classes();
    m_open.clear();
    for (size_t c = 0; c < classes.size(); ++c) {
      const auto& cl = classes[c];
      ClassCursor cpu = open_cursor(cl.by_used[basis][0], m_g.stack, cl.cap.cpu_millis - rq.req.cpu_millis);
      ClassCursor mem = open_cursor(cl.by_used[basis][1], m_g.stack, cl.cap.memory_bytes - rq.req.memory_bytes);
      if (cpu.done || mem.done) continue;
      double b = score_bound(cl, m_g, m_weights, m_idx.gpu_mixed, cpu.edge(), mem.edge());
      m_open.push_back(OpenClass{b, c, cpu, mem});
    }
    // The most promising class first, so that the others are cut short sooner.
    std::sort(m_open.begin(), m_open.end(), [](const OpenClass& a, const OpenClass& b) {
      return a.bound != b.bound ? a.bound > b.bound : a.cls < b.cls;
    });
    // Scores are sums of a few products of numbers up to 100: far from this margin.
    constexpr double kMargin = 1e-6;
    for (OpenClass& o : m_open) {
      const auto& cl = classes[o.cls];
      while (!o.cpu.done && !o.mem.done) {
        if (have && score_bound(cl, m_g, m_weights, m_idx.gpu_mixed, o.cpu.edge(), o.mem.edge()) + kMargin < best)
          break;
        for (int n : o.cpu.nodes()) consider(n);
        o.cpu.step();
        for (int n : o.mem.nodes()) consider(n);
        o.mem.step();
      }
    }
    if (have) *score = best;
    return best_node;
  }

  int best_node(double* score) {
    if (m_bounded) return bounded_best(score);
    if (m_single) {
      if (!m_best_valid) return -1;
      *score = m_best.score;
      return m_best.node;
    }
    while (!m_heap.empty()) {
      const HeapEntry& top = m_heap.front();
      if (top.stamp == m_stamp[top.node]) {
        *score = top.score;
        return top.node;
      }
      std::pop_heap(m_heap.begin(), m_heap.end(), HeapLess{});
      m_heap.pop_back();
    }
    return -1;
  }

  // Returns whether it took room in a sized claim pool, which every node shares.
  bool place(int inst, int node, double score) {
    Placement p;
    p.instance = m_idx.insts[inst].inst->key();
    p.node = m_idx.nodes[node].node->name;
    p.score = score;
    allocate_ports(m_idx.nodes[node], m_g.rq, &p.ports);
    // The node was judged feasible on the index as it is now, so its volumes fit; if they
    // did not, an instance would run without its data.
    if (!m_g.rq.new_volumes.empty() && !allocate_volumes(m_idx, m_idx.nodes[node], m_g.rq, &p.volumes, nullptr))
      throw std::logic_error(fmt::format("scheduler: the volumes of {} do not fit on {}, which was judged feasible",
                                         p.instance, p.node));
    m_idx.place(inst, node, p.ports, p.volumes);
    if (m_order) m_order->update(node);
    if (m_victims_built) m_victims_fresh[node] = 0;
    bool pooled = std::any_of(p.volumes.begin(), p.volumes.end(), [&](const VolumeBinding& b) {
      int pool = claim_binding(b) ? m_idx.claim_pool(b.group) : -1;
      return pool >= 0 && m_idx.claim_pools[pool].free != std::numeric_limits<int64_t>::max();
    });
    m_out.placements.push_back(std::move(p));
    return pooled;
  }

  // The cheapest preemption for the current run's next instance, from every candidate
  // node's plan kept across the run's arrivals: only nodes that changed since are
  // searched again. Valid while only resources can fail (no ports, volumes or
  // affinity, which would make plans depend on more than the node's occupants).
  VictimPlan preempt_in_run() {
    const std::vector<int>& nodes = nodes_to_consider();
    if (m_node_victims.size() < m_idx.nodes.size()) {
      m_node_victims.resize(m_idx.nodes.size());
      m_victims_fresh.resize(m_idx.nodes.size(), 0);
    }
    int best = -1;
    for (int n : nodes) {
      if (!m_victims_built || !m_victims_fresh[n]) {
        m_node_victims[n] = m_victim_search.on_node(n);
        m_victims_fresh[n] = 1;
      }
      if (m_node_victims[n] && (best < 0 || *m_node_victims[n] < *m_node_victims[best])) best = n;
    }
    m_victims_built = true;
    return best < 0 ? VictimPlan{} : m_victim_search.to_plan(best, *m_node_victims[best]);
  }

  void run_group(const std::vector<int>& queue, size_t begin, size_t end) {
    m_victims_built = false;  // Plans are for one request: a new run searches afresh.
    start_group(queue[begin], end - begin);
    bool stale = false;
    std::string failed;  // Once set, the reason for the rest of the run.
    for (size_t q = begin; q < end; ++q) {
      int inst = queue[q];
      const std::string key = m_idx.insts[inst].inst->key();
      if (!failed.empty()) {
        m_out.unschedulable.push_back({key, failed});
        continue;
      }
      if (stale) {
        start_group(inst, end - q);
        stale = false;
      }
      set_instance(m_g, m_idx, inst);
      std::string msg;
      if (!check_quota(m_idx, m_g.rq, &msg)) {
        failed = std::move(msg);
        m_out.unschedulable.push_back({key, failed});
        continue;
      }
      double score = 0;
      int node = best_node(&score);
      if (node < 0 && widen_window()) node = best_node(&score);
      if (node >= 0) {
        bool pooled = place(inst, node, score);
        m_affected.clear();
        // Every node's verdict may have changed (a term's counters, or a shared claim
        // pool shrank): rebuild for the next one.
        if (note_placed(m_g, m_idx, inst, node, &m_affected) || pooled) {
          stale = true;
          continue;
        }
        if (m_bounded) continue;  // The next instance searches afresh.
        ++m_epoch;
        if (m_mark.size() < m_idx.nodes.size()) m_mark.assign(m_idx.nodes.size(), 0);
        for (int n : m_affected) {
          if (m_mark[n] == m_epoch) continue;
          m_mark[n] = m_epoch;
          if (!m_g.rq.sticky || n == m_g.rq.sticky_node) evaluate(n);
        }
        continue;
      }
      VictimPlan plan;
      if (m_idx.preemptible_below_anywhere(m_g.rq.instance->priority.rank()))
        plan = m_only_resources && m_tuning.keep_victim_plans ? preempt_in_run()
                                                              : find_preemption(m_idx, m_g, nodes_to_consider());
      if (plan.node >= 0) {
        for (int v : plan.victims) {
          // A victim's role counts toward min_available on every node: plans elsewhere
          // may no longer hold.
          const Role* role = m_idx.roles[m_idx.insts[v].role].role;
          if (role && role->min_available > 0) m_victims_built = false;
          m_out.preemptions.push_back({m_idx.insts[v].inst->key(), m_idx.nodes[plan.node].node->name, key});
          m_idx.evict(v);
        }
        if (m_order) m_order->update(plan.node);
        place(inst, plan.node, score_of(plan.node));
        stale = true;  // Evictions touch counters of other roles' terms: rebuild.
        continue;
      }
      int fitting = 0;
      auto counts = count_failures(m_idx, m_g, &m_verdict->first_failure, &fitting);
      failed = summarize_failures(static_cast<int>(m_idx.nodes.size()), fitting, counts) +
               "; preemption: no node where evicting lower-priority instances makes room";
      m_out.unschedulable.push_back({key, failed});
    }
  }

  const Snapshot& m_snap;
  ScheduleTuning m_tuning;
  ClusterIndex& m_idx;
  CounterPool m_pool;
  GroupCtx m_g;
  ScoreWeights m_weights;
  const StaticVerdict* m_verdict = nullptr;
  bool m_only_resources = false;  // For the current run: see only_resources_can_fail.
  bool m_simple = false;          // For the current run: see simple_scoring.
  bool m_bounded = false;         // For the current run: bounded_best instead of the heap.
  // Built at the first bounded run, then kept up to date with every placement (and
  // kept with a KeptIndex across calls).
  std::optional<NodeOrder>& m_order;
  std::vector<uint32_t> m_seen;
  uint32_t m_seen_epoch = 0;
  std::vector<OpenClass> m_open;
  // preempt_in_run's plans per node, and whether each is still current.
  std::vector<std::optional<NodeVictims>> m_node_victims;
  std::vector<uint8_t> m_victims_fresh;
  bool m_victims_built = false;
  static constexpr size_t kBoundedRunMax = 16;
  bool m_single = false;          // The run has one instance left: no heap, only m_best.
  bool m_best_valid = false;
  HeapEntry m_best{};
  std::unordered_map<std::string, StaticVerdict>& m_static;
  std::vector<HeapEntry> m_heap;
  std::vector<uint32_t> m_stamp;
  std::vector<int> m_affected, m_sticky;
  std::vector<uint32_t> m_mark;
  uint32_t m_epoch = 0;
  static constexpr size_t kMinSample = 100;
  size_t m_rotation = 0, m_window_start = 0, m_window_size = 0;
  Decision m_out;
  VictimSearch m_victim_search;  // Reads m_idx and m_g: declared after them.
};

}  // namespace

Decision schedule(const Snapshot& snapshot, const std::vector<std::string>& pending, const ScheduleTuning& tuning) {
  ClusterIndex idx(snapshot);
  KeptIndex::Caches caches;
  return Scheduler(snapshot, tuning, idx, caches).run(pending);
}

Decision schedule(const Snapshot& snapshot, const std::vector<std::string>& pending, const ScheduleTuning& tuning,
                  KeptIndex& kept) {
  std::vector<int> occupied;
  if (kept.m_idx && kept.m_idx->extend(snapshot, &occupied)) {
    ++kept.m_reused;
    // New instances that arrived on a node change its use, which the node order files.
    if (kept.m_caches->order)
      for (int n : occupied) kept.m_caches->order->update(n);
  } else {
    kept.m_caches.reset();  // They refer to the index they were built on.
    kept.m_idx = std::make_unique<ClusterIndex>(snapshot);
    kept.m_caches = std::make_unique<KeptIndex::Caches>();
  }
  return Scheduler(snapshot, tuning, *kept.m_idx, *kept.m_caches).run(pending);
}

Decision schedule(const Snapshot& snapshot) {
  ClusterIndex idx(snapshot);
  KeptIndex::Caches caches;
  return Scheduler(snapshot, ScheduleTuning{}, idx, caches).run_pending();
}

KeptIndex::KeptIndex() = default;
KeptIndex::~KeptIndex() = default;
KeptIndex::KeptIndex(KeptIndex&&) noexcept = default;
KeptIndex& KeptIndex::operator=(KeptIndex&&) noexcept = default;

void KeptIndex::reset() {
  m_caches.reset();
  m_idx.reset();
}

}  // namespace gaia
