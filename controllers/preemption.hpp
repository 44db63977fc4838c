#pragma once
// Preemption: when no node fits an instance, find the node where evicting strictly
// lower-priority, preemptible instances would make it fit, at the least cost. Cost is
// compared as (number of victims, highest victim priority, sum of victim priorities),
// then node name. Victims never take a role below its min_available (counting running
// instances), and non-preemptible nonprod instances are never victims.

#include <cstdint>
#include <vector>

#include "controllers/context.hpp"

namespace gaia::sched {

struct VictimPlan {
  int node = -1;             // -1: preemption cannot help.
  std::vector<int> victims;  // Instance indices, lowest priority first.
  int64_t max_rank = 0;
  int64_t sum_rank = 0;
};

// Only nodes in `candidates` (those passing the static filters) are considered; on
// them, every filter except ResourceFit and Ports must already pass.
VictimPlan find_preemption(const ClusterIndex& idx, const GroupCtx& g, const std::vector<int>& candidates);

}  // namespace gaia::sched
