#include "controllers/scores.hpp"

#include <algorithm>
#include <cmath>

namespace gaia::sched {

std::string_view score_name(ScoreId id, const SchedulerProfile& profile) {
  switch (id) {
    case ScoreId::Allocation: return profile.strategy == "stack" ? "MostAllocated" : "LeastAllocated";
    case ScoreId::Balanced: return "BalancedAllocation";
    case ScoreId::DataLocality: return "DataLocality";
    case ScoreId::CachedImage: return "CachedImage";
    case ScoreId::PreferredAffinity: return "PreferredAffinity";
    case ScoreId::PreferredAntiAffinity: return "PreferredAntiAffinity";
    case ScoreId::EvenSpread: return "EvenSpread";
    case ScoreId::ScarceResources: return "ScarceResources";
  }
  return "?";
}

int score_weight(ScoreId id, const SchedulerProfile& p) {
  switch (id) {
    case ScoreId::Allocation: return p.w_allocation;
    case ScoreId::Balanced: return p.w_balance;
    case ScoreId::DataLocality: return p.w_locality;
    case ScoreId::CachedImage: return p.w_image;
    case ScoreId::PreferredAffinity:
    case ScoreId::PreferredAntiAffinity: return p.w_affinity;
    case ScoreId::EvenSpread: return p.w_spread;
    case ScoreId::ScarceResources: return p.w_scarce;
  }
  return 0;
}

ScoreWeights score_weights(const SchedulerProfile& p) {
  ScoreWeights w{};
  for (int i = 0; i < kScoreCount; ++i) w[i] = score_weight(static_cast<ScoreId>(i), p);
  return w;
}

namespace score_detail {

double locality(const GroupCtx& g, const NodeIx& n) {
  // Same node > same switch > same rack > same zone as an instance of the near role.
  static constexpr double kLevel[kTopoCount] = {100, 75, 50, 25};
  for (int t = 0; t < kTopoCount; ++t)
    if (g.near[t]->get(n.dom[t]) > 0) return kLevel[t];
  return 0;
}

double preferred(const GroupCtx& g, const NodeIx& n, bool anti) {
  const auto& node_terms = anti ? g.pref_node_anti : g.pref_node_aff;
  const auto& inst_terms = anti ? g.pref_anti : g.pref_aff;
  int total = anti ? g.pref_anti_weight : g.pref_aff_weight;
  int satisfied = 0;
  for (const AffinityTerm* t : node_terms)
    if (labels_match(t->match, n.node->labels) != anti) satisfied += std::max(t->weight, 1);
  for (const auto& ts : inst_terms) {
    bool near = ts.topo >= 0 && ts.counts->get(n.dom[ts.topo]) > 0;
    if (near != anti) satisfied += std::max(ts.term->weight, 1);
  }
  return total > 0 ? 100.0 * satisfied / total : 0.0;
}

}  // namespace score_detail

double score_node(const ClusterIndex& idx, const GroupCtx& g, const SchedulerProfile& profile, int node,
                  ScoreBreakdown* out) {
  ScoreWeights w = score_weights(profile);
  return out ? score_eval<true>(idx, g, w, node, out) : score_eval<false>(idx, g, w, node, nullptr);
}

}  // namespace gaia::sched
