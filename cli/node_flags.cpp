#include "cli/node_flags.hpp"

#include <fmt/format.h>

#include "controllers/node_ops.hpp"
#include "lib/quantity.hpp"

namespace gaia::cli {

void add_node_flags(CLI::App* cmd, NodeFlags& f, bool for_add) {
  cmd->add_option("--nodes,-n", f.count, for_add ? "How many nodes to add" : "How many nodes")->capture_default_str();
  cmd->add_option("--cpu", f.cpu, "CPU per node (cores, or millicores like 500m)")->capture_default_str();
  cmd->add_option("--memory", f.memory, "Memory per node (e.g. 64Gi)")->capture_default_str();
  cmd->add_option("--gpu", f.gpu, "GPUs per node")->capture_default_str();
  cmd->add_option("--disk", f.disk, "Ephemeral disk per node")->capture_default_str();
  cmd->add_flag("--ssd", f.ssd, "Give each node an ssd volume group (and the label disk=ssd)");
  cmd->add_option("--ssd-size", f.ssd_size, "Size of the ssd volume group")->capture_default_str();
  cmd->add_option("--ssd-iops", f.ssd_iops, "IOPS of the ssd volume group")->capture_default_str();
  cmd->add_option("--hdd-size", f.hdd_size, "Size of the hdd volume group (0: none)")->capture_default_str();
  cmd->add_option("--hdd-iops", f.hdd_iops, "IOPS of the hdd volume group")->capture_default_str();
  cmd->add_option("--label,-l", f.labels, "Label for every node, KEY=VALUE (repeatable)")->type_name("KEY=VALUE");
  cmd->add_option("--image", f.images, "Image cached on every node (repeatable)")->type_name("IMAGE");
  cmd->add_option("--ports", f.ports, "Host port range instances get ports from")->capture_default_str();
  cmd->add_option("--subnet", f.subnet,
                  "Cluster subnet: node addresses from its lower half, one /24 (IPv6: /64) instance subnet per "
                  "node from its upper half")
      ->capture_default_str();
  cmd->add_option("--name-prefix", f.name_prefix, "Nodes are named PREFIX-1, PREFIX-2, ...")->capture_default_str();
  if (!for_add) {
    cmd->add_option("--racks", f.racks, "Split the nodes into this many racks (r1.., one switch each: s1..)");
    cmd->add_option("--zones", f.zones, "Split the racks (or nodes) into this many zones (z1..)");
  }
}

Result<GenerateOptions> generate_options(const NodeFlags& f) {
  Diagnostics errors;
  auto bad = [&](std::string flag, std::string message, std::string hint = "") {
    errors.push_back(Diagnostic{{}, std::move(flag), std::move(message), std::move(hint)});
  };
  GenerateOptions o;
  o.count = f.count;
  o.name_prefix = f.name_prefix;
  o.racks = f.racks;
  o.zones = f.zones;
  o.subnet = f.subnet;
  NodeShape& s = o.shape;
  if (auto v = parse_cpu(f.cpu)) s.capacity.cpu_millis = *v;
  else bad("--cpu", v.error(), "for example --cpu 32 or --cpu 1500m");
  if (auto v = parse_bytes(f.memory)) s.capacity.memory_bytes = *v;
  else bad("--memory", v.error(), "for example --memory 128Gi");
  if (auto v = parse_count(f.gpu)) s.capacity.gpu = *v;
  else bad("--gpu", v.error(), "for example --gpu 8");
  if (auto v = parse_bytes(f.disk)) s.capacity.disk_bytes = *v;
  else bad("--disk", v.error(), "for example --disk 1Ti");
  if (auto v = parse_bytes(f.hdd_size)) {
    if (*v > 0) s.volume_groups.push_back(VolumeGroup{"hdd0", "hdd", *v, f.hdd_iops});
  } else {
    bad("--hdd-size", v.error(), "for example --hdd-size 8Ti, or 0 for none");
  }
  if (f.ssd) {
    if (auto v = parse_bytes(f.ssd_size); v && *v > 0) {
      s.volume_groups.push_back(VolumeGroup{"ssd0", "ssd", *v, f.ssd_iops});
      s.labels["disk"] = "ssd";
    } else {
      bad("--ssd-size", v ? "the ssd volume group needs a size above 0" : v.error(), "for example --ssd-size 4Ti");
    }
  }
  if (f.ssd_iops < 0 || f.hdd_iops < 0) bad("--ssd-iops/--hdd-iops", "IOPS must not be negative");
  if (!f.labels.empty()) {
    auto edits = parse_label_edits(f.labels);
    if (!edits) {
      for (auto d : edits.error()) {
        d.path = "--label";
        errors.push_back(std::move(d));
      }
    } else {
      for (const auto& e : *edits) {
        if (!e.value) bad("--label", fmt::format("'{}-' removes a label: expected KEY=VALUE", e.key));
        else s.labels[e.key] = *e.value;
      }
    }
  }
  s.cached_images = f.images;
  auto dash = f.ports.find('-');
  auto lo = dash == std::string::npos ? std::expected<int64_t, std::string>(std::unexpected("")) : parse_count(f.ports.substr(0, dash));
  auto hi = dash == std::string::npos ? std::expected<int64_t, std::string>(std::unexpected("")) : parse_count(f.ports.substr(dash + 1));
  if (!lo || !hi || *lo < 1 || *hi > 65535 || *lo > *hi) bad("--ports", fmt::format("'{}' is not a port range MIN-MAX within 1-65535", f.ports), "for example --ports 20000-29999");
  else {
    s.port_min = static_cast<int>(*lo);
    s.port_max = static_cast<int>(*hi);
  }
  if (!errors.empty()) return fail(errors);
  return o;
}

}  // namespace gaia::cli
