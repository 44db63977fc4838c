#pragma once
// Why an instance is where it is, or why it is pending: the per-node filter verdicts and
// score terms the scheduler used, computed by the very same plugin code. Behind
// `gaia plan` and `gaia describe`.

#include <optional>
#include <string>
#include <vector>

#include "controllers/scheduler.hpp"
#include "lib/cluster.hpp"
#include "lib/error.hpp"

namespace gaia {

struct FilterFailureInfo {
  std::string filter;   // Plugin name, e.g. "ResourceFit".
  std::string message;  // "memory 7Gi free < 8Gi requested".
};

struct ScoreInfo {
  std::string plugin;  // "LeastAllocated", "DataLocality", ...
  bool applicable = false;  // False: the role gives this plugin nothing to judge.
  double raw = 0;           // 0..100.
  int weight = 0;
  double weighted = 0;
};

struct NodeExplanation {
  std::string node;
  bool feasible = false;
  std::vector<FilterFailureInfo> failures;  // Every failing filter, in plugin order.
  std::vector<ScoreInfo> scores;            // Feasible nodes only.
  double total = 0;
};

struct FilterCount {
  std::string filter;
  std::string detail;  // "memory" for ResourceFit; may be empty.
  int nodes = 0;
};

struct Explanation {
  std::string instance;
  bool placed = false;
  std::string node;     // Where it is, when placed.
  std::string summary;  // One line: why pending, or chosen node vs runner-up.
  std::vector<FilterCount> failing;  // Nodes per first failing filter, most first.
  int fitting = 0;                   // Nodes passing every filter.
  // Pending and fitting nowhere: the evictions that would make room (empty if none).
  std::vector<Preemption> preemptions;
  // Every node (or just the one asked for): feasible ones by score, then the rest by name.
  std::vector<NodeExplanation> nodes;
  // Placed only: the node it is on (judged as if it were not there) and the best other.
  std::optional<NodeExplanation> chosen, runner_up;
};

// Explains instance `key` against the snapshot. A placed instance is judged as if it
// were removed from its node. `node` restricts the per-node list to one node.
Result<Explanation> explain(const Snapshot& snapshot, const std::string& key,
                            const std::optional<std::string>& node = std::nullopt);

// Aligned text for the CLI.
std::string format_explanation(const Explanation& e);

}  // namespace gaia
