#pragma once
// Score plugins: each rates a feasible node 0..100 on an absolute scale (not relative
// to the other nodes), so a node's score only changes when something about that node
// or its domains changes. That is what lets the scheduler keep nodes in a heap and
// rescore only the nodes a placement touched. The total is the weighted sum, with
// weights from the SchedulerProfile.

#include <array>
#include <string_view>

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
std::string_view score_name(ScoreId id, const SchedulerProfile& profile);
int score_weight(ScoreId id, const SchedulerProfile& profile);

struct ScoreTerm {
  ScoreId id = ScoreId::Allocation;
  bool applicable = false;  // False when the role gives the plugin nothing to judge.
  double raw = 0;           // 0..100.
  int weight = 0;
  double weighted() const { return applicable ? raw * weight : 0.0; }
};
using ScoreBreakdown = std::array<ScoreTerm, kScoreCount>;

// Total weighted score of a feasible node; fills `out` when given.
double score_node(const ClusterIndex& idx, const GroupCtx& g, const SchedulerProfile& profile, int node,
                  ScoreBreakdown* out = nullptr);

}  // namespace gaia::sched
