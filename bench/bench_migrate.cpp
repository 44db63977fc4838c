// Migration benchmarks: drain-100-5k and node-fail-100-5k.
//
// The cluster: 5,000 nodes (bench_cluster.hpp) with 20,000 background instances of
// make_apps(seed 20240620) placed by plan_submit, so every node is partly used (about
// four instances and a sixth of its cpu each). One node, n00000, was kept empty for
// the background and then holds the subject: 100 small instances (250m, 512 MiB) in
// 10 roles of 10 replicas, each role with min_available 5, pinned there with
// addresses as the scheduler would give them.
//
//  drain-100-5k      decide_drain on n00000, then reconcile() (every default controller,
//                    the scheduler last) until it converges: each pass moves at most 5
//                    instances of a role (10 running, min_available 5), so the drain
//                    takes three passes plus the one that records Drained. The figure is
//                    the wall time of the decision plus the reconcile, as `gaia drain`
//                    spends it between loading and committing.
//  node-fail-100-5k  decide_node_fail on n00000, then reconcile(): all 100 instances
//                    are evicted and re-placed in one pass (no min_available applies to
//                    a failure).
//
// The setup runs the controllers once on that cluster, so the timed reconcile does only
// what the drain or the failure causes. Both check the result: n00000 holds nothing, all 100 run elsewhere, no node is over
// capacity by requests, and a second reconcile does nothing.
#include <fmt/format.h>

#include <stdexcept>
#include <unordered_map>

#include "bench/bench_cluster.hpp"
#include "bench/bench_util.hpp"
#include "controllers/migration.hpp"
#include "controllers/reconcile.hpp"
#include "controllers/submit.hpp"
#include "lib/hash.hpp"

namespace gaia::bench {
namespace {

constexpr uint64_t k_migrate_seed = 20240620;
constexpr int k_nodes = 5000;
constexpr size_t k_background = 20000;
constexpr int k_roles = 10, k_per_role = 10;
const std::string k_subject = "n00000";

AppToDeploy to_deploy(const std::string& tenant, const std::string& name, std::vector<Role> roles) {
  AppToDeploy d;
  AppRecord& r = d.record;
  r.tenant = tenant;
  r.name = name;
  r.version = "1.0.0";
  r.workload.app = name;
  r.workload.version = "1.0.0";
  r.workload.tenant = tenant;
  r.workload.roles = std::move(roles);
  r.workload.hash = content_hash(name + "/1.0.0");
  return d;
}

ClusterState build(const ControllerContext& ctx) {
  ClusterState s;
  s.snapshot.nodes = make_nodes(k_nodes);
  s.snapshot.tenants = make_tenants();
  // The subject node takes no background instances.
  s.snapshot.nodes[0].state = NodeState::Cordoned;
  std::vector<AppToDeploy> apps;
  for (const auto& g : make_apps(k_background, k_migrate_seed)) apps.push_back(to_deploy(g.tenant, g.name, g.roles));
  SubmitOutcome placed = plan_submit(s, apps);
  if (placed.pending != 0) throw std::runtime_error(fmt::format("{} background instances pending", placed.pending));
  s = std::move(placed.after);
  s.find_node(k_subject)->state = NodeState::Ready;
  // The subject: 100 small instances pinned to n00000.
  std::vector<Role> roles;
  for (int r = 0; r < k_roles; ++r) {
    Role role;
    role.name = fmt::format("r{}", r);
    role.replicas = k_per_role;
    role.resources = Resources{250, k_gib / 2, 0, 0};
    role.min_available = k_per_role / 2;
    roles.push_back(role);
  }
  AppToDeploy subject = to_deploy("t0", "subject", roles);
  s.apps["t0/subject"] = subject.record;
  const Node& node = *s.find_node(k_subject);
  std::vector<Instance> pinned;
  for (const auto& role : roles) {
    s.snapshot.roles["t0/subject/" + role.name] = role;
    for (int k = 0; k < k_per_role; ++k) {
      Instance i = new_instance("t0", "subject", "1.0.0", role, k);
      i.hash = subject.record.workload.hash;
      i.node = k_subject;
      i.state = InstanceState::Running;
      i.address = allocate_address(node, pinned);
      pinned.push_back(std::move(i));
    }
  }
  for (auto& i : pinned) s.snapshot.instances.push_back(std::move(i));
  // A cluster the controllers have already run on (usage observed, statuses set), so
  // the figure is the drain's or the failure's work alone.
  ReconcileOutcome settled = reconcile(s, ctx);
  if (!settled.converged) throw std::runtime_error("the setup did not settle");
  return std::move(settled.after);
}

void check_moved(const ClusterState& s) {
  std::unordered_map<std::string, Resources> used;
  size_t subject_running = 0;
  for (const auto& i : s.snapshot.instances) {
    if (i.node == k_subject) throw std::runtime_error(i.key() + " is still on " + k_subject);
    if (i.app == "subject" && occupies_node(i)) ++subject_running;
    if (i.node.empty()) continue;
    used[i.node].cpu_millis += i.request.cpu_millis;
    used[i.node].memory_bytes += i.request.memory_bytes;
  }
  if (subject_running != static_cast<size_t>(k_roles * k_per_role))
    throw std::runtime_error(fmt::format("{} of the subject's instances run", subject_running));
  for (const auto& n : s.snapshot.nodes) {
    const Resources& u = used[n.name];
    if (u.cpu_millis > n.capacity.cpu_millis || u.memory_bytes > n.capacity.memory_bytes)
      throw std::runtime_error(n.name + " is over capacity");
  }
}

Figures run_case(bool drain) {
  ControllerContext ctx{1'700'000'000'000, {}};
  double setup_ms = 0;
  ClusterState s;
  setup_ms = time_ms([&] { s = build(ctx); });
  double cpu_before = cpu_ms();
  ReconcileOutcome out;
  double ms = time_ms([&] {
    auto change = drain ? decide_drain(s, k_subject) : decide_node_fail(s, k_subject, false);
    if (!change) throw std::runtime_error(format_diagnostics(change.error()));
    out = reconcile(apply_batch(s, change->batch), ctx);
  });
  double cpu = cpu_ms() - cpu_before;
  if (!out.converged) throw std::runtime_error("the reconcile did not converge");
  check_moved(out.after);
  size_t moved = 0;
  for (const auto& e : out.batch.events)
    if (e.reason == (drain ? "Migrated" : "Evicted")) ++moved;
  double again_ms = 0;
  ReconcileOutcome again;
  again_ms = time_ms([&] { again = reconcile(out.after, ctx); });
  if (!again.batch.empty()) throw std::runtime_error("a second reconcile changed something");
  Figures f;
  f["nodes"] = k_nodes;
  f["instances"] = out.after.snapshot.instances.size();
  f["seed"] = k_migrate_seed;
  f["moved"] = moved;
  f["passes"] = out.passes;
  f["events"] = out.batch.events.size();
  f["setup_ms"] = round3(setup_ms);
  f[drain ? "drain_ms" : "recover_ms"] = round3(ms);
  f["cpu_ms"] = round3(cpu);
  f["idle_reconcile_ms"] = round3(again_ms);
  return f;
}

const Registration k_drain{"drain-100-5k",
                           "drain a node holding 100 instances (10 roles, min_available 5 of 10) in a 5,000-node "
                           "cluster with 20,000 other instances: decide_drain + reconcile to convergence",
                           [] { return run_case(true); }};
const Registration k_fail{"node-fail-100-5k",
                          "the same node fails instead: decide_node_fail + reconcile re-placing its 100 instances",
                          [] { return run_case(false); }};

}  // namespace
}  // namespace gaia::bench
