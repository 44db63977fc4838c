#include "controllers/migration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "controllers/lifecycle.hpp"
#include "controllers/node_ops.hpp"
#include "controllers/scheduler.hpp"

namespace gaia {

namespace {

std::string role_id(const Instance& i) { return i.tenant + "/" + i.app + "/" + i.role; }

const Role* migration_role_of(const ClusterState& state, const Instance& i) {
  auto it = state.snapshot.roles.find(role_id(i));
  return it == state.snapshot.roles.end() ? nullptr : &it->second;
}


TimelineEvent& node_event(Batch& b, const std::string& node, std::string reason, std::string message,
                          std::string type = "Normal") {
  auto& e = b.event(std::move(reason), std::move(message), std::move(type));
  e.node = node;
  return e;
}

// Takes an instance off its node: pending, without address or ports. Volume bindings
// stay unless the caller drops them.
void unplace(Instance& i, std::string reason, bool node_down) { evict_instance(i, std::move(reason), node_down); }

std::vector<std::string> volume_names_on(const Instance& i, const std::string& node) {
  std::vector<std::string> out;
  for (const auto& v : i.volumes)
    if (v.node == node) out.push_back(v.volume);
  return out;
}

// Running instances per role, on nodes that are not down: what min_available counts.
std::unordered_map<std::string, int> running_by_role(const ClusterState& state) {
  std::unordered_set<std::string> down;
  for (const auto& n : state.snapshot.nodes)
    if (n.state == NodeState::Down) down.insert(n.name);
  std::unordered_map<std::string, int> out;
  for (const auto& i : state.snapshot.instances)
    if (i.state == InstanceState::Running && !down.count(i.node)) ++out[role_id(i)];
  return out;
}

// Instances occupying `node`, in key order (deterministic batches).
std::vector<const Instance*> occupants(const ClusterState& state, const std::string& node) {
  std::vector<const Instance*> out;
  for (const auto& i : state.snapshot.instances)
    if (i.node == node && occupies_node(i)) out.push_back(&i);
  std::sort(out.begin(), out.end(), [](const Instance* a, const Instance* b) { return a->key() < b->key(); });
  return out;
}

// The next batch off a draining node: candidates within each role's budget, then only
// those the scheduler can place elsewhere. `blocked` (optional) gets the reason of every
// occupant that is not in the batch.
std::vector<const Instance*> drain_batch(const ClusterState& state, const Node& node,
                                         std::map<std::string, std::string>* blocked) {
  auto running = running_by_role(state);
  std::unordered_map<std::string, int> taken;
  std::vector<const Instance*> candidates;
  for (const Instance* i : occupants(state, node.name)) {
    std::string refusal = migrate_times_refusal(state, *i);
    if (!refusal.empty()) {
      if (blocked) (*blocked)[i->key()] = refusal;
      continue;
    }
    if (i->state == InstanceState::Running) {
      const Role* role = migration_role_of(state, *i);
      int min_available = role ? role->min_available : 0;
      std::string id = role_id(*i);
      int budget = running[id] - min_available - taken[id];
      if (budget <= 0) {
        if (blocked)
          (*blocked)[i->key()] = fmt::format("role {} keeps min_available {}: {} running, {} already moving", i->role,
                                             min_available, running[id] - taken[id], taken[id]);
        continue;
      }
      ++taken[id];
    }
    candidates.push_back(i);
  }
  if (candidates.empty()) return {};
  // Ask the scheduler, on the cluster with the candidates taken off, whether they fit
  // elsewhere. The drained node is cordoned, so it is never chosen again.
  Snapshot trial = state.snapshot;
  std::unordered_map<std::string, size_t> at;
  for (size_t k = 0; k < trial.instances.size(); ++k) at[trial.instances[k].key()] = k;
  std::vector<std::string> keys;
  for (const Instance* c : candidates) {
    Instance& t = trial.instances[at.at(c->key())];
    std::erase_if(t.volumes, [&](const VolumeBinding& v) { return v.node == node.name; });
    unplace(t, "", true);  // A trial: the instance is simply off its node.
    keys.push_back(c->key());
  }
  Decision d = schedule(trial, keys);
  std::unordered_set<std::string> fits;
  for (const auto& p : d.placements) fits.insert(p.instance);
  std::vector<const Instance*> out;
  for (const Instance* c : candidates) {
    if (fits.count(c->key())) {
      out.push_back(c);
      continue;
    }
    if (!blocked) continue;
    std::string why = "fits on no other node";
    for (const auto& u : d.unschedulable)
      if (u.instance == c->key()) why = "fits on no other node: " + u.reason;
    (*blocked)[c->key()] = why;
  }
  return out;
}

Result<const Node*> known_node(const ClusterState& state, const std::string& name) {
  if (const Node* n = state.find_node(name)) return n;
  return fail(Diagnostic{{}, "", fmt::format("no node named '{}'", name),
                         state.snapshot.nodes.empty() ? "the cluster has no nodes: create it with `gaia cluster create`"
                                                      : "`gaia get nodes` lists the nodes"});
}

size_t count_on(const ClusterState& state, const std::string& node) {
  return static_cast<size_t>(std::count_if(state.snapshot.instances.begin(), state.snapshot.instances.end(),
                                           [&](const Instance& i) { return i.node == node && occupies_node(i); }));
}

}  // namespace

std::string migrate_times_refusal(const ClusterState& state, const Instance& i) {
  const Role* role = migration_role_of(state, i);
  int limit = role ? role->migrate_times : Role{}.migrate_times;
  if (i.migrations < limit) return "";
  return fmt::format("moved {} time(s) already; its role {} allows {} (migrate_times)", i.migrations, i.role, limit);
}

ControllerResult reconcile_migration(const ClusterState& state, const ControllerContext&) {
  ControllerResult out;
  Batch& b = out.batch;
  std::unordered_set<std::string> down;
  std::vector<const Node*> draining;
  for (const auto& n : state.snapshot.nodes) {
    if (n.state == NodeState::Down) down.insert(n.name);
    else if (n.draining) draining.push_back(&n);
  }

  // Node down: everything on it goes back to the queue; a move gaia did not ask the user
  // for, so Instance.migrations is left alone.
  if (!down.empty()) {
    for (const auto& i : state.snapshot.instances) {
      if (i.node.empty() || !down.count(i.node) || i.state == InstanceState::Succeeded ||
          i.state == InstanceState::Pending)
        continue;
      Instance moved = i;
      std::string node = i.node;
      auto held = volume_names_on(i, node);
      const AppRecord* app = state.find_app(i.tenant, i.app);
      bool role_failed = app && app->failed_roles.count(i.role);
      if (i.state == InstanceState::Failed && role_failed) {
        // The restart controller gave up on this role: only the dead node is let go.
        moved.node.clear();
        moved.address.clear();
        moved.ports.clear();
        b.put_instances.push_back(moved);
        b.instance_event_at(moved, node, "Evicted", fmt::format("node {} is down; the instance stays failed", node),
                       "Warning");
        continue;
      }
      if (!held.empty()) {
        unplace(moved, waiting_for_volume_node(state, i), true);
        b.instance_event_at(moved, node, "Evicted",
                       fmt::format("node {} is down; waiting for it: it holds volume {} (`gaia migrate {} --force` "
                                   "starts it elsewhere with empty volumes)",
                                   node, fmt::join(held, ", "), i.key()),
                       "Warning");
      } else {
        unplace(moved, fmt::format("node {} is down; requeued", node), true);
        b.instance_event_at(moved, node, "Evicted", fmt::format("node {} is down; requeued to run elsewhere", node),
                       "Warning");
      }
      b.put_instances.push_back(std::move(moved));
    }
  }

  for (const Node* n : draining) {
    if (n->state == NodeState::Ready) {
      Node changed = *n;
      changed.draining = false;
      b.put_nodes.push_back(changed);
      node_event(b, n->name, "DrainCancelled", "the node was uncordoned while draining; instances left on it stay");
      continue;
    }
    if (n->state != NodeState::Cordoned) continue;  // Down: finished once it recovers.
    if (count_on(state, n->name) == 0) {
      Node changed = *n;
      changed.draining = false;
      b.put_nodes.push_back(changed);
      node_event(b, n->name, "Drained",
                 "every instance moved off; the node stays cordoned (`gaia node uncordon` opens it again)");
      continue;
    }
    for (const Instance* i : drain_batch(state, *n, nullptr)) {
      Instance moved = *i;
      auto held = volume_names_on(*i, n->name);
      std::erase_if(moved.volumes, [&](const VolumeBinding& v) { return v.node == n->name; });
      unplace(moved, fmt::format("moving off draining node {}", n->name), false);
      ++moved.migrations;
      const Role* role = migration_role_of(state, *i);
      std::string msg = fmt::format("moving off {} (draining); migration {} of {}", n->name, moved.migrations,
                                    role ? role->migrate_times : Role{}.migrate_times);
      if (!held.empty()) msg += fmt::format("; volume {} is copied to its new node", fmt::join(held, ", "));
      b.instance_event_at(moved, n->name, "Migrated", msg);
      b.put_instances.push_back(std::move(moved));
    }
  }
  return out;
}

std::vector<DrainBlocker> drain_blockers(const ClusterState& state, const std::string& node) {
  std::vector<DrainBlocker> out;
  const Node* n = state.find_node(node);
  if (!n) return out;
  std::map<std::string, std::string> blocked;
  if (n->state == NodeState::Cordoned && n->draining) drain_batch(state, *n, &blocked);
  for (const Instance* i : occupants(state, node)) {
    auto it = blocked.find(i->key());
    std::string reason = it != blocked.end() ? it->second
                         : !n->draining      ? fmt::format("node {} is not draining", node)
                                             : "moves with the next batch";
    out.push_back({i->key(), reason});
  }
  return out;
}

Result<NodeChange> decide_drain(const ClusterState& state, const std::string& name) {
  auto found = known_node(state, name);
  if (!found) return fail(found.error());
  const Node& n = **found;
  NodeChange out;
  if (n.state == NodeState::Down)
    return fail(Diagnostic{{}, "", fmt::format("node '{}' is down", name),
                           fmt::format("its instances were requeued when it went down; `gaia node recover {}` first "
                                       "to drain what waits for it",
                                       name)});
  if (n.draining && n.state == NodeState::Cordoned) {
    out.changed = false;
    out.note = fmt::format("node {} is already draining", name);
    return out;
  }
  Node changed = n;
  changed.state = NodeState::Cordoned;
  changed.draining = true;
  out.batch.put_nodes.push_back(changed);
  node_event(out.batch, name, "Draining",
             fmt::format("cordoned; its {} instance(s) move off in batches keeping each role's min_available",
                         count_on(state, name)));
  return out;
}

Result<NodeChange> decide_node_fail(const ClusterState& state, const std::string& name, bool move_stateful,
                                    const std::string& why) {
  auto found = known_node(state, name);
  if (!found) return fail(found.error());
  const Node& n = **found;
  NodeChange out;
  if (n.state == NodeState::Down) {
    out.changed = false;
    out.note = fmt::format("node {} is already down", name);
    return out;
  }
  Node changed = n;
  changed.state = NodeState::Down;
  changed.down_reason = why;
  out.batch.put_nodes.push_back(changed);
  size_t on = count_on(state, name), stateful = 0;
  for (const auto& i : state.snapshot.instances) {
    auto held = volume_names_on(i, name);
    if (held.empty()) continue;
    ++stateful;
    if (!move_stateful) continue;
    Instance dropped = i;
    std::erase_if(dropped.volumes, [&](const VolumeBinding& v) { return v.node == name; });
    if (dropped.state == InstanceState::Pending) dropped.pending_reason = "volume binding dropped; requeued";
    out.batch.put_instances.push_back(dropped);
    out.dropped.push_back(i.key());
    out.batch.instance_event_at(i, name, "VolumeLost",
                   fmt::format("volume {} on {} dropped (--move-stateful): it starts elsewhere with empty volumes",
                               fmt::join(held, ", "), name),
                   "Warning");
  }
  std::string msg = fmt::format("marked down ({}): its {} instance(s) are requeued", why, on);
  if (stateful && !move_stateful) msg += fmt::format("; {} stateful instance(s) wait for it (their volumes are here)", stateful);
  node_event(out.batch, name, "NodeDown", msg, "Warning");
  return out;
}

Result<NodeChange> decide_node_recover(const ClusterState& state, const std::string& name) {
  auto found = known_node(state, name);
  if (!found) return fail(found.error());
  const Node& n = **found;
  NodeChange out;
  if (n.state != NodeState::Down) {
    out.changed = false;
    out.note = fmt::format("node {} is not down ({})", name, node_state_name(n.state));
    return out;
  }
  Node changed = n;
  changed.state = n.draining ? NodeState::Cordoned : NodeState::Ready;
  changed.down_reason.clear();
  out.batch.put_nodes.push_back(changed);
  size_t waiting = 0;
  for (const auto& i : state.snapshot.instances)
    if (i.state == InstanceState::Pending && !volume_names_on(i, name).empty()) ++waiting;
  node_event(out.batch, name, "NodeRecovered",
             fmt::format("{}; {} instance(s) waiting for it", n.draining ? "back, still cordoned and draining" : "ready again",
                         waiting));
  return out;
}

WhatIf report_moves(const ClusterState& before, const std::vector<std::string>& nodes, const ClusterState& after,
                    const Batch& run_batch) {
  WhatIf w;
  std::unordered_map<std::string, const Instance*> now;
  for (const auto& i : after.snapshot.instances) now[i.key()] = &i;
  std::set<std::string> changed(nodes.begin(), nodes.end());
  std::map<std::string, std::map<std::string, std::string>> blockers;  // node -> instance -> why
  for (const auto& n : nodes)
    for (const auto& bl : drain_blockers(after, n)) blockers[n][bl.instance] = bl.reason;
  auto describe = [&](const std::string& key, const std::string& from) {
    MoveReport r{key, from, "", "Deleted", "", ""};
    auto it = now.find(key);
    if (it == now.end()) return r;
    const Instance& a = *it->second;
    r.to = a.node;
    r.state = std::string(instance_state_name(a.state));
    if (a.node.empty()) {
      r.reason = a.pending_reason;
    } else if (a.node == from) {
      auto b = blockers[from].find(key);
      r.reason = b != blockers[from].end() ? b->second : "";
    } else if (const Node* n = after.find_node(a.node)) {
      r.locality = locality_text(after, a, *n);
    }
    return r;
  };
  std::set<std::string> reported;
  for (const auto& i : before.snapshot.instances) {
    if (i.node.empty() || !changed.count(i.node) || i.state == InstanceState::Succeeded) continue;
    w.moves.push_back(describe(i.key(), i.node));
    reported.insert(i.key());
  }
  for (const auto& e : run_batch.events) {
    if (e.reason != "Preempted" || reported.count(e.instance)) continue;
    reported.insert(e.instance);
    MoveReport r = describe(e.instance, e.node);
    if (r.reason.empty()) r.reason = e.message;
    w.preempted.push_back(std::move(r));
  }
  return w;
}

WhatIf what_if(const ClusterState& before, const Batch& change, const ControllerContext& ctx) {
  ClusterState changed = apply_batch(before, change);
  // Where things end up once a healthy backend has started what the controllers place.
  ReconcileOutcome outcome = reconcile_with_healthy_backend(changed, ctx);
  std::vector<std::string> nodes;
  for (const auto& n : change.put_nodes) nodes.push_back(n.name);
  WhatIf w = report_moves(before, nodes, outcome.after, outcome.batch);
  w.outcome = std::move(outcome);
  return w;
}

}  // namespace gaia
