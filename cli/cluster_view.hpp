#pragma once
// Display helpers shared by `gaia get`, `gaia describe`, `gaia cluster` and `gaia node`:
// per-node allocation, quantity cells ("8/32 (25%)"), ages, JSON views of the objects,
// and the report of pending instances a node change placed.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "controllers/node_ops.hpp"
#include "lib/clock.hpp"
#include "lib/state.hpp"

namespace gaia::cli {

struct NodeUsage {
  Resources allocated;  // Sum of the requests of the instances occupying the node.
  int instances = 0;
  std::map<std::string, int64_t> volume_used;  // Volume group -> bytes bound.
};

// Usage of every node by name (nodes without instances included).
std::map<std::string, NodeUsage> node_usage(const ClusterState& state);

// One storage class with what the cluster has of it and what is taken: a local class's
// volume groups on all nodes, a claim class's pool (capacity -1: unbounded). Kept
// volumes count as taken: they still hold data.
struct StorageClassUsage {
  StorageClass cls;
  int64_t capacity_bytes = 0;
  int64_t used_bytes = 0;
  int nodes = 0;  // Nodes offering (local) or able to attach (claim) the class.
};
std::vector<StorageClassUsage> storage_class_usage(const ClusterState& state);

// "8/32 (25%)" for cpu, "48Gi/128Gi (37%)" for bytes, "1/4 (25%)" for counts; "-" when
// the capacity is zero and nothing is used.
std::string cpu_cell(int64_t used_millis, int64_t capacity_millis);
std::string bytes_cell(int64_t used, int64_t capacity);
std::string count_cell(int64_t used, int64_t capacity);
// Percentage rounded down, 0 for an empty capacity.
int percent(int64_t used, int64_t capacity);

// "45s", "12m", "3h", "5d" since an RFC 3339 time; "<unknown>" when it does not parse.
std::string age(const std::string& rfc3339, Clock::time_point now);

// kubectl-style labels: "a=b,c=d", or "<none>".
std::string labels_text(const std::map<std::string, std::string>& labels);

// Labels an app is selected by: gaia.io/app, gaia.io/tenant, gaia.io/version, and
// gaia.io/status.
std::map<std::string, std::string> app_labels(const AppRecord& a);
std::map<std::string, std::string> app_labels(const std::string& name, const std::string& tenant,
                                              const std::string& version, const std::string& status);
// Instances of an app that are Running (or Succeeded) and the replicas its roles ask for.
std::pair<int, int> app_instance_counts(const ClusterState& state, const AppRecord& a);
// The same, with the running count already known (AppsState::serving).
std::pair<int, int> app_instance_counts(const AppRecord& a, int running);

// JSON views for -o json|yaml.
nlohmann::json node_json(const Node& n, const NodeUsage& u);
nlohmann::json app_json(const ClusterState& state, const AppRecord& a);
nlohmann::json app_json(const AppRecord& a, int running);
nlohmann::json instance_json(const Instance& i);

// Writes `value` as JSON (indented) or YAML to stdout.
void print_structured(const nlohmann::json& value, const std::string& format);

// Prints what retrying pending instances did after a node change ("placed 3 pending
// instance(s): ...", preemptions, what is still pending), unless quiet.
void print_retry(const Globals& g, const NodeOpOutcome& out);

// Sorts nodes in natural name order.
std::vector<const Node*> sorted_nodes(const Snapshot& s);

}  // namespace gaia::cli
