#pragma once
// Submitting a resolved, rendered chain: a pure decision over the cluster state that
// returns the batch to commit (apps, instances, events) and a report for the user.
// `gaia plan` runs the same function and prints the report without committing.

#include <memory>
#include <optional>
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "controllers/scheduler.hpp"
#include "lib/state.hpp"
#include "lib/topology.hpp"

namespace gaia {

struct AppToDeploy {
  AppRecord record;  // tenant, name, version, workload, document, dependencies, spec_dir.
};

struct PlacedReport {
  std::string instance, node, address;
  double score = 0;
  // For a role with `near`: how close it landed to that role's data, found by looking
  // the near instances' addresses up in the topology table ("same node as
  // 0.datanode.hdfs.default (10.0.128.1)"); "" for roles without `near`.
  std::string locality;
};
struct PendingReport {
  std::string instance, reason;
};
struct PreemptedReport {
  std::string victim, node, preemptor;
};

struct AppReport {
  std::string tenant, name, version;
  // deploy | update | unchanged for submitted apps; "affected" for other apps whose
  // instances a submission preempted or requeued; "reschedule" from reschedule_pending.
  std::string action;
  std::vector<PlacedReport> placed;
  std::vector<PendingReport> pending;
  std::vector<PreemptedReport> preempted;  // Instances of this app that were evicted.
  std::vector<std::string> removed;  // Instances of the previous render deleted (dropped roles, ordinals).
  // Instances of the previous render the rollout controller replaces in batches.
  std::vector<std::string> rolling;
  // `gaia scale` overrides an update kept although the new spec asks for another count
  // ("datanode: 40 replica(s) set by gaia scale (the spec says 3)").
  std::vector<std::string> scale_kept;
  size_t instances = 0, running = 0;  // After the submission.
  bool ready = false;
  std::string status;  // The app's status word after the submission (controllers/app_health.hpp).
};

struct SubmitOutcome {
  Batch batch;
  std::vector<AppReport> apps;    // Submitted apps, in deploy order.
  std::vector<AppReport> others;  // Apps not submitted but changed (victims, requeued).
  size_t placed = 0, pending = 0, preempted = 0;
  ClusterState after;  // The state once `batch` is committed (what plan explains against).

  bool changed() const { return !batch.empty(); }
};

// Deploys `apps` (dependencies first) on `state`: instances are created for every role
// replica, scheduled app by app so a dependent is placed only once its dependencies are
// ready (all instances running), and started (the sim backend starts a placed instance
// at once). Preemption victims go back to pending and are retried at once. Apps already
// running with the same version and workload hash are left as they are ("unchanged");
// a changed app gets its new record and keeps its instances, which the rollout
// controller then replaces in batches (controllers/rollout.hpp; stateful ones keep their
// volumes); only dropped roles and ordinals beyond the new replica counts are removed
// here, and new ordinals are created and placed. Every step becomes a timeline event.
// Instance addresses come from the node's instance subnet.
// `tuning` changes how the scheduler searches, never the outcome (tests compare them).
SubmitOutcome plan_submit(const ClusterState& state, const std::vector<AppToDeploy>& apps,
                          const ScheduleTuning& tuning = {});

struct PlanCaches;

// plan_submit for a submitter that stays up and plans one submission after another on
// the state the last one left (a scheduler daemon; submit-e2e-5k's stream). Each
// plan_submit call indexes the whole cluster for the scheduler and reads every address
// in use, and copies the state into fresh memory: at 50,000 instances that is most of a
// submission of 500. The planner keeps the index and the addresses from one submission
// to the next, and copies into the memory of a state it was given back. Its outcomes
// are plan_submit's, byte for byte (tests compare them on random histories).
class SubmitPlanner {
 public:
  explicit SubmitPlanner(const ScheduleTuning& tuning = {});
  ~SubmitPlanner();
  SubmitPlanner(SubmitPlanner&&) noexcept;
  SubmitPlanner& operator=(SubmitPlanner&&) noexcept;

  // plan_submit(state, apps) on any state: what was kept is dropped and built again.
  SubmitOutcome plan(const ClusterState& state, const std::vector<AppToDeploy>& apps);
  // The same on the `after` of this planner's last outcome, its batch committed and
  // nothing else changed in it but the revisions a commit stamps (seq_revision,
  // revision, the app summaries' marker): nothing is indexed again. Any other state is a
  // bug of the caller and throws std::logic_error (a store that moved meanwhile, a
  // failed commit: load again and call plan()).
  SubmitOutcome plan_next(const ClusterState& last_after, const std::vector<AppToDeploy>& apps);
  // A state the caller is done with (the base of a committed submission): the next
  // working copy is assigned into its memory rather than allocated and freed anew.
  void give_back(ClusterState&& spare);

 private:
  SubmitOutcome plan_on(const ClusterState& state, const std::vector<AppToDeploy>& apps);

  // The last outcome's `after`, to check what plan_next is given.
  struct Last {
    const Instance* instances = nullptr;
    size_t count = 0;
    int64_t seq = 0;
    const Node* nodes = nullptr;
  };
  ScheduleTuning m_tuning;
  std::unique_ptr<PlanCaches> m_caches;
  std::optional<Last> m_last;
  ClusterState m_spare;
};

// Retries scheduling of every pending instance whose dependencies are ready (after a
// node was added or capacity freed), repeatedly while that makes more apps ready, so a
// chain waiting on its first app is placed in one call. An instance that still fits
// nowhere only changes (and gets an event) when its reason changes, so calling this on
// a settled cluster yields an empty batch.
SubmitOutcome reschedule_pending(const ClusterState& state, const ScheduleTuning& tuning = {});

// Recounts each report's instances, running instances and readiness on `state` (the
// cluster after the runner started what the submission placed), so what a command
// prints is what runs when it returns.
void refresh_reports(SubmitOutcome& out, const ClusterState& state);

// Allocates the lowest free address of the node's instance subnet (IPv4 or IPv6), or
// "" when the node has no subnet or it is full. The network address (and for IPv4 the
// broadcast address) is never handed out.
std::string allocate_address(const Node& node, const std::vector<Instance>& instances);

// The addresses in use on one node, kept sorted. A node holds a few dozen at most, and
// one list per node is one allocation where a set was one per address: 50,000 made and
// freed by every submission at 50,000 instances, a twentieth of a `gaia submit`.
class UsedAddresses {
 public:
  using Bits = unsigned __int128;
  bool contains(Bits a) const { return std::binary_search(m_bits.begin(), m_bits.end(), a); }
  void insert(Bits a) {
    auto it = std::lower_bound(m_bits.begin(), m_bits.end(), a);
    if (it == m_bits.end() || *it != a) m_bits.insert(it, a);
  }
  void erase(Bits a) {
    auto it = std::lower_bound(m_bits.begin(), m_bits.end(), a);
    if (it != m_bits.end() && *it == a) m_bits.erase(it);
  }
  size_t size() const { return m_bits.size(); }

 private:
  std::vector<Bits> m_bits;
};

// The same for a planner that moves many instances: the addresses in use per node are
// read once from `instances`, and the planner keeps them up to date, taking an address
// on the new node (allocate) and giving the old one back (release) per move.
class AddressBook {
 public:
  explicit AddressBook(const std::vector<Instance>& instances);
  std::string allocate(const Node& node);
  void release(const std::string& node, const std::string& address);

 private:
  std::unordered_map<std::string, UsedAddresses> m_used;
};

// The topology table of the nodes: each node's instance subnet and host address mapped
// to the node and its switch, rack and zone. Looking an instance's address up in it
// tells where the instance (and its data) lives without knowing its node name.
TopologyTable node_topology(const std::vector<Node>& nodes);

// `state` with `batch` applied (puts, then deletes of keys not re-put; events ignored):
// what a load() after committing the batch would return, for planning and tests.
ClusterState apply_batch(ClusterState state, const Batch& batch);

// Appends `more` to `into` as one batch: later puts of a key replace earlier ones, a
// put cancels an earlier delete of its key and a delete drops an earlier put of it.
void merge_batch(Batch& into, Batch more);

// "waiting for node n3 (holds volume data)" when a volume of the instance is bound to a
// node that is down, so it can only run there again; "" otherwise. Pending instances in
// that state are left alone by reschedule_pending (with this reason) until the node
// recovers or the binding is dropped (`gaia migrate --force`, `gaia node fail
// --move-stateful`).
std::string waiting_for_volume_node(const ClusterState& state, const Instance& i);

// How close `node` is to the data of the role `i` names in `near` ("same rack r2 as
// 0.datanode.hdfs.default (10.64.1.2 on n5)"), found as a submit finds it (through the
// topology table from the near instances' addresses); "" for roles without `near`. What
// PlacedReport.locality holds, for reports of moves (drain, node failure, migrate).
std::string locality_text(const ClusterState& state, const Instance& i, const Node& node);

// A pending instance of `role`, with the labels every instance carries (gaia.io/app,
// role, tenant, version) on top of the role's own.
Instance new_instance(const std::string& tenant, const std::string& app, const std::string& version,
                      const Role& role, int ordinal);

}  // namespace gaia
