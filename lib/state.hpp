#pragma once
// gaia's objects in the Store (ARCHITECTURE.md, docs/store.md): nodes, tenants, apps,
// instances, the scheduler profile and the event timeline, as JSON under fixed key
// prefixes. Readers load a consistent Snapshot; writers commit a Batch atomically,
// guarded by a compare on the timeline sequence key that every write advances, so two
// gaia processes never interleave half-done changes: the loser re-reads and retries.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <filesystem>
#include <future>
#include <map>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lib/clock.hpp"
#include "lib/cluster.hpp"
#include "lib/kept_file.hpp"
#include "lib/error.hpp"
#include "lib/running_apps.hpp"
#include "lib/store.hpp"
#include "lib/workload.hpp"

namespace gaia {

// One deployed app (desired state): its rendered workload and where it came from.
struct AppRecord {
  // `name` is the release name, unique in the tenant; `app` the name in app.yaml, empty
  // when the release is named after its app (`gaia submit --name`, docs/spec.md section 8, Releases).
  std::string tenant, name, version;
  std::string app;
  const std::string& app_name() const { return app.empty() ? name : app; }
  std::string status = "Deploying";       // Deploying | Ready | Pending
  Workload workload;                       // Typed roles, outputs, config reads.
  nlohmann::json document;                 // The gaia/v1 document, for display.
  // Releases this app imports from: NAME in its tenant, or TENANT/NAME, a release another
  // tenant exports to it (dependency_id below).
  std::vector<std::string> dependencies;
  // The range it places on each dependency, as written in its app.yaml: while it runs,
  // no submit may move a dependency to a version outside it (spec/resolve.hpp).
  std::vector<RunningRequirement> dependency_ranges;
  std::string spec_dir;                    // Where the spec was read from (for display).
  // The content hash of the spec bundle it was rendered from (key bundles/<hash>): the
  // files themselves, so any machine can re-render it. Empty for apps submitted before
  // bundles existed; those re-render from spec_dir.
  std::string bundle;
  std::string source;                      // Apply source that owns it ("" for submit).
  // Replicas set by `gaia scale`, by role; they beat the workload's count until the
  // next submit or apply of a changed spec.
  std::map<std::string, int> scale;
  // Roles that exhausted retry_times, with the reason (the restart controller).
  std::map<std::string, std::string> failed_roles;
  // What the app was rendered with (overrides, jpaths, repository roots), so a config
  // change can re-render it exactly as it was submitted.
  nlohmann::json render_inputs = nlohmann::json::object();
  std::string op;                          // Operation that last changed it.
  std::string created, updated;            // RFC 3339 UTC.
  // Tenants whose apps may bind to this release ("*": all), set by `gaia export`; kept
  // by submits and applies of the release.
  std::vector<std::string> exports;
};

// The "tenant/name" id of a dependency as an app of `tenant` records it: NAME is a
// release of the same tenant, TENANT/NAME one another tenant exports.
std::string dependency_id(const std::string& tenant, const std::string& dependency);

void to_json(nlohmann::json& j, const AppRecord& a);
void from_json(const nlohmann::json& j, AppRecord& a);

// What dependency resolution sees of a deployed app.
RunningApp running_app_of(const AppRecord& a);

// Replicas `role` of `app` should have: the `gaia scale` override when set, else the
// workload's count.
int desired_replicas(const AppRecord& app, const Role& role);

// What the controllers observe about an app, kept apart from its spec under
// status/apps/<tenant>/<name>: an observation rewrites this small key, never the app
// record with its rendered document.
struct AppStatus {
  std::string status = "Deploying";
  std::map<std::string, std::string> failed_roles;
  std::string time;  // When it last changed, RFC 3339 UTC.
  std::string op;    // The operation that changed it.
};

void to_json(nlohmann::json& j, const AppStatus& s);
void from_json(const nlohmann::json& j, AppStatus& s);

// One timeline entry (docs/cli.md#gaia-events).
struct TimelineEvent {
  int64_t seq = 0;
  std::string time;           // RFC 3339 UTC with milliseconds.
  std::string type = "Normal";  // Normal | Warning
  std::string reason;         // Submitted, Rendered, Scheduled, Preempted, ...
  std::string tenant, app, role, instance, node;
  std::string message;
  std::string op;             // Operation id of the command (or controller action).
};

void to_json(nlohmann::json& j, const TimelineEvent& e);
void from_json(const nlohmann::json& j, TimelineEvent& e);

// The last heartbeat an agent wrote for a node it serves (key heartbeats/<node>). It
// is written outside the timeline's sequence, so a beat never conflicts with a commit.
struct Heartbeat {
  int64_t at_ms = 0;  // Wall-clock milliseconds of the writer.
  std::string agent;  // Who wrote it, for messages: "pid 4711 on host".
};

// Everything a decision reads, plus the apps and the revision it was read at.
struct ClusterState {
  Snapshot snapshot;
  std::map<std::string, AppRecord> apps;  // "tenant/name" -> record.
  int64_t seq = 0;           // Last event sequence number.
  int64_t seq_revision = 0;  // mod_revision of the sequence key (0: never written).
  int64_t revision = 0;      // Store revision the state was read at.
  // The sequence the app summaries were kept at (meta/apps_summary, lib/app_summary.hpp;
  // -1: never) and that key's mod_revision (0: absent).
  int64_t apps_summary_seq = -1;
  int64_t apps_summary_revision = 0;
  // Tunables kept in the store by name (keys settings/<name>), e.g. controller_options.
  std::map<std::string, nlohmann::json> settings;
  std::map<std::string, Heartbeat> heartbeats;  // Node -> its agent's last beat.

  // `name` may also be a dependency of another tenant's release, "TENANT/NAME": the app
  // of that tenant (dependency_id).
  const AppRecord* find_app(const std::string& tenant, const std::string& name) const;
  Instance* find_instance(const std::string& key);
  // This state is what a commit at `stamp` (State::commit's) left, its `seq` already
  // counting that commit's events (plan_submit's `after`): the bookkeeping a load would
  // read now, so the next commit on it compares what that commit wrote.
  void stamp_commit(int64_t stamp) {
    seq_revision = stamp;
    revision = std::max(revision, stamp);
    apps_summary_seq = seq;
    apps_summary_revision = stamp;
  }
  const Instance* find_instance(const std::string& key) const;
  Node* find_node(const std::string& name);
  const Node* find_node(const std::string& name) const;
};

// What listing apps needs (`gaia get apps`): every app record with its status, and how
// many instances of each serve, read at one revision (State::load_apps).
struct AppsState {
  std::map<std::string, AppRecord> apps;  // "tenant/name" -> record, as in ClusterState.
  // "tenant/name" -> its instances that are Running or Succeeded (serving()); an app
  // with none has no entry.
  std::map<std::string, int> serving;
  int64_t revision = 0;  // Store revision the apps were read at.

  int serving_count(const std::string& id) const;
};

// The same view of a state already loaded (a watch's informer keeps one): its apps and
// one pass over its instances.
AppsState apps_state_of(const ClusterState& state);

// Changes to commit together. Events get consecutive sequence numbers at commit.
struct Batch {
  std::vector<Node> put_nodes;
  std::vector<std::string> delete_nodes;
  std::vector<Tenant> put_tenants;
  std::vector<AppRecord> put_apps;
  std::vector<std::pair<std::string, std::string>> delete_apps;  // (tenant, name)
  std::vector<Instance> put_instances;
  std::vector<std::string> delete_instances;  // Instance keys.
  std::optional<SchedulerProfile> profile;
  std::map<std::string, nlohmann::json> put_settings;  // settings/<name> -> value.
  // Spec bundles by content hash (bundles/<hash> -> the bundle's JSON). A bundle no app
  // refers to once the batch is applied is deleted by the same commit.
  std::map<std::string, std::string> put_bundles;
  std::vector<TimelineEvent> events;

  bool empty() const;
  TimelineEvent& event(std::string reason, std::string message, std::string type = "Normal");
  // An event about `i`, on the node it is on.
  TimelineEvent& instance_event(const Instance& i, std::string reason, std::string message,
                                std::string type = "Normal");
  // An event about `i` on `node` (where it was, for evictions and moves).
  TimelineEvent& instance_event_at(const Instance& i, const std::string& node, std::string reason,
                                   std::string message, std::string type = "Normal");
  // Puts `i`, replacing an earlier put of the same instance in this batch.
  void put_instance(const Instance& i);
};

struct StateOptions {
  int64_t event_retention = 100000;  // Events kept; older ones are deleted as new ones come.
  // Keep the loaded state and bring it up to date from the store's changes since it was
  // read, instead of reading everything again (an informer): load() then costs what
  // changed, and wait_for_change() sleeps on a watch. A full read replaces it whenever
  // the history it needs was compacted. For long-running loops (controller run, the
  // agent, events -f) and commands that load more than once.
  bool follow_changes = false;
  // With follow_changes: a file that keeps the state the first load read, decoded, for
  // the next process on the same store, which then reads only the changes since
  // (lib/state_file.hpp); empty for none. `store_id` names the store in it (its address),
  // and the file is written only for a state of at least `state_file_min_records`
  // records, as a smaller one reads from the store faster than the file is written.
  std::filesystem::path state_file;
  std::string store_id;
  size_t state_file_min_records = 2000;
  // Told what became of the state file: used, refused and why, written or not (`-v`).
  KeptFileNote note;
  // The changes since the file, read once with the sim backend's world file (one reader
  // of it); none: read alone. Told when the store moved on (KeptChanges::store_at).
  std::shared_ptr<KeptChanges> kept_changes;
};

class State final : public RunningApps {
 public:
  State(Store& store, const Clock& clock, StateOptions options = {});
  // Waits for the state file being written, if any.
  ~State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  Result<ClusterState> load();
  // The same state, shared rather than copied: with follow_changes, the kept state
  // itself (a copy of a large cluster costs tens of ms; readers that only look, and
  // update()'s decide, need none). It never changes under the holder: a later load
  // that finds changes while it is still held applies them to a copy.
  Result<std::shared_ptr<const ClusterState>> load_shared();
  // Hands the kept state over and keeps none: the next load reads the store afresh. For
  // a process about to exit, which leaves freeing it to the kernel.
  std::shared_ptr<const ClusterState> release_kept();
  // With follow_changes, loads the state and keeps it, so the next load only refreshes
  // it: a command has it read on another thread while it renders (ops/runner.hpp
  // ReadAhead). Without follow_changes nothing is kept, so it does nothing. An error is
  // left for the next load to report, as that load reads again.
  void prefetch();
  // Only what listing apps needs, at one revision: the apps with their status, and the
  // serving instances of each counted from the instance records' tenant, app and state
  // alone, without decoding them (a full load decodes every instance). The instances
  // are read in pages, so memory stays bounded by the apps, not by the instances.
  Result<AppsState> load_apps();
  // Commits `batch` if nothing was written since `base` was loaded. Returns false (and
  // writes nothing) on a conflict, so the caller can re-load and re-decide.
  // What a successful commit wrote that the batch did not say: for a caller that carries
  // the state it left on to the next commit without reading it back (SubmitStream).
  struct CommitReceipt {
    int64_t revision = 0;  // Where the compared keys were written (see stamp_commit).
    // The bookkeeping stamped on each app record written whole: when it was created
    // and updated, and by which operation.
    struct AppStamp {
      std::string tenant, name, created, updated, op;
    };
    std::vector<AppStamp> apps;
  };
  Result<bool> commit(const ClusterState& base, Batch batch, const std::string& op, CommitReceipt* receipt = nullptr);
  // The store revision of this State's last successful commit, or 0 when unknown (none
  // yet, or a journaled commit, which spans several revisions). A kept state at this
  // revision is the state that commit left: nothing was written since.
  int64_t last_commit_revision() const { return m_last_commit_revision.load(); }
  // Loads, lets `decide` fill a batch from the fresh state, commits; retries on
  // conflict up to `attempts` times. `decide` returns an error to abort.
  Result<ClusterState> update(const std::string& op, const std::function<Result<void>(const ClusterState&, Batch&)>& decide,
                              int attempts = 50);
  // The same, returning the state after it shared (see load_shared): for loops that
  // update many times and copy the state once at the end, if at all. Let go of it
  // before the next load, or that load applies its changes to a copy.
  Result<std::shared_ptr<const ClusterState>> update_shared(
      const std::string& op, const std::function<Result<void>(const ClusterState&, Batch&)>& decide, int attempts = 50);

  // Timeline queries: events with seq > after, oldest first (limit 0 = all).
  Result<std::vector<TimelineEvent>> events_after(int64_t after, size_t limit = 0);
  Result<int64_t> last_seq();

  // Waits up to `timeout` for a change to keys starting with `prefix` after the last
  // state load() returned, through a watch; true when one came. Without a loaded state,
  // a new watch answers true at once (it cannot know what came before it), so a caller
  // re-reads. A failed watch is dropped and made again on the next call. One thread at a
  // time: the watch is the caller's loop's, not shared.
  Result<bool> wait_for_change(std::string_view prefix, std::chrono::milliseconds timeout);

  // The spec bundle stored under `hash` (AppRecord::bundle); nothing when it is absent.
  Result<std::optional<std::string>> bundle(const std::string& hash);

  // Records a heartbeat for each node, now, in one transaction of its own.
  Result<void> write_heartbeats(const std::vector<std::string>& nodes, const std::string& agent);

  // RunningApps: apps of the tenant as the resolver sees them (ready = status Ready).
  std::vector<RunningApp> list(const std::string& tenant) const override;
  std::vector<RunningApp> list_all() const override;
  // The apps under apps/<tenant_prefix> ("default/" for one tenant, "" for all).
  std::vector<RunningApp> list_prefix(const std::string& tenant_prefix) const;

  std::string now_rfc3339() const;
  Store& store() { return m_store; }

 private:
  // A full read of the state at one revision.
  // `records`, when given, receives every record read but the instances and nodes (for
  // the state file), by key.
  Result<ClusterState> load_all(std::map<std::string, KeyValue>* records = nullptr);
  // Brings the kept state up to date from the changes since its revision; false (and
  // the kept state dropped) when those changes are no longer kept, so the caller reads
  // everything. Called with m_cache_mutex held.
  Result<bool> refresh_cache();
  // The state file (StateOptions::state_file, lib/state_kept.cpp), with m_cache_mutex
  // held. Starts the kept state from the file when the store still has the history that
  // leads from it to now; false (nothing kept) when it does not, or there is no usable
  // file.
  bool load_state_file();
  // Writes the kept state to the file, on a thread of its own.
  // `head`: what the store shows at the kept state's revision, when the caller knows.
  void save_state_file(std::optional<KeptFileHead> head = std::nullopt);

  Store& m_store;
  const Clock& m_clock;
  StateOptions m_options;
  // The informer's state (StateOptions::follow_changes), guarded by m_cache_mutex since
  // a State may be shared by threads.
  std::mutex m_cache_mutex;
  // Shared with the holders of load_shared()'s result; changed in place only when no
  // one else holds it.
  std::shared_ptr<ClusterState> m_cache;
  // With a state file: every record of the kept state but the instances and nodes, as
  // the store holds them at its revision (what the file keeps beside those, decoded).
  std::map<std::string, KeyValue> m_records;
  bool m_state_file_tried = false;
  std::future<void> m_state_file_writer;
  // Ready once the writer has encoded the kept state and let go of it.
  std::shared_future<void> m_state_file_encoded;
  std::atomic<int64_t> m_last_commit_revision{0};
  // The watch behind wait_for_change, and the prefix it follows.
  std::unique_ptr<Watch> m_watch;
  std::string m_watch_prefix;
};

// A fresh operation id ("op-20261122T151200-3fa2"): time plus randomness, unique
// enough to tie a command to every event it causes.
std::string new_operation_id(const Clock& clock);

// Key layout, exposed for tests and tools.
namespace keys {
std::string node(const std::string& name);
std::string tenant(const std::string& name);
std::string app(const std::string& tenant, const std::string& name);
std::string instance(const Instance& i);
std::string event(int64_t seq);
std::string heartbeat(const std::string& node);
std::string app_status(const std::string& tenant, const std::string& name);
std::string bundle(const std::string& hash);
inline constexpr const char* k_seq = "meta/event_seq";
inline constexpr const char* k_profile = "meta/profile";
// The settings/<name> entry recording the backend a cluster was created for.
inline constexpr const char* k_backend_setting = "backend";
// The value of the gaia.io/owner label on a kubernetes cluster's pods: made once by
// `gaia cluster create --backend kubernetes` and kept in the store, so every machine
// and path that reaches the store names its pods alike.
inline constexpr const char* k_kube_owner_setting = "kubernetes_owner";
// The cluster's storage classes (a list of StorageClass), written by `cluster create`.
inline constexpr const char* k_storage_classes_setting = "storage_classes";
// Claim volumes kept after a scale down (a list of KeptVolume): Snapshot::kept_claims.
inline constexpr const char* k_kept_claims_setting = "kept_claims";
// The cluster's name (its cluster file's `name:` or `cluster create --name`; "" when it
// has none), written by `cluster create`; `gaia map` titles its picture with it.
inline constexpr const char* k_cluster_name_setting = "cluster_name";
std::string setting(const std::string& name);
}  // namespace keys

}  // namespace gaia
