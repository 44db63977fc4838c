#include "controllers/submit.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "controllers/scheduler.hpp"
#include "lib/topology.hpp"

namespace gaia {

std::string allocate_address(const Node& node, const std::vector<Instance>& instances) {
  if (node.instance_subnet.empty()) return "";
  auto prefix = gaia::parse_cidr(node.instance_subnet);
  if (!prefix) return "";
  std::set<unsigned __int128> used;
  for (const auto& i : instances) {
    if (i.node != node.name || i.address.empty()) continue;
    if (auto a = parse_address(i.address)) used.insert(a->bits);
  }
  int max_len = IpAddress::max_length(prefix->address.family);
  int host_bits = max_len - prefix->length;
  if (host_bits < 2) return "";
  // Bits are left-aligned in 128: one host step is 1 << (128 - max_len).
  unsigned __int128 step = static_cast<unsigned __int128>(1) << (128 - max_len);
  unsigned __int128 count = host_bits >= 64 ? (static_cast<unsigned __int128>(1) << 63) : (static_cast<unsigned __int128>(1) << host_bits);
  // Skip the network address (and, for IPv4, the broadcast address at the end).
  for (unsigned __int128 k = 1; k + 1 < count && k < 1000000; ++k) {
    IpAddress candidate{prefix->address.family, prefix->address.bits + k * step};
    if (!used.count(candidate.bits)) return candidate.to_string();
  }
  return "";
}

namespace {

struct Work {
  ClusterState state;
  SubmitOutcome out;

  Instance* find(const std::string& key) { return state.find_instance(key); }

  void put_instance(const Instance& i) {
    auto& v = out.batch.put_instances;
    for (auto& x : v)
      if (x.key() == i.key()) {
        x = i;
        return;
      }
    v.push_back(i);
  }

  TimelineEvent& event(const Instance& i, std::string reason, std::string message, std::string type = "Normal") {
    auto& e = out.batch.event(std::move(reason), std::move(message), std::move(type));
    e.tenant = i.tenant;
    e.app = i.app;
    e.role = i.role;
    e.instance = i.key();
    e.node = i.node;
    return e;
  }

  // Applies a scheduling decision to the working state and records it.
  void apply(const Decision& d, AppReport* report) {
    for (const auto& p : d.preemptions) {
      Instance* v = find(p.victim);
      if (!v) continue;
      std::string node = v->node;
      v->node.clear();
      v->address.clear();
      v->ports.clear();
      v->state = InstanceState::Pending;
      v->pending_reason = fmt::format("preempted by {} on {}", p.preemptor, node);
      put_instance(*v);
      auto& e = event(*v, "Preempted", fmt::format("evicted from {} to make room for {} (higher priority)", node, p.preemptor),
                      "Warning");
      e.node = node;
      if (report) report->preempted.push_back({p.victim, node, p.preemptor});
      ++out.preempted;
    }
    for (const auto& p : d.placements) {
      Instance* i = find(p.instance);
      if (!i) continue;
      const Node* node = state.find_node(p.node);
      i->node = p.node;
      i->ports = p.ports;
      for (const auto& b : p.volumes) i->volumes.push_back(b);
      i->pending_reason.clear();
      i->address = node ? allocate_address(*node, state.snapshot.instances) : "";
      // The sim backend starts a placed instance at once.
      i->state = InstanceState::Running;
      put_instance(*i);
      event(*i, "Scheduled", fmt::format("placed on {} (score {:.1f}), address {}", p.node, p.score,
                                         i->address.empty() ? "none" : i->address));
      if (report) report->placed.push_back({p.instance, p.node, i->address, p.score});
      ++out.placed;
    }
    for (const auto& u : d.unschedulable) {
      Instance* i = find(u.instance);
      if (!i) continue;
      bool changed = i->pending_reason != u.reason;
      i->pending_reason = u.reason;
      i->state = InstanceState::Pending;
      put_instance(*i);
      if (changed) event(*i, "FailedScheduling", u.reason, "Warning");
      if (report) report->pending.push_back({u.instance, u.reason});
      ++out.pending;
    }
  }

  bool app_ready(const std::string& tenant, const std::string& name) const {
    bool any = false;
    for (const auto& i : state.snapshot.instances) {
      if (i.tenant != tenant || i.app != name) continue;
      any = true;
      if (i.state != InstanceState::Running && i.state != InstanceState::Succeeded) return false;
    }
    const AppRecord* a = state.find_app(tenant, name);
    if (!a) return false;
    if (any) return true;
    // An app with no instances is ready only if it asks for none (all roles at zero).
    for (const auto& r : a->workload.roles)
      if (r.replicas > 0) return false;
    return true;
  }

  void set_app_status(const std::string& tenant, const std::string& name, AppReport* report) {
    auto it = state.apps.find(tenant + "/" + name);
    if (it == state.apps.end()) return;
    bool ready = app_ready(tenant, name);
    std::string status = ready ? "Ready" : "Pending";
    if (report) report->ready = ready;
    if (it->second.status == status) return;
    it->second.status = status;
    auto& v = out.batch.put_apps;
    bool found = false;
    for (auto& a : v)
      if (a.tenant == tenant && a.name == name) {
        a.status = status;
        found = true;
      }
    if (!found) v.push_back(it->second);
    auto& e = out.batch.event(ready ? "AppReady" : "AppPending",
                              ready ? "every instance is running" : "some instances are not running yet",
                              ready ? "Normal" : "Warning");
    e.tenant = tenant;
    e.app = name;
  }

  // Requeues victims and anything else pending whose dependencies are ready.
  void reschedule(const std::set<std::string>& skip_apps) {
    std::vector<std::string> pending;
    for (const auto& i : state.snapshot.instances) {
      if (i.state != InstanceState::Pending) continue;
      if (skip_apps.count(i.tenant + "/" + i.app)) continue;
      const AppRecord* a = state.find_app(i.tenant, i.app);
      bool deps_ready = true;
      if (a)
        for (const auto& d : a->dependencies)
          if (!app_ready(i.tenant, d)) deps_ready = false;
      if (deps_ready) pending.push_back(i.key());
    }
    if (pending.empty()) return;
    apply(schedule(state.snapshot, pending), nullptr);
  }
};

Instance make_instance(const AppRecord& app, const Role& role, int ordinal) {
  Instance i;
  i.tenant = app.tenant;
  i.app = app.name;
  i.role = role.name;
  i.ordinal = ordinal;
  i.request = role.resources;
  i.priority = role.priority;
  i.labels = role.labels;
  i.labels["gaia.io/app"] = app.name;
  i.labels["gaia.io/role"] = role.name;
  i.labels["gaia.io/tenant"] = app.tenant;
  i.labels["gaia.io/version"] = app.version;
  i.state = InstanceState::Pending;
  return i;
}

}  // namespace

SubmitOutcome plan_submit(const ClusterState& state, const std::vector<AppToDeploy>& apps) {
  Work w{state, {}};
  std::set<std::string> waiting_apps;
  for (const auto& to_deploy : apps) {
    AppRecord rec = to_deploy.record;
    AppReport report{rec.tenant, rec.name, rec.version, "deploy", {}, {}, {}, {}, false};
    const AppRecord* existing = w.state.find_app(rec.tenant, rec.name);
    if (existing && existing->workload.hash == rec.workload.hash && existing->version == rec.version) {
      report.action = "unchanged";
      report.ready = existing->status == "Ready";
      w.out.apps.push_back(std::move(report));
      continue;
    }
    if (existing) {
      report.action = "update";
      // Replace the instances of the previous render: a rolling update belongs to the
      // controllers; a submit of a changed spec starts the new instances afresh.
      std::vector<Instance> kept;
      for (const auto& i : w.state.snapshot.instances) {
        if (i.tenant == rec.tenant && i.app == rec.name) {
          w.out.batch.delete_instances.push_back(i.key());
          report.removed.push_back(i.key());
        } else {
          kept.push_back(i);
        }
      }
      w.state.snapshot.instances = std::move(kept);
    }
    rec.status = "Deploying";
    rec.created = existing ? existing->created : "";
    w.state.apps[rec.tenant + "/" + rec.name] = rec;
    for (const auto& role : rec.workload.roles) w.state.snapshot.roles[rec.tenant + "/" + rec.name + "/" + role.name] = role;
    w.out.batch.put_apps.push_back(rec);
    {
      auto& e = w.out.batch.event(existing ? "Updated" : "Submitted",
                                  existing ? fmt::format("{} -> {} (workload {})", existing->version, rec.version, rec.workload.hash.substr(0, 12))
                                           : fmt::format("version {}, workload {}", rec.version, rec.workload.hash.substr(0, 12)));
      e.tenant = rec.tenant;
      e.app = rec.name;
      auto& r = w.out.batch.event("Rendered", fmt::format("{} role(s), {} config read(s), hash {}", rec.workload.roles.size(),
                                                          rec.workload.reads.size(), rec.workload.hash));
      r.tenant = rec.tenant;
      r.app = rec.name;
    }
    std::vector<std::string> not_ready;
    for (const auto& d : rec.dependencies)
      if (!w.app_ready(rec.tenant, d)) not_ready.push_back(d);
    std::vector<std::string> keys;
    for (const auto& role : rec.workload.roles)
      for (int k = 0; k < role.replicas; ++k) {
        Instance i = make_instance(rec, role, k);
        if (!not_ready.empty())
          i.pending_reason = fmt::format("waiting for dependency {} to be ready", fmt::join(not_ready, ", "));
        keys.push_back(i.key());
        w.state.snapshot.instances.push_back(i);
        w.put_instance(i);
      }
    if (!not_ready.empty()) {
      for (const auto& k : keys) report.pending.push_back({k, w.find(k)->pending_reason});
      w.out.pending += keys.size();
      auto& e = w.out.batch.event("Waiting", fmt::format("not placed until {} ready", fmt::join(not_ready, ", ")), "Warning");
      e.tenant = rec.tenant;
      e.app = rec.name;
      waiting_apps.insert(rec.tenant + "/" + rec.name);
    } else if (!keys.empty()) {
      w.apply(schedule(w.state.snapshot, keys), &report);
      // Victims of this app's preemptions go back to the queue at once: they may fit
      // elsewhere.
      if (!report.preempted.empty()) {
        std::set<std::string> skip = waiting_apps;
        skip.insert(rec.tenant + "/" + rec.name);
        w.reschedule(skip);
      }
    }
    w.set_app_status(rec.tenant, rec.name, &report);
    w.out.apps.push_back(std::move(report));
  }
  return std::move(w.out);
}

SubmitOutcome reschedule_pending(const ClusterState& state) {
  Work w{state, {}};
  w.reschedule({});
  std::set<std::string> touched;
  for (const auto& i : w.out.batch.put_instances) touched.insert(i.tenant + "/" + i.app);
  for (const auto& t : touched) {
    auto slash = t.find('/');
    w.set_app_status(t.substr(0, slash), t.substr(slash + 1), nullptr);
  }
  return std::move(w.out);
}

}  // namespace gaia
