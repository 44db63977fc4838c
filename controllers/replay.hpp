#pragma once
// Trace replay (`gaia sim replay`, docs/policies.md#trace-replay): a trace's machines,
// arrivals and departures run through the real scheduler over simulated time, reporting
// what a policy does with them: allocation and utilization over time, how long work
// waits, preemptions, work lost to machines leaving, and how often work that reads an
// earlier task's output lands on the node or rack holding it.
//
// The model, in full:
//  - Time is the trace's, in seconds. Events at the same second apply in this order:
//    machines, departures, arrivals; then a scheduling pass may run, then a sample.
//  - Scheduling passes run on a tick (`tick_s`): work that arrives waits for the next
//    multiple of the tick, like a scheduler's queue, and a pass runs only when something
//    changed since the last one (an arrival, a departure, a machine).
//  - An instance runs for its task's duration from the moment it is placed, so waiting
//    delays its end. A preempted or lost instance goes back to the queue and, when
//    placed again, runs its whole duration again (batch work restarts).
//  - A task of a DAG starts at its trace start or when the tasks before it have
//    finished in the replay, whichever is later.
//  - Data locality: a task after others reads their output, which stays on the nodes
//    their instances ran on until the job ends (or the node leaves). The task's role is
//    `near` the largest task before it, so the scheduler's data-locality score applies,
//    and each placement is counted as same node, same rack or elsewhere.
//  - With a rebalance budget, the rebalance controller runs once a period on the
//    cluster as it is; a move restarts the instance on its new node.
//
// A pure function of the trace and the options: no clock, no randomness, no I/O.

#include <cstdint>
#include <string>
#include <vector>

#include "controllers/trace.hpp"
#include "lib/cluster.hpp"

namespace gaia::sim {

struct ReplayOptions {
  SchedulerProfile profile;
  int64_t tick_s = 10;
  int64_t step_s = 0;   // Between samples; 0 means about 100 samples over the trace.
  int64_t until_s = 0;  // Stop at this trace time; 0 means when the work is done.
  // Roles after others are `near` them; off, the placements near the data are still
  // counted, to show what the locality score buys.
  bool near = true;
  // The rebalance controller within the replay: at most this many moves per period
  // (0: off, the default), as `gaia controller options --rebalance-budget` runs it.
  int rebalance_budget = 0;
  int64_t rebalance_period_s = 600;
};

struct ReplaySample {
  int64_t time_s = 0;
  int machines_up = 0;
  // Requests of running instances over the capacity of machines in service.
  double cpu_alloc = 0, mem_alloc = 0;
  // What running instances use, where the trace says (ReplayReport::usage_known).
  double cpu_used = 0, mem_used = 0;
  int64_t running = 0, pending = 0;
  int64_t usage_known = 0;  // Running instances whose usage the trace gives.
};

struct ReplayReport {
  std::string format;
  int machines = 0;
  int64_t jobs = 0, tasks = 0, instances = 0;  // Instances submitted, restarts apart.
  int64_t start_s = 0, end_s = 0;              // Trace time replayed.
  std::vector<ReplaySample> samples;
  int64_t events = 0, schedules = 0;
  int64_t placements = 0, finished = 0;
  int64_t pending_at_end = 0;  // Instances queued when the replay stopped.
  int64_t oldest_pending_s = 0;  // How long the longest of them had waited.
  int64_t waiting_at_end = 0;  // Tasks whose predecessors had not finished.
  int64_t preemptions = 0;     // Instances evicted for higher-priority work.
  int64_t lost = 0;            // Instances on machines that left service.
  int64_t migrations = 0;      // Moves made by the rebalance controller.
  std::vector<int64_t> waits_s;  // Per placement, time in the queue; sorted.
  // Placements of roles that read an earlier task's output: on a node holding it, on
  // its rack, elsewhere, or with the data gone (its nodes left service).
  int64_t near_placements = 0, near_node = 0, near_rack = 0, near_gone = 0;
  // Share of placed instances whose usage the trace gives; utilization covers them.
  double usage_known = 0;
  // Allocation over the whole replay, weighted by time (not by samples): requests of
  // running instances over the capacity in service, integrated over trace time.
  double mean_cpu_alloc = 0, mean_mem_alloc = 0;
};

ReplayReport replay(const Trace& trace, const ReplayOptions& options);

// The wait at percentile `pct` (0..100, nearest rank); 0 when nothing was placed.
int64_t wait_percentile(const ReplayReport& r, double pct);

}  // namespace gaia::sim
