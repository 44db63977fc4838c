#pragma once
// Preemption: when no node fits an instance, find the node where evicting strictly
// lower-priority, preemptible instances would make it fit, at the least cost. Cost is
// compared as (number of victims, highest victim priority, sum of victim priorities),
// then node name. Victims never take a role below its min_available (counting running
// instances), and non-preemptible nonprod instances are never victims.

#include <cstdint>
#include <memory>
#include <optional>
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

// The cheapest victim set of one node, for a caller that keeps every node's plan across
// the arrivals of one run and searches again only the nodes that changed: the cheapest
// of all nodes' plans is what find_preemption chooses.
struct NodeVictims {
  std::vector<int> victims;
  size_t count = 0;
  int64_t max_rank = 0, sum_rank = 0;
  int name_rank = 0;
  bool operator<(const NodeVictims& o) const;  // Cheaper: find_preemption's order.
};

class VictimSearch {
 public:
  // `g` is read at every call, so it may be re-initialised in between.
  VictimSearch(const ClusterIndex& idx, const GroupCtx& g);
  ~VictimSearch();
  // Nothing when evicting on `node` cannot make room (or a filter other than
  // ResourceFit and Ports fails there).
  std::optional<NodeVictims> on_node(int node);
  // The plan to carry out: victims lowest priority first, as find_preemption gives.
  VictimPlan to_plan(int node, const NodeVictims& v) const;

 private:
  class Impl;
  std::unique_ptr<Impl> m_impl;
};

}  // namespace gaia::sched
