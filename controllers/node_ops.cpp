#include "controllers/lifecycle.hpp"
#include "controllers/node_ops.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>
#include <unordered_map>

#include "lib/codec.hpp"
#include "lib/quantity.hpp"
#include "lib/selector.hpp"
#include "lib/topology.hpp"

namespace gaia {

namespace {


TimelineEvent& node_op_event(Batch& b, const std::string& node, std::string reason, std::string message,
                          std::string type = "Normal") {
  auto& e = b.event(std::move(reason), std::move(message), std::move(type));
  e.node = node;
  return e;
}

std::string node_summary(const Node& n) {
  std::string s = fmt::format("cpu {}, memory {}", format_cpu(n.capacity.cpu_millis), format_bytes(n.capacity.memory_bytes));
  if (n.capacity.gpu) s += fmt::format(", gpu {}", n.capacity.gpu);
  if (n.capacity.disk_bytes) s += fmt::format(", disk {}", format_bytes(n.capacity.disk_bytes));
  s += fmt::format(", address {}", n.address.empty() ? "none" : n.address);
  if (!n.rack.empty()) s += fmt::format(", rack {}", n.rack);
  if (!n.zone.empty()) s += fmt::format(", zone {}", n.zone);
  return s;
}

// Takes an instance off its node: back to pending, without address, ports or the
// volumes it held there.
// A timeline event about a kept volume (its instance is gone), e.g. VolumeLost when a
// recreated cluster no longer has its storage.
void kept_volume_event(Batch& b, const KeptVolume& k, const std::string& node, const std::string& reason) {
  std::string instance = fmt::format("{}.{}.{}.{}", k.ordinal, k.role, k.app, k.tenant);
  auto& e = b.event(reason,
                    fmt::format("kept volume {} of {} ({}) dropped: the recreated cluster no longer has that storage",
                                k.volume, instance, volume_place(node, k.group)),
                    "Warning");
  e.tenant = k.tenant;
  e.app = k.app;
  e.role = k.role;
  e.instance = instance;
  e.node = node;
}

void displace(Instance& i, const std::string& reason) {
  std::string node = i.node;
  i.node.clear();
  i.address.clear();
  i.ports.clear();
  std::erase_if(i.volumes, [&](const VolumeBinding& v) { return v.node == node; });
  // The node is gone, and its copies with it.
  evict_instance(i, reason, true);
}


// Retries every pending instance on the state as it will be after `out.batch`, and adds
// the result to the batch and the report.
void retry_pending(const ClusterState& base, NodeOpOutcome& out) {
  ClusterState next = apply_batch(base, out.batch);
  std::unordered_map<std::string, const Instance*> before;
  bool any_pending = false;
  for (const auto& i : next.snapshot.instances) {
    before[i.key()] = &i;
    any_pending |= i.state == InstanceState::Pending;
  }
  if (!any_pending) return;
  SubmitOutcome r = reschedule_pending(next);
  for (const auto& i : r.batch.put_instances) {
    auto it = before.find(i.key());
    const Instance* old = it == before.end() ? nullptr : it->second;
    if (occupies_node(i) && (!old || !occupies_node(*old))) {
      out.placed.push_back(PlacedReport{.instance = i.key(), .node = i.node, .address = i.address, .score = 0, .locality = ""});
    } else if (i.state == InstanceState::Pending) {
      if (old && occupies_node(*old))
        out.preempted.push_back(PreemptedReport{.victim = i.key(), .node = old->node, .preemptor = ""});
      else
        out.still_pending.push_back(PendingReport{.instance = i.key(), .reason = i.pending_reason});
    }
  }
  merge_batch(out.batch, std::move(r.batch));
}

std::string some_names(const std::vector<std::string>& names, size_t limit = 5) {
  if (names.size() <= limit) return fmt::format("{}", fmt::join(names, ", "));
  return fmt::format("{}, ... ({} more)", fmt::join(names.begin(), names.begin() + static_cast<long>(limit), ", "),
                     names.size() - limit);
}

// The named nodes, each once, or errors for unknown names.
Result<std::vector<const Node*>> find_nodes(const ClusterState& state, const std::vector<std::string>& names) {
  Diagnostics errors;
  std::vector<const Node*> out;
  std::set<std::string> seen;
  for (const auto& name : names) {
    if (!seen.insert(name).second) continue;
    if (const Node* n = state.find_node(name)) {
      out.push_back(n);
      continue;
    }
    std::vector<std::string> known;
    for (const auto& n : state.snapshot.nodes) known.push_back(n.name);
    errors.push_back(Diagnostic{{}, "", fmt::format("no node named '{}'", name),
                                known.empty() ? "the cluster has no nodes: create it with `gaia cluster create`"
                                              : "`gaia get nodes` lists the nodes"});
  }
  if (!errors.empty()) return fail(errors);
  return out;
}

}  // namespace

Result<NodeOpOutcome> decide_cluster_create(const ClusterState& state, const ClusterSpec& spec, bool replace) {
  const auto& old_nodes = state.snapshot.nodes;
  if (!old_nodes.empty() && !replace)
    return fail(Diagnostic{{}, "", fmt::format("a cluster already exists here ({} nodes)", old_nodes.size()),
                           "`gaia cluster create --replace` recreates it (instances are scheduled again on the new "
                           "nodes); `gaia node add` adds nodes to it"});
  if (spec.nodes.empty()) return fail(Diagnostic{{}, "", "the cluster has no nodes", "give --nodes N or a cluster file"});
  Diagnostics errors;
  // A cluster keeps its backend: switching one with instances on it would orphan them
  // (processes nobody supervises, or bookkeeping that never ran).
  auto was = state.settings.find(keys::k_backend_setting);
  std::string before = was != state.settings.end() && was->second.is_string() ? was->second.get<std::string>() : "sim";
  if (before != spec.backend && !state.snapshot.instances.empty())
    errors.push_back(Diagnostic{{}, "--backend",
                                fmt::format("this cluster runs its {} instance(s) on the {} backend, not {}",
                                            state.snapshot.instances.size(), before, spec.backend),
                                "delete its apps first (gaia delete APP), or use another store (--store PATH)"});
  // The process backend runs every instance on this machine, bound to its own address.
  if (spec.backend == "process")
    for (const auto& n : spec.nodes)
      if (!loopback_cidr(n.instance_subnet))
        errors.push_back(Diagnostic{{}, "instance_subnet",
                                    fmt::format("node {}: instance subnet '{}' is not a loopback range", n.name,
                                                n.instance_subnet),
                                    "the process backend runs instances on this machine, each bound to its own "
                                    "loopback address: use a subnet inside 127.0.0.0/8 (--subnet 127.64.0.0/16, "
                                    "the default with --backend process)"});
  if (!errors.empty()) return fail(std::move(errors));
  NodeOpOutcome out;
  Batch& b = out.batch;
  std::set<std::string> fresh;
  for (const auto& n : spec.nodes) fresh.insert(n.name);
  for (const auto& n : old_nodes)
    if (!fresh.count(n.name)) b.delete_nodes.push_back(n.name);
  // What of the old cluster's storage the new one still has. A local volume keeps its
  // data where the new cluster has a node of the same name with a volume group of the
  // same name and class (replacing a cluster with the same file loses nothing); a claim
  // volume keeps it while its class stays a claim class. Everything else is lost, and
  // the timeline says which (VolumeLost).
  std::map<std::string, const Node*> new_nodes;
  for (const auto& n : spec.nodes) new_nodes[n.name] = &n;
  auto group_class = [](const Node* n, const std::string& group) -> const std::string* {
    if (!n) return nullptr;
    for (const auto& g : n->volume_groups)
      if (g.name == group) return &g.storage_class;
    return nullptr;
  };
  auto local_survives = [&](const std::string& node, const std::string& group) {
    auto it = new_nodes.find(node);
    const std::string* before = group_class(state.find_node(node), group);
    const std::string* after = group_class(it == new_nodes.end() ? nullptr : it->second, group);
    return before && after && *before == *after;
  };
  auto claim_survives = [&](const std::string& cls) {
    return std::any_of(spec.storage_classes.begin(), spec.storage_classes.end(),
                       [&](const StorageClass& c) { return c.name == cls && c.kind == StorageKind::Claim; });
  };
  auto survives = [&](const std::string& node, const std::string& group) {
    return node.empty() ? claim_survives(group) : local_survives(node, group);
  };
  if (replace) {
    for (const auto& i : state.snapshot.instances) {
      if (i.node.empty() && i.volumes.empty()) continue;
      Instance moved = i;
      std::string node = i.node;
      moved.node.clear();
      moved.address.clear();
      moved.ports.clear();
      std::vector<std::string> lost;
      for (const auto& v : i.volumes)
        if (!survives(v.node, v.group)) lost.push_back(fmt::format("{} {}", v.volume, volume_place(v.node, v.group)));
      std::erase_if(moved.volumes, [&](const VolumeBinding& v) { return !survives(v.node, v.group); });
      // The old nodes and their copies are gone; a volume kept above holds it to its node.
      evict_instance(moved, "cluster recreated", true);
      b.put_instance(moved);
      if (!node.empty()) {
        b.instance_event_at(moved, node, "Displaced", fmt::format("taken off {}: the cluster was recreated", node),
                       "Warning");
        out.displaced.push_back(moved.key());
      }
      if (!lost.empty())
        b.instance_event_at(moved, node, "VolumeLost",
                            fmt::format("volume {} dropped: the recreated cluster no longer has that storage; it "
                                        "starts with empty volumes",
                                        fmt::join(lost, ", ")),
                            "Warning");
    }
    if (!state.snapshot.kept_claims.empty()) {
      std::vector<KeptVolume> kept = state.snapshot.kept_claims;
      std::erase_if(kept, [&](const KeptVolume& k) {
        if (claim_survives(k.group)) return false;
        kept_volume_event(b, k, "", "VolumeLost");
        return true;
      });
      b.put_settings[keys::k_kept_claims_setting] = nlohmann::json(kept);
    }
  }
  b.event(old_nodes.empty() ? "ClusterCreated" : "ClusterReplaced",
                    fmt::format("{} nodes{}, {} tenants, strategy {}", spec.nodes.size(),
                                spec.name.empty() ? "" : " (" + spec.name + ")", spec.tenants.size(),
                                spec.profile.strategy));
  for (const auto& n : spec.nodes) {
    Node put = n;
    // Volumes a scale down kept on a node of the same name stay kept where their group
    // survives.
    if (const Node* was = replace ? state.find_node(n.name) : nullptr)
      for (const auto& k : was->kept_volumes) {
        if (local_survives(n.name, k.group)) put.kept_volumes.push_back(k);
        else kept_volume_event(b, k, n.name, "VolumeLost");
      }
    b.put_nodes.push_back(std::move(put));
    out.nodes.push_back(n.name);
    node_op_event(b, n.name, "NodeAdded", node_summary(n));
  }
  for (const auto& t : spec.tenants) b.put_tenants.push_back(t);
  b.profile = spec.profile;
  b.put_settings[keys::k_backend_setting] = spec.backend;
  b.put_settings[keys::k_storage_classes_setting] = nlohmann::json(spec.storage_classes);
  b.put_settings[keys::k_cluster_name_setting] = spec.name;
  retry_pending(state, out);
  return out;
}

Result<NodeOpOutcome> decide_node_add(const ClusterState& state, const std::vector<Node>& nodes) {
  Diagnostics errors;
  std::set<std::string> names, addresses;
  PrefixTree<std::string> blocks;
  for (const auto& n : state.snapshot.nodes) {
    names.insert(n.name);
    addresses.insert(n.address);
    if (auto p = parse_cidr(n.instance_subnet)) blocks.insert(*p, n.name);
  }
  for (const auto& n : nodes) {
    if (!names.insert(n.name).second)
      errors.push_back(Diagnostic{{}, "", fmt::format("a node named '{}' already exists", n.name),
                                  "choose another name (or --name-prefix); `gaia get nodes` lists the nodes"});
    if (!n.address.empty() && !addresses.insert(n.address).second)
      errors.push_back(Diagnostic{{}, "", fmt::format("address {} of node '{}' is already used", n.address, n.name),
                                  "give every node its own address"});
    if (auto p = parse_cidr(n.instance_subnet)) {
      auto m = blocks.longest_match(p->address);
      if (m && *m->value != n.name)
        errors.push_back(Diagnostic{{}, "", fmt::format("instance subnet {} of node '{}' overlaps {} of node '{}'",
                                                        n.instance_subnet, n.name, m->prefix.to_string(), *m->value),
                                    "give every node its own instance subnet"});
      else
        blocks.insert(*p, n.name);
    }
    // A cluster that declares its storage classes takes node disks only of its local
    // classes: a volume group of another class could never be asked for.
    if (!state.snapshot.storage_classes.empty())
      for (const auto& g : n.volume_groups) {
        const StorageClass* c = find_storage_class(state.snapshot, g.storage_class);
        if (c && c->kind == StorageKind::Local) continue;
        std::vector<std::string> local;
        for (const auto& k : state.snapshot.storage_classes)
          if (k.kind == StorageKind::Local) local.push_back(k.name);
        errors.push_back(Diagnostic{
            {}, "",
            fmt::format("node '{}': volume group {} is of class '{}', which is {} this cluster", n.name, g.name,
                        g.storage_class, c ? "a claim class (a network pool, not a node disk) in" : "not a class of"),
            local.empty() ? "this cluster declares no local classes: give the nodes no volume groups"
                          : fmt::format("its local classes are {}; recreate the cluster with the class declared "
                                        "under storage_classes to add it",
                                        fmt::join(local, ", "))});
      }
  }
  if (!errors.empty()) return fail(errors);
  NodeOpOutcome out;
  for (const auto& n : nodes) {
    out.batch.put_nodes.push_back(n);
    out.nodes.push_back(n.name);
    node_op_event(out.batch, n.name, "NodeAdded", node_summary(n));
  }
  retry_pending(state, out);
  return out;
}

Result<NodeOpOutcome> decide_node_remove(const ClusterState& state, const std::vector<std::string>& names, bool force) {
  auto found = find_nodes(state, names);
  if (!found) return fail(found.error());
  std::set<std::string> removing;
  for (const Node* n : *found) removing.insert(n->name);
  Diagnostics errors;
  if (!force) {
    for (const Node* n : *found) {
      std::vector<std::string> on;
      for (const auto& i : state.snapshot.instances)
        if (occupies_node(i) && i.node == n->name) on.push_back(i.key());
      if (!on.empty())
        errors.push_back(Diagnostic{{}, "", fmt::format("node '{}' runs {} instance(s): {}", n->name, on.size(), some_names(on)),
                                    "`--force` removes it anyway (its instances go back to pending and are retried "
                                    "elsewhere); `gaia node cordon` stops new placements first"});
    }
  }
  if (!errors.empty()) return fail(errors);
  NodeOpOutcome out;
  for (const auto& i : state.snapshot.instances) {
    bool on_node = !i.node.empty() && removing.count(i.node);
    bool volume_there = std::any_of(i.volumes.begin(), i.volumes.end(),
                                    [&](const VolumeBinding& v) { return removing.count(v.node) > 0; });
    if (!on_node && !volume_there) continue;
    Instance moved = i;
    std::string node = on_node ? i.node : "";
    if (on_node) {
      displace(moved, fmt::format("node {} was removed", node));
      out.displaced.push_back(moved.key());
      out.batch.instance_event_at(moved, node, "Displaced", fmt::format("taken off {}: the node was removed", node),
                     "Warning");
    } else {
      std::erase_if(moved.volumes, [&](const VolumeBinding& v) { return removing.count(v.node) > 0; });
    }
    out.batch.put_instance(moved);
  }
  for (const Node* n : *found) {
    out.batch.delete_nodes.push_back(n->name);
    out.nodes.push_back(n->name);
    node_op_event(out.batch, n->name, "NodeRemoved",
               force ? "removed (forced)" : "removed", "Normal");
  }
  retry_pending(state, out);
  return out;
}

Result<std::vector<LabelEdit>> parse_label_edits(const std::vector<std::string>& args) {
  Diagnostics errors;
  std::vector<LabelEdit> out;
  std::set<std::string> keys;
  for (const auto& a : args) {
    LabelEdit e;
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      e.key = a.substr(0, eq);
      e.value = a.substr(eq + 1);
    } else if (!a.empty() && a.back() == '-') {
      e.key = a.substr(0, a.size() - 1);
    } else {
      errors.push_back(Diagnostic{{}, "", fmt::format("'{}' is not a label change: expected KEY=VALUE or KEY-", a),
                                  "for example disk=ssd sets a label, disk- removes it"});
      continue;
    }
    if (std::string p = label_key_problem(e.key); !p.empty()) {
      errors.push_back(Diagnostic{{}, "", fmt::format("bad label key '{}' in '{}': {}", e.key, a, p), ""});
      continue;
    }
    if (e.value) {
      if (std::string p = label_value_problem(*e.value); !p.empty()) {
        errors.push_back(Diagnostic{{}, "", fmt::format("bad label value '{}' in '{}': {}", *e.value, a, p), ""});
        continue;
      }
    }
    if (!keys.insert(e.key).second) {
      errors.push_back(Diagnostic{{}, "", fmt::format("label '{}' is changed twice", e.key), "give each key once"});
      continue;
    }
    out.push_back(std::move(e));
  }
  if (out.empty() && errors.empty())
    errors.push_back(Diagnostic{{}, "", "no label changes given", "for example: gaia node label node-1 disk=ssd"});
  if (!errors.empty()) return fail(errors);
  return out;
}

Result<NodeOpOutcome> decide_node_label(const ClusterState& state, const std::vector<std::string>& names,
                                        const std::vector<LabelEdit>& edits, bool overwrite) {
  auto found = find_nodes(state, names);
  if (!found) return fail(found.error());
  Diagnostics errors;
  NodeOpOutcome out;
  out.changed = false;
  for (const Node* n : *found) {
    Node changed = *n;
    std::vector<std::string> done;
    for (const auto& e : edits) {
      auto it = changed.labels.find(e.key);
      if (e.value) {
        if (it != changed.labels.end() && it->second == *e.value) continue;
        if (it != changed.labels.end() && !overwrite) {
          errors.push_back(Diagnostic{{}, "", fmt::format("node '{}' already has label {}={}", n->name, e.key, it->second),
                                      "add --overwrite to change it"});
          continue;
        }
        changed.labels[e.key] = *e.value;
        done.push_back(e.key + "=" + *e.value);
      } else {
        if (it == changed.labels.end()) continue;
        changed.labels.erase(it);
        done.push_back(e.key + "-");
      }
      std::string value = e.value.value_or("");
      if (e.key == "rack") changed.rack = value;
      else if (e.key == "zone") changed.zone = value;
      else if (e.key == "switch") changed.switch_ = value;
    }
    if (done.empty()) continue;
    out.changed = true;
    out.nodes.push_back(n->name);
    out.batch.put_nodes.push_back(std::move(changed));
    node_op_event(out.batch, n->name, "NodeLabeled", fmt::format("{}", fmt::join(done, ", ")));
  }
  if (!errors.empty()) return fail(errors);
  if (out.changed) retry_pending(state, out);
  return out;
}

Result<NodeOpOutcome> decide_node_cordon(const ClusterState& state, const std::vector<std::string>& names, bool cordon) {
  auto found = find_nodes(state, names);
  if (!found) return fail(found.error());
  Diagnostics errors;
  NodeOpOutcome out;
  out.changed = false;
  for (const Node* n : *found) {
    NodeState want = cordon ? NodeState::Cordoned : NodeState::Ready;
    if (n->state == want) continue;
    if (n->state == NodeState::Down) {
      errors.push_back(Diagnostic{{}, "", fmt::format("node '{}' is down", n->name),
                                  cordon ? "a down node takes no instances already" : "it is ready again once it reports back"});
      continue;
    }
    Node changed = *n;
    changed.state = want;
    changed.cordon_reason.clear();  // A user's cordon or uncordon is the user's, not the backend's.
    out.changed = true;
    out.nodes.push_back(n->name);
    out.batch.put_nodes.push_back(std::move(changed));
    node_op_event(out.batch, n->name, cordon ? "NodeCordoned" : "NodeUncordoned",
               cordon ? "no new instances are placed here; running ones stay" : "open for new instances again");
  }
  if (!errors.empty()) return fail(errors);
  if (out.changed && !cordon) retry_pending(state, out);
  return out;
}

}  // namespace gaia
