#include "controllers/filters.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

namespace gaia::sched {

std::string_view filter_name(Filter f) {
  switch (f) {
    case Filter::NodeState: return "NodeState";
    case Filter::TenantPool: return "TenantPool";
    case Filter::NodeSelector: return "NodeSelector";
    case Filter::NodeAffinity: return "NodeAffinity";
    case Filter::Network: return "Network";
    case Filter::TenantQuota: return "TenantQuota";
    case Filter::ResourceFit: return "ResourceFit";
    case Filter::Ports: return "Ports";
    case Filter::Storage: return "Storage";
    case Filter::InstanceAffinity: return "InstanceAffinity";
    case Filter::InstanceAntiAffinity: return "InstanceAntiAffinity";
  }
  return "?";
}

std::string format_millis(int64_t m) { return fmt::format("{}m", m); }

std::string format_size(int64_t bytes) {
  static constexpr std::array<const char*, 6> kUnits = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int64_t mag = bytes < 0 ? -bytes : bytes;
  if (mag < 1024) return fmt::format("{}", bytes);
  int unit = 0;
  double v = static_cast<double>(bytes) / 1024.0;
  while (unit + 1 < static_cast<int>(kUnits.size()) && (v >= 1024.0 || v <= -1024.0)) {
    v /= 1024.0;
    ++unit;
  }
  if (v == static_cast<double>(static_cast<int64_t>(v))) return fmt::format("{}{}", static_cast<int64_t>(v), kUnits[unit]);
  return fmt::format("{:.1f}{}", v, kUnits[unit]);
}

std::string describe_requirements(const std::vector<LabelRequirement>& reqs) {
  std::string out;
  for (const auto& r : reqs) {
    if (!out.empty()) out += ",";
    if (r.op == "In" && r.values.size() == 1) out += fmt::format("{}={}", r.key, r.values[0]);
    else if (r.op == "In") out += fmt::format("{} in ({})", r.key, fmt::join(r.values, ","));
    else if (r.op == "NotIn") out += fmt::format("{} notin ({})", r.key, fmt::join(r.values, ","));
    else if (r.op == "Exists") out += r.key;
    else if (r.op == "DoesNotExist") out += "!" + r.key;
    else out += fmt::format("{} {} ({})", r.key, r.op, fmt::join(r.values, ","));
  }
  return out.empty() ? "any instance" : out;
}

std::string node_topology_value(const Node& n, int topo) {
  auto pick = [&](const std::string& field, const char* label) {
    if (!field.empty()) return field;
    auto it = n.labels.find(label);
    return it == n.labels.end() ? std::string{} : it->second;
  };
  switch (topo) {
    case kTopoNode: return n.name;
    case kTopoSwitch: return pick(n.switch_, "switch");
    case kTopoRack: return pick(n.rack, "rack");
    case kTopoZone: return pick(n.zone, "zone");
  }
  return {};
}

namespace {

bool check_labels(const std::map<std::string, std::string>& want, const Node& n, std::string* msg, std::string_view what) {
  for (const auto& [k, v] : want) {
    auto it = n.labels.find(k);
    if (it != n.labels.end() && it->second == v) continue;
    if (msg) {
      if (it == n.labels.end()) *msg = fmt::format("{} needs label {}={}, node has no {}", what, k, v, k);
      else *msg = fmt::format("{} needs label {}={}, node has {}={}", what, k, v, k, it->second);
    }
    return false;
  }
  return true;
}

bool check_resources(const NodeIx& n, const Request& rq, std::string* msg, std::string_view* detail) {
  const Resources& used = rq.nonprod ? n.alloc_res : n.alloc_req;
  struct Dim { const char* name; int64_t cap, used, want; bool bytes; };
  const Dim dims[] = {
      {"cpu", n.cap.cpu_millis, used.cpu_millis, rq.req.cpu_millis, false},
      {"memory", n.cap.memory_bytes, used.memory_bytes, rq.req.memory_bytes, true},
      {"gpu", n.cap.gpu, used.gpu, rq.req.gpu, false},
      {"disk", n.cap.disk_bytes, used.disk_bytes, rq.req.disk_bytes, true},
  };
  for (const auto& d : dims) {
    if (d.want <= 0 || d.cap - d.used >= d.want) continue;
    if (detail) *detail = d.name;
    if (msg) {
      int64_t free = d.cap - d.used;
      if (d.bytes) *msg = fmt::format("{} {} free < {} requested", d.name, format_size(free), format_size(d.want));
      else if (std::string_view(d.name) == "cpu")
        *msg = fmt::format("cpu {} free < {} requested", format_millis(free), format_millis(d.want));
      else *msg = fmt::format("{} {} free < {} requested", d.name, free, d.want);
      if (rq.nonprod && n.alloc_res != n.alloc_req) *msg += " (net of reservations)";
    }
    return false;
  }
  return true;
}

bool check_ports(const NodeIx& n, const Request& rq, std::string* msg) {
  if (rq.ports.empty()) return true;
  int fixed_in_range = 0;
  for (const auto& [name, p] : rq.ports) {
    if (p <= 0) continue;
    if (n.port_used(p)) {
      if (msg) *msg = fmt::format("host port {} ({}) is already in use", p, name);
      return false;
    }
    if (p >= n.node->port_min && p <= n.node->port_max) ++fixed_in_range;
  }
  int64_t free = n.range_size() - n.ports_in_range - fixed_in_range;
  if (free >= rq.dynamic_ports) return true;
  if (msg)
    *msg = fmt::format("{} ports needed from range {}-{}, {} free", rq.dynamic_ports, n.node->port_min,
                       n.node->port_max, std::max<int64_t>(free, 0));
  return false;
}

bool check_storage(const ClusterIndex& idx, const NodeIx& n, const Request& rq, std::string* msg) {
  if (rq.sticky) {
    for (const auto& b : rq.instance->volumes) {
      if (claim_binding(b) || b.node == n.node->name) continue;
      if (msg) *msg = fmt::format("volume {} is on node {}", b.volume, b.node);
      return false;
    }
  }
  // Claim volumes it already has follow it, to any node that can attach their class.
  for (const auto& b : rq.instance->volumes) {
    if (!claim_binding(b)) continue;
    int pool = idx.claim_pool(b.group);
    if (pool < 0 || idx.can_attach(n, pool)) continue;
    if (msg) *msg = fmt::format("volume {} (class {}) cannot be attached here", b.volume, b.group);
    return false;
  }
  if (rq.new_volumes.empty()) return true;
  return allocate_volumes(idx, n, rq, nullptr, msg);
}

bool check_network(const Node& node, const Request& rq, std::string* msg) {
  if (rq.has_subnet) {
    if (!rq.subnet) {
      if (msg) *msg = fmt::format("required_subnet '{}' is not a CIDR", rq.role->required_subnet);
      return false;
    }
    auto addr = parse_subnet(node.address);
    auto sub = parse_subnet(node.instance_subnet);
    bool ok = (addr && cidr_contains(*rq.subnet, *addr)) || (sub && cidr_contains(*rq.subnet, *sub));
    if (!ok) {
      if (msg)
        *msg = fmt::format("node address {} and instance subnet {} are outside {}",
                           node.address.empty() ? "(none)" : node.address,
                           node.instance_subnet.empty() ? "(none)" : node.instance_subnet, rq.role->required_subnet);
      return false;
    }
  }
  for (const auto& [level, name] : rq.topology) {
    if (level < 0) {
      if (msg) *msg = fmt::format("required_topology '{}': expected zone=, rack=, switch= or node=", name);
      return false;
    }
    std::string have = node_topology_value(node, level);
    if (have == name) continue;
    if (msg)
      *msg = fmt::format("required {} {}, node is in {}", topo_name(level), name, have.empty() ? "(unknown)" : have);
    return false;
  }
  return true;
}

bool self_matches(const GroupCtx& g, const TermState& ts) { return labels_match(ts.term->match, g.rq.instance->labels); }

bool check_instance_terms(const ClusterIndex& idx, const GroupCtx& g, const NodeIx& n, bool anti, std::string* msg) {
  for (const auto& ts : anti ? g.req_anti : g.req_aff) {
    if (ts.topo < 0) {
      if (msg) *msg = fmt::format("unknown topology '{}': expected node, switch, rack or zone", ts.term->topology);
      return false;
    }
    int dom = n.dom[ts.topo];
    int c = ts.counts->get(dom);
    if (anti) {
      if (c == 0) continue;
      if (msg)
        *msg = fmt::format("{} instance{} matching {} already in this {}", c, c == 1 ? "" : "s",
                           describe_requirements(ts.term->match), topo_name(ts.topo));
      return false;
    }
    if (c > 0) continue;
    // Nothing matches anywhere yet and the instance matches its own term: the first
    // member of a co-located group has to start somewhere.
    if (ts.counts->total == 0 && self_matches(g, ts)) continue;
    if (msg) {
      if (dom < 0) *msg = fmt::format("node has no {}", topo_name(ts.topo));
      else
        *msg = fmt::format("no instance matching {} in this {}", describe_requirements(ts.term->match),
                           topo_name(ts.topo));
    }
    return false;
  }
  return true;
}

}  // namespace

bool check_filter(Filter f, const ClusterIndex& idx, const GroupCtx& g, int node, std::string* msg,
                  std::string_view* detail) {
  const NodeIx& n = idx.nodes[node];
  const Node& nd = *n.node;
  const Request& rq = g.rq;
  switch (f) {
    case Filter::NodeState:
      if (nd.state == NodeState::Ready) return true;
      if (msg) *msg = fmt::format("node is {}", node_state_name(nd.state));
      return false;
    case Filter::TenantPool: {
      const Tenant* t = idx.tenants[rq.tenant].tenant;
      if (!t) return true;
      std::string what = msg ? fmt::format("tenant {} pool", t->name) : std::string{};
      return check_labels(t->pool_selector, nd, msg, what);
    }
    case Filter::NodeSelector: return check_labels(rq.role->node_selector, nd, msg, "node_selector");
    case Filter::NodeAffinity:
      for (const auto& t : rq.role->required_affinity) {
        if (t.target != AffinityTerm::Target::Node || labels_match(t.match, nd.labels)) continue;
        if (msg) *msg = fmt::format("node labels do not satisfy {}", describe_requirements(t.match));
        return false;
      }
      return true;
    case Filter::Network: return check_network(nd, rq, msg);
    case Filter::TenantQuota: return check_quota(idx, rq, msg);
    case Filter::ResourceFit: return check_resources(n, rq, msg, detail);
    case Filter::Ports: return check_ports(n, rq, msg);
    case Filter::Storage: return check_storage(idx, n, rq, msg);
    case Filter::InstanceAffinity: return check_instance_terms(idx, g, n, false, msg);
    case Filter::InstanceAntiAffinity: return check_instance_terms(idx, g, n, true, msg);
  }
  return false;
}

int first_static_failure(const ClusterIndex& idx, const GroupCtx& g, int node) {
  for (Filter f : kStaticFilters)
    if (!check_filter(f, idx, g, node, nullptr)) return static_cast<int>(f);
  return -1;
}

int first_dynamic_failure(const ClusterIndex& idx, const GroupCtx& g, int node, std::string_view* detail) {
  const NodeIx& n = idx.nodes[node];
  const Request& rq = g.rq;
  // Cheapest and most selective first; each skipped when the role cannot fail it.
  if (!check_resources(n, rq, nullptr, detail)) return static_cast<int>(Filter::ResourceFit);
  if (!rq.ports.empty() && !check_ports(n, rq, nullptr)) return static_cast<int>(Filter::Ports);
  if ((rq.sticky || rq.has_claims || !rq.new_volumes.empty()) && !check_storage(idx, n, rq, nullptr))
    return static_cast<int>(Filter::Storage);
  if (!g.req_aff.empty() && !check_instance_terms(idx, g, n, false, nullptr))
    return static_cast<int>(Filter::InstanceAffinity);
  if (!g.req_anti.empty() && !check_instance_terms(idx, g, n, true, nullptr))
    return static_cast<int>(Filter::InstanceAntiAffinity);
  return -1;
}

bool check_quota(const ClusterIndex& idx, const Request& rq, std::string* msg) {
  const TenantIx& t = idx.tenants[rq.tenant];
  if (!t.tenant) return true;
  const Quota& q = t.tenant->quota;
  auto over = [&](const char* what, int64_t limit, int64_t used, int64_t want, auto fmt_fn) {
    if (limit < 0 || want <= 0 || used + want <= limit) return false;
    if (msg)
      *msg = fmt::format("quota exceeded: tenant {} {} {} used + {} requested > {} quota", t.name, what, fmt_fn(used),
                         fmt_fn(want), fmt_fn(limit));
    return true;
  };
  auto plain = [](int64_t v) { return fmt::format("{}", v); };
  if (over("cpu", q.cpu_millis, t.used.cpu_millis, rq.req.cpu_millis, format_millis)) return false;
  if (over("memory", q.memory_bytes, t.used.memory_bytes, rq.req.memory_bytes, format_size)) return false;
  if (over("gpu", q.gpu, t.used.gpu, rq.req.gpu, plain)) return false;
  if (over("instances", q.instances, t.count, 1, plain)) return false;
  return true;
}

bool allocate_ports(const NodeIx& n, const Request& rq, std::map<std::string, int>* out) {
  if (!check_ports(n, rq, nullptr)) return false;
  if (!out) return true;
  int candidate = n.node->port_min;
  auto taken = [&](int p) {
    if (n.port_used(p)) return true;
    for (const auto& [name, fixed] : rq.ports)
      if (fixed == p) return true;
    for (const auto& [name, got] : *out)
      if (got == p) return true;
    return false;
  };
  for (const auto& [name, fixed] : rq.ports) {
    if (fixed > 0) {
      (*out)[name] = fixed;
      continue;
    }
    while (candidate <= n.node->port_max && taken(candidate)) ++candidate;
    if (candidate > n.node->port_max) return false;
    (*out)[name] = candidate++;
  }
  return true;
}

bool allocate_volumes(const ClusterIndex& idx, const NodeIx& n, const Request& rq, std::vector<VolumeBinding>* out,
                      std::string* msg) {
  const auto& groups = n.node->volume_groups;
  // Space promised to earlier volumes of this same instance, without allocating for the
  // usual handful of groups.
  constexpr size_t kInline = 16;
  std::array<int64_t, kInline> inline_size{}, inline_iops{};
  std::vector<int64_t> heap_size, heap_iops;
  int64_t* taken_size = inline_size.data();
  int64_t* taken_iops = inline_iops.data();
  if (groups.size() > kInline) {
    heap_size.assign(groups.size(), 0);
    heap_iops.assign(groups.size(), 0);
    taken_size = heap_size.data();
    taken_iops = heap_iops.data();
  }
  for (size_t vi = 0; vi < rq.new_volumes.size(); ++vi) {
    const Volume* v = rq.new_volumes[vi];
    if (int pool = idx.claim_pool(v->storage_class); pool >= 0) {
      const ClaimPool& cp = idx.claim_pools[pool];
      if (!idx.can_attach(n, pool)) {
        if (msg) *msg = fmt::format("volume {}: class {} cannot be attached here", v->name, v->storage_class);
        return false;
      }
      // Space promised to earlier volumes of this instance in the same pool.
      int64_t taken = 0;
      for (size_t e = 0; e < vi; ++e)
        if (rq.new_volumes[e]->storage_class == v->storage_class) taken += rq.new_volumes[e]->size_bytes;
      if (cp.free != std::numeric_limits<int64_t>::max() && cp.free - taken < v->size_bytes) {
        if (msg)
          *msg = fmt::format("volume {} needs {} of class {}, its pool has {} free", v->name, format_size(v->size_bytes),
                             v->storage_class, format_size(std::max<int64_t>(cp.free - taken, 0)));
        return false;
      }
      if (out) out->push_back(VolumeBinding{v->name, "", v->storage_class, v->size_bytes, v->iops});
      continue;
    }
    int best = -1;
    int64_t largest = -1;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (groups[gi].storage_class != v->storage_class) continue;
      int64_t free_size = n.vg_free_size[gi] - taken_size[gi];
      int64_t free_iops = n.vg_free_iops[gi] - taken_iops[gi];
      largest = std::max(largest, free_size);
      if (free_size < v->size_bytes || free_iops < v->iops) continue;
      if (best < 0 || free_size < n.vg_free_size[best] - taken_size[best]) best = static_cast<int>(gi);
    }
    if (best < 0) {
      if (msg) {
        if (largest < 0) *msg = fmt::format("no {} volume group for volume {}", v->storage_class, v->name);
        else
          *msg = fmt::format("volume {} needs {} {} and {} iops, largest free {} group has {}", v->name,
                             format_size(v->size_bytes), v->storage_class, v->iops, v->storage_class,
                             format_size(largest));
      }
      return false;
    }
    taken_size[best] += v->size_bytes;
    taken_iops[best] += v->iops;
    if (out) out->push_back(VolumeBinding{v->name, n.node->name, groups[best].name, v->size_bytes, v->iops});
  }
  return true;
}

std::vector<FailureCount> count_failures(const ClusterIndex& idx, const GroupCtx& g,
                                         const std::vector<int8_t>* static_first, int* fitting) {
  std::vector<FailureCount> out;
  int fit = 0;
  for (size_t n = 0; n < idx.nodes.size(); ++n) {
    int node = static_cast<int>(n);
    int f = static_first ? (*static_first)[n] : first_static_failure(idx, g, node);
    std::string_view detail;
    if (f < 0) f = first_dynamic_failure(idx, g, node, &detail);
    if (f < 0) {
      ++fit;
      continue;
    }
    auto it = std::find_if(out.begin(), out.end(), [&](const FailureCount& c) {
      return static_cast<int>(c.filter) == f && c.detail == detail;
    });
    if (it == out.end()) out.push_back(FailureCount{static_cast<Filter>(f), std::string(detail), 1});
    else ++it->nodes;
  }
  std::sort(out.begin(), out.end(), [](const FailureCount& a, const FailureCount& b) {
    if (a.nodes != b.nodes) return a.nodes > b.nodes;
    if (a.filter != b.filter) return a.filter < b.filter;
    return a.detail < b.detail;
  });
  if (fitting) *fitting = fit;
  return out;
}

std::string summarize_failures(int total_nodes, int fitting, const std::vector<FailureCount>& counts) {
  std::string out = fmt::format("{}/{} nodes fit", fitting, total_nodes);
  for (size_t i = 0; i < counts.size(); ++i) {
    out += i == 0 ? ": " : ", ";
    out += fmt::format("{} {}", counts[i].nodes, filter_name(counts[i].filter));
    if (!counts[i].detail.empty()) out += fmt::format(" ({})", counts[i].detail);
  }
  return out;
}

}  // namespace gaia::sched
