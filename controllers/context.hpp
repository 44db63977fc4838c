#pragma once
// Per-role scheduling context. Pending instances are handled in runs of the same role
// (they arrive sorted that way), and everything that only depends on the role and on
// already placed instances is computed once per run: instance counts per topology
// domain for each affinity term, where the `near` role lives, which nodes cache the
// image, how the role is spread. Placements inside the run update these counters
// incrementally instead of recomputing them.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controllers/cluster_index.hpp"

namespace gaia::sched {

// Counts per topology domain, reset in time proportional to what was touched.
struct DomainCounter {
  int topo = kTopoNode;
  std::vector<int> count;
  std::vector<int> touched;
  int total = 0;

  void add(int dom) {
    ++total;
    if (dom < 0) return;
    if (count[dom]++ == 0) touched.push_back(dom);
  }
  int get(int dom) const { return dom < 0 ? 0 : count[dom]; }
  void reset() {
    for (int d : touched) count[d] = 0;
    touched.clear();
    total = 0;
  }
};

// Counters are recycled between runs so that a run does not allocate cluster-sized
// arrays.
class CounterPool {
 public:
  explicit CounterPool(const ClusterIndex& idx) : m_idx(&idx) {}
  DomainCounter* acquire(int topo);
  void release_all();

 private:
  const ClusterIndex* m_idx;
  std::vector<std::unique_ptr<DomainCounter>> m_all;
  std::vector<size_t> m_in_use;
  std::array<std::vector<size_t>, kTopoCount> m_free;
};

// An IPv4 or IPv6 prefix.
struct Cidr {
  int family = 0;  // 4 or 6; 0 when unparsed.
  std::array<uint8_t, 16> bytes{};
  int prefix = 0;
};
// "10.1.0.0/16", "fd00::/8", or a bare address (full-length prefix).
std::optional<Cidr> parse_subnet(std::string_view text);
// Whether `inner` (an address or a prefix) lies entirely inside `outer`.
bool cidr_contains(const Cidr& outer, const Cidr& inner);

// What one pending instance needs, resolved from its role once per run.
struct Request {
  int inst = -1;  // The instance currently being scheduled.
  const Instance* instance = nullptr;
  const Role* role = nullptr;
  int tenant = -1;
  int role_id = -1;
  Resources req;        // What it asks for.
  Resources res;        // What it will hold as reservation.
  bool nonprod = false;  // Fits against capacity net of reservations.
  std::vector<std::pair<std::string, int>> ports;  // Name -> fixed host port, or 0.
  int dynamic_ports = 0;
  std::vector<const Volume*> new_volumes;  // Role volumes it has no binding for yet.
  bool sticky = false;    // Has local volume bindings: must go to their node.
  bool has_claims = false;  // Has claim volume bindings: only nodes that attach them.
  int sticky_node = -1;   // That node's index (-1 if the node is unknown).
  std::string sticky_name;
  bool has_subnet = false;
  std::optional<Cidr> subnet;  // Unset with has_subnet: the CIDR did not parse.
  std::vector<std::pair<int, std::string>> topology;  // (topo level, name); level -1: bad.
};

// An instance-targeted affinity term and its matching instances per domain.
struct TermState {
  const AffinityTerm* term = nullptr;
  int topo = kTopoNode;  // -1 when the topology key is unknown.
  DomainCounter* counts = nullptr;
};

struct GroupCtx {
  Request rq;
  std::vector<TermState> req_aff, req_anti, pref_aff, pref_anti;
  std::vector<const AffinityTerm*> pref_node_aff, pref_node_anti;
  int pref_aff_weight = 0, pref_anti_weight = 0;  // Sums of term weights.
  bool has_near = false;
  std::array<DomainCounter*, kTopoCount> near{};  // Where the near role's instances are.
  DomainCounter* image = nullptr;                  // Nodes caching the image.
  DomainCounter* spread_node = nullptr;            // Own role per node...
  DomainCounter* spread_rack = nullptr;            // ...and per rack.
  bool near_self = false;  // The role is near itself: placements move locality.
  bool stack = false;      // Profile strategy "stack": MostAllocated instead of LeastAllocated.
};

// Whether labels satisfy one requirement / all requirements of a term.
// The key an instance carries for a selector key: gaia.io/app for app (and role, tenant,
// version), the key itself otherwise.
std::string stored_label_key(const std::string& key);
bool requirement_matches(const LabelRequirement& r, const std::map<std::string, std::string>& labels);
bool labels_match(const std::vector<LabelRequirement>& reqs, const std::map<std::string, std::string>& labels);

// Resolve what instance `inst` needs.
void build_request(Request& rq, const ClusterIndex& idx, int inst);
// Build the run context for the role of `inst`, counting from the index's current state.
void init_group(GroupCtx& g, const ClusterIndex& idx, CounterPool& pool, const SchedulerProfile& profile, int inst);
// Switch the context to another instance of the same run (same role and resources).
void set_instance(GroupCtx& g, const ClusterIndex& idx, int inst);
// Account for `inst` having just been placed on `node`. Appends to `affected` the nodes
// whose filters or scores may have changed as a result; returns true when every node's
// verdict may have changed (then `affected` is not meaningful).
bool note_placed(GroupCtx& g, const ClusterIndex& idx, int inst, int node, std::vector<int>* affected);

}  // namespace gaia::sched
