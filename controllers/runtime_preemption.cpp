#include "controllers/runtime_preemption.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "controllers/filters.hpp"
#include "controllers/lifecycle.hpp"
#include "controllers/runtime_util.hpp"

namespace gaia {

namespace {

// What an instance counts for on its node: observed usage, else its request.
const Resources& used(const Instance& i) { return i.usage ? *i.usage : i.request; }

// An instance running on the node being looked at, with its key made once (the order
// below compares keys of every pair that ties).
struct Member {
  const Instance* i;
  std::string key;
};

// Lowest priority first; among equals the most recently started (the least work lost),
// then by key so the order is total.
bool kill_before(const Member& a, const Member& b) {
  if (a.i->priority != b.i->priority) return a.i->priority < b.i->priority;
  if (a.i->started_ms != b.i->started_ms) return a.i->started_ms > b.i->started_ms;
  return a.key < b.key;
}


void oom_kill(Instance& x, std::string why) {
  x.state = InstanceState::Failed;
  x.failure = std::move(why);
  x.internal_failure = false;
  x.restart_at_ms = 0;
  x.usage.reset();
  x.throttled = false;
}

}  // namespace

ControllerResult preempt_at_runtime(const ClusterState& state, const ControllerContext&) {
  ControllerResult out;
  std::unordered_map<std::string, std::vector<const Instance*>> on_node;
  for (const auto& i : state.snapshot.instances)
    if (running_on_node(i)) on_node[i.node].push_back(&i);

  // Instances of the snapshot, by address: every decision below is about one of them.
  std::unordered_set<const Instance*> killed;
  std::unordered_set<const Instance*> throttle;
  std::unordered_map<std::string, int64_t> node_cpu;  // Usage of what was not killed.
  for (const auto& n : state.snapshot.nodes) {
    auto it = on_node.find(n.name);
    // What runs on a down node is the migration controller's business.
    if (it == on_node.end() || n.state == NodeState::Down) continue;
    // Most nodes need nothing: no copy above its limit, memory and cpu within capacity.
    // Their instances need no order (the sort below makes a key for every one).
    bool over_limit = false;
    int64_t memory_in_use = 0, cpu_in_use = 0;
    for (const Instance* v : it->second) {
      over_limit |= v->limit && v->usage && v->usage->memory_bytes > v->limit->memory_bytes;
      memory_in_use += used(*v).memory_bytes;
      cpu_in_use += used(*v).cpu_millis;
    }
    if (!over_limit && !(n.capacity.memory_bytes > 0 && memory_in_use > n.capacity.memory_bytes) &&
        !(n.capacity.cpu_millis > 0 && cpu_in_use > n.capacity.cpu_millis)) {
      node_cpu[n.name] = cpu_in_use;
      continue;
    }
    std::vector<Member> members;
    members.reserve(it->second.size());
    for (const Instance* i : it->second) members.push_back({i, i->key()});
    std::sort(members.begin(), members.end(), kill_before);

    // A copy above the memory limit its role declared is killed by its cgroup, whatever
    // its priority and however much room the node has. Roles without `limits` keep the
    // usage model's older meaning in the sim: usage above the request shows (reclamation
    // reports it as OverRequest) and only node pressure kills (docs/decisions.md).
    for (const auto& [v, key] : members) {
      if (!v->limit || !v->usage || v->usage->memory_bytes <= v->limit->memory_bytes) continue;
      killed.insert(v);
      Instance x = *v;
      oom_kill(x, fmt::format("out of memory: used {}, above its limit of {}", sched::format_size(v->usage->memory_bytes),
                              sched::format_size(v->limits().memory_bytes)));
      out.batch.instance_event(*v, "OOMKilled", fmt::format("killed: {}", x.failure), "Warning");
      out.batch.put_instances.push_back(std::move(x));
    }

    int64_t memory = 0;
    for (const auto& m : members)
      if (!killed.count(m.i)) memory += used(*m.i).memory_bytes;
    if (n.capacity.memory_bytes > 0 && memory > n.capacity.memory_bytes) {
      int64_t before = memory;
      std::string pressure = fmt::format("node {} out of memory (usage {} > capacity {})", n.name,
                                         sched::format_size(before), sched::format_size(n.capacity.memory_bytes));
      // Preemptible nonprod work goes first. If that is not enough, the copies of
      // Burstable roles using more than they requested (borrowing up to their limits) go,
      // lowest priority first: a copy within its request is never killed for pressure.
      for (int pass = 0; pass < 2; ++pass)
        for (const auto& [v, key] : members) {
          if (memory <= n.capacity.memory_bytes) break;
          if (killed.count(v)) continue;
          bool over_request = v->usage && v->usage->memory_bytes > v->request.memory_bytes;
          bool victim = pass == 0 ? v->priority.band == Band::Nonprod && v->priority.preemptible
                                 : v->limit.has_value() && over_request;
          if (!victim) continue;
          memory -= used(*v).memory_bytes;
          killed.insert(v);
          Instance x = *v;
          if (over_request) {
            oom_kill(x, fmt::format("out of memory: used {} of {} requested", sched::format_size(v->usage->memory_bytes),
                                    sched::format_size(v->request.memory_bytes)));
            out.batch.instance_event(*v, "OOMKilled", fmt::format("{}; killed: {}", pressure, x.failure), "Warning");
          } else {
            evict_instance(x, fmt::format("killed: node {} out of memory", n.name));
            out.batch.instance_event(*v, "Preempted",
                                     fmt::format("killed: {}; lowest-priority nonprod work goes first; back in the queue",
                                                 pressure),
                                     "Warning");
          }
          out.batch.put_instances.push_back(std::move(x));
        }
    }

    int64_t cpu = 0;
    for (const auto& m : members)
      if (!killed.count(m.i)) cpu += used(*m.i).cpu_millis;
    node_cpu[n.name] = cpu;
    for (const auto& m : members) {
      if (n.capacity.cpu_millis <= 0 || cpu <= n.capacity.cpu_millis) break;
      if (killed.count(m.i)) continue;
      throttle.insert(m.i);
      cpu -= used(*m.i).cpu_millis;
    }
  }

  for (const auto& i : state.snapshot.instances) {
    if (killed.count(&i)) continue;
    bool want = throttle.count(&i) > 0;
    if (want == i.throttled) continue;
    Instance x = i;
    x.throttled = want;
    out.batch.put_instances.push_back(x);
    // A stopped instance simply is not throttled any more; that needs no event.
    if (!running_on_node(i)) continue;
    int64_t cpu = node_cpu[i.node];
    const Node* n = state.find_node(i.node);
    int64_t cap = n ? n->capacity.cpu_millis : 0;
    if (want)
      out.batch.instance_event(i, "Throttled",
                     fmt::format("node {} cpu usage {} > capacity {}: throttled (cpu shortage never kills)", i.node,
                                 sched::format_millis(cpu), sched::format_millis(cap)),
                     "Warning");
    else
      out.batch.instance_event(i, "Unthrottled",
                     fmt::format("node {} has cpu to spare again (usage {} of {})", i.node, sched::format_millis(cpu),
                                 sched::format_millis(cap)),
                     "Normal");
  }
  return out;
}

}  // namespace gaia
