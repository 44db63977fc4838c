#pragma once
// Nodes kept in order of what they have in use, so that the scheduler can find the best
// node for a plain run without scoring every node (a bounded search in the manner of
// Fagin's threshold algorithm).
//
// Nodes with the same capacity form a class; inside a class the allocation and balance
// scores of a node depend only on its cpu and memory in use, and get worse as either
// grows (spread) or better (stack). Each class files its nodes into buckets by the share
// of cpu in use and, separately, of memory in use. Walking the cpu buckets and the
// memory buckets at once, every node not yet seen has at least (spread) or at most
// (stack) the use at the two buckets' edges, which bounds its score; once that bound
// is below the best node found, the rest of the class cannot win. The bound counts the
// spread score as if no replica of the role were anywhere, so it holds for runs whose
// earlier replicas are placed too. Decisions are the same as scoring every node: nodes
// are only skipped when they would score strictly less, and ties are still broken by
// name (tests/controllers/node_order_test.cpp checks both). Buckets rather than sorted
// trees: moving a node is O(1), and a walk reads arrays.

#include <array>
#include <cstdint>
#include <vector>

#include "controllers/cluster_index.hpp"
#include "controllers/score_eval.hpp"

namespace gaia::sched {

class NodeOrder {
 public:
  static constexpr int kBuckets = 256;

  // The nodes of one class whose use of one resource on one basis falls into each
  // bucket: bucket j holds use in [j, j + 1) * capacity / kBuckets, the last one also
  // everything above.
  struct Buckets {
    int64_t cap = 0;
    std::vector<std::vector<int>> nodes = std::vector<std::vector<int>>(kBuckets);
    // The least use a node of bucket j can have, and more than the most.
    int64_t low_edge(int j) const { return static_cast<int64_t>((static_cast<__int128>(j) * cap) / kBuckets); }
    int64_t high_edge(int j) const {
      return j + 1 >= kBuckets ? INT64_MAX
                               : static_cast<int64_t>((static_cast<__int128>(j + 1) * cap + kBuckets - 1) / kBuckets);
    }
    int bucket_of(int64_t used) const;
  };

  struct Class {
    Resources cap;
    double inv_cpu = 0, inv_mem = 0;
    // [basis][dimension]: basis 0 counts requests, 1 reservations (what non-prod work
    // fits against); dimension 0 is cpu, 1 memory.
    std::array<std::array<Buckets, 2>, 2> by_used;
  };

  explicit NodeOrder(const ClusterIndex& idx);
  // Call after the node's requests or reservations changed (a placement or eviction).
  void update(int node);

  const std::vector<Class>& classes() const { return m_classes; }
  // Nodes without cpu or memory capacity: scored the general way, always looked at.
  const std::vector<int>& unordered() const { return m_unordered; }

 private:
  struct Filed {
    std::array<int, 4> bucket{};  // [basis * 2 + dimension]
    std::array<int, 4> slot{};    // Position inside that bucket's vector.
  };
  void file(int node, int k, int bucket);
  void unfile(int node, int k);

  const ClusterIndex& m_idx;
  std::vector<Class> m_classes;
  std::vector<int> m_unordered;
  std::vector<int> m_class_of;  // Per node; -1 when unordered.
  std::vector<Filed> m_filed;   // Per node.
};

// An upper bound of score_simple's total over the nodes of class `c` that have at least
// (spread) or at most (stack) `cpu_used` and `mem_used` in use (on the request's basis),
// for a run where simple_scoring holds and no GPU is requested. Non-negative weights
// only (the caller checks).
double score_bound(const NodeOrder::Class& c, const GroupCtx& g, const ScoreWeights& w, bool gpu_mixed,
                   int64_t cpu_used, int64_t mem_used);

}  // namespace gaia::sched
