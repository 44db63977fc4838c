#include "controllers/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <unordered_map>

#include "controllers/rebalance.hpp"
#include "controllers/scheduler.hpp"

namespace gaia::sim {

namespace {

// Events at the same second apply in this order (replay.hpp).
enum ReplayEvKind : int { kEvMachine = 0, kEvFinish = 1, kEvArrive = 2, kEvSchedule = 3, kEvRebalance = 4, kEvSample = 5 };

// Samples and rebalancing repeat while events of the trace are still to come.
bool periodic(int kind) { return kind == kEvRebalance || kind == kEvSample; }

struct ReplayEv {
  int64_t t = 0;
  int kind = 0;
  int64_t seq = 0;
  int64_t a = 0, b = 0;
  bool operator>(const ReplayEv& o) const { return std::tie(t, kind, seq) > std::tie(o.t, o.kind, o.seq); }
};

struct TaskRun {
  int job = 0;
  std::string role_key;  // "default/<job>/<task>"
  int deps_left = 0;
  bool started = false;  // Its trace start has passed.
  int64_t left = 0;      // Instances not finished yet.
  std::vector<int> dependents;
  // "<job>/<task>" of the largest task before it, whose output it reads; "" for none.
  std::string reads;
};

struct LiveInstance {
  int64_t id = 0;
  int task = 0;
  std::string key;
  bool holder = false;  // Finished; stands for the output it left on its node.
  int64_t gen = 0;      // Raised on every placement, so a stale finish is ignored.
  int64_t queued_at = 0;
};

constexpr size_t kGone = std::numeric_limits<size_t>::max();
constexpr const char* kReplayTenant = "default";

class Replayer {
 public:
  Replayer(const Trace& trace, const ReplayOptions& o) : m_trace(trace), m_o(o) {}

  ReplayReport run() {
    m_r.format = m_trace.format;
    m_s.profile = m_o.profile;
    index_tasks();
    for (size_t i = 0; i < m_trace.machine_events.size(); ++i)
      push(m_trace.machine_events[i].time_s, kEvMachine, static_cast<int64_t>(i));
    for (size_t i = 0; i < m_trace.tasks.size(); ++i) push(m_trace.tasks[i].start_s, kEvArrive, static_cast<int64_t>(i));
    if (m_q.empty()) return m_r;
    m_r.start_s = m_q.top().t;
    m_step = m_o.step_s > 0 ? m_o.step_s : std::max<int64_t>(m_o.tick_s, (estimated_end() - m_r.start_s) / 100);
    m_step = std::max<int64_t>(m_step, 1);
    push(m_r.start_s, kEvSample);
    if (m_o.rebalance_budget > 0) push(m_r.start_s + period_s(), kEvRebalance);

    while (!m_q.empty()) {
      ReplayEv e = m_q.top();
      if (m_o.until_s > 0 && e.t > m_o.until_s) {
        m_r.end_s = m_o.until_s;
        break;
      }
      m_q.pop();
      // Samples run on past the last event; only the trace's events extend the time
      // the mean allocation is over.
      if (!periodic(e.kind)) {
        --m_real;
        integrate(e.t);
      }
      m_now = e.t;
      // Samples run on past the last event by up to a step; they do not make the trace
      // longer.
      if (!periodic(e.kind)) m_r.end_s = e.t;
      switch (e.kind) {
        case kEvMachine: machine_event(m_trace.machine_events[static_cast<size_t>(e.a)]); break;
        case kEvFinish: finish(e.a, e.b); break;
        case kEvArrive: arrive(static_cast<int>(e.a)); break;
        case kEvSchedule: pass(); break;
        case kEvRebalance: rebalance(); break;
        case kEvSample: sample(); break;
      }
    }
    while (!m_r.samples.empty() && m_r.samples.back().time_s > m_r.end_s) m_r.samples.pop_back();
    integrate(m_r.end_s);
    if (m_cap_cpu_s > 0) m_r.mean_cpu_alloc = m_req_cpu_s / m_cap_cpu_s;
    if (m_cap_mem_s > 0) m_r.mean_mem_alloc = m_req_mem_s / m_cap_mem_s;
    m_now = m_r.end_s;
    if (m_r.samples.empty() || m_r.samples.back().time_s != m_r.end_s) sample_now();
    for (size_t i = 0; i < m_s.instances.size(); ++i)
      if (m_s.instances[i].state == InstanceState::Pending) {
        ++m_r.pending_at_end;
        m_r.oldest_pending_s = std::max(m_r.oldest_pending_s, m_r.end_s - m_live[i].queued_at);
      }
    for (const auto& t : m_tasks)
      if (t.started && t.deps_left > 0) ++m_r.waiting_at_end;
    std::sort(m_r.waits_s.begin(), m_r.waits_s.end());
    m_r.usage_known = m_r.placements == 0 ? 0 : static_cast<double>(m_usage_placements) / static_cast<double>(m_r.placements);
    m_r.machines = static_cast<int>(m_s.nodes.size());
    return m_r;
  }

 private:
  void push(int64_t t, int kind, int64_t a = 0, int64_t b = 0) {
    if (!periodic(kind)) ++m_real;
    m_q.push(ReplayEv{t, kind, m_seq++, a, b});
  }

  // Adds the allocation from the last event to `t` (the state is constant between).
  void integrate(int64_t t) {
    if (m_integrated_to < 0) m_integrated_to = t;
    if (t <= m_integrated_to) return;
    auto dt = static_cast<double>(t - m_integrated_to);
    m_req_cpu_s += dt * static_cast<double>(m_req_cpu);
    m_req_mem_s += dt * static_cast<double>(m_req_mem);
    m_cap_cpu_s += dt * static_cast<double>(m_cap_cpu);
    m_cap_mem_s += dt * static_cast<double>(m_cap_mem);
    m_integrated_to = t;
  }

  int64_t period_s() const { return std::max<int64_t>(m_o.rebalance_period_s, 1); }

  // The rebalance controller's period (controllers/rebalance.hpp), on the cluster as it
  // is: at most the budget of moves, each a restart of the instance on its new node
  // (its whole duration again, as after a preemption), and room made for queued work.
  void rebalance() {
    if (m_real > 0) push(m_now + period_s(), kEvRebalance);
    ClusterState st;
    st.snapshot = m_s;
    // The output of finished tasks is data on its node, not work to move.
    for (size_t i = 0; i < m_live.size(); ++i)
      if (m_live[i].holder) st.snapshot.instances[i].state = InstanceState::Succeeded;
    RebalanceOptions ro;
    ro.max_moves = m_o.rebalance_budget;
    ro.partial = true;
    ro.settle_ms = period_s() * 1000;
    RebalancePlan plan = plan_rebalance(st, ro, m_now * 1000);
    for (const auto& mv : plan.moves) {
      auto it = m_id_of_key.find(mv.instance);
      if (it == m_id_of_key.end()) continue;
      size_t p = m_pos[static_cast<size_t>(it->second)];
      if (p == kGone || m_live[p].holder || m_s.instances[p].node != mv.from) continue;
      count_member(p, -1);
      Instance& i = m_s.instances[p];
      i.node = mv.to;
      ++i.migrations;
      i.started_ms = m_now * 1000;
      count_member(p, +1);
      LiveInstance& l = m_live[p];
      ++l.gen;
      ++m_r.migrations;
      int64_t d = m_trace.tasks[static_cast<size_t>(l.task)].duration_of(i.ordinal);
      if (d > 0) push(m_now + d, kEvFinish, l.id, l.gen);
    }
    if (!plan.moves.empty()) changed();
  }

  int64_t estimated_end() const {
    int64_t end = m_r.start_s;
    for (const auto& t : m_trace.tasks) {
      end = std::max(end, t.start_s + t.duration_s);
      for (int64_t d : t.durations) end = std::max(end, t.start_s + d);
    }
    for (const auto& m : m_trace.machine_events) end = std::max(end, m.time_s);
    if (m_o.until_s > 0) end = std::min(end, m_o.until_s);
    return end;
  }

  void index_tasks() {
    std::unordered_map<std::string, int> jobs;
    std::unordered_map<std::string, int> by_name;  // "<job>/<task>" -> task
    m_tasks.resize(m_trace.tasks.size());
    for (size_t i = 0; i < m_trace.tasks.size(); ++i) {
      const TraceTask& t = m_trace.tasks[i];
      auto [it, fresh] = jobs.emplace(t.job, static_cast<int>(m_job_left.size()));
      if (fresh) {
        m_job_left.push_back(0);
        m_job_holders.emplace_back();
      }
      m_tasks[i].job = it->second;
      ++m_job_left[static_cast<size_t>(it->second)];
      m_tasks[i].role_key = fmt::format("{}/{}/{}", kReplayTenant, t.job, t.name);
      by_name[t.job + "/" + t.name] = static_cast<int>(i);
      m_r.instances += t.instances;
    }
    m_r.jobs = static_cast<int64_t>(jobs.size());
    m_r.tasks = static_cast<int64_t>(m_trace.tasks.size());
    for (size_t i = 0; i < m_trace.tasks.size(); ++i) {
      const TraceTask& t = m_trace.tasks[i];
      Role role;
      role.name = t.name;
      role.kind = t.duration_of(0) > 0 ? "batch" : "service";
      role.replicas = static_cast<int>(std::min<int64_t>(t.instances, std::numeric_limits<int>::max()));
      role.resources = t.request;
      role.priority.band = t.band;
      if (t.spread_machines) {
        AffinityTerm apart;
        apart.target = AffinityTerm::Target::Instance;
        apart.match = {LabelRequirement{"gaia.io/app", "In", {t.job}}, LabelRequirement{"gaia.io/role", "In", {t.name}}};
        apart.topology = "node";
        role.required_anti_affinity.push_back(std::move(apart));
      }
      // The largest task before this one holds most of the data it reads.
      int64_t best = -1;
      for (const auto& d : t.deps) {
        auto it = by_name.find(t.job + "/" + d);
        if (it == by_name.end()) continue;
        m_tasks[static_cast<size_t>(it->second)].dependents.push_back(static_cast<int>(i));
        ++m_tasks[i].deps_left;
        int64_t n = m_trace.tasks[static_cast<size_t>(it->second)].instances;
        if (n > best) {
          best = n;
          m_tasks[i].reads = t.job + "/" + d;
        }
      }
      // Without `near` the placements are still counted, to show what the locality
      // score buys.
      if (m_o.near) role.near = m_tasks[i].reads;
      m_s.roles[m_tasks[i].role_key] = std::move(role);
    }
  }

  void machine_event(const TraceMachineEvent& e) {
    ++m_r.events;
    auto [it, fresh] = m_node_of.emplace(e.machine, static_cast<int>(m_s.nodes.size()));
    if (fresh) {
      Node n;
      n.name = e.machine;
      n.zone = e.zone;
      n.rack = e.rack;
      if (!e.zone.empty()) n.labels["zone"] = e.zone;
      if (!e.rack.empty()) n.labels["rack"] = e.rack;
      n.state = NodeState::Down;
      m_s.nodes.push_back(std::move(n));
      m_up.push_back(false);
    }
    size_t ni = static_cast<size_t>(it->second);
    Node& n = m_s.nodes[ni];
    if (m_up[ni]) {
      m_cap_cpu -= n.capacity.cpu_millis;
      m_cap_mem -= n.capacity.memory_bytes;
    }
    bool resized = n.capacity != e.capacity;
    n.capacity = e.capacity;
    if (e.up) {
      m_cap_cpu += n.capacity.cpu_millis;
      m_cap_mem += n.capacity.memory_bytes;
      n.state = NodeState::Ready;
      if (!m_up[ni] || resized) changed();
    } else {
      n.state = NodeState::Down;
      if (m_up[ni]) lose_node(n.name);
    }
    m_up[ni] = e.up;
  }

  // Everything on a machine that left service: running work back to the queue, the
  // output stored there gone.
  void lose_node(const std::string& node) {
    std::vector<int64_t> ids;
    for (size_t i = 0; i < m_s.instances.size(); ++i)
      if (m_s.instances[i].node == node) ids.push_back(m_live[i].id);
    for (int64_t id : ids) {
      size_t p = m_pos[static_cast<size_t>(id)];
      if (m_live[p].holder) {
        remove(id);
        continue;
      }
      ++m_r.lost;
      unplace(p);
    }
    changed();
  }

  void arrive(int task) {
    ++m_r.events;
    TaskRun& t = m_tasks[static_cast<size_t>(task)];
    t.started = true;
    if (t.deps_left == 0) release(task);
  }

  void release(int task) {
    const TraceTask& tt = m_trace.tasks[static_cast<size_t>(task)];
    TaskRun& t = m_tasks[static_cast<size_t>(task)];
    t.left = tt.instances;
    if (tt.instances == 0) return;
    for (int64_t o = 0; o < tt.instances; ++o) {
      Instance i;
      i.tenant = kReplayTenant;
      i.app = tt.job;
      i.role = tt.name;
      i.ordinal = static_cast<int>(o);
      i.request = tt.request;
      i.priority.band = tt.band;
      i.labels = {{"gaia.io/app", tt.job}, {"gaia.io/role", tt.name}};
      LiveInstance l;
      l.id = static_cast<int64_t>(m_pos.size());
      l.task = task;
      l.key = i.key();
      l.queued_at = m_now;
      m_pos.push_back(m_s.instances.size());
      m_id_of_key.emplace(l.key, l.id);
      m_s.instances.push_back(std::move(i));
      m_live.push_back(std::move(l));
    }
    changed();
  }

  void finish(int64_t id, int64_t gen) {
    size_t p = m_pos[static_cast<size_t>(id)];
    if (p == kGone || m_live[p].gen != gen || m_live[p].holder) return;  // Preempted or lost since.
    ++m_r.events;
    ++m_r.finished;
    int task = m_live[p].task;
    TaskRun& t = m_tasks[static_cast<size_t>(task)];
    count_alloc(p, -1);
    if (!t.dependents.empty()) {
      // The output stays where it was written; it takes no resources.
      m_live[p].holder = true;
      m_s.instances[p].request = Resources{};
      m_job_holders[static_cast<size_t>(t.job)].push_back(id);
    } else {
      remove(id);
    }
    changed();
    if (--t.left > 0) return;
    for (int d : t.dependents) {
      TaskRun& dep = m_tasks[static_cast<size_t>(d)];
      if (--dep.deps_left == 0 && dep.started) release(d);
    }
    if (--m_job_left[static_cast<size_t>(t.job)] == 0) {
      for (int64_t h : m_job_holders[static_cast<size_t>(t.job)])
        if (m_pos[static_cast<size_t>(h)] != kGone) remove(h);
      m_job_holders[static_cast<size_t>(t.job)].clear();
    }
  }

  void pass() {
    m_pass_queued = false;
    if (!m_dirty) return;
    m_dirty = false;
    std::vector<std::string> pending;
    for (size_t i = 0; i < m_s.instances.size(); ++i)
      if (m_s.instances[i].state == InstanceState::Pending) pending.push_back(m_live[i].key);
    if (pending.empty()) return;
    ++m_r.schedules;
    m_last_pass = m_now;
    Decision d = schedule(m_s, pending);
    for (const auto& v : d.preemptions) {
      auto it = m_id_of_key.find(v.victim);
      if (it == m_id_of_key.end()) continue;
      size_t p = m_pos[static_cast<size_t>(it->second)];
      if (p == kGone || m_s.instances[p].node.empty()) continue;
      if (m_live[p].holder) {
        remove(it->second);
        continue;
      }
      ++m_r.preemptions;
      unplace(p);
      changed();  // The victims may fit elsewhere on the next pass.
    }
    for (const auto& pl : d.placements) {
      auto it = m_id_of_key.find(pl.instance);
      if (it != m_id_of_key.end()) place(m_pos[static_cast<size_t>(it->second)], pl.node);
    }
  }

  void place(size_t p, const std::string& node) {
    Instance& i = m_s.instances[p];
    LiveInstance& l = m_live[p];
    const TraceTask& tt = m_trace.tasks[static_cast<size_t>(l.task)];
    if (const std::string& reads = m_tasks[static_cast<size_t>(l.task)].reads; !reads.empty()) count_near(reads, node);
    i.node = node;
    i.state = InstanceState::Running;
    i.started_ms = m_now * 1000;
    ++l.gen;
    ++m_r.placements;
    m_r.waits_s.push_back(m_now - l.queued_at);
    if (tt.usage) ++m_usage_placements;
    count_alloc(p, +1);
    count_member(p, +1);
    if (int64_t d = tt.duration_of(i.ordinal); d > 0) push(m_now + d, kEvFinish, l.id, l.gen);
  }

  // Back to the queue from its node.
  void unplace(size_t p) {
    count_alloc(p, -1);
    count_member(p, -1);
    Instance& i = m_s.instances[p];
    i.node.clear();
    i.state = InstanceState::Pending;
    ++m_live[p].gen;
    m_live[p].queued_at = m_now;
  }

  void remove(int64_t id) {
    size_t p = m_pos[static_cast<size_t>(id)];
    if (!m_s.instances[p].node.empty()) count_member(p, -1);
    m_id_of_key.erase(m_live[p].key);
    size_t last = m_s.instances.size() - 1;
    if (p != last) {
      m_s.instances[p] = std::move(m_s.instances[last]);
      m_live[p] = std::move(m_live[last]);
      m_pos[static_cast<size_t>(m_live[p].id)] = p;
    }
    m_s.instances.pop_back();
    m_live.pop_back();
    m_pos[static_cast<size_t>(id)] = kGone;
  }

  void count_alloc(size_t p, int sign) {
    if (m_live[p].holder) return;
    const Instance& i = m_s.instances[p];
    m_req_cpu += sign * i.request.cpu_millis;
    m_req_mem += sign * i.request.memory_bytes;
    m_running += sign;
    if (const auto& u = m_trace.tasks[static_cast<size_t>(m_live[p].task)].usage) {
      m_used_cpu += sign * u->cpu_millis;
      m_used_mem += sign * u->memory_bytes;
      m_running_known += sign;
    }
  }

  // Where each role's instances (and the output of finished ones) are, for counting
  // placements near their data.
  void count_member(size_t p, int sign) {
    const Instance& i = m_s.instances[p];
    const std::string& role = m_tasks[static_cast<size_t>(m_live[p].task)].role_key;
    const Node& n = m_s.nodes[static_cast<size_t>(m_node_of.at(i.node))];
    m_role_nodes[role][i.node] += sign;
    if (!n.rack.empty()) m_role_racks[role][n.rack] += sign;
  }

  void count_near(const std::string& near, const std::string& node) {
    ++m_r.near_placements;
    std::string role = fmt::format("{}/{}", kReplayTenant, near);
    const Node& n = m_s.nodes[static_cast<size_t>(m_node_of.at(node))];
    auto on = [](const auto& maps, const std::string& key, const std::string& where) {
      auto it = maps.find(key);
      if (it == maps.end()) return false;
      auto w = it->second.find(where);
      return w != it->second.end() && w->second > 0;
    };
    auto any = [](const auto& maps, const std::string& key) {
      auto it = maps.find(key);
      if (it == maps.end()) return false;
      return std::any_of(it->second.begin(), it->second.end(), [](const auto& kv) { return kv.second > 0; });
    };
    if (on(m_role_nodes, role, node))
      ++m_r.near_node;
    else if (!n.rack.empty() && on(m_role_racks, role, n.rack))
      ++m_r.near_rack;
    else if (!any(m_role_nodes, role))
      ++m_r.near_gone;
  }

  void changed() {
    m_dirty = true;
    if (m_pass_queued) return;
    int64_t tick = std::max<int64_t>(m_o.tick_s, 1);
    int64_t at = (m_now + tick - 1) / tick * tick;
    if (m_last_pass >= 0) at = std::max(at, m_last_pass + tick);
    push(at, kEvSchedule);
    m_pass_queued = true;
  }

  void sample_now() {
    ReplaySample s;
    s.time_s = m_now;
    for (bool up : m_up) s.machines_up += up ? 1 : 0;
    auto share = [](int64_t a, int64_t b) { return b <= 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); };
    s.cpu_alloc = share(m_req_cpu, m_cap_cpu);
    s.mem_alloc = share(m_req_mem, m_cap_mem);
    s.cpu_used = share(m_used_cpu, m_cap_cpu);
    s.mem_used = share(m_used_mem, m_cap_mem);
    s.running = m_running;
    s.usage_known = m_running_known;
    for (const auto& i : m_s.instances) s.pending += i.state == InstanceState::Pending ? 1 : 0;
    m_r.samples.push_back(s);
  }

  void sample() {
    sample_now();
    // Keep sampling while anything else is still to happen.
    if (m_real > 0) push(m_now + m_step, kEvSample);
  }

  const Trace& m_trace;
  const ReplayOptions& m_o;
  ReplayReport m_r;
  Snapshot m_s;
  std::vector<LiveInstance> m_live;  // Beside m_s.instances.
  std::vector<size_t> m_pos;         // Instance id -> index, kGone once removed.
  std::unordered_map<std::string, int64_t> m_id_of_key;
  std::unordered_map<std::string, int> m_node_of;
  std::vector<bool> m_up;
  std::vector<TaskRun> m_tasks;
  std::vector<int64_t> m_job_left;
  std::vector<std::vector<int64_t>> m_job_holders;
  std::unordered_map<std::string, std::unordered_map<std::string, int>> m_role_nodes, m_role_racks;
  std::priority_queue<ReplayEv, std::vector<ReplayEv>, std::greater<>> m_q;
  int64_t m_seq = 0, m_now = 0, m_step = 1, m_last_pass = -1;
  int64_t m_real = 0;  // Queued events other than samples and rebalancing.
  int64_t m_integrated_to = -1;
  double m_req_cpu_s = 0, m_req_mem_s = 0, m_cap_cpu_s = 0, m_cap_mem_s = 0;
  int64_t m_running_known = 0;
  bool m_dirty = false, m_pass_queued = false;
  int64_t m_cap_cpu = 0, m_cap_mem = 0, m_req_cpu = 0, m_req_mem = 0, m_used_cpu = 0, m_used_mem = 0;
  int64_t m_running = 0, m_usage_placements = 0;
};

}  // namespace

ReplayReport replay(const Trace& trace, const ReplayOptions& options) { return Replayer(trace, options).run(); }

int64_t wait_percentile(const ReplayReport& r, double pct) {
  if (r.waits_s.empty()) return 0;
  size_t n = r.waits_s.size();
  size_t rank = static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(n)));
  return r.waits_s[std::clamp<size_t>(rank, 1, n) - 1];
}

}  // namespace gaia::sim
