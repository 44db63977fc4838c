#pragma once
// Published cluster traces read into one form (docs/policies.md#trace-replay), for `gaia
// sim replay`: machines with their events, and jobs of tasks with arrival times,
// durations and requests. Parsers take the files' text, not paths, so they are tested
// without a disk; the caller reads the files and names them for the error locations.
//
// Format read today: Alibaba's cluster-trace-v2018 (github.com/alibaba/clusterdata,
// schema.md): machine_meta.csv, batch_task.csv, and optionally container_meta.csv (the
// online services that share the machines) and batch_instance.csv (usage).

#include <cstdint>
#include <map>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lib/error.hpp"
#include "lib/priority.hpp"
#include "lib/workload.hpp"

namespace gaia::sim {

// A machine's state from `time_s` on.
struct TraceMachineEvent {
  int64_t time_s = 0;
  std::string machine;
  bool up = true;  // In service; a machine that leaves service loses what runs on it.
  Resources capacity;
  std::string zone, rack;  // The trace's failure domains, as gaia's topology.
};

struct TraceTask {
  std::string job, name;  // Unique together; the job is the app, the task its role.
  int64_t instances = 1;
  int64_t start_s = 0;
  // How long each instance runs once placed; 0 for services, which run to the end.
  int64_t duration_s = 0;
  Resources request;
  Band band = Band::Nonprod;
  // Tasks of the same job that must finish first (the trace's DAG); they wrote the data
  // this task reads.
  std::vector<std::string> deps;
  // Mean use of one instance where the trace gives it (batch_instance.csv).
  std::optional<Resources> usage;
  // Per instance (by ordinal) when the instances run for different times (Google's
  // trace: each task of a job has its own); empty means `duration_s` for all.
  std::vector<int64_t> durations;
  // The instances must run on different machines (Google's different-machines
  // restriction).
  bool spread_machines = false;

  int64_t duration_of(int64_t ordinal) const {
    return durations.empty() ? duration_s : durations[static_cast<size_t>(ordinal)];
  }
};

struct Trace {
  std::string format;
  std::vector<TraceMachineEvent> machine_events;  // By time, then machine.
  std::vector<TraceTask> tasks;                   // By start, then job and name.
  // Rows read but not replayed, by "file: reason", so a user sees what was left out.
  std::map<std::string, int64_t> skipped;
  int64_t rows = 0;
};

struct AlibabaOptions {
  // What the trace's normalised memory (0..100, 100 being the largest machine) is in
  // bytes; the trace does not say, so it is an input (`gaia sim replay --memory-unit`).
  int64_t memory_at_100 = 512LL * 1024 * 1024 * 1024;
  // Rows after this trace time are counted, not kept (0: keep all), so a replay of the
  // first hours of the full trace does not hold its eight days in memory.
  int64_t until_s = 0;
};

// `files` maps a file name (machine_meta.csv, batch_task.csv, container_meta.csv,
// batch_instance.csv) to its stream, read a line at a time; `dir` prefixes the names
// in error locations.
// machine_meta.csv and batch_task.csv are required. Malformed rows are errors with
// their file and line (all of them, up to a limit); well-formed rows that cannot be
// replayed (no duration, no request) are counted in `skipped`.
Result<Trace> parse_alibaba_v2018(const std::map<std::string, std::istream*>& files, const std::string& dir,
                                  const AlibabaOptions& options = {});
// The same, from the files' text.
Result<Trace> parse_alibaba_v2018(const std::map<std::string, std::string>& files, const std::string& dir,
                                  const AlibabaOptions& options = {});

struct GoogleOptions {
  // The trace normalises cpu and memory to the largest machine (1.0); what that is.
  int64_t cores_at_1 = 64;
  int64_t memory_at_1 = 512LL * 1024 * 1024 * 1024;
  int64_t until_s = 0;  // As AlibabaOptions::until_s.
};

// Google's cluster-data-2011-2 (github.com/google/cluster-data, schema.csv):
// `machine_events` and `task_events`, each a stream of rows in time order (the parts of
// the published files, uncompressed and read one after the other). A task (job, index)
// arrives at its first SUBMIT; its duration is from its last SCHEDULE to the FINISH,
// FAIL, KILL or LOST after it, and a task still running at the end of the trace runs to
// the end. Priorities 9 and above are prod (Borg's production band), the rest non-prod.
// Tasks of a job submitted together with the same request form one role.
// Each part is (its path for error locations, its stream).
using TraceParts = std::vector<std::pair<std::string, std::istream*>>;
Result<Trace> parse_google_2011(const TraceParts& machine_events, const TraceParts& task_events,
                                const GoogleOptions& options = {});

// The file names parse_alibaba_v2018 reads, required ones first.
const std::vector<std::string>& alibaba_v2018_files();
bool alibaba_v2018_required(const std::string& file);

// A task name's place in its job's DAG: "M1" is task 1, "R2_1" task 2 after task 1,
// "J3_1_2" task 3 after tasks 1 and 2. Names that are not of this form ("task_Nzg3")
// have no id and no dependencies.
struct DagName {
  std::string id;  // "2"; "" when the name carries no DAG.
  std::vector<std::string> deps;
};
DagName parse_dag_name(const std::string& task);

}  // namespace gaia::sim
