#include "controllers/inventory.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "controllers/migration.hpp"
#include "controllers/node_ops.hpp"

namespace gaia {

namespace {

// What the backend owns of a node; the rest (state, draining, volume groups, port
// range) is gaia's own bookkeeping and is kept.
bool same_description(const Node& a, const Node& b) {
  return a.address == b.address && a.capacity == b.capacity && a.labels == b.labels && a.zone == b.zone &&
         a.rack == b.rack && a.switch_ == b.switch_ && a.instance_subnet == b.instance_subnet &&
         a.volume_groups.size() == b.volume_groups.size();
}

std::string describe_change(const Node& before, const Node& after) {
  std::vector<std::string> parts;
  if (before.capacity != after.capacity) parts.push_back("capacity");
  if (before.labels != after.labels) parts.push_back("labels");
  if (before.address != after.address) parts.push_back("address");
  if (before.zone != after.zone || before.rack != after.rack || before.switch_ != after.switch_)
    parts.push_back("topology");
  if (before.instance_subnet != after.instance_subnet) parts.push_back("instance subnet");
  return fmt::format("{} changed on the backend", fmt::join(parts, ", "));
}

// Applies `change` to the running state so later steps decide on it.
void take(ClusterState& st, Batch& out, Batch change) {
  st = apply_batch(std::move(st), change);
  st.seq += static_cast<int64_t>(change.events.size());
  merge_batch(out, std::move(change));
}

std::string seconds_text(int64_t ms) { return fmt::format("{}s", (ms + 999) / 1000); }

// Cordons (or uncordons) `name` for the backend's reason: recorded in cordon_reason so
// only the backend lifts its own cordons, never one a user or a drain set.
void backend_cordon(ClusterState& st, Batch& out, const std::string& name, bool cordon, const std::string& why) {
  auto change = decide_node_cordon(st, {name}, cordon);
  if (!change || !change->changed) return;
  for (auto& n : change->batch.put_nodes)
    if (n.name == name) n.cordon_reason = cordon ? why : "";
  for (auto& e : change->batch.events) e.message = fmt::format("{}: {}", why, e.message);
  take(st, out, std::move(change->batch));
}

}  // namespace

ControllerResult sync_inventory(const ClusterState& state, const std::vector<InventoryNode>& inventory,
                                const ControllerContext& ctx) {
  ControllerResult out;
  // No nodes at all is far more likely a selector that matches nothing, or an API server
  // being rebuilt, than a cluster whose every machine went: decide nothing on it.
  if (inventory.empty()) return out;
  ClusterState st = state;
  const int64_t timeout = std::max<int64_t>(ctx.options.heartbeat_timeout_ms, 1);

  // New nodes one by one, so one the store refuses (an address already used) does not
  // hold the others back.
  std::set<std::string> seen;
  for (const auto& inv : inventory) {
    seen.insert(inv.node.name);
    if (st.find_node(inv.node.name)) continue;
    Node n = inv.node;
    n.state = inv.unschedulable ? NodeState::Cordoned : NodeState::Ready;
    if (inv.unschedulable) n.cordon_reason = fmt::format("{}: unschedulable", k_inventory_down_prefix);
    auto change = decide_node_add(st, {n});
    if (change) take(st, out.batch, std::move(change->batch));
    else
      for (const auto& d : change.error()) {
        auto& e = out.batch.event("NodeSyncFailed",
                                  fmt::format("node {} of the backend is not added: {}", n.name, d.message), "Warning");
        e.node = n.name;
      }
  }

  for (const auto& inv : inventory) {
    const Node* have = st.find_node(inv.node.name);
    if (!have) continue;  // Refused above, already reported.
    if (!same_description(*have, inv.node)) {
      Node n = *have;
      std::string what = describe_change(n, inv.node);
      n.address = inv.node.address;
      n.capacity = inv.node.capacity;
      n.labels = inv.node.labels;
      n.zone = inv.node.zone;
      n.rack = inv.node.rack;
      n.switch_ = inv.node.switch_;
      n.instance_subnet = inv.node.instance_subnet;
      if (n.volume_groups.size() != inv.node.volume_groups.size()) n.volume_groups = inv.node.volume_groups;
      Batch b;
      b.put_nodes.push_back(n);
      auto& e = b.event("NodeUpdated", what);
      e.node = n.name;
      take(st, out.batch, std::move(b));
      have = st.find_node(inv.node.name);
    }
    bool ours = have->cordon_reason.starts_with(k_inventory_down_prefix);
    if (inv.unschedulable && have->state == NodeState::Ready)
      backend_cordon(st, out.batch, have->name, true, fmt::format("{}: unschedulable", k_inventory_down_prefix));
    else if (!inv.unschedulable && have->state == NodeState::Cordoned && !have->draining && ours)
      backend_cordon(st, out.batch, have->name, false, fmt::format("{}: schedulable again", k_inventory_down_prefix));
    have = st.find_node(inv.node.name);
    if (!inv.ready && have->state != NodeState::Down) {
      // Unknown since when: count from now, so a node first seen not ready gets the
      // whole timeout to come back.
      int64_t since = inv.not_ready_since_ms > 0 ? inv.not_ready_since_ms : ctx.now_ms;
      int64_t silent = ctx.now_ms - since;
      if (silent <= timeout) {
        int64_t due = since + timeout + 1;
        if (out.wake_at_ms == 0 || due < out.wake_at_ms) out.wake_at_ms = due;
        continue;
      }
      std::string why = fmt::format("{}: node not ready for {} (timeout {}){}", k_inventory_down_prefix,
                                    seconds_text(silent), seconds_text(timeout),
                                    inv.not_ready_reason.empty() ? "" : ": " + inv.not_ready_reason);
      auto change = decide_node_fail(st, have->name, false, why);
      if (change && change->changed) take(st, out.batch, std::move(change->batch));
    } else if (inv.ready && have->state == NodeState::Down &&
               have->down_reason.starts_with(k_inventory_down_prefix)) {
      auto change = decide_node_recover(st, have->name);
      if (change && change->changed) {
        for (auto& e : change->batch.events) e.message = "ready again on the backend: " + e.message;
        take(st, out.batch, std::move(change->batch));
      }
    }
  }

  // A node the backend no longer lists (deleted, or a label a --node-selector needs was
  // taken off) is only cordoned: what runs there stays, since a pod on a deleted node
  // is the kubelet's and the node lifecycle controller's to end, and a relabelled node
  // still runs it. Listed again, it opens.
  for (const auto& n : state.snapshot.nodes) {
    if (seen.count(n.name)) continue;
    const Node* have = st.find_node(n.name);
    if (!have || have->state != NodeState::Ready) continue;
    backend_cordon(st, out.batch, n.name, true,
                   fmt::format("{}: the backend no longer lists it (deleted, or no longer selected)",
                               k_inventory_down_prefix));
  }
  return out;
}

}  // namespace gaia
