#pragma once
// The node-shape flags `gaia cluster create` and `gaia node add` share: per-node
// capacity, volume groups, labels, ports, subnet, topology.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "lib/cluster_layout.hpp"
#include "lib/error.hpp"

namespace gaia::cli {

struct NodeFlags {
  int count = 3;
  std::string name_prefix = "node";
  std::string cpu = "16", memory = "64Gi", gpu = "0", disk = "500Gi";
  bool ssd = false;
  std::string ssd_size = "4Ti", hdd_size = "8Ti";
  int64_t ssd_iops = 20000, hdd_iops = 500;
  std::vector<std::string> labels;  // KEY=VALUE
  std::vector<std::string> images;
  std::string ports = "20000-29999";
  std::string subnet = "10.0.0.0/16";
  int racks = 0, zones = 0;
};

// Adds the flags to `cmd`. `for_add` switches help texts to `gaia node add`'s meaning.
void add_node_flags(CLI::App* cmd, NodeFlags& f, bool for_add);

// The generation options the flags describe; every bad flag is reported.
Result<GenerateOptions> generate_options(const NodeFlags& f);

}  // namespace gaia::cli
