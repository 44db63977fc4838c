#include "spec/cluster_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <map>
#include <sstream>

#include "lib/quantity.hpp"
#include "lib/selector.hpp"
#include "spec/app_spec.hpp"
#include "spec/suggest.hpp"
#include "spec/yaml_load.hpp"

namespace gaia::spec {
namespace {

using u128 = unsigned __int128;

const std::vector<std::string> kClusterTopFields = {"name",    "subnet",    "subnets",        "nodes",
                                             "node_groups", "tenants", "scheduler", "storage_classes"};
const std::vector<std::string> kNodeFields = {"name",   "address",       "instance_subnet", "capacity",
                                              "labels", "volume_groups", "cached_images",   "ports"};
const std::vector<std::string> kGroupFields = {"name",   "count",         "start",         "address", "instance_subnets",
                                               "capacity", "labels", "volume_groups", "cached_images", "ports"};
const std::vector<std::string> kCapacityFields = {"cpu", "memory", "gpu", "disk"};
const std::vector<std::string> kVolumeGroupFields = {"name", "class", "size", "iops"};
const std::vector<std::string> kSubnetFields = {"cidr", "switch", "rack", "zone"};
const std::vector<std::string> kTenantFields = {"name", "quota", "pool"};
const std::vector<std::string> kQuotaFields = {"cpu", "memory", "gpu", "instances"};
const std::vector<std::string> kSchedulerFields = {"strategy", "weights", "percentage_of_nodes_to_score"};
const std::vector<std::string> kWeightFields = {"allocation", "balance", "locality", "image",
                                               "affinity",   "spread",  "scarce"};
const std::vector<std::string> kPortFields = {"min", "max"};
const std::vector<std::string> kStorageClassFields = {"name", "kind", "description", "capacity", "selector"};

std::string describe_yaml(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Scalar: return fmt::format("'{}'", n.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

std::string unknown_hint(const std::string& key, const std::vector<std::string>& known) {
  if (auto close = did_you_mean(key, known)) return fmt::format("did you mean '{}'?", *close);
  return fmt::format("known fields are: {}", join_limited(known));
}

// A node read from the file, with what finishing it needs to know.
struct Draft {
  Node node;
  Location location;          // Of the node's map (or its group's).
  Location address_location;  // Of its address (or the group's), for duplicate errors.
  std::string origin;         // "nodes[3]" or "node_groups[1] (datanode-7)".
};

// A volume group's storage class as written, checked once the whole file (and so its
// storage_classes, wherever they stand) is read.
struct ClassRef {
  std::string name;   // The class named, or "hdd" when the volume group names none.
  std::string group;  // The volume group's name.
  Location location;  // Of the class value (or of the volume group when it names none).
  std::string path;   // "nodes[0].volume_groups[1].class".
  bool implicit = false;
};

// A class the file declares, as far as it could be read (a class with errors still
// counts as declared, so volume groups naming it do not add errors of their own).
struct DeclaredClass {
  std::string name;
  StorageKind kind = StorageKind::Local;
  int line = 0;
  bool valid_name = true;  // Invalid names are not offered in hints.
};

class ClusterFileParser {
 public:
  explicit ClusterFileParser(std::string file) : m_file(std::move(file)) {}

  Result<ClusterFile> run(std::string_view text) {
    std::vector<YAML::Node> docs;
    try {
      docs = load_yaml_documents(text);
    } catch (const YAML::Exception& e) {
      error({m_file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1}, "",
            fmt::format("invalid YAML: {}", e.msg), "check the indentation and quoting around this position");
      return fail(m_errors);
    }
    if (docs.empty() || docs[0].IsNull()) {
      error({m_file, 1, 1}, "", "the file is empty: expected a map with at least 'nodes' or 'node_groups'",
            "see examples/clusters/ for complete cluster files");
      return fail(m_errors);
    }
    if (docs.size() > 1)
      error(loc(docs[1], {m_file, 1, 1}), "", fmt::format("the file holds {} YAML documents: expected one", docs.size()),
            "remove the '---' separators");
    parse_root(docs[0]);
    // Cross-node checks run even after field errors, so one round trip shows them all.
    finish();
    if (!m_errors.empty()) return fail(m_errors);
    return std::move(m_out);
  }

 private:
  Location loc(const YAML::Node& n, const Location& fallback) const {
    YAML::Mark m = n.Mark();
    if (m.is_null() || m.line < 0) return fallback;
    return Location{m_file, m.line + 1, m.column + 1};
  }

  void error(Location where, std::string path, std::string message, std::string hint = "") {
    m_errors.push_back(Diagnostic{std::move(where), std::move(path), std::move(message), std::move(hint)});
  }

  template <class Visit>
  void fields(const YAML::Node& map, const Location& where, const std::string& prefix,
              const std::vector<std::string>& known, Visit visit) {
    if (!map.IsMap()) {
      error(where, prefix, fmt::format("expected a map (fields {}), found {}", join_limited(known, 6), describe_yaml(map)));
      return;
    }
    std::map<std::string, int> seen;
    for (auto it = map.begin(); it != map.end(); ++it) {
      Location key_loc = loc(it->first, where);
      if (!it->first.IsScalar()) {
        error(key_loc, prefix, fmt::format("expected a field name, found {}", describe_yaml(it->first)));
        continue;
      }
      std::string key = it->first.Scalar();
      std::string path = prefix.empty() ? key : prefix + "." + key;
      if (auto [pos, fresh] = seen.emplace(key, key_loc.line); !fresh) {
        error(key_loc, path, fmt::format("field '{}' is given twice (first on line {})", key, pos->second),
              "keep one of them");
        continue;
      }
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        error(key_loc, path, fmt::format("unknown field '{}'", key), unknown_hint(key, known));
        continue;
      }
      // A null value's mark points past the line break, so point at the key instead.
      visit(key, path, it->second, it->second.IsNull() ? key_loc : loc(it->second, key_loc));
    }
  }

  std::optional<std::string> scalar(const YAML::Node& n, const std::string& path, const Location& where,
                                    std::string_view what) {
    if (n.IsScalar()) return n.Scalar();
    error(where, path, fmt::format("expected {}, found {}", what, describe_yaml(n)));
    return std::nullopt;
  }

  // A quantity through one of the lib/quantity.hpp parsers.
  template <class ParseFn>
  std::optional<int64_t> quantity(const YAML::Node& n, const std::string& path, const Location& where,
                                  std::string_view what, ParseFn parse, std::string_view example) {
    auto s = scalar(n, path, where, what);
    if (!s) return std::nullopt;
    auto v = parse(*s);
    if (!v) {
      error(where, path, v.error(), fmt::format("for example {}: {}", path.substr(path.rfind('.') + 1), example));
      return std::nullopt;
    }
    return *v;
  }

  std::optional<int64_t> count(const YAML::Node& n, const std::string& path, const Location& where, int64_t min,
                               int64_t max) {
    auto v = quantity(n, path, where, "a whole number", parse_count, std::to_string(std::max<int64_t>(min, 1)));
    if (!v) return std::nullopt;
    if (*v < min || *v > max) {
      error(where, path, fmt::format("{} is out of range: expected {} to {}", *v, min, max));
      return std::nullopt;
    }
    return v;
  }

  std::map<std::string, std::string> label_map(const YAML::Node& n, const std::string& path, const Location& where) {
    std::map<std::string, std::string> out;
    if (n.IsNull()) return out;
    if (!n.IsMap()) {
      error(where, path, fmt::format("expected a map of label keys to values, found {}", describe_yaml(n)),
            "write labels as key: value lines, e.g. disk: ssd");
      return out;
    }
    for (auto it = n.begin(); it != n.end(); ++it) {
      Location key_loc = loc(it->first, where);
      if (!it->first.IsScalar()) {
        error(key_loc, path, "expected a label key");
        continue;
      }
      std::string key = it->first.Scalar();
      std::string p = path + "." + key;
      if (std::string problem = label_key_problem(key); !problem.empty()) {
        error(key_loc, p, fmt::format("bad label key '{}': {}", key, problem));
        continue;
      }
      if (out.count(key)) {
        error(key_loc, p, fmt::format("label '{}' is given twice", key), "keep one of them");
        continue;
      }
      Location value_loc = it->second.IsNull() ? key_loc : loc(it->second, key_loc);
      auto value = scalar(it->second, p, value_loc, "a label value (a string)");
      if (!value) continue;
      if (std::string problem = label_value_problem(*value); !problem.empty()) {
        error(value_loc, p, fmt::format("bad label value '{}': {}", *value, problem));
        continue;
      }
      out[key] = *value;
    }
    return out;
  }

  void parse_root(const YAML::Node& root) {
    Location root_loc = loc(root, {m_file, 1, 1});
    bool any_nodes = false;
    fields(root, root_loc, "", kClusterTopFields, [&](const std::string& key, const std::string& path, const YAML::Node& v,
                                                const Location& where) {
      if (key == "name") {
        if (auto s = scalar(v, path, where, "a string")) m_out.cluster.name = *s;
      } else if (key == "subnet") {
        auto s = scalar(v, path, where, "a CIDR such as 10.0.0.0/16");
        if (!s) return;
        if (auto a = AddressAllocator::create(*s); !a) {
          error(where, path, a.error());
          return;
        }
        m_subnet = *s;
        m_subnet_loc = where;
      } else if (key == "subnets") {
        each(v, path, where, "subnet table entries", [&](const YAML::Node& item, const std::string& p, const Location& l) {
          parse_subnet_entry(item, p, l);
        });
      } else if (key == "nodes") {
        any_nodes = true;
        each(v, path, where, "nodes", [&](const YAML::Node& item, const std::string& p, const Location& l) {
          parse_node(item, p, l);
        });
      } else if (key == "node_groups") {
        any_nodes = true;
        each(v, path, where, "node groups", [&](const YAML::Node& item, const std::string& p, const Location& l) {
          parse_group(item, p, l);
        });
      } else if (key == "tenants") {
        each(v, path, where, "tenants", [&](const YAML::Node& item, const std::string& p, const Location& l) {
          parse_tenant(item, p, l);
        });
      } else if (key == "scheduler") {
        parse_scheduler(v, path, where);
      } else if (key == "storage_classes") {
        parse_storage_classes(v, path, where);
      }
    });
    if (root.IsMap() && !any_nodes)
      error(root_loc, "nodes", "the cluster has no nodes: expected 'nodes' or 'node_groups'",
            "add a node_groups entry, e.g. {name: node, count: 3, capacity: {cpu: 16, memory: 64Gi}}");
  }

  template <class Visit>
  void each(const YAML::Node& v, const std::string& path, const Location& where, std::string_view what, Visit visit) {
    if (v.IsNull()) return;
    if (!v.IsSequence()) {
      error(where, path, fmt::format("expected a list of {}, found {}", what, describe_yaml(v)),
            "start each entry with '- ' on its own line");
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) visit(v[i], fmt::format("{}[{}]", path, i), loc(v[i], where));
  }

  void parse_subnet_entry(const YAML::Node& item, const std::string& path, const Location& where) {
    SubnetEntry e;
    std::optional<IpPrefix> prefix;
    fields(item, where, path, kSubnetFields, [&](const std::string& key, const std::string& p, const YAML::Node& v,
                                                 const Location& l) {
      auto s = scalar(v, p, l, key == "cidr" ? "a CIDR such as 10.1.0.0/24" : "a name (a string)");
      if (!s) return;
      if (key == "cidr") {
        auto c = parse_cidr(*s);
        if (!c) {
          error(l, p, c.error());
          return;
        }
        e.cidr = *s;
        prefix = *c;
      } else if (key == "switch") {
        e.switch_ = *s;
      } else if (key == "rack") {
        e.rack = *s;
      } else {
        e.zone = *s;
      }
    });
    if (!item.IsMap()) return;
    if (!item["cidr"]) error(where, path + ".cidr", "missing required field 'cidr'", "add cidr: 10.1.0.0/24");
    if (e.switch_.empty() && e.rack.empty() && e.zone.empty())
      error(where, path, "the entry names no switch, rack or zone", "add at least one of switch:, rack:, zone:");
    if (!prefix) return;
    if (auto [it, fresh] = m_subnet_lines.emplace(prefix->to_string(), where.line); !fresh) {
      error(where, path + ".cidr", fmt::format("subnet {} is listed twice (first on line {})", e.cidr, it->second),
            "merge the two entries");
      return;
    }
    m_table.insert(*prefix, TopologyEntry{"", e.cidr, e.switch_, e.rack, e.zone});
    m_out.subnets.push_back(std::move(e));
  }

  // The fields nodes and groups share.
  void node_field(Node& n, const std::string& key, const std::string& p, const YAML::Node& v, const Location& l) {
    if (key == "capacity") {
      parse_capacity(n, v, p, l);
    } else if (key == "labels") {
      n.labels = label_map(v, p, l);
    } else if (key == "volume_groups") {
      std::map<std::string, int> names;
      each(v, p, l, "volume groups", [&](const YAML::Node& item, const std::string& ip, const Location& il) {
        VolumeGroup g;
        std::optional<ClassRef> class_ref;
        fields(item, il, ip, kVolumeGroupFields, [&](const std::string& k, const std::string& fp, const YAML::Node& fv,
                                                     const Location& fl) {
          if (k == "name") {
            if (auto s = scalar(fv, fp, fl, "a name")) g.name = *s;
          } else if (k == "class") {
            // Checked in check_class_refs(): storage_classes may come later in the file.
            if (auto s = scalar(fv, fp, fl, "a storage class name")) {
              g.storage_class = *s;
              class_ref = ClassRef{*s, "", fl, fp, false};
            }
          } else if (k == "size") {
            if (auto b = quantity(fv, fp, fl, "a size", parse_bytes, "4Ti")) g.size_bytes = *b;
          } else {
            if (auto c = count(fv, fp, fl, 0, 100000000)) g.iops = *c;
          }
        });
        if (!item.IsMap()) return;
        if (g.name.empty()) {
          error(il, ip + ".name", "missing required field 'name' of the volume group", "add name: ssd0");
        } else if (auto [it, fresh] = names.emplace(g.name, il.line); !fresh) {
          error(il, ip + ".name", fmt::format("volume group '{}' is given twice (first on line {})", g.name, it->second),
                "give each volume group of a node its own name");
        }
        if (!item["size"]) error(il, ip + ".size", "missing required field 'size'", "add size: 4Ti");
        if (!item["class"]) class_ref = ClassRef{g.storage_class, "", il, ip + ".class", true};
        if (class_ref) {
          class_ref->group = g.name;
          m_class_refs.push_back(std::move(*class_ref));
        }
        n.volume_groups.push_back(std::move(g));
      });
    } else if (key == "cached_images") {
      n.cached_images.clear();
      each(v, p, l, "image names", [&](const YAML::Node& item, const std::string& ip, const Location& il) {
        if (auto s = scalar(item, ip, il, "an image name")) n.cached_images.push_back(*s);
      });
    } else if (key == "ports") {
      parse_ports(n, v, p, l);
    }
  }

  void parse_capacity(Node& n, const YAML::Node& v, const std::string& path, const Location& where) {
    bool cpu = false, memory = false;
    fields(v, where, path, kCapacityFields, [&](const std::string& k, const std::string& p, const YAML::Node& fv,
                                                const Location& l) {
      if (k == "cpu") {
        cpu = true;
        if (auto c = quantity(fv, p, l, "a cpu quantity", parse_cpu, "32 (cores) or 500m")) n.capacity.cpu_millis = *c;
      } else if (k == "memory") {
        memory = true;
        if (auto b = quantity(fv, p, l, "a memory size", parse_bytes, "128Gi")) n.capacity.memory_bytes = *b;
      } else if (k == "gpu") {
        if (auto c = quantity(fv, p, l, "a GPU count", parse_count, "8")) n.capacity.gpu = *c;
      } else {
        if (auto b = quantity(fv, p, l, "a disk size", parse_bytes, "1Ti")) n.capacity.disk_bytes = *b;
      }
    });
    if (!v.IsMap()) return;
    if (!cpu) error(where, path + ".cpu", "missing required field 'cpu'", "add cpu: 16");
    if (!memory) error(where, path + ".memory", "missing required field 'memory'", "add memory: 64Gi");
  }

  void parse_ports(Node& n, const YAML::Node& v, const std::string& path, const Location& where) {
    int64_t lo = n.port_min, hi = n.port_max;
    if (v.IsScalar()) {
      std::string s = v.Scalar();
      auto dash = s.find('-');
      std::expected<int64_t, std::string> a = std::unexpected(std::string()), b = a;
      if (dash != std::string::npos) {
        a = parse_count(s.substr(0, dash));
        b = parse_count(s.substr(dash + 1));
      }
      if (!a || !b) {
        error(where, path, fmt::format("expected a port range MIN-MAX, found '{}'", s), "for example ports: 20000-29999");
        return;
      }
      lo = *a;
      hi = *b;
    } else if (v.IsMap()) {
      fields(v, where, path, kPortFields, [&](const std::string& k, const std::string& p, const YAML::Node& fv,
                                              const Location& l) {
        if (auto c = count(fv, p, l, 1, 65535)) (k == "min" ? lo : hi) = *c;
      });
    } else {
      error(where, path, fmt::format("expected a port range MIN-MAX or {{min, max}}, found {}", describe_yaml(v)),
            "for example ports: 20000-29999");
      return;
    }
    if (lo < 1 || hi > 65535 || lo > hi) {
      error(where, path, fmt::format("port range {}-{} is not within 1-65535 with min <= max", lo, hi));
      return;
    }
    n.port_min = static_cast<int>(lo);
    n.port_max = static_cast<int>(hi);
  }

  bool check_name(const std::string& name, const std::string& path, const Location& where, std::string_view what) {
    if (std::string problem = dns_label_problem(name); !problem.empty()) {
      std::string better = suggest_dns_label(name);
      error(where, path, fmt::format("'{}' is not a valid {} name: {}", name, what, problem),
            better.empty() ? "names are DNS labels: a-z, 0-9 and '-'" : fmt::format("for example '{}'", better));
      return false;
    }
    return true;
  }

  void parse_node(const YAML::Node& item, const std::string& path, const Location& where) {
    Draft d;
    d.location = d.address_location = where;
    d.origin = path;
    bool has_capacity = false;
    fields(item, where, path, kNodeFields, [&](const std::string& key, const std::string& p, const YAML::Node& v,
                                               const Location& l) {
      if (key == "name") {
        if (auto s = scalar(v, p, l, "a node name"); s && check_name(*s, p, l, "node")) d.node.name = *s;
      } else if (key == "address") {
        auto s = scalar(v, p, l, "an IP address");
        if (!s) return;
        if (auto a = parse_address(*s); !a) error(l, p, a.error());
        else d.node.address = a->to_string();
        d.address_location = l;
      } else if (key == "instance_subnet") {
        auto s = scalar(v, p, l, "a CIDR");
        if (!s) return;
        if (auto c = parse_cidr(*s); !c) error(l, p, c.error());
        else d.node.instance_subnet = c->to_string();
      } else {
        has_capacity |= key == "capacity";
        node_field(d.node, key, p, v, l);
      }
    });
    if (!item.IsMap()) return;
    if (!item["name"]) error(where, path + ".name", "missing required field 'name'", "add name: node-1");
    if (!has_capacity)
      error(where, path + ".capacity", "missing required field 'capacity'", "add capacity: {cpu: 16, memory: 64Gi}");
    if (!d.node.name.empty()) d.origin = fmt::format("{} ({})", path, d.node.name);
    m_drafts.push_back(std::move(d));
  }

  void parse_group(const YAML::Node& item, const std::string& path, const Location& where) {
    Node base;
    std::string name;
    int64_t n = 0, start = 1;
    std::optional<IpAddress> first_address;
    Location address_loc = where;
    std::optional<IpPrefix> subnets;
    Location subnets_loc = where;
    bool has_capacity = false;
    fields(item, where, path, kGroupFields, [&](const std::string& key, const std::string& p, const YAML::Node& v,
                                                const Location& l) {
      if (key == "name") {
        if (auto s = scalar(v, p, l, "a name prefix"); s && check_name(*s, p, l, "node group")) name = *s;
      } else if (key == "count") {
        if (auto c = count(v, p, l, 1, 100000)) n = *c;
      } else if (key == "start") {
        if (auto c = count(v, p, l, 0, 1000000)) start = *c;
      } else if (key == "address") {
        auto s = scalar(v, p, l, "the first node's IP address");
        if (!s) return;
        if (auto a = parse_address(*s); !a) error(l, p, a.error());
        else first_address = *a;
        address_loc = l;
      } else if (key == "instance_subnets") {
        auto s = scalar(v, p, l, "a CIDR to cut into one instance subnet per node");
        if (!s) return;
        if (auto c = parse_cidr(*s); !c) error(l, p, c.error());
        else subnets = *c;
        subnets_loc = l;
      } else {
        has_capacity |= key == "capacity";
        node_field(base, key, p, v, l);
      }
    });
    if (!item.IsMap()) return;
    if (!item["name"]) error(where, path + ".name", "missing required field 'name' (the node name prefix)", "add name: datanode");
    if (!item["count"]) error(where, path + ".count", "missing required field 'count'", "add count: 3");
    if (!has_capacity)
      error(where, path + ".capacity", "missing required field 'capacity'", "add capacity: {cpu: 16, memory: 64Gi}");
    if (name.empty() || n == 0) return;
    int block_length = 0;
    if (subnets) {
      block_length = subnets->address.family == IpFamily::V4 ? kInstanceBlockV4 : kInstanceBlockV6;
      int spare = block_length - subnets->length;
      if (spare < 0 || (spare < 62 && (int64_t{1} << spare) < n)) {
        error(subnets_loc, path + ".instance_subnets",
              fmt::format("{} cannot hold {} /{} instance subnets (one per node)", subnets->to_string(), n, block_length),
              fmt::format("use a larger block, e.g. a /{} or shorter", block_length - std::bit_width(uint64_t(n - 1))));
        subnets.reset();
      }
    }
    for (int64_t k = 0; k < n; ++k) {
      Draft d;
      d.node = base;
      d.node.name = fmt::format("{}-{}", name, start + k);
      d.location = where;
      d.address_location = address_loc;
      d.origin = fmt::format("{} ({})", path, d.node.name);
      if (first_address) {
        const u128 step = static_cast<u128>(1) << (128 - IpAddress::max_length(first_address->family));
        IpAddress a{first_address->family, first_address->bits + static_cast<u128>(k) * step};
        if (a.family == IpFamily::V4 && (a.bits >> 96) >> 32 != 0) {
          error(address_loc, path + ".address", fmt::format("{} nodes from {} run past 255.255.255.255", n,
                                                            first_address->to_string()));
          return;
        }
        d.node.address = a.to_string();
      }
      if (subnets)
        d.node.instance_subnet =
            IpPrefix{IpAddress{subnets->address.family,
                               subnets->address.bits + (static_cast<u128>(k) << (128 - block_length))},
                     block_length}
                .to_string();
      m_drafts.push_back(std::move(d));
    }
  }

  void parse_tenant(const YAML::Node& item, const std::string& path, const Location& where) {
    Tenant t;
    fields(item, where, path, kTenantFields, [&](const std::string& key, const std::string& p, const YAML::Node& v,
                                                 const Location& l) {
      if (key == "name") {
        if (auto s = scalar(v, p, l, "a tenant name"); s && check_name(*s, p, l, "tenant")) t.name = *s;
      } else if (key == "pool") {
        t.pool_selector = label_map(v, p, l);
      } else {
        fields(v, l, p, kQuotaFields, [&](const std::string& k, const std::string& qp, const YAML::Node& qv,
                                          const Location& ql) {
          if (k == "cpu") {
            if (auto c = quantity(qv, qp, ql, "a cpu quantity", parse_cpu, "200")) t.quota.cpu_millis = *c;
          } else if (k == "memory") {
            if (auto b = quantity(qv, qp, ql, "a memory size", parse_bytes, "800Gi")) t.quota.memory_bytes = *b;
          } else if (k == "gpu") {
            if (auto c = quantity(qv, qp, ql, "a GPU count", parse_count, "8")) t.quota.gpu = *c;
          } else {
            if (auto c = quantity(qv, qp, ql, "an instance count", parse_count, "500")) t.quota.instances = *c;
          }
        });
      }
    });
    if (!item.IsMap()) return;
    if (!item["name"]) {
      error(where, path + ".name", "missing required field 'name'", "add name: analytics");
      return;
    }
    if (t.name.empty()) return;
    if (auto [it, fresh] = m_tenant_lines.emplace(t.name, where.line); !fresh) {
      error(where, path + ".name", fmt::format("tenant '{}' is listed twice (first on line {})", t.name, it->second),
            "merge the two entries");
      return;
    }
    m_tenant_locations.push_back(where);
    m_out.cluster.tenants.push_back(std::move(t));
  }

  void parse_scheduler(const YAML::Node& v, const std::string& path, const Location& where) {
    SchedulerProfile& prof = m_out.cluster.profile;
    fields(v, where, path, kSchedulerFields, [&](const std::string& key, const std::string& p, const YAML::Node& fv,
                                                 const Location& l) {
      if (key == "strategy") {
        auto s = scalar(fv, p, l, "spread or stack");
        if (!s) return;
        if (*s != "spread" && *s != "stack")
          error(l, p, fmt::format("unknown strategy '{}': expected spread or stack", *s),
                "spread prefers the least allocated nodes, stack the most allocated");
        else
          prof.strategy = *s;
      } else if (key == "percentage_of_nodes_to_score") {
        if (auto c = count(fv, p, l, 1, 100)) prof.percentage_of_nodes_to_score = static_cast<int>(*c);
      } else {
        fields(fv, l, p, kWeightFields, [&](const std::string& k, const std::string& wp, const YAML::Node& wv,
                                            const Location& wl) {
          auto c = count(wv, wp, wl, 0, 100);
          if (!c) return;
          int w = static_cast<int>(*c);
          if (k == "allocation") prof.w_allocation = w;
          else if (k == "balance") prof.w_balance = w;
          else if (k == "locality") prof.w_locality = w;
          else if (k == "image") prof.w_image = w;
          else if (k == "affinity") prof.w_affinity = w;
          else if (k == "spread") prof.w_spread = w;
          else prof.w_scarce = w;
        });
      }
    });
  }

  // storage_classes: when given, exactly these classes replace the defaults (hdd, ssd).
  void parse_storage_classes(const YAML::Node& v, const std::string& path, const Location& where) {
    m_classes_given = true;
    m_out.cluster.storage_classes.clear();
    if (v.IsNull() || (v.IsSequence() && v.size() == 0)) {
      error(where, path, "the list of storage classes is empty: a cluster needs at least one storage class",
            "declare one, e.g. - {name: ssd, kind: local}, or drop storage_classes for the defaults hdd and ssd");
      return;
    }
    if (!v.IsSequence()) m_classes_broken = true;
    each(v, path, where, "storage classes", [&](const YAML::Node& item, const std::string& p, const Location& l) {
      parse_storage_class(item, p, l);
    });
  }

  void parse_storage_class(const YAML::Node& item, const std::string& path, const Location& where) {
    StorageClass c;
    bool named = false, valid_name = true;
    // capacity and selector are read once the kind is known: it may come after them.
    struct Later {
      YAML::Node value;
      std::string path;
      Location location;
    };
    std::optional<Later> capacity, selector;
    fields(item, where, path, kStorageClassFields, [&](const std::string& key, const std::string& p,
                                                       const YAML::Node& v, const Location& l) {
      if (key == "name") {
        auto s = scalar(v, p, l, "a storage class name");
        if (!s) return;
        c.name = *s;
        named = true;
        if (std::string problem = storage_class_name_problem(*s); !problem.empty()) {
          valid_name = false;
          std::string better = suggest_dns_label(*s);
          error(l, p, fmt::format("'{}' is not a valid storage class name: {}", *s, problem),
                !better.empty() && storage_class_name_problem(better).empty()
                    ? fmt::format("for example '{}' (names are Kubernetes StorageClass names)", better)
                    : "names are Kubernetes StorageClass names: lowercase a-z, 0-9, '-' and '.', starting and "
                      "ending with a letter or digit");
        }
      } else if (key == "kind") {
        auto s = scalar(v, p, l, "local or claim");
        if (!s) return;
        if (*s == "local") {
          c.kind = StorageKind::Local;
        } else if (*s == "claim") {
          c.kind = StorageKind::Claim;
        } else {
          error(l, p, fmt::format("unknown storage kind '{}': expected local or claim", *s),
                "local: disks on the nodes, offered by their volume groups; claim: a network pool the whole "
                "cluster shares");
        }
      } else if (key == "description") {
        if (auto s = scalar(v, p, l, "a description (a string)")) c.description = *s;
      } else if (key == "capacity") {
        capacity = Later{v, p, l};
      } else {
        selector = Later{v, p, l};
      }
    });
    if (!item.IsMap()) return;
    if (!item["name"]) error(where, path + ".name", "missing required field 'name'", "add name: ssd");
    std::string of_class = c.name.empty() ? "of that class" : fmt::format("of class {}", c.name);
    if (capacity && c.kind == StorageKind::Local) {
      error(capacity->location, capacity->path,
            "a local class has no capacity of its own: local classes take their capacity from node volume groups",
            fmt::format("give nodes volume_groups {}, or make it kind: claim for a network pool", of_class));
    } else if (capacity) {
      if (auto b = quantity(capacity->value, capacity->path, capacity->location, "a size", parse_bytes, "50Ti")) {
        if (*b <= 0)
          error(capacity->location, capacity->path, "a claim class's capacity must be more than 0",
                "leave capacity out for a pool without a limit");
        else
          c.capacity_bytes = *b;
      }
    }
    if (selector && c.kind == StorageKind::Local)
      error(selector->location, selector->path,
            "a local class has no selector: it is on the nodes whose volume groups offer it",
            fmt::format("give the nodes volume_groups {}, or make it kind: claim for a network pool", of_class));
    else if (selector)
      c.node_selector = label_map(selector->value, selector->path, selector->location);
    if (!named) return;
    auto dup = std::find_if(m_declared.begin(), m_declared.end(),
                            [&](const DeclaredClass& d) { return d.name == c.name; });
    if (dup != m_declared.end()) {
      error(where, path + ".name",
            fmt::format("storage class '{}' is declared twice (first on line {})", c.name, dup->line),
            "keep one of them, or give the other its own name");
      return;
    }
    m_declared.push_back(DeclaredClass{c.name, c.kind, where.line, valid_name});
    m_out.cluster.storage_classes.push_back(std::move(c));
  }

  // Every volume group's class must be a local class of the cluster: a declared one, or
  // hdd or ssd when the file declares none.
  void check_class_refs() {
    if (m_classes_broken || (m_classes_given && m_declared.empty())) return;  // Reported already.
    std::vector<DeclaredClass> classes = m_declared;
    if (!m_classes_given)
      for (const auto& c : default_storage_classes()) classes.push_back(DeclaredClass{c.name, c.kind, 0, true});
    std::vector<std::string> local;  // The names to offer, as declared.
    for (const auto& c : classes)
      if (c.kind == StorageKind::Local && c.valid_name) local.push_back(c.name);
    for (const auto& r : m_class_refs) {
      auto c = std::find_if(classes.begin(), classes.end(), [&](const DeclaredClass& d) { return d.name == r.name; });
      std::string group = r.group.empty() ? "the volume group" : fmt::format("volume group '{}'", r.group);
      if (c == classes.end()) {
        std::string has = local.empty() ? "no local storage classes" : fmt::format("{}", fmt::join(local, ", "));
        std::string message =
            r.implicit ? fmt::format("{} names no class and this cluster has no class '{}' (the default): it has {}",
                                     group, r.name, has)
                       : fmt::format("unknown storage class '{}': this cluster has {}", r.name, has);
        std::string hint;
        if (r.implicit)
          hint = local.empty() ? "add class: NAME, and declare NAME as a local class under storage_classes"
                               : fmt::format("add class: {}", local.front());
        else if (local.empty())
          hint = fmt::format("declare '{}' under storage_classes, e.g. - {{name: {}, kind: local}}", r.name, r.name);
        else
          hint = fmt::format("use one of {}, or declare '{}' under storage_classes", fmt::join(local, ", "), r.name);
        error(r.location, r.path, std::move(message), std::move(hint));
      } else if (c->kind != StorageKind::Local) {
        error(r.location, r.path,
              fmt::format("'{}' is a claim class: claim classes are network pools, not node disks, so no volume "
                          "group can offer one",
                          r.name),
              local.empty() ? "declare a local class for node disks under storage_classes, e.g. - {name: local-ssd, "
                              "kind: local}"
                            : fmt::format("declare a local class for node disks under storage_classes, or use one of {}",
                                          fmt::join(local, ", ")));
      }
    }
  }

  // Addresses for nodes that gave none, topology, and the checks that span nodes.
  void finish() {
    check_class_refs();
    bool needs_carving = false;
    for (const auto& d : m_drafts) needs_carving |= d.node.address.empty() || d.node.instance_subnet.empty();
    if (needs_carving) {
      std::vector<Node> given;
      for (const auto& d : m_drafts) given.push_back(d.node);
      auto alloc = AddressAllocator::create(m_subnet.empty() ? "10.0.0.0/16" : m_subnet, given);
      if (!alloc) {
        error(m_subnet_loc, "subnet", alloc.error());
        return;
      }
      for (auto& d : m_drafts) {
        if (d.node.address.empty()) {
          auto a = alloc->next_address();
          if (!a) {
            error(d.location, d.origin, a.error(), "give a larger 'subnet' or explicit addresses");
            return;
          }
          d.node.address = *a;
        }
        if (d.node.instance_subnet.empty()) {
          auto s = alloc->next_instance_subnet();
          if (!s) {
            error(d.location, d.origin, s.error(), "give a larger 'subnet' or explicit instance subnets");
            return;
          }
          d.node.instance_subnet = *s;
        }
      }
    }
    std::map<std::string, const Draft*> names, addresses;
    std::vector<std::pair<IpPrefix, const Draft*>> blocks;
    for (auto& d : m_drafts) {
      assign_topology(d.node, &m_table);
      if (auto [it, fresh] = names.emplace(d.node.name, &d); !fresh)
        error(d.location, d.origin, fmt::format("node name '{}' is used twice (first by {} on line {})", d.node.name,
                                                it->second->origin, it->second->location.line),
              "rename one of them, or use a different node group name or 'start'");
      if (auto [it, fresh] = addresses.emplace(d.node.address, &d); !fresh)
        error(d.address_location, d.origin, fmt::format("address {} is used twice (also by {} on line {})", d.node.address,
                                                        it->second->origin, it->second->address_location.line),
              "give every node its own address");
      if (auto p = parse_cidr(d.node.instance_subnet)) blocks.emplace_back(*p, &d);
    }
    // Instance subnets must not overlap.
    std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) {
      if (a.first.address.family != b.first.address.family) return a.first.address.family < b.first.address.family;
      if (a.first.address.bits != b.first.address.bits) return a.first.address.bits < b.first.address.bits;
      return a.first.length < b.first.length;
    });
    PrefixTree<const Draft*> instance_tree;
    for (size_t i = 0; i < blocks.size(); ++i) {
      const auto& [prefix, draft] = blocks[i];
      // Sorted by start, an overlap always puts this block's start inside an earlier one.
      if (auto m = instance_tree.longest_match(prefix.address)) {
        error(draft->location, draft->origin,
              fmt::format("instance subnet {} overlaps {} of {}", prefix.to_string(), m->prefix.to_string(),
                          (*m->value)->origin),
              "instances of two nodes would get the same addresses: give each node its own block");
        continue;
      }
      instance_tree.insert(prefix, draft);
    }
    for (const auto& d : m_drafts) {
      auto ip = parse_address(d.node.address);
      if (!ip) continue;
      if (auto m = instance_tree.longest_match(*ip))
        error(d.address_location, d.origin,
              fmt::format("address {} lies in the instance subnet {} of {}", d.node.address, m->prefix.to_string(),
                          (*m->value)->origin),
              "keep node addresses and instance subnets apart (see 'subnet' in docs/cluster-file.md)");
    }
    for (size_t i = 0; i < m_out.cluster.tenants.size(); ++i) {
      const Tenant& t = m_out.cluster.tenants[i];
      if (t.pool_selector.empty()) continue;
      bool any = std::any_of(m_drafts.begin(), m_drafts.end(), [&](const Draft& d) {
        return std::all_of(t.pool_selector.begin(), t.pool_selector.end(), [&](const auto& kv) {
          auto it = d.node.labels.find(kv.first);
          return it != d.node.labels.end() && it->second == kv.second;
        });
      });
      if (!any) {
        std::vector<std::string> parts;
        for (const auto& [k, v] : t.pool_selector) parts.push_back(k + "=" + v);
        error(m_tenant_locations[i], fmt::format("tenants[{}].pool", i),
              fmt::format("the pool of tenant '{}' ({}) matches no node", t.name, fmt::join(parts, ",")),
              "label some nodes to match, or change the pool");
      }
    }
    if (!m_errors.empty()) return;
    for (auto& d : m_drafts) m_out.cluster.nodes.push_back(std::move(d.node));
    ensure_default_tenant(m_out.cluster.tenants);
  }

  std::string m_file;
  Diagnostics m_errors;
  ClusterFile m_out;
  std::vector<Draft> m_drafts;
  std::string m_subnet;
  Location m_subnet_loc;
  TopologyTable m_table;
  std::map<std::string, int> m_subnet_lines, m_tenant_lines;
  std::vector<Location> m_tenant_locations;
  bool m_classes_given = false, m_classes_broken = false;
  std::vector<DeclaredClass> m_declared;
  std::vector<ClassRef> m_class_refs;
};

}  // namespace

Result<ClusterFile> parse_cluster_file(std::string_view text, const std::string& file) {
  return ClusterFileParser(file).run(text);
}

Result<ClusterFile> load_cluster_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(Diagnostic{{path.string()}, "", "cannot read the cluster file",
                           "check the path; examples are in examples/clusters/"});
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_cluster_file(ss.str(), path.string());
}

}  // namespace gaia::spec
