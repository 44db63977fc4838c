#pragma once
// Score plugins: each rates a feasible node 0..100 on an absolute scale (not relative
// to the other nodes), so a node's score only changes when something about that node
// or its domains changes. That is what lets the scheduler keep nodes in a heap and
// rescore only the nodes a placement touched. The total is the weighted sum, with
// weights from the SchedulerProfile.

#include <array>
#include <string_view>

#include "controllers/context.hpp"
#include "controllers/score_eval.hpp"

namespace gaia::sched {

std::string_view score_name(ScoreId id, const SchedulerProfile& profile);
int score_weight(ScoreId id, const SchedulerProfile& profile);
ScoreWeights score_weights(const SchedulerProfile& profile);

// Total weighted score of a feasible node; fills `out` when given.
double score_node(const ClusterIndex& idx, const GroupCtx& g, const SchedulerProfile& profile, int node,
                  ScoreBreakdown* out = nullptr);
// The same with the weights worked out beforehand (once per run).
inline double score_node(const ClusterIndex& idx, const GroupCtx& g, const ScoreWeights& weights, int node) {
  return score_eval<false>(idx, g, weights, node, nullptr);
}

}  // namespace gaia::sched
