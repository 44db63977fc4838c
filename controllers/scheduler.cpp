#include "controllers/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "controllers/cluster_index.hpp"
#include "controllers/context.hpp"
#include "controllers/filters.hpp"
#include "controllers/preemption.hpp"
#include "controllers/scores.hpp"

namespace gaia {

namespace {

using namespace gaia::sched;

// Verdict of the static filters for one requirement set, shared by every role with it.
struct StaticVerdict {
  std::vector<int8_t> first_failure;  // Per node; -1 when all static filters pass.
  std::vector<int> candidates;        // Nodes passing, in index order.
};

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

bool same_run(const ClusterIndex& idx, int a, int b) {
  const InstIx& x = idx.insts[a];
  const InstIx& y = idx.insts[b];
  return x.role == y.role && x.inst->request == y.inst->request && x.reservation == y.reservation &&
         x.inst->priority == y.inst->priority && x.inst->priority.preemptible == y.inst->priority.preemptible &&
         x.inst->volumes.empty() && y.inst->volumes.empty();
}

class Scheduler {
 public:
  explicit Scheduler(const Snapshot& s) : m_snap(s), m_idx(s), m_pool(m_idx), m_stamp(m_idx.nodes.size(), 0) {}

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
    std::sort(queue.begin(), queue.end(), [&](int a, int b) {
      const Instance& x = *m_idx.insts[a].inst;
      const Instance& y = *m_idx.insts[b].inst;
      if (x.priority.rank() != y.priority.rank()) return x.priority.rank() > y.priority.rank();
      return std::tie(x.tenant, x.app, x.role, x.ordinal) < std::tie(y.tenant, y.app, y.role, y.ordinal);
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

 private:
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

  // (Re)scores one node for the current run and pushes it when feasible.
  void evaluate(int node) {
    uint32_t stamp = ++m_stamp[node];
    if ((*m_verdict).first_failure[node] >= 0 || first_dynamic_failure(m_idx, m_g, node) >= 0) return;
    m_heap.push_back(HeapEntry{score_node(m_idx, m_g, m_snap.profile, node), m_idx.nodes[node].name_rank, node, stamp});
    std::push_heap(m_heap.begin(), m_heap.end(), HeapLess{});
  }

  void start_group(int inst) {
    m_pool.release_all();
    init_group(m_g, m_idx, m_pool, m_snap.profile, inst);
    m_verdict = &static_verdict(m_g);
    m_heap.clear();
    const std::vector<int>& nodes = nodes_to_consider();
    size_t want = nodes.size();
    int pct = m_snap.profile.percentage_of_nodes_to_score;
    if (pct > 0 && pct < 100 && nodes.size() > kMinSample)
      want = std::max(kMinSample, nodes.size() * static_cast<size_t>(pct) / 100);
    m_window_start = want == nodes.size() ? 0 : m_rotation % nodes.size();
    m_window_size = want;
    m_rotation += want;
    for (size_t i = 0; i < want; ++i) {
      int n = nodes[(m_window_start + i) % nodes.size()];
      uint32_t stamp = ++m_stamp[n];
      if (first_dynamic_failure(m_idx, m_g, n) >= 0) continue;
      m_heap.push_back(HeapEntry{score_node(m_idx, m_g, m_snap.profile, n), m_idx.nodes[n].name_rank, n, stamp});
    }
    std::make_heap(m_heap.begin(), m_heap.end(), HeapLess{});
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

  int best_node(double* score) {
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
    bool pooled = std::any_of(p.volumes.begin(), p.volumes.end(), [&](const VolumeBinding& b) {
      int pool = claim_binding(b) ? m_idx.claim_pool(b.group) : -1;
      return pool >= 0 && m_idx.claim_pools[pool].free != std::numeric_limits<int64_t>::max();
    });
    m_out.placements.push_back(std::move(p));
    return pooled;
  }

  void run_group(const std::vector<int>& queue, size_t begin, size_t end) {
    start_group(queue[begin]);
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
        start_group(inst);
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
        ++m_epoch;
        if (m_mark.size() < m_idx.nodes.size()) m_mark.assign(m_idx.nodes.size(), 0);
        for (int n : m_affected) {
          if (m_mark[n] == m_epoch) continue;
          m_mark[n] = m_epoch;
          if (!m_g.rq.sticky || n == m_g.rq.sticky_node) evaluate(n);
        }
        continue;
      }
      VictimPlan plan = find_preemption(m_idx, m_g, nodes_to_consider());
      if (plan.node >= 0) {
        for (int v : plan.victims) {
          m_out.preemptions.push_back({m_idx.insts[v].inst->key(), m_idx.nodes[plan.node].node->name, key});
          m_idx.evict(v);
        }
        place(inst, plan.node, score_node(m_idx, m_g, m_snap.profile, plan.node));
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
  ClusterIndex m_idx;
  CounterPool m_pool;
  GroupCtx m_g;
  const StaticVerdict* m_verdict = nullptr;
  std::unordered_map<std::string, StaticVerdict> m_static;
  std::vector<HeapEntry> m_heap;
  std::vector<uint32_t> m_stamp;
  std::vector<int> m_affected, m_sticky;
  std::vector<uint32_t> m_mark;
  uint32_t m_epoch = 0;
  static constexpr size_t kMinSample = 100;
  size_t m_rotation = 0, m_window_start = 0, m_window_size = 0;
  Decision m_out;
};

}  // namespace

Decision schedule(const Snapshot& snapshot, const std::vector<std::string>& pending) {
  Scheduler s(snapshot);
  return s.run(pending);
}

Decision schedule(const Snapshot& snapshot) {
  std::vector<std::string> keys;
  for (const auto& inst : snapshot.instances)
    if (inst.state == InstanceState::Pending) keys.push_back(inst.key());
  return Scheduler(snapshot).run(keys);
}

}  // namespace gaia
