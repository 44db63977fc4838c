#include "cli/cluster_view.hpp"

#include <algorithm>
#include <set>
#include <fmt/format.h>

#include "controllers/replicas.hpp"
#include "lib/cluster_layout.hpp"
#include "lib/codec.hpp"
#include "lib/quantity.hpp"
#include "lib/timeline.hpp"
#include "render/yaml_emit.hpp"

namespace gaia::cli {

std::map<std::string, NodeUsage> node_usage(const ClusterState& state) {
  std::map<std::string, NodeUsage> out;
  for (const auto& n : state.snapshot.nodes) {
    NodeUsage& u = out[n.name];
    // Volumes a scale down kept hold their data and their space as if still bound.
    for (const auto& k : n.kept_volumes) u.volume_used[k.group] += k.size_bytes;
  }
  for (const auto& i : state.snapshot.instances) {
    for (const auto& v : i.volumes)
      if (!claim_binding(v)) out[v.node].volume_used[v.group] += v.size_bytes;
    if (!occupies_node(i)) continue;
    NodeUsage& u = out[i.node];
    u.allocated.cpu_millis += i.request.cpu_millis;
    u.allocated.memory_bytes += i.request.memory_bytes;
    u.allocated.gpu += i.request.gpu;
    u.allocated.disk_bytes += i.request.disk_bytes;
    ++u.instances;
  }
  return out;
}

std::vector<StorageClassUsage> storage_class_usage(const ClusterState& state) {
  const Snapshot& s = state.snapshot;
  std::vector<StorageClassUsage> out;
  std::map<std::string, size_t> at;
  for (auto& c : effective_storage_classes(s)) {
    at[c.name] = out.size();
    StorageClassUsage u;
    u.capacity_bytes = c.kind == StorageKind::Claim ? c.capacity_bytes : 0;
    u.cls = std::move(c);
    out.push_back(std::move(u));
  }
  auto add_used = [&](const std::string& cls, int64_t bytes) {
    if (auto it = at.find(cls); it != at.end()) out[it->second].used_bytes += bytes;
  };
  for (const auto& n : s.nodes) {
    std::map<std::string, std::string> group_class;
    std::set<size_t> offered;
    for (const auto& g : n.volume_groups) {
      group_class[g.name] = g.storage_class;
      if (auto it = at.find(g.storage_class); it != at.end() && out[it->second].cls.kind == StorageKind::Local) {
        out[it->second].capacity_bytes += g.size_bytes;
        if (offered.insert(it->second).second) ++out[it->second].nodes;
      }
    }
    for (auto& u : out) {
      if (u.cls.kind != StorageKind::Claim) continue;
      if (can_attach_class(n, u.cls)) ++u.nodes;
    }
    for (const auto& k : n.kept_volumes) add_used(group_class[k.group], k.size_bytes);
  }
  for (const auto& i : s.instances)
    for (const auto& v : i.volumes) {
      if (claim_binding(v)) {
        add_used(v.group, v.size_bytes);
      } else if (const Node* n = state.find_node(v.node)) {
        for (const auto& g : n->volume_groups)
          if (g.name == v.group) add_used(g.storage_class, v.size_bytes);
      }
    }
  for (const auto& k : s.kept_claims) add_used(k.group, k.size_bytes);
  return out;
}

int percent(int64_t used, int64_t capacity) {
  if (capacity <= 0) return 0;
  return static_cast<int>(static_cast<__int128>(used) * 100 / capacity);
}

namespace {

// Whole cores when exact, else millicores; cores with one decimal for large values.
std::string cpu_short(int64_t m) {
  if (m % 1000 == 0) return std::to_string(m / 1000);
  if (m >= 10000) return fmt::format("{:.1f}", static_cast<double>(m) / 1000.0);
  return std::to_string(m) + "m";
}

}  // namespace

std::string cpu_cell(int64_t used, int64_t cap) {
  if (cap == 0 && used == 0) return "-";
  return fmt::format("{}/{} ({}%)", cpu_short(used), cpu_short(cap), percent(used, cap));
}

std::string bytes_cell(int64_t used, int64_t cap) {
  if (cap == 0 && used == 0) return "-";
  return fmt::format("{}/{} ({}%)", format_bytes_short(used), format_bytes_short(cap), percent(used, cap));
}

std::string count_cell(int64_t used, int64_t cap) {
  if (cap == 0 && used == 0) return "-";
  return fmt::format("{}/{} ({}%)", used, cap, percent(used, cap));
}

std::string age(const std::string& rfc3339, Clock::time_point now) {
  auto t = parse_rfc3339(rfc3339);
  if (!t) return "<unknown>";
  auto s = std::chrono::duration_cast<std::chrono::seconds>(now - *t).count();
  if (s < 0) s = 0;
  if (s < 120) return fmt::format("{}s", s);
  if (s < 120 * 60) return fmt::format("{}m", s / 60);
  if (s < 48 * 3600) return fmt::format("{}h", s / 3600);
  return fmt::format("{}d", s / 86400);
}

std::string labels_text(const std::map<std::string, std::string>& labels) {
  if (labels.empty()) return "<none>";
  std::vector<std::string> parts;
  for (const auto& [k, v] : labels) parts.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(parts, ","));
}

std::map<std::string, std::string> app_labels(const std::string& name, const std::string& tenant,
                                              const std::string& version, const std::string& status) {
  return {{"gaia.io/app", name}, {"gaia.io/tenant", tenant}, {"gaia.io/version", version}, {"gaia.io/status", status}};
}

std::map<std::string, std::string> app_labels(const AppRecord& a) { return app_labels(a.name, a.tenant, a.version, a.status); }

std::pair<int, int> app_instance_counts(const ClusterState& state, const AppRecord& a) {
  int running = 0;
  for (const auto& i : state.snapshot.instances)
    if (i.tenant == a.tenant && i.app == a.name && serving(i)) ++running;
  return app_instance_counts(a, running);
}

std::pair<int, int> app_instance_counts(const AppRecord& a, int running) {
  int desired = 0;
  for (const auto& r : a.workload.roles) desired += desired_replicas(a, r);  // `gaia scale` wins.
  return {running, desired};
}

nlohmann::json node_json(const Node& n, const NodeUsage& u) {
  nlohmann::json j = n;
  // The codec's field is switch_ (a C++ keyword workaround); users know it as switch.
  if (j.contains("switch_")) {
    j["switch"] = j["switch_"];
    j.erase("switch_");
  }
  j["allocated"] = u.allocated;
  j["instance_count"] = u.instances;
  j["volume_used"] = u.volume_used;
  return j;
}

nlohmann::json app_json(const ClusterState& state, const AppRecord& a) {
  return app_json(a, app_instance_counts(state, a).first);
}

nlohmann::json app_json(const AppRecord& a, int serving_now) {
  nlohmann::json j = a;
  j["app"] = a.app_name();  // The record leaves it out for a release named after its app.
  auto [running, desired] = app_instance_counts(a, serving_now);
  j["instances"] = {{"running", running}, {"desired", desired}};
  return j;
}

nlohmann::json instance_json(const Instance& i) {
  nlohmann::json j = i;
  j["name"] = i.key();
  j["dns_name"] = i.dns_name();
  return j;
}

void print_structured(const nlohmann::json& value, const std::string& format) {
  if (format == "yaml") std::fputs(render::emit_yaml(value).c_str(), stdout);
  else fmt::print("{}\n", value.dump(2));
}

void print_retry(const Globals& g, const NodeOpOutcome& out) {
  if (g.quiet) return;
  if (!out.placed.empty()) {
    fmt::print("placed {} pending instance(s):\n", out.placed.size());
    for (const auto& p : out.placed)
      fmt::print("  {} -> {}{}\n", p.instance, p.node, p.address.empty() ? "" : " (" + p.address + ")");
  }
  for (const auto& p : out.preempted)
    fmt::print("{} {} (evicted from {} by a higher-priority instance)\n", yellow(g, stdout, "preempted"), p.victim, p.node);
  if (!out.still_pending.empty()) {
    fmt::print("{} instance(s) still pending:\n", out.still_pending.size());
    size_t shown = 0;
    for (const auto& p : out.still_pending) {
      if (++shown > 10) {
        fmt::print("  ... and {} more (`gaia get instances` lists them)\n", out.still_pending.size() - 10);
        break;
      }
      fmt::print("  {}: {}\n", p.instance, p.reason);
    }
  }
}

std::vector<const Node*> sorted_nodes(const Snapshot& s) {
  std::vector<const Node*> out;
  for (const auto& n : s.nodes) out.push_back(&n);
  std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return natural_less(a->name, b->name); });
  return out;
}

}  // namespace gaia::cli
