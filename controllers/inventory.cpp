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

}  // namespace

ControllerResult sync_inventory(const ClusterState& state, const std::vector<InventoryNode>& inventory,
                                const ControllerContext& ctx) {
  ControllerResult out;
  ClusterState st = state;
  const int64_t timeout = std::max<int64_t>(ctx.options.heartbeat_timeout_ms, 1);

  std::vector<Node> added;
  std::set<std::string> seen;
  for (const auto& inv : inventory) {
    seen.insert(inv.node.name);
    const Node* have = st.find_node(inv.node.name);
    if (!have) {
      Node n = inv.node;
      n.state = inv.unschedulable ? NodeState::Cordoned : NodeState::Ready;
      added.push_back(std::move(n));
    }
  }
  if (!added.empty()) {
    auto change = decide_node_add(st, added);
    if (change) take(st, out.batch, std::move(change->batch));
    else
      for (const auto& d : change.error())
        out.batch.event("NodeSyncFailed", fmt::format("a node of the backend could not be added: {}", d.message),
                        "Warning");
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
    if (inv.unschedulable && have->state == NodeState::Ready) {
      auto change = decide_node_cordon(st, {have->name}, true);
      if (change && change->changed) {
        for (auto& e : change->batch.events) e.message = "cordoned on the backend (unschedulable): " + e.message;
        take(st, out.batch, std::move(change->batch));
      }
    } else if (!inv.unschedulable && have->state == NodeState::Cordoned && !have->draining) {
      auto change = decide_node_cordon(st, {have->name}, false);
      if (change && change->changed) {
        for (auto& e : change->batch.events) e.message = "uncordoned on the backend: " + e.message;
        take(st, out.batch, std::move(change->batch));
      }
    }
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

  for (const auto& n : state.snapshot.nodes) {
    if (seen.count(n.name)) continue;
    const Node* have = st.find_node(n.name);
    if (!have || have->state == NodeState::Down) continue;
    auto change = decide_node_fail(st, n.name, false,
                                   fmt::format("{}: the node object was deleted", k_inventory_down_prefix));
    if (change && change->changed) take(st, out.batch, std::move(change->batch));
  }
  return out;
}

}  // namespace gaia
