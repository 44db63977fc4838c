#include "controllers/preemption.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <unordered_map>

#include "controllers/filters.hpp"

namespace gaia::sched {

namespace {

// Dimensions a victim can free: cpu, memory, gpu, disk, ports in the node's range.
constexpr int kDims = 5;
using Vec = std::array<int64_t, kDims>;

struct Candidate {
  int inst;
  int64_t rank;
  Vec frees;
};

struct Cost {
  size_t count;
  int64_t max_rank, sum_rank;
  int name_rank;
  auto operator<=>(const Cost&) const = default;
};

bool covers(const Vec& freed, const Vec& need) {
  for (int d = 0; d < kDims; ++d)
    if (freed[d] < need[d]) return false;
  return true;
}

class NodeSearch {
 public:
  NodeSearch(const ClusterIndex& idx, const GroupCtx& g) : m_idx(idx), m_g(g) {}

  // Best victim set on `node` with at most `max_count` victims, or false.
  bool run(int node, size_t max_count, std::vector<int>& out) {
    const NodeIx& n = m_idx.nodes[node];
    const Request& rq = m_g.rq;
    int64_t my_rank = rq.instance->priority.rank();
    const Resources& basis = rq.nonprod ? n.alloc_res : n.alloc_req;
    Vec need{};
    auto dim_need = [](int64_t want, int64_t cap, int64_t used) { return want > 0 ? std::max<int64_t>(0, used + want - cap) : 0; };
    need[0] = dim_need(rq.req.cpu_millis, n.cap.cpu_millis, basis.cpu_millis);
    need[1] = dim_need(rq.req.memory_bytes, n.cap.memory_bytes, basis.memory_bytes);
    need[2] = dim_need(rq.req.gpu, n.cap.gpu, basis.gpu);
    need[3] = dim_need(rq.req.disk_bytes, n.cap.disk_bytes, basis.disk_bytes);
    // Everything it may evict, summed per priority as instances come and go: most nodes
    // are ruled out here without a look at their occupants.
    Resources most = n.preemptible_below(my_rank, rq.nonprod);
    if (most.cpu_millis < need[0] || most.memory_bytes < need[1] || most.gpu < need[2] || most.disk_bytes < need[3])
      return false;
    int fixed_in_range = 0;
    for (const auto& [name, p] : rq.ports)
      if (p > 0 && p >= n.node->port_min && p <= n.node->port_max) ++fixed_in_range;
    need[4] = std::max<int64_t>(0, rq.dynamic_ports + fixed_in_range + n.ports_in_range - n.range_size());

    m_cands.clear();
    for (int i : n.occupants) {
      const InstIx& x = m_idx.insts[i];
      const Priority& p = x.inst->priority;
      if (p.rank() >= my_rank || !p.preemptible) continue;
      const Resources& r = rq.nonprod ? x.reservation : x.inst->request;
      int64_t in_range = 0;
      for (int port : x.held_ports)
        if (port >= n.node->port_min && port <= n.node->port_max) ++in_range;
      m_cands.push_back(Candidate{i, p.rank(), {r.cpu_millis, r.memory_bytes, r.gpu, r.disk_bytes, in_range}});
    }
    // Holders of the fixed ports the instance needs must go, whatever else is chosen.
    m_forced.clear();
    for (const auto& [name, p] : rq.ports) {
      if (p <= 0 || !n.port_used(p)) continue;
      auto holder = std::find_if(m_cands.begin(), m_cands.end(), [&](const Candidate& c) {
        const auto& held = m_idx.insts[c.inst].held_ports;
        return std::find(held.begin(), held.end(), p) != held.end();
      });
      if (holder == m_cands.end()) return false;  // Held by someone it may not evict.
      if (std::find(m_forced.begin(), m_forced.end(), holder->inst) == m_forced.end()) m_forced.push_back(holder->inst);
    }
    Vec total{};
    for (const auto& c : m_cands)
      for (int d = 0; d < kDims; ++d) total[d] += c.frees[d];
    if (!covers(total, need)) return false;

    Vec freed{};
    m_rest.clear();
    for (const auto& c : m_cands) {
      if (std::find(m_forced.begin(), m_forced.end(), c.inst) != m_forced.end())
        for (int d = 0; d < kDims; ++d) freed[d] += c.frees[d];
      else
        m_rest.push_back(c);
    }
    if (m_forced.size() > max_count) return false;
    // Lowest priority first; among equals the largest first, then by key.
    std::sort(m_rest.begin(), m_rest.end(), [&](const Candidate& a, const Candidate& b) {
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.frees[1] != b.frees[1]) return a.frees[1] > b.frees[1];
      if (a.frees[0] != b.frees[0]) return a.frees[0] > b.frees[0];
      return m_idx.key_less(a.inst, b.inst);
    });
    m_chosen.assign(m_forced.begin(), m_forced.end());
    if (covers(freed, need)) return finish(out);
    if (m_rest.size() <= kExactLimit) return exact(freed, need, max_count, out);
    return greedy(freed, need, out);
  }

 private:
  static constexpr size_t kExactLimit = 16;

  bool min_available_ok(const std::vector<int>& set) {
    m_taken.clear();
    for (int i : set) {
      const InstIx& x = m_idx.insts[i];
      if (!x.running) continue;
      int taken = ++m_taken[x.role];
      const Role* role = m_idx.roles[x.role].role;
      if (role && m_idx.roles[x.role].running - taken < role->min_available) return false;
    }
    return true;
  }

  bool finish(std::vector<int>& out) {
    if (!min_available_ok(m_chosen)) return false;
    out = m_chosen;
    return true;
  }

  // Every subset by increasing size; the first size with a solution wins, and among
  // those the lowest (max priority, sum priority).
  bool exact(const Vec& base, const Vec& need, size_t max_count, std::vector<int>& out) {
    size_t m = m_rest.size();
    size_t forced = m_chosen.size();
    for (size_t k = 1; k <= m && forced + k <= max_count; ++k) {
      bool found = false;
      std::pair<int64_t, int64_t> best{};
      uint32_t best_mask = 0;
      uint32_t limit = 1u << m;
      for (uint32_t mask = (1u << k) - 1; mask < limit;) {
        Vec freed = base;
        int64_t mx = 0, sum = 0;
        for (uint32_t b = mask; b; b &= b - 1) {
          const Candidate& c = m_rest[std::countr_zero(b)];
          for (int d = 0; d < kDims; ++d) freed[d] += c.frees[d];
          mx = std::max(mx, c.rank);
          sum += c.rank;
        }
        if (covers(freed, need) && (!found || std::pair{mx, sum} < best)) {
          m_trial.assign(m_chosen.begin(), m_chosen.end());
          for (uint32_t b = mask; b; b &= b - 1) m_trial.push_back(m_rest[std::countr_zero(b)].inst);
          if (min_available_ok(m_trial)) {
            found = true;
            best = {mx, sum};
            best_mask = mask;
          }
        }
        // Gosper's hack: the next larger mask with the same number of bits.
        uint32_t c = mask & -mask, r = mask + c;
        mask = (((r ^ mask) >> 2) / c) | r;
      }
      if (found) {
        for (uint32_t b = best_mask; b; b &= b - 1) m_chosen.push_back(m_rest[std::countr_zero(b)].inst);
        return finish(out);
      }
    }
    return false;
  }

  // Too many candidates to try every subset: take the lowest priorities until it fits,
  // then give back the highest-priority victims that turn out not to be needed.
  bool greedy(Vec freed, const Vec& need, std::vector<int>& out) {
    std::vector<size_t> picked;
    for (size_t i = 0; i < m_rest.size() && !covers(freed, need); ++i) {
      m_trial.assign(m_chosen.begin(), m_chosen.end());
      for (size_t j : picked) m_trial.push_back(m_rest[j].inst);
      m_trial.push_back(m_rest[i].inst);
      if (!min_available_ok(m_trial)) continue;
      picked.push_back(i);
      for (int d = 0; d < kDims; ++d) freed[d] += m_rest[i].frees[d];
    }
    if (!covers(freed, need)) return false;
    for (size_t j = picked.size(); j-- > 0;) {
      Vec without = freed;
      for (int d = 0; d < kDims; ++d) without[d] -= m_rest[picked[j]].frees[d];
      if (covers(without, need)) {
        freed = without;
        picked.erase(picked.begin() + static_cast<std::ptrdiff_t>(j));
      }
    }
    for (size_t j : picked) m_chosen.push_back(m_rest[j].inst);
    return finish(out);
  }

  const ClusterIndex& m_idx;
  const GroupCtx& m_g;
  std::vector<Candidate> m_cands, m_rest;
  std::vector<int> m_forced, m_chosen, m_trial;
  std::unordered_map<int, int> m_taken;
};

}  // namespace

namespace {

bool preemption_filters_pass(const ClusterIndex& idx, const GroupCtx& g, int node) {
  // Everything except resources and ports must already pass: evicting cannot move
  // volumes, and affinity is judged on the cluster as it is.
  return check_filter(Filter::Storage, idx, g, node, nullptr) &&
         check_filter(Filter::InstanceAffinity, idx, g, node, nullptr) &&
         check_filter(Filter::InstanceAntiAffinity, idx, g, node, nullptr);
}

Cost cost_of(const ClusterIndex& idx, const std::vector<int>& victims, int node) {
  Cost cost{victims.size(), 0, 0, idx.nodes[node].name_rank};
  for (int v : victims) {
    int64_t r = idx.insts[v].inst->priority.rank();
    cost.max_rank = std::max(cost.max_rank, r);
    cost.sum_rank += r;
  }
  return cost;
}

void sort_victims(const ClusterIndex& idx, std::vector<int>& victims) {
  std::sort(victims.begin(), victims.end(), [&](int a, int b) {
    const Instance& x = *idx.insts[a].inst;
    const Instance& y = *idx.insts[b].inst;
    if (x.priority.rank() != y.priority.rank()) return x.priority.rank() < y.priority.rank();
    return idx.key_less(a, b);
  });
}

}  // namespace

VictimPlan find_preemption(const ClusterIndex& idx, const GroupCtx& g, const std::vector<int>& candidates) {
  VictimPlan best;
  std::optional<Cost> best_cost;
  NodeSearch search(idx, g);
  std::vector<int> victims;
  for (int node : candidates) {
    if (!preemption_filters_pass(idx, g, node)) continue;
    size_t max_count = best_cost ? best_cost->count : SIZE_MAX;
    if (!search.run(node, max_count, victims) || victims.empty()) continue;
    Cost cost = cost_of(idx, victims, node);
    if (best_cost && !(cost < *best_cost)) continue;
    best_cost = cost;
    best.node = node;
    best.victims = victims;
    best.max_rank = cost.max_rank;
    best.sum_rank = cost.sum_rank;
  }
  if (best.node >= 0) sort_victims(idx, best.victims);
  return best;
}

bool NodeVictims::operator<(const NodeVictims& o) const {
  return Cost{count, max_rank, sum_rank, name_rank} < Cost{o.count, o.max_rank, o.sum_rank, o.name_rank};
}

class VictimSearch::Impl {
 public:
  Impl(const ClusterIndex& idx, const GroupCtx& g) : idx(idx), g(g), search(idx, g) {}
  const ClusterIndex& idx;
  const GroupCtx& g;
  NodeSearch search;
  std::vector<int> victims;
};

VictimSearch::VictimSearch(const ClusterIndex& idx, const GroupCtx& g) : m_impl(std::make_unique<Impl>(idx, g)) {}
VictimSearch::~VictimSearch() = default;

std::optional<NodeVictims> VictimSearch::on_node(int node) {
  Impl& m = *m_impl;
  // Without a limit on the number of victims: find_preemption's limit only skips nodes
  // that could not be cheapest, so the cheapest of these plans is the one it finds.
  if (!preemption_filters_pass(m.idx, m.g, node) || !m.search.run(node, SIZE_MAX, m.victims) || m.victims.empty())
    return std::nullopt;
  Cost cost = cost_of(m.idx, m.victims, node);
  return NodeVictims{m.victims, cost.count, cost.max_rank, cost.sum_rank, cost.name_rank};
}

VictimPlan VictimSearch::to_plan(int node, const NodeVictims& v) const {
  VictimPlan plan;
  plan.node = node;
  plan.victims = v.victims;
  plan.max_rank = v.max_rank;
  plan.sum_rank = v.sum_rank;
  sort_victims(m_impl->idx, plan.victims);
  return plan;
}

}  // namespace gaia::sched
