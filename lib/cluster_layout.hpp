#pragma once
// Laying out a cluster: what `gaia cluster create` and `gaia node add` build before the
// store sees it. Pure functions: carving node addresses and instance subnets out of a
// cluster subnet, generating identical nodes from flags, and deriving each node's
// switch, rack and zone from a subnet table (the topology radix tree).
//
// Address plan. A cluster subnet (flag --subnet, or `subnet:` in a cluster file) is cut
// in two halves. The lower half holds node (host) addresses: the k-th node gets the
// address k+1 of it (10.0.0.1, 10.0.0.2, ...). The upper half is cut into instance
// blocks, a /24 per node for IPv4 and a /64 for IPv6, handed out in order (10.0.128.0/24,
// 10.0.129.0/24, ... for 10.0.0.0/16). Keeping hosts and instances in separate halves
// means a node's own address is never handed to an instance, and the topology table
// can map both ranges without overlap. A /16 holds 128 nodes; a /12 2,048; a /8 32,768.

#include <cstdint>
#include <expected>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "lib/cluster.hpp"
#include "lib/topology.hpp"

namespace gaia {

inline constexpr int kInstanceBlockV4 = 24;
inline constexpr int kInstanceBlockV6 = 64;

// Hands out node addresses and instance blocks from a cluster subnet, skipping those
// already used by `existing` nodes (so `gaia node add` continues where create stopped).
class AddressAllocator {
 public:
  static std::expected<AddressAllocator, std::string> create(std::string_view subnet,
                                                             const std::vector<Node>& existing = {});
  // Marks an address or instance subnet as taken (nodes given explicit ones).
  void reserve_address(const std::string& address);
  void reserve_subnet(const std::string& cidr);
  // The lowest free host address / instance block, or an error when the subnet is full.
  std::expected<std::string, std::string> next_address();
  std::expected<std::string, std::string> next_instance_subnet();

  uint64_t host_capacity() const { return m_host_capacity; }
  uint64_t block_capacity() const { return m_block_capacity; }
  const IpPrefix& subnet() const { return m_subnet; }

 private:
  IpPrefix m_subnet;
  int m_block_length = 24;
  uint64_t m_host_capacity = 0, m_block_capacity = 0;
  uint64_t m_next_host = 0, m_next_block = 0;
  std::set<unsigned __int128> m_used_hosts, m_used_blocks;
};

// What `gaia cluster create` writes: the whole cluster.
struct ClusterSpec {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Tenant> tenants;  // Always includes "default".
  SchedulerProfile profile;
  // The storage classes volumes may name, as the cluster file declares them; empty when
  // it declares none, and then the cluster has default_storage_classes() and, as local
  // classes, whatever its nodes' volume groups offer (a Kubernetes cluster's nodes
  // announce theirs).
  std::vector<StorageClass> storage_classes;
  // Where instances run: "sim" or "process" (from --backend, not from cluster files).
  // A process cluster's instance subnets must be loopback.
  std::string backend = "sim";
};

// Identical nodes from command-line flags.
struct NodeShape {
  Resources capacity{16000, 64LL << 30, 0, 500LL << 30};
  std::map<std::string, std::string> labels;
  std::vector<VolumeGroup> volume_groups;
  std::vector<std::string> cached_images;
  int port_min = 20000, port_max = 29999;
};

struct GenerateOptions {
  int count = 3;
  std::string name_prefix = "node";
  NodeShape shape;
  // Nodes are split into `racks` contiguous groups (racks r1..rN, each with its own
  // top-of-rack switch s1..sN), and racks into `zones` contiguous groups (z1..zN). 0
  // leaves that level unset. With zones but no racks, nodes are split into zones directly.
  int racks = 0, zones = 0;
  std::string subnet = "10.0.0.0/16";
};

// Generates `count` nodes named <prefix>-<k>, numbering after the highest k among the
// `existing` nodes with that prefix, addressed from the subnet, with topology fields and
// the rack/switch/zone labels filled. Errors are one line each (flag problems).
std::expected<std::vector<Node>, std::string> generate_nodes(const GenerateOptions& options,
                                                             const std::vector<Node>& existing = {});

// Fills the node's zone, rack and switch: a `zone`/`rack`/`switch` label wins; otherwise
// the longest-prefix match of its address in `table` (when given); otherwise the field
// keeps its value. The result is mirrored into the labels so selectors see it.
void assign_topology(Node& node, const TopologyTable* table);

// Natural order for names with numbers ("node-2" before "node-10").
bool natural_less(const std::string& a, const std::string& b);

// Adds a "default" tenant without quota or pool when `tenants` has none.
void ensure_default_tenant(std::vector<Tenant>& tenants);

}  // namespace gaia
