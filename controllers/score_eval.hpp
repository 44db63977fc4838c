#pragma once
// The arithmetic of the score plugins, inline so that the scheduler's scan over every
// node of a run compiles into one loop body with the weights worked out once per run
// (controllers/scores.hpp is the interface; explain and the scheduler share this code,
// so an explanation shows exactly the numbers a decision was made on).

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "controllers/context.hpp"

namespace gaia::sched {

enum class ScoreId : uint8_t {
  Allocation,  // LeastAllocated (spread) or MostAllocated (stack).
  Balanced,
  DataLocality,
  CachedImage,
  PreferredAffinity,
  PreferredAntiAffinity,
  EvenSpread,
  ScarceResources,  // Keeps GPU nodes for GPU work.
};
constexpr int kScoreCount = 8;

struct ScoreTerm {
  ScoreId id = ScoreId::Allocation;
  bool applicable = false;  // False when the role gives the plugin nothing to judge.
  double raw = 0;           // 0..100.
  int weight = 0;
  double weighted() const { return applicable ? raw * weight : 0.0; }
};
using ScoreBreakdown = std::array<ScoreTerm, kScoreCount>;
using ScoreWeights = std::array<int, kScoreCount>;

namespace score_detail {

// Share of each resource the node would have in use with this instance on it, for the
// resources that matter to it: cpu and memory always, gpu when requested.
inline int usage_fractions(const NodeIx& n, const Request& rq, std::array<double, 3>& f) {
  const Resources& used = rq.nonprod ? n.alloc_res : n.alloc_req;
  int k = 0;
  auto add = [&](double inv, int64_t u, int64_t want) {
    if (inv <= 0) return;
    f[k++] = std::clamp(static_cast<double>(u + want) * inv, 0.0, 1.0);
  };
  add(n.inv_cpu, used.cpu_millis, rq.req.cpu_millis);
  add(n.inv_mem, used.memory_bytes, rq.req.memory_bytes);
  if (rq.req.gpu > 0) add(n.inv_gpu, used.gpu, rq.req.gpu);
  return k;
}

// 100 / (1 + count) without a division for the counts that occur in practice.
constexpr int kSpreadTable = 64;
constexpr std::array<double, kSpreadTable> make_spread_table() {
  std::array<double, kSpreadTable> t{};
  for (int i = 0; i < kSpreadTable; ++i) t[i] = 100.0 / (1 + i);
  return t;
}
inline constexpr auto kSpread = make_spread_table();
inline double spread_value(int count) { return count < kSpreadTable ? kSpread[count] : 100.0 / (1 + count); }

// Allocation and balance from the usage fractions of usage_fractions (k > 0): one
// function for both scorers, so that their totals cannot drift apart. `balanced` is
// left alone when there is nothing to balance (k == 1).
inline void allocation_balance(const std::array<double, 3>& f, int k, bool stack, double* allocation, double* balanced,
                               bool* has_balanced) {
  double mean = 0;
  for (int i = 0; i < k; ++i) mean += f[i];
  mean /= k;
  *allocation = stack ? 100.0 * mean : 100.0 * (1.0 - mean);
  *has_balanced = k >= 2;
  if (k == 2) {
    *balanced = 100.0 * (1.0 - std::abs(f[0] - f[1]) / 2);
  } else if (k == 3) {
    double var = 0;
    for (int i = 0; i < k; ++i) var += (f[i] - mean) * (f[i] - mean);
    *balanced = 100.0 * (1.0 - std::sqrt(var / k));
  }
}

double locality(const GroupCtx& g, const NodeIx& n);
double preferred(const GroupCtx& g, const NodeIx& n, bool anti);

}  // namespace score_detail

// Total weighted score of a feasible node. With kAll every plugin is evaluated and
// `out` filled; without it, plugins with weight 0 are skipped (they would add 0).
template <bool kAll>
inline double score_eval(const ClusterIndex& idx, const GroupCtx& g, const ScoreWeights& weight, int node,
                         ScoreBreakdown* out) {
  using namespace score_detail;
  const NodeIx& n = idx.nodes[node];
  std::array<double, kScoreCount> raw{};
  std::array<bool, kScoreCount> applicable{};
  auto wanted = [&](ScoreId id) { return kAll || weight[static_cast<int>(id)] != 0; };
  auto set = [&](ScoreId id, double value) {
    applicable[static_cast<int>(id)] = true;
    raw[static_cast<int>(id)] = value;
  };

  if (wanted(ScoreId::Allocation) || wanted(ScoreId::Balanced)) {
    std::array<double, 3> f{};
    int k = usage_fractions(n, g.rq, f);
    if (k > 0) {
      double allocation = 0, balanced = 0;
      bool has_balanced = false;
      allocation_balance(f, k, g.stack, &allocation, &balanced, &has_balanced);
      set(ScoreId::Allocation, allocation);
      if (has_balanced) set(ScoreId::Balanced, balanced);
    }
  }
  if (g.has_near && wanted(ScoreId::DataLocality)) set(ScoreId::DataLocality, locality(g, n));
  if (!g.rq.role->image.empty() && wanted(ScoreId::CachedImage))
    set(ScoreId::CachedImage, g.image && g.image->get(node) > 0 ? 100.0 : 0.0);
  if (g.pref_aff_weight > 0 && wanted(ScoreId::PreferredAffinity))
    set(ScoreId::PreferredAffinity, preferred(g, n, false));
  if (g.pref_anti_weight > 0 && wanted(ScoreId::PreferredAntiAffinity))
    set(ScoreId::PreferredAntiAffinity, preferred(g, n, true));
  if (wanted(ScoreId::EvenSpread)) {
    double on_node = spread_value(g.spread_node->get(node));
    int rack = n.dom[kTopoRack];
    set(ScoreId::EvenSpread, rack < 0 ? on_node : (on_node + spread_value(g.spread_rack->get(rack))) / 2);
  }
  // GPUs are the resource few nodes have: work that does not ask for one is kept off
  // the nodes that have them, so GPU work finds them free. In a cluster without GPU
  // nodes, or with only GPU nodes, the score would tell no node apart and is left out.
  if (g.rq.req.gpu == 0 && idx.gpu_mixed && wanted(ScoreId::ScarceResources))
    set(ScoreId::ScarceResources, n.inv_gpu > 0 ? 0.0 : 100.0);
  double total = 0;
  for (int i = 0; i < kScoreCount; ++i)
    if (applicable[i]) total += raw[i] * weight[i];
  if constexpr (kAll) {
    if (out)
      for (int i = 0; i < kScoreCount; ++i)
        (*out)[i] = ScoreTerm{static_cast<ScoreId>(i), applicable[i], raw[i], weight[i]};
  }
  return total;
}

// Whether a run's score needs only the plugins score_simple computes: allocation,
// balance, cached image, spread and scarce resources (no data locality or preferred
// terms with a weight).
inline bool simple_scoring(const GroupCtx& g, const ScoreWeights& w) {
  auto off = [&](ScoreId id) { return w[static_cast<int>(id)] == 0; };
  return (!g.has_near || off(ScoreId::DataLocality)) && (g.pref_aff_weight == 0 || off(ScoreId::PreferredAffinity)) &&
         (g.pref_anti_weight == 0 || off(ScoreId::PreferredAntiAffinity));
}

// score_eval<false> for a run where simple_scoring holds, with the same operations in
// the same order, so the total is the same to the last bit (tests/controllers
// compare them); it leaves out the branches and arrays of the general case.
[[gnu::always_inline]] inline double score_simple(const ClusterIndex& idx, const GroupCtx& g, const ScoreWeights& w,
                                                  int node) {
  using namespace score_detail;
  const NodeIx& n = idx.nodes[node];
  const int w_alloc = w[static_cast<int>(ScoreId::Allocation)], w_bal = w[static_cast<int>(ScoreId::Balanced)];
  const int w_spread = w[static_cast<int>(ScoreId::EvenSpread)], w_scarce = w[static_cast<int>(ScoreId::ScarceResources)];
  double total = 0;
  if ((w_alloc != 0 || w_bal != 0) && g.rq.req.gpu == 0 && n.inv_cpu > 0 && n.inv_mem > 0) {
    // The usual case, cpu and memory only, written out: x / 2 and x * 0.5 are the same
    // number, and 0 + a + b is a + b, so this matches the loop below bit for bit.
    const Resources& used = g.rq.nonprod ? n.alloc_res : n.alloc_req;
    double fc = std::clamp(static_cast<double>(used.cpu_millis + g.rq.req.cpu_millis) * n.inv_cpu, 0.0, 1.0);
    double fm = std::clamp(static_cast<double>(used.memory_bytes + g.rq.req.memory_bytes) * n.inv_mem, 0.0, 1.0);
    double mean = (fc + fm) * 0.5;
    total += (g.stack ? 100.0 * mean : 100.0 * (1.0 - mean)) * w_alloc;
    total += 100.0 * (1.0 - std::abs(fc - fm) * 0.5) * w_bal;
  } else if (w_alloc != 0 || w_bal != 0) {
    std::array<double, 3> f{};
    int k = usage_fractions(n, g.rq, f);
    if (k > 0) {
      double allocation = 0, balanced = 0;
      bool has_balanced = false;
      allocation_balance(f, k, g.stack, &allocation, &balanced, &has_balanced);
      total += allocation * w_alloc;
      if (has_balanced) total += balanced * w_bal;
    }
  }
  const int w_image = w[static_cast<int>(ScoreId::CachedImage)];
  if (!g.rq.role->image.empty() && w_image != 0) total += (g.image && g.image->get(node) > 0 ? 100.0 : 0.0) * w_image;
  if (w_spread != 0) {
    double on_node = spread_value(g.spread_node->get(node));
    int rack = n.dom[kTopoRack];
    total += (rack < 0 ? on_node : (on_node + spread_value(g.spread_rack->get(rack))) / 2) * w_spread;
  }
  if (g.rq.req.gpu == 0 && idx.gpu_mixed && w_scarce != 0) total += (n.inv_gpu > 0 ? 0.0 : 100.0) * w_scarce;
  return total;
}

}  // namespace gaia::sched
