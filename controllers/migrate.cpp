#include "controllers/lifecycle.hpp"
#include "controllers/migrate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "controllers/explain.hpp"
#include "controllers/migration.hpp"
#include "controllers/node_ops.hpp"
#include "controllers/submit.hpp"

namespace gaia {

namespace {



int migrate_limit(const ClusterState& state, const Instance& i) {
  auto it = state.snapshot.roles.find(i.tenant + "/" + i.app + "/" + i.role);
  return it == state.snapshot.roles.end() ? Role{}.migrate_times : it->second.migrate_times;
}

std::string failures_text(const NodeExplanation& n) {
  std::vector<std::string> parts;
  for (const auto& f : n.failures) parts.push_back(fmt::format("{}: {}", f.filter, f.message));
  return fmt::format("{}", fmt::join(parts, "; "));
}

}  // namespace

namespace {

const Instance& move_to(ClusterState& state, Batch& batch, Instance* i, const Placement& p, const Node* node,
                        std::string address, const std::string& why, bool count);

}  // namespace

const Instance& move_instance(ClusterState& state, Batch& batch, const std::string& key, const Placement& p,
                              const std::string& why, bool count, int64_t) {
  Instance* i = state.find_instance(key);
  if (!i) throw std::logic_error("move_instance: unknown instance " + key);
  const Node* node = state.find_node(p.node);
  // Allocated while the instance still counts on its old node, so its old address
  // there is not mistaken for one in use on the new node.
  std::string address = node ? allocate_address(*node, state.snapshot.instances) : "";
  return move_to(state, batch, i, p, node, std::move(address), why, count);
}

const Instance& move_instance(ClusterState& state, Batch& batch, Instance& instance, const Placement& p,
                              AddressBook& addresses, const std::string& why, bool count, int64_t) {
  const Node* node = state.find_node(p.node);
  std::string address = node ? addresses.allocate(*node) : "";
  addresses.release(instance.node, instance.address);
  return move_to(state, batch, &instance, p, node, std::move(address), why, count);
}

namespace {

const Instance& move_to(ClusterState& state, Batch& batch, Instance* i, const Placement& p, const Node* node,
                        std::string address, const std::string& why, bool count) {
  std::string from = i->node;
  std::vector<std::string> copied, followed;
  for (const auto& v : i->volumes) {
    if (v.node == from && !from.empty()) copied.push_back(v.volume);
    if (claim_binding(v)) followed.push_back(fmt::format("{} (class {})", v.volume, v.group));
  }
  std::erase_if(i->volumes, [&](const VolumeBinding& v) { return !from.empty() && v.node == from; });
  for (const auto& v : p.volumes) i->volumes.push_back(v);
  i->address = std::move(address);
  // A moved instance starts afresh (bind_instance resets what was learnt on the old
  // node): its reservation is its request again until the start-up period passes on the
  // new node, and the old node's usage does not follow it. The backend starts the new
  // copy; a stateful one only once the old copy has stopped (controllers/lifecycle.hpp).
  bind_instance(*i, p.node);
  i->ports = p.ports;
  if (count) ++i->migrations;
  std::string msg = fmt::format("moved {}to {} ({}), address {}", from.empty() ? "" : "from " + from + " ", p.node, why,
                                i->address.empty() ? "none" : i->address);
  if (count) msg += fmt::format("; migration {} of {}", i->migrations, migrate_limit(state, *i));
  if (!copied.empty()) msg += fmt::format("; volume {} copied from {}", fmt::join(copied, ", "), from);
  if (!followed.empty()) msg += fmt::format("; claim volume {} attached on {}", fmt::join(followed, ", "), p.node);
  if (node)
    if (std::string near = locality_text(state, *i, *node); !near.empty()) msg += "; " + near;
  batch.put_instance(*i);
  batch.instance_event_at(*i, p.node, "Migrated", msg);
  return *i;
}

}  // namespace

void evict_victim(ClusterState& state, Batch& batch, const Preemption& p) {
  Instance* v = state.find_instance(p.victim);
  if (!v) return;
  evict_instance(*v, fmt::format("preempted by {} on {}", p.preemptor, p.node));
  batch.put_instance(*v);
  batch.instance_event_at(*v, p.node, "Preempted",
                 fmt::format("evicted from {} to make room for {} (higher priority)", p.node, p.preemptor), "Warning");
}

Result<MigrateOutcome> plan_migrate(const ClusterState& state, const MigrateRequest& req, int64_t now_ms) {
  const Instance* found = state.find_instance(req.instance);
  if (!found)
    return fail(Diagnostic{{}, "", fmt::format("no instance '{}'", req.instance), "`gaia get instances` lists them"});
  const Instance& i = *found;
  const std::string key = i.key();
  if (i.state == InstanceState::Succeeded)
    return fail(Diagnostic{{}, "", fmt::format("{} has finished (Succeeded)", key), "a finished batch instance holds nothing to move"});
  std::string waiting = waiting_for_volume_node(state, i);
  const Node* target = nullptr;
  if (req.to) {
    target = state.find_node(*req.to);
    if (!target)
      return fail(Diagnostic{{}, "--to", fmt::format("no node named '{}'", *req.to), "`gaia get nodes` lists the nodes"});
    if (*req.to == i.node)
      return fail(Diagnostic{{}, "--to", fmt::format("{} is already on {}", key, *req.to), "name another node, or leave out --to"});
  }
  if (i.node.empty() && waiting.empty())
    return fail(Diagnostic{{}, "", fmt::format("{} is pending, not placed: {}", key, i.pending_reason.empty() ? "not scheduled yet" : i.pending_reason),
                           fmt::format("the scheduler places it once it fits; `gaia explain {}` shows why it does not", key)});
  // Volumes on a node that is down cannot be copied: moving means leaving the data.
  std::vector<std::string> lost;
  std::string dead_node;
  for (const auto& v : i.volumes) {
    const Node* n = state.find_node(v.node);
    if (n && n->state == NodeState::Down) {
      lost.push_back(fmt::format("{} on {}", v.volume, v.node));
      dead_node = v.node;
    }
  }
  if (!lost.empty() && !req.force)
    return fail(Diagnostic{{}, "", fmt::format("{} is {}", key, waiting.empty() ? "holding volumes on a down node" : waiting),
                           fmt::format("`gaia node recover {}` brings it back with its data; `gaia migrate {} --force` "
                                       "starts it elsewhere with EMPTY volumes (the data of {} is lost to it)",
                                       dead_node, key, fmt::join(lost, ", "))});
  std::string refusal = migrate_times_refusal(state, i);
  if (!refusal.empty() && !req.force)
    return fail(Diagnostic{{}, "", fmt::format("{} may not move again: {}", key, refusal),
                           "raise migrate_times in the role's spec, or move it anyway with --force"});

  // The cluster as the scheduler should see it: the instance off its node (volumes on a
  // live node are copied, so fresh bindings are made where it lands) and the nodes it
  // may not use cordoned.
  Snapshot open = state.snapshot;
  Instance* t = nullptr;
  for (auto& x : open.instances)
    if (x.key() == key) t = &x;
  std::string old_node = t->node;
  std::vector<std::string> copied, dropped;
  // Claim volumes (no node) are neither copied nor dropped: they follow the instance.
  for (const auto& v : t->volumes) {
    if (claim_binding(v)) continue;
    const Node* n = state.find_node(v.node);
    bool dead = n && n->state == NodeState::Down;
    if (dead) dropped.push_back(v.volume);
    else if (v.node == old_node) copied.push_back(v.volume);
  }
  std::erase_if(t->volumes, [&](const VolumeBinding& v) {
    if (claim_binding(v)) return false;
    const Node* n = state.find_node(v.node);
    return v.node == old_node || (n && n->state == NodeState::Down);
  });
  t->node.clear();
  t->address.clear();
  t->ports.clear();
  t->state = InstanceState::Pending;
  Snapshot restricted = open;
  for (auto& n : restricted.nodes) {
    bool allowed = req.to ? n.name == *req.to : n.name != old_node;
    if (!allowed && n.state == NodeState::Ready) n.state = NodeState::Cordoned;
  }
  Decision d = schedule(restricted, {key});
  const Placement* p = nullptr;
  for (const auto& x : d.placements)
    if (x.instance == key) p = &x;
  if (!p) {
    std::string reason = d.unschedulable.empty() ? "no node fits" : d.unschedulable.front().reason;
    if (req.to) {
      auto e = explain(open, key, *req.to);
      if (e && !e->nodes.empty() && !e->nodes.front().failures.empty()) reason = failures_text(e->nodes.front());
      return fail(Diagnostic{{}, "--to", fmt::format("node {} cannot take {}: {}", *req.to, key, reason),
                             fmt::format("`gaia explain {} --node {}` shows every filter; leave out --to to let the "
                                         "scheduler pick a node",
                                         key, *req.to)});
    }
    return fail(Diagnostic{{}, "", fmt::format("no other node can take {}: {}", key, reason),
                           fmt::format("`gaia explain {}` shows every filter per node; add nodes (`gaia node add`) or "
                                       "free capacity",
                                       key)});
  }

  MigrateOutcome out;
  out.after = state;
  out.instance = key;
  out.from = old_node;
  out.to = p->node;
  out.copied_volumes = copied;
  out.dropped_volumes = dropped;
  for (const auto& pre : d.preemptions) {
    out.preempted.push_back(pre);
    evict_victim(out.after, out.batch, pre);
  }
  if (!dropped.empty()) {
    Instance* x = out.after.find_instance(key);
    std::erase_if(x->volumes, [&](const VolumeBinding& v) {
      const Node* n = state.find_node(v.node);
      return n && n->state == NodeState::Down;
    });
    out.batch.instance_event_at(*x, old_node, "VolumeLost",
                   fmt::format("volume {} left on a down node (--force): it starts with empty volumes", fmt::join(dropped, ", ")),
                   "Warning");
  }
  std::string why = req.to ? "gaia migrate --to" : "gaia migrate";
  const Instance& moved = move_instance(out.after, out.batch, key, *p, why, true, now_ms);
  out.address = moved.address;
  out.migrations = moved.migrations;
  out.migrate_times = migrate_limit(state, moved);
  if (const Node* n = out.after.find_node(moved.node)) out.locality = locality_text(out.after, moved, *n);
  out.after.seq += static_cast<int64_t>(out.batch.events.size());
  return out;
}

}  // namespace gaia
