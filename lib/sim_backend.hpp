#pragma once
// The sim backend: a cluster that exists only as bookkeeping (docs/backends.md). A
// started copy is running and ready at once; a stopped one is gone at once; what a copy
// uses comes from the usage model (lib/sim_usage.hpp); failures are injected by hand
// (`gaia sim fail`). It answers synchronously, so a command on the embedded default
// converges before it returns, as a real cluster would after a while.
//
// Its world (the copies it runs, the usage model) lives in the context's store under
// `sim/`, beside gaia's own state but apart from it, so successive commands see the
// same simulated cluster; without a store it lives in memory, for what-if plans and
// tests.

#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lib/backend.hpp"
#include "lib/kept_file.hpp"
#include "lib/sim_usage.hpp"
#include "lib/store.hpp"

namespace gaia {

// One simulated copy, as kept in the sim's world.
struct SimCopy {
  std::string node;
  int64_t generation = 0;
  CopyPhase phase = CopyPhase::Running;
  int exit_code = 0;
  std::string reason;
  bool internal = false;
  int64_t started_ms = 0;
  // What the usage model needs to compute the copy's usage.
  std::string tenant, app, role;
  int ordinal = 0;
  Resources request;
  std::optional<Resources> limit;  // The instance's limit when it differs from the request.
  bool operator==(const SimCopy&) const = default;
};

// A file that keeps the world a process read for the next process on the same store
// (lib/sim_world_file.hpp): `path` (empty: none), the store's address as `store_id`, and
// the least number of copies worth a file (a smaller world reads faster from the store).
struct SimWorldFileOptions {
  std::filesystem::path path;
  std::string store_id;
  size_t min_copies = 2000;
  KeptFileNote note;                         // As StateOptions::note, for the world file.
  std::shared_ptr<KeptChanges> kept_changes;  // As StateOptions::kept_changes.
};

class SimBackend final : public Backend {
 public:
  // `store` keeps the world across processes (keys sim/copies/<instance>, sim/usage);
  // nullptr keeps it in this object.
  explicit SimBackend(Store* store = nullptr, SimWorldFileOptions file = {});
  // Waits for the world file being written, if any.
  ~SimBackend() override;

  std::string_view name() const override { return "sim"; }
  BackendResult<Observation> observe(int64_t now_ms) override;
  BackendResult<std::vector<ActionResult>> start(const std::vector<StartSpec>& specs, int64_t now_ms) override;
  BackendResult<std::vector<ActionResult>> stop(const std::vector<StopSpec>& specs, int64_t now_ms) override;
  bool wait(std::chrono::milliseconds timeout) override;
  bool synchronous() const override { return true; }
  // Reads the world of copies from the store (the first read of a process reads it all).
  void prefetch() override;

  // The usage model: what every copy uses as a fraction of its request.
  BackendResult<SimUsageModel> usage_model();
  BackendResult<void> set_usage_model(const SimUsageModel& model);

  // Makes the live copy of `instance` end: exit with `exit_code` (0 finishes a batch
  // instance), or fail with `reason`; `internal` marks it as gaia's own failure. Fails
  // with NotFound when no copy of it runs.
  BackendResult<void> end_copy(const std::string& instance, int exit_code, const std::string& reason, bool internal);
  // Makes the copy vanish without a trace, as a crashed machine would.
  BackendResult<void> lose_copy(const std::string& instance);

  // Seeds an in-memory world: the copies a healthy cluster would run for `copies`.
  void seed(const std::map<std::string, std::vector<SimCopy>>& copies);

  // Hands over the kept copy of a stored world and keeps none (the next call reads
  // the store afresh), for a process about to exit that leaves freeing it to the
  // kernel. Null in memory mode, where the world is the only copy.
  std::shared_ptr<const void> release_world();

 private:
  using World = std::map<std::string, std::vector<SimCopy>>;
  // The world as it is now, for the caller to read and change (under m_mutex). With a
  // store it is kept between calls and brought up to date from the store's changes to
  // sim/copies/ since it was read, so a command that observes several times decodes
  // each copy once, not once per call; a full read replaces it when that history is
  // gone. A caller that changes it must save() the keys it changed.
  BackendResult<World*> load_world();
  // Rewrites the instances in `changed` (an empty list deletes the instance's key).
  // When the store refuses, the kept world is dropped: it holds changes the store
  // does not.
  BackendResult<void> save(const World& world, const std::vector<std::string>& changed);
  // The world file: starts the kept world from it when the store still has the history
  // from there to now (false, nothing kept, otherwise); writes the kept world to it
  // (encoded here, written on a thread of its own). Under m_mutex.
  bool load_world_file();
  void save_world_file(std::optional<KeptFileHead> head);

  Store* m_store;
  std::mutex m_mutex;
  World m_world;  // The whole world in memory mode; the kept copy of the store's otherwise.
  // The store revision m_world reflects (every change to sim/copies/ up to it is in it);
  // 0: nothing kept, read it all.
  int64_t m_world_revision = 0;
  SimUsageModel m_usage;
  SimWorldFileOptions m_file;
  bool m_file_tried = false;
  bool m_file_saved = false;
  std::future<void> m_file_writer;
};

void to_json(nlohmann::json& j, const SimCopy& c);
void from_json(const nlohmann::json& j, SimCopy& c);
// One instance's copies as stored under sim/copies/: from_json's result, read without
// a JSON document when the record has the shape the sim writes (a world of 50,000
// copies is read at the start of every command). Throws as nlohmann does on a corrupt
// record.
std::vector<SimCopy> decode_sim_copies(const std::string& text);

}  // namespace gaia
