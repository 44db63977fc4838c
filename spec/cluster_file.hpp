#pragma once
// Cluster files: the YAML that `gaia cluster create -f FILE` reads (reference in
// docs/cluster-file.md, examples in examples/clusters/). Parsed with yaml-cpp directly so
// every error carries file:line:col; all errors of a file are reported at once.
//
//   name: bigdata-50                # optional, shown by `gaia cluster show`
//   subnet: 10.0.0.0/16             # carves addresses for nodes that give none
//   subnets:                        # topology table: CIDR -> switch/rack/zone
//     - {cidr: 10.1.1.0/24, switch: s1, rack: r1, zone: z1}
//   nodes:
//     - name: master-1
//       address: 10.1.1.10
//       instance_subnet: 10.200.1.0/24
//       capacity: {cpu: 16, memory: 64Gi, gpu: 0, disk: 1Ti}
//       labels: {role: master}
//       volume_groups: [{name: ssd0, class: ssd, size: 2Ti, iops: 20000}]   # a local class
//       cached_images: [apache/hadoop:3.3.4]
//       ports: 20000-29999
//   node_groups:                    # `count` identical nodes named <name>-<k>
//     - name: datanode
//       count: 40
//       address: 10.1.1.20          # first address; the k-th node gets the next ones
//       instance_subnets: 10.201.0.0/16   # one /24 (IPv6: /64) per node, in order
//       ...                         # every node field except instance_subnet
//   tenants:
//     - {name: analytics, quota: {cpu: 200, memory: 800Gi, gpu: 0, instances: 200}, pool: {disk: ssd}}
//   scheduler:
//     strategy: spread              # spread | stack
//     weights: {allocation: 1, balance: 1, locality: 2, image: 1, affinity: 1, spread: 1}
//     percentage_of_nodes_to_score: 100
//   storage_classes:                # optional; replaces the defaults hdd and ssd (both local)
//     - {name: silver, kind: local, description: "SATA disks"}   # offered by volume groups
//     - {name: gold, kind: claim, capacity: 50Ti, selector: {zone: z1}}   # a network pool
//
// Storage classes (docs/cluster-file.md#storage-classes): names are Kubernetes
// StorageClass names (lowercase RFC 1123 subdomains), unique; kind is local (default) or
// claim; capacity and selector are for claim classes only. Every volume group's class
// must be a local class of the cluster; this is checked once the whole file is read, so
// storage_classes may come before or after the nodes. A file that lists storage_classes
// must list at least one.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "lib/cluster_layout.hpp"
#include "lib/error.hpp"

namespace gaia::spec {

struct SubnetEntry {
  std::string cidr, switch_, rack, zone;
};

struct ClusterFile {
  ClusterSpec cluster;               // Nodes (addressed, with topology), tenants, profile,
                                     // storage classes (left empty when the file has none).
  std::vector<SubnetEntry> subnets;  // The topology table as written.
};

// Parses cluster-file text; `file` names it in diagnostics.
Result<ClusterFile> parse_cluster_file(std::string_view text, const std::string& file);
// Reads and parses FILE.
Result<ClusterFile> load_cluster_file(const std::filesystem::path& path);

}  // namespace gaia::spec
