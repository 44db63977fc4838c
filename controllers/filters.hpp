#pragma once
// Filter plugins: each decides whether one node can take one instance, and says why
// not. The same functions serve the fast path (no message) and explanations (message),
// so what `gaia describe` prints is exactly what the scheduler decided on.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "controllers/context.hpp"

namespace gaia::sched {

enum class Filter : uint8_t {
  NodeState,
  TenantPool,
  NodeSelector,
  NodeAffinity,
  Network,
  TenantQuota,
  ResourceFit,
  Ports,
  Storage,
  InstanceAffinity,
  InstanceAntiAffinity,
};
constexpr int kFilterCount = 11;
std::string_view filter_name(Filter f);

// Filters that only look at the node and the role spec: their verdict for a role never
// changes during a schedule() call, so it is computed once per distinct requirement set.
inline constexpr Filter kStaticFilters[] = {Filter::NodeState, Filter::TenantPool, Filter::NodeSelector,
                                            Filter::NodeAffinity, Filter::Network};
// Filters that depend on what is placed where. TenantQuota is per instance, not per
// node, and is checked separately.
inline constexpr Filter kDynamicFilters[] = {Filter::ResourceFit, Filter::Ports, Filter::Storage,
                                             Filter::InstanceAffinity, Filter::InstanceAntiAffinity};

// Whether `node` passes filter `f` for the context's current instance. On failure, `msg`
// (when given) receives the reason without the plugin name, and `detail` (when given) a
// short qualifier for summaries, e.g. "memory" for ResourceFit.
bool check_filter(Filter f, const ClusterIndex& idx, const GroupCtx& g, int node, std::string* msg,
                  std::string_view* detail = nullptr);
// First failing static / dynamic filter, or -1 when all pass.
int first_static_failure(const ClusterIndex& idx, const GroupCtx& g, int node);
int first_dynamic_failure(const ClusterIndex& idx, const GroupCtx& g, int node, std::string_view* detail = nullptr);
// ResourceFit without a reason: the scheduler runs it for every node of every run.
[[gnu::always_inline]] inline bool resources_fit(const NodeIx& n, const Request& rq) {
  const Resources& used = rq.nonprod ? n.alloc_res : n.alloc_req;
  auto fits = [](int64_t want, int64_t cap, int64_t in_use) { return want <= 0 || cap - in_use >= want; };
  return fits(rq.req.cpu_millis, n.cap.cpu_millis, used.cpu_millis) &&
         fits(rq.req.memory_bytes, n.cap.memory_bytes, used.memory_bytes) && fits(rq.req.gpu, n.cap.gpu, used.gpu) &&
         fits(rq.req.disk_bytes, n.cap.disk_bytes, used.disk_bytes);
}
// Whether ResourceFit is the only dynamic filter that can fail for this run: no host
// ports, volumes or instance affinity terms.
inline bool only_resources_can_fail(const GroupCtx& g) {
  const Request& rq = g.rq;
  return rq.ports.empty() && !rq.sticky && !rq.has_claims && rq.new_volumes.empty() && g.req_aff.empty() &&
         g.req_anti.empty();
}

// How many nodes fail each filter (the first failing one per node), with the
// qualifier ("memory"), most frequent first. `static_first` optionally supplies the
// cached first static failure per node (-1 for none).
struct FailureCount {
  Filter filter = Filter::NodeState;
  std::string detail;
  int nodes = 0;
};
std::vector<FailureCount> count_failures(const ClusterIndex& idx, const GroupCtx& g,
                                         const std::vector<int8_t>* static_first, int* fitting);
// "0/50 nodes fit: 30 ResourceFit (memory), 20 NodeSelector".
std::string summarize_failures(int total_nodes, int fitting, const std::vector<FailureCount>& counts);

// The tenant's quota against its occupying instances plus this request.
bool check_quota(const ClusterIndex& idx, const Request& rq, std::string* msg);

// Host ports for the request on `node`: fixed ones as given, the others the lowest free
// ports of the node's range. False when they do not fit.
bool allocate_ports(const NodeIx& node, const Request& rq, std::map<std::string, int>* out);
// Volume groups for the request's unbound local volumes (best fit: the group with the least
// free space that suffices, so large groups stay available for large volumes).
// Claim volumes come from their class's pool instead, on nodes that can attach it.
bool allocate_volumes(const ClusterIndex& idx, const NodeIx& node, const Request& rq, std::vector<VolumeBinding>* out,
                      std::string* msg);

// Human-readable quantities for messages: "1500m", "8Gi", "7.5Gi".
std::string format_millis(int64_t m);
std::string format_size(int64_t bytes);
// "gaia.io/role=datanode,disk in (ssd,nvme)".
std::string describe_requirements(const std::vector<LabelRequirement>& reqs);
// The node's name at a topology level as users write it ("r3", not "z1/r3").
std::string node_topology_value(const Node& n, int topo);

}  // namespace gaia::sched
