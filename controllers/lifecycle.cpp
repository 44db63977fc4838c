#include "controllers/lifecycle.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "controllers/app_health.hpp"
#include "controllers/runtime_util.hpp"
#include "controllers/submit.hpp"
#include "lib/key_index.hpp"

namespace gaia {

namespace {

std::string app_id(const std::string& tenant, const std::string& app) { return tenant + "/" + app; }

std::string env_name(std::string_view text);

// The <APP> of GAIA_DEP_<APP>_*: the app the dependency runs, whatever release it is bound
// to (a program reads GAIA_DEP_KV_*, wherever kv runs), or its alias where the app
// depends on two releases of one app.
std::string dependency_env_name(const AppRecord& a, const std::string& dependency) {
  const RunningRequirement* bound = nullptr;
  for (const auto& r : a.dependency_ranges)
    if (r.target() == dependency) bound = &r;
  if (!bound) return env_name(dependency);  // Recorded before releases: the app's name.
  for (const auto& r : a.dependency_ranges)
    if (&r != bound && r.name == bound->name && !bound->alias.empty()) return env_name(bound->alias);
  return env_name(bound->name);
}

// "GAIA_OUTPUT_ZOOKEEPER_QUORUM": upper case, anything but letters and digits as '_'.
std::string env_name(std::string_view text) {
  std::string out;
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
  return out;
}

const Role* role_of(const ClusterState& state, const Instance& i) {
  auto it = state.snapshot.roles.find(i.tenant + "/" + i.app + "/" + i.role);
  return it == state.snapshot.roles.end() ? nullptr : &it->second;
}

bool stateful(const ClusterState& state, const Instance& i) {
  if (!i.volumes.empty()) return true;
  const Role* r = role_of(state, i);
  return r && r->stateful();
}

void fail_instance(Instance& x, const ObservedCopy& c) {
  x.state = InstanceState::Failed;
  x.exit_code = c.exit_code;
  x.failure = !c.reason.empty() ? c.reason
              : c.phase == CopyPhase::Exited ? fmt::format("exited with code {}", c.exit_code)
                                              : "failed";
  x.internal_failure = c.internal;
  x.restart_at_ms = 0;
  x.usage.reset();
  x.throttled = false;
}

}  // namespace

namespace {

// Whether stopping copy `c` is a voluntary disruption of an instance that lives on (a
// migration, a drain, a rebalance, a make-before-break replacement), which a backend
// with disruption budgets may refuse for now. A deletion, a scale-down, preemption, an
// out-of-memory kill, a leftover, room needed at once, and a node that is down are not.
bool voluntary_move(const ClusterState& state, const Instance* i, const ObservedCopy& c, const std::string& why);

// The observed copies of each instance, in observation order, found by the instance's
// key (this runs on every round of every command's controllers, 50,000 lookups in a
// 50,000-copy observation). A backend that reports its copies in key order (sim keeps
// them in a sorted map) is searched in place, from where the last lookup ended: the
// state's instances are in key order too, so a pass over them walks the observation
// once, with no table at all. Other observations get a flat hash table
// (lib/key_index.hpp) of views of their own keys, with the copies of one instance
// chained by position.
class CopiesByInstance {
 public:
  explicit CopiesByInstance(const Observation& obs) : m_copies(obs.copies) {
    m_sorted = std::is_sorted(m_copies.begin(), m_copies.end(),
                              [](const ObservedCopy& a, const ObservedCopy& b) { return a.instance < b.instance; });
    if (!m_sorted) {
      std::vector<std::string_view> keys;
      keys.reserve(m_copies.size());
      for (const auto& c : m_copies) keys.emplace_back(c.instance);
      m_index = KeyIndex(std::move(keys));
    }
  }
  // The position of the first copy of the instance with key `key`, or -1.
  int first(std::string_view key) const {
    if (!m_sorted) return m_index.first(key);
    auto less = [](const ObservedCopy& c, std::string_view k) { return std::string_view(c.instance) < k; };
    auto begin = m_copies.begin(), end = m_copies.end();
    auto from = begin + static_cast<std::ptrdiff_t>(m_cursor);
    auto it = from;
    if (from != begin && !less(*(from - 1), key)) {
      it = std::lower_bound(begin, from, key, less);  // Behind the last lookup.
    } else {
      // Ahead: a few steps, as a lookup in key order finds its copy next, then a search.
      int steps = 0;
      while (it != end && less(*it, key) && ++steps <= 4) ++it;
      if (it != end && less(*it, key)) it = std::lower_bound(it, end, key, less);
    }
    m_cursor = static_cast<size_t>(it - begin);
    return it != end && it->instance == key ? static_cast<int>(it - begin) : -1;
  }
  // The position of the next copy of the same instance, or -1.
  int next(int k) const {
    if (!m_sorted) return m_index.next(k);
    auto n = static_cast<size_t>(k) + 1;
    return n < m_copies.size() && m_copies[n].instance == m_copies[static_cast<size_t>(k)].instance ? static_cast<int>(n)
                                                                                                     : -1;
  }
  const ObservedCopy& at(int k) const { return m_copies[static_cast<size_t>(k)]; }

 private:
  const std::vector<ObservedCopy>& m_copies;
  bool m_sorted = false;
  KeyIndex m_index;           // Only for an observation out of key order.
  mutable size_t m_cursor = 0;  // Where the last lookup of a sorted observation ended.
};

bool voluntary_move(const ClusterState& state, const Instance* i, const ObservedCopy& c, const std::string& why) {
  if (!i || !c.live()) return false;
  if (why.starts_with("its room on") || why.starts_with("leftover")) return false;
  if (i->pending_reason.starts_with("preempted") || i->pending_reason.starts_with("killed")) return false;
  const Node* n = state.find_node(c.node);
  return n && n->state != NodeState::Down;
}

// What the statuses of the `touched` apps are computed on once `b` (puts of existing
// instances) is applied: their records, their instances with the puts applied, and the
// nodes that are down; nothing of the other apps, so an observation of a large cluster
// does not copy it all to set a few statuses.
ClusterState touched_after(const ClusterState& state, const Batch& b,
                           const std::set<std::pair<std::string, std::string>>& touched) {
  ClusterState part;
  part.seq = state.seq;
  for (const auto& n : state.snapshot.nodes)
    if (n.state == NodeState::Down) part.snapshot.nodes.push_back(n);
  for (const auto& [tenant, app] : touched)
    if (auto it = state.apps.find(app_id(tenant, app)); it != state.apps.end()) part.apps.emplace(it->first, it->second);
  std::unordered_map<std::string, const Instance*> put;
  for (const auto& i : b.put_instances) put[i.key()] = &i;
  std::string key;
  const Instance* run = nullptr;  // Instances come grouped by app: looked up once a run.
  bool in = false;
  for (const auto& i : state.snapshot.instances) {
    if (!run || run->app != i.app || run->tenant != i.tenant) {
      run = &i;
      in = touched.count({i.tenant, i.app}) > 0;
    }
    if (!in) continue;
    i.key_into(key);
    auto it = put.find(key);
    part.snapshot.instances.push_back(it == put.end() ? i : *it->second);
  }
  return part;
}

}  // namespace

void evict_instance(Instance& i, std::string reason, bool node_down) {
  bool live = !i.node.empty() && (i.state == InstanceState::Placed || i.state == InstanceState::Running ||
                                  i.state == InstanceState::Terminating);
  if (live && !i.volumes.empty() && !node_down) {
    // The copy may still write to the volume: the instance holds its node until the
    // backend reports the copy gone (observe_instances then requeues it).
    i.state = InstanceState::Terminating;
    i.pending_reason = std::move(reason);
    i.usage.reset();
    i.throttled = false;
    return;
  }
  requeue_instance(i, std::move(reason));
}

void bind_instance(Instance& i, const std::string& node) {
  i.node = node;
  i.state = InstanceState::Placed;
  ++i.generation;
  i.pending_reason.clear();
  // `failure` and `exit_code` stay: the last failure, for `gaia describe`.
  i.started_ms = 0;
  i.usage.reset();
  i.reservation.reset();
  i.throttled = false;
  i.snapped_back_ms = 0;
}

Batch observe_instances(const ClusterState& state, const Observation& obs, int64_t now_ms) {
  Batch b;
  const CopiesByInstance copies(obs);
  std::unordered_set<std::string> unreachable;
  for (const auto& n : obs.nodes)
    if (!n.reachable) unreachable.insert(n.name);
  std::set<std::pair<std::string, std::string>> touched;

  std::string key;
  for (const auto& i : state.snapshot.instances) {
    if (i.node.empty()) continue;
    i.key_into(key);
    const ObservedCopy* current = nullptr;
    bool any_live = false;
    for (int k = copies.first(key); k >= 0; k = copies.next(k)) {
      const ObservedCopy* c = &copies.at(k);
      any_live |= c->live();
      if (c->node == i.node && c->generation == i.generation) current = c;
    }
    // Most instances are as observed: copied only when one changes.
    std::optional<Instance> changed;
    auto edit = [&]() -> Instance& {
      if (!changed) changed = i;
      return *changed;
    };
    switch (i.state) {
      case InstanceState::Placed:
      case InstanceState::Running: {
        if (!current) {
          // Not started yet (Placed) or gone without a trace (Running) — unless its node
          // is out of reach, when nothing is known about it.
          if (i.state == InstanceState::Placed || unreachable.count(i.node)) break;
          ObservedCopy lost;
          lost.phase = CopyPhase::Failed;
          lost.internal = true;
          lost.reason = fmt::format("lost: the backend no longer reports its copy on {}", i.node);
          Instance& x = edit();
          fail_instance(x, lost);
          b.instance_event(x, "Lost", fmt::format("{} (gaia's own failure: does not count against retry_times)", x.failure),
                           "Warning");
          break;
        }
        if (current->phase == CopyPhase::Running) {
          int64_t started = current->started_ms ? current->started_ms : (i.started_ms ? i.started_ms : now_ms);
          // A backend that addresses its copies itself (Kubernetes: the pod IP) has the
          // last word on where the instance answers.
          bool readdressed = !current->address.empty() && current->address != i.address;
          if (i.state == InstanceState::Placed) {
            Instance& x = edit();
            if (readdressed) x.address = current->address;
            x.state = InstanceState::Running;
            x.started_ms = started;
            x.usage = current->usage;
            b.instance_event(x, "Started", fmt::format("running on {}{}", i.node,
                                                      x.address.empty() ? "" : ", address " + x.address));
          } else if (readdressed || i.usage != current->usage || i.started_ms != started) {
            // An observation, not an action: what acts on usage records its own events.
            Instance& x = edit();
            if (readdressed) x.address = current->address;
            x.usage = current->usage;
            x.started_ms = started;
          }
        } else if (current->phase == CopyPhase::Exited && current->exit_code == 0 &&
                   [&] { const Role* r = role_of(state, i); return r && r->kind == "batch"; }()) {
          Instance& x = edit();
          x.state = InstanceState::Succeeded;
          x.exit_code = 0;
          x.usage.reset();
          x.throttled = false;
          b.instance_event(x, "Completed", fmt::format("exited with code 0 on {}", i.node));
        } else if (current->phase == CopyPhase::Exited || current->phase == CopyPhase::Failed) {
          Instance& x = edit();
          fail_instance(x, *current);
          b.instance_event(x, "Failed",
                           x.internal_failure
                               ? fmt::format("internal failure: {} (gaia's own fault: does not count against "
                                             "retry_times)",
                                             x.failure)
                               : fmt::format("exited: {}", x.failure),
                           "Warning");
        }
        break;
      }
      case InstanceState::Terminating:
        if (!any_live) {
          std::string node = i.node;
          std::string reason = i.pending_reason.empty() ? "stopped" : i.pending_reason;
          Instance& x = edit();
          requeue_instance(x, reason);
          b.instance_event_at(x, node, "Stopped", fmt::format("its copy on {} stopped; back in the queue", node));
        }
        break;
      default:
        break;
    }
    if (changed) {
      b.put_instances.push_back(std::move(*changed));
      touched.insert({i.tenant, i.app});
    }
  }
  if (!b.put_instances.empty()) sync_app_statuses(touched_after(state, b, touched), touched, b);
  return b;
}

Observation healthy_observation(const ClusterState& state, int64_t now_ms) {
  Observation obs;
  for (const auto& i : state.snapshot.instances) {
    if (i.node.empty() || (i.state != InstanceState::Placed && i.state != InstanceState::Running)) continue;
    ObservedCopy c;
    c.instance = i.key();
    c.node = i.node;
    c.generation = i.generation;
    c.phase = CopyPhase::Running;
    c.started_ms = i.started_ms ? i.started_ms : now_ms;
    c.usage = i.usage;
    obs.copies.push_back(std::move(c));
  }
  return obs;
}

ReconcileOutcome reconcile_with_backend_model(const ClusterState& state, const ControllerContext& ctx,
                                             const ObservationModel& observe,
                                             const std::vector<NamedController>& controllers, int max_rounds) {
  ReconcileOutcome total;
  total.after = state;
  total.converged = false;
  std::set<std::string> active;
  for (int round = 0; round < max_rounds; ++round) {
    auto r = reconcile(std::move(total.after), ctx, controllers);
    total.passes += r.passes;
    for (const auto& a : r.active) active.insert(a);
    total.after = std::move(r.after);
    merge_batch(total.batch, r.batch);
    Observation obs = observe(total.after, ctx.now_ms);
    total.wake_at_ms = r.wake_at_ms == 0   ? obs.wake_at_ms
                       : obs.wake_at_ms == 0 ? r.wake_at_ms
                                             : std::min(r.wake_at_ms, obs.wake_at_ms);
    Batch b = observe_instances(total.after, obs, ctx.now_ms);
    if (r.batch.empty() && b.empty()) {
      total.converged = true;
      break;
    }
    total.after = apply_batch(std::move(total.after), b);
    total.after.seq += static_cast<int64_t>(b.events.size());
    merge_batch(total.batch, std::move(b));
  }
  total.active.assign(active.begin(), active.end());
  return total;
}

ReconcileOutcome reconcile_with_healthy_backend(const ClusterState& state, const ControllerContext& ctx) {
  return reconcile_with_backend_model(state, ctx, &healthy_observation);
}

// An app's dependents may start once each of its roles serves the instances it needs
// (controllers/app_health.hpp), so one stuck instance does not hold up the chain.
StartGates::StartGates(const ClusterState& state) : m_state(state) {
  AppHealthIndex health(state);
  for (const auto& [id, a] : state.apps) add(health, id, a);
}

StartGates::StartGates(const ClusterState& state, const std::vector<const Instance*>& instances) : m_state(state) {
  std::unordered_set<std::string> ids;
  for (const Instance* i : instances)
    if (const AppRecord* a = state.find_app(i->tenant, i->app)) {
      for (const auto& d : a->dependencies) ids.insert(dependency_id(i->tenant, d));
      ids.insert(app_id(i->tenant, i->app));
    }
  if (ids.empty()) return;
  AppHealthIndex health(state, ids);
  for (const auto& id : ids)
    if (auto it = state.apps.find(id); it != state.apps.end()) add(health, it->first, it->second);
}

void StartGates::add(const AppHealthIndex& health, const std::string& id, const AppRecord& a) {
  if (health.available(a)) m_ready_apps.insert(id);
  // Roles serving the instances they need, only for apps where a role waits on one.
  bool ordered =
      std::any_of(a.workload.roles.begin(), a.workload.roles.end(), [](const Role& r) { return !r.after.empty(); });
  if (!ordered) return;
  for (const auto& r : health.roles(a))
    if (r.serving >= r.needed) m_available_roles.insert(id + "/" + r.role);
}

std::string StartGates::reason(const Instance& i) const {
  std::vector<std::string> waiting;
  if (const AppRecord* a = m_state.find_app(i.tenant, i.app))
    for (const auto& d : a->dependencies)
      if (!m_ready_apps.count(dependency_id(i.tenant, d))) waiting.push_back(d);
  if (!waiting.empty()) return fmt::format("waiting for dependency {} to be ready", fmt::join(waiting, ", "));
  if (const Role* r = role_of(m_state, i))
    for (const auto& before : r->after)
      if (!m_available_roles.count(app_id(i.tenant, i.app) + "/" + before)) waiting.push_back(before);
  if (!waiting.empty())
    return fmt::format("waiting for role {} of app {} to be ready (after)", fmt::join(waiting, ", "), i.app);
  return {};
}

Actuation plan_actuation(const ClusterState& state, const Observation& obs) {
  Actuation out;
  const CopiesByInstance copies(obs);
  std::unordered_set<std::string> down;
  for (const auto& n : state.snapshot.nodes)
    if (n.state == NodeState::Down) down.insert(n.name);
  // In one pass over the instances (each key made and looked up once):
  // - the instance each copy is of (the first with its key), or none: copies are matched
  //   from the instances' side, so no table of every instance's key is built;
  // - the bound instances that will not start at once and why, decided first: a node
  //   with one of them waiting needs its leftover copies gone. The gates come after this
  //   pass, which finds the instances that would start, so only their apps' health is
  //   weighed.
  std::vector<const Instance*> owner(obs.copies.size(), nullptr);
  struct Bound {
    const Instance* instance;
    std::string held;  // Why it waits whatever its gates say; empty: it passes to them.
  };
  std::vector<Bound> bound;
  std::vector<const Instance*> gated;
  std::string key;
  for (const auto& i : state.snapshot.instances) {
    i.key_into(key);
    const bool to_start = i.state == InstanceState::Placed && !i.node.empty() && !down.count(i.node);
    bool has_current = false, live_elsewhere = false;
    std::string elsewhere;
    for (int k = copies.first(key); k >= 0; k = copies.next(k)) {
      if (!owner[static_cast<size_t>(k)]) owner[static_cast<size_t>(k)] = &i;
      if (!to_start) continue;
      const ObservedCopy* c = &copies.at(k);
      if (c->node == i.node && c->generation == i.generation) has_current = true;
      else if (c->live()) {
        live_elsewhere = true;
        elsewhere = c->node;
      }
    }
    if (!to_start || has_current) continue;
    if (live_elsewhere && stateful(state, i)) {
      bound.push_back({&i, fmt::format("waiting for its copy on {} to stop (stateful: never two live copies)", elsewhere)});
      continue;
    }
    bound.push_back({&i, {}});
    gated.push_back(&i);
  }
  // A round that starts nothing weighs no app's health.
  std::optional<StartGates> gates;
  if (!gated.empty()) gates.emplace(state, gated);
  std::unordered_set<std::string> room_needed;
  for (auto& [ip, held] : bound) {
    const Instance& i = *ip;
    if (!held.empty()) {
      out.held.emplace_back(i.key(), std::move(held));
      continue;
    }
    if (std::string why = gates->reason(i); !why.empty()) {
      out.held.emplace_back(i.key(), std::move(why));
      continue;
    }
    room_needed.insert(i.node);
    StartSpec s;
    s.instance = i;
    if (const Role* r = role_of(state, i)) s.role = *r;
    if (const AppRecord* a = state.find_app(i.tenant, i.app)) {
      s.app_version = a->version;
      s.app_created = a->created;
      s.config = a->workload.config;
    }
    s.env = instance_env(state, i);
    out.starts.push_back(std::move(s));
  }

  for (size_t k = 0; k < obs.copies.size(); ++k) {
    const ObservedCopy& c = obs.copies[k];
    const Instance* i = owner[k];
    std::string why;
    if (!i) {
      why = "no longer wanted";
    } else if (c.node == i->node && c.generation == i->generation) {
      if (i->state == InstanceState::Terminating && c.live()) why = i->pending_reason.empty() ? "stopping" : i->pending_reason;
    } else if (!c.live()) {
      why = "leftover of an earlier placement";
    } else if (stateful(state, *i)) {
      why = i->node.empty() ? "taken off its node" : fmt::format("moving to {}", i->node);
    } else if (i->node.empty() || i->state == InstanceState::Pending || i->state == InstanceState::Failed) {
      why = "taken off its node";
    } else if (i->state == InstanceState::Running || i->state == InstanceState::Succeeded) {
      why = fmt::format("replaced by its copy on {}", i->node);
    } else if (room_needed.count(c.node)) {
      why = fmt::format("its room on {} is needed", c.node);
    }
    if (why.empty()) continue;
    StopSpec s;
    s.instance = c.instance;
    s.node = c.node;
    s.generation = c.generation;
    s.evict = voluntary_move(state, i, c, why);
    s.reason = std::move(why);
    // The role's grace as it is now; a copy of a deleted instance keeps its own.
    if (i)
      if (auto r = state.snapshot.roles.find(i->tenant + "/" + i->app + "/" + i->role); r != state.snapshot.roles.end())
        s.grace = std::chrono::milliseconds(std::max<int64_t>(r->second.grace_period_ms, 0));
    out.stops.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, std::string> instance_env(const ClusterState& state, const Instance& i) {
  std::map<std::string, std::string> env;
  env["GAIA_INSTANCE"] = i.key();
  env["GAIA_NAME"] = i.dns_name();
  env["GAIA_TENANT"] = i.tenant;
  env["GAIA_APP"] = i.app;
  env["GAIA_ROLE"] = i.role;
  env["GAIA_ORDINAL"] = std::to_string(i.ordinal);
  env["GAIA_NODE"] = i.node;
  env["GAIA_ADDRESS"] = i.address;
  for (const auto& [name, port] : i.ports) env["GAIA_PORT_" + env_name(name)] = std::to_string(port);
  if (const AppRecord* a = state.find_app(i.tenant, i.app))
    for (const auto& d : a->dependencies)
      if (const AppRecord* dep = state.find_app(i.tenant, d); dep && dep->workload.outputs.is_object())
        for (const auto& [k, v] : dep->workload.outputs.items())
          env["GAIA_DEP_" + dependency_env_name(*a, d) + "_" + env_name(k)] = v.is_string() ? v.get<std::string>() : v.dump();
  // Where the dependencies serve now: GAIA_DEP_<APP>_<ROLE>_<PORT> = "address:port" of
  // every serving instance (comma-separated, by ordinal). Outputs are rendered before
  // anything is placed, so they carry names; a process on a machine without gaia's DNS
  // connects to these. A dependent starts only once its dependencies serve, so the
  // list is complete when it starts.
  if (const AppRecord* a = state.find_app(i.tenant, i.app)) {
    std::map<std::string, std::vector<std::pair<int, std::string>>> endpoints;
    for (const auto& d : a->dependencies) {
      // TENANT/NAME: the release may be another tenant's.
      std::string id = dependency_id(i.tenant, d);
      auto of_dependency = [&](const Instance& x) {
        return id.size() == x.tenant.size() + 1 + x.app.size() && id.starts_with(x.tenant) &&
               id[x.tenant.size()] == '/' && id.ends_with(x.app);
      };
      for (const auto& x : state.snapshot.instances) {
        if (!of_dependency(x) || !serving(x) || x.address.empty()) continue;
        for (const auto& [port_name, port] : x.ports)
          endpoints["GAIA_DEP_" + dependency_env_name(*a, d) + "_" + env_name(x.role) + "_" + env_name(port_name)].emplace_back(
              x.ordinal, fmt::format("{}:{}", x.address, port));
      }
    }
    for (auto& [name, list] : endpoints) {
      std::sort(list.begin(), list.end());
      std::vector<std::string> parts;
      for (const auto& [ordinal, endpoint] : list) parts.push_back(endpoint);
      env[name] = fmt::format("{}", fmt::join(parts, ","));
    }
  }
  return env;
}

}  // namespace gaia
