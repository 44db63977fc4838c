#include "controllers/node_order.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace gaia::sched {

namespace {

std::array<int64_t, 4> used_keys(const NodeIx& n) {
  return {n.alloc_req.cpu_millis, n.alloc_req.memory_bytes, n.alloc_res.cpu_millis, n.alloc_res.memory_bytes};
}

}  // namespace

int NodeOrder::Buckets::bucket_of(int64_t used) const {
  if (used <= 0 || cap <= 0) return 0;
  if (used >= cap) return kBuckets - 1;
  return static_cast<int>((static_cast<__int128>(used) * kBuckets) / cap);
}

NodeOrder::NodeOrder(const ClusterIndex& idx) : m_idx(idx) {
  m_class_of.assign(idx.nodes.size(), -1);
  m_filed.resize(idx.nodes.size());
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, int> class_ids;
  for (size_t i = 0; i < idx.nodes.size(); ++i) {
    const NodeIx& n = idx.nodes[i];
    int node = static_cast<int>(i);
    if (n.inv_cpu <= 0 || n.inv_mem <= 0) {
      m_unordered.push_back(node);
      continue;
    }
    auto shape = std::make_tuple(n.cap.cpu_millis, n.cap.memory_bytes, n.cap.gpu, n.cap.disk_bytes);
    auto [it, fresh] = class_ids.try_emplace(shape, static_cast<int>(m_classes.size()));
    if (fresh) {
      Class c;
      c.cap = n.cap;
      c.inv_cpu = n.inv_cpu;
      c.inv_mem = n.inv_mem;
      for (auto& basis : c.by_used) {
        basis[0].cap = n.cap.cpu_millis;
        basis[1].cap = n.cap.memory_bytes;
      }
      m_classes.push_back(std::move(c));
    }
    m_class_of[i] = it->second;
    auto used = used_keys(n);
    const Class& c = m_classes[static_cast<size_t>(it->second)];
    for (int k = 0; k < 4; ++k) file(node, k, c.by_used[k / 2][k % 2].bucket_of(used[static_cast<size_t>(k)]));
  }
}

void NodeOrder::file(int node, int k, int bucket) {
  auto& b = m_classes[static_cast<size_t>(m_class_of[static_cast<size_t>(node)])].by_used[k / 2][k % 2];
  auto& list = b.nodes[static_cast<size_t>(bucket)];
  Filed& f = m_filed[static_cast<size_t>(node)];
  f.bucket[static_cast<size_t>(k)] = bucket;
  f.slot[static_cast<size_t>(k)] = static_cast<int>(list.size());
  list.push_back(node);
}

void NodeOrder::unfile(int node, int k) {
  auto& b = m_classes[static_cast<size_t>(m_class_of[static_cast<size_t>(node)])].by_used[k / 2][k % 2];
  Filed& f = m_filed[static_cast<size_t>(node)];
  auto& list = b.nodes[static_cast<size_t>(f.bucket[static_cast<size_t>(k)])];
  int slot = f.slot[static_cast<size_t>(k)];
  int last = list.back();
  list[static_cast<size_t>(slot)] = last;
  m_filed[static_cast<size_t>(last)].slot[static_cast<size_t>(k)] = slot;
  list.pop_back();
}

void NodeOrder::update(int node) {
  int cls = m_class_of[static_cast<size_t>(node)];
  if (cls < 0) return;
  auto used = used_keys(m_idx.nodes[static_cast<size_t>(node)]);
  for (int k = 0; k < 4; ++k) {
    int bucket = m_classes[static_cast<size_t>(cls)].by_used[k / 2][k % 2].bucket_of(used[static_cast<size_t>(k)]);
    if (bucket == m_filed[static_cast<size_t>(node)].bucket[static_cast<size_t>(k)]) continue;
    unfile(node, k);
    file(node, k, bucket);
  }
}

double score_bound(const NodeOrder::Class& c, const GroupCtx& g, const ScoreWeights& w, bool gpu_mixed,
                   int64_t cpu_used, int64_t mem_used) {
  const double w_a = w[static_cast<int>(ScoreId::Allocation)], w_b = w[static_cast<int>(ScoreId::Balanced)];
  const double w_s = w[static_cast<int>(ScoreId::EvenSpread)], w_sc = w[static_cast<int>(ScoreId::ScarceResources)];
  double fc = std::clamp(static_cast<double>(cpu_used + g.rq.req.cpu_millis) * c.inv_cpu, 0.0, 1.0);
  double fm = std::clamp(static_cast<double>(mem_used + g.rq.req.memory_bytes) * c.inv_mem, 0.0, 1.0);
  // Allocation plus balance is 100 (w_a + w_b) - 50 w_a (fc + fm) - 50 w_b |fc - fm|
  // (spread), or 50 w_a (fc + fm) + 100 w_b - 50 w_b |fc - fm| (stack). Over the nodes
  // beyond the cursors (fc, fm at least the cursors' for spread, at most for stack) the
  // extreme of this piecewise linear function lies at the cursors' corner or where the
  // two usages are equal; both are taken.
  double corner_sum = 50 * w_a * (fc + fm), corner_gap = 50 * w_b * std::abs(fc - fm);
  double bound;
  if (!g.stack) {
    double least = std::min(corner_sum + corner_gap, 100 * w_a * std::max(fc, fm));
    bound = 100 * (w_a + w_b) - least;
  } else {
    double most = std::max(corner_sum - corner_gap, 100 * w_a * std::min(fc, fm));
    bound = 100 * w_b + most;
  }
  // A node caching the image scores 100 for it; without knowing which, count it in.
  const double w_i = w[static_cast<int>(ScoreId::CachedImage)];
  if (!g.rq.role->image.empty() && w_i != 0 && g.image) bound += 100 * w_i;
  if (w_s != 0) bound += 100 * w_s;  // No replica of the role anywhere: the most it can be.
  if (g.rq.req.gpu == 0 && gpu_mixed && w_sc != 0) bound += (c.cap.gpu > 0 ? 0.0 : 100.0) * w_sc;
  return bound;
}

}  // namespace gaia::sched
