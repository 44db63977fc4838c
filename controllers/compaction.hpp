#pragma once
// Judging placement policies by the machines they need (docs/policies.md), after Borg's
// cell compaction (Verma et al., EuroSys 2015, section 5.1): take a workload and a cell,
// remove machines in a random order until the workload no longer fits (a small share of
// picky instances may stay pending), and read the size of the smallest cell that still
// fits it. Repeated over seeds, a policy that packs better needs fewer machines.
//
// Everything here is a pure function of its inputs and seeds: the workload generator,
// the policies, and the search. The scheduler deciding is the real one
// (controllers/scheduler.hpp), so what is judged is what a submit would do.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lib/cluster.hpp"

namespace gaia::sim {

// The shape of a generated workload, after published cluster traces (Borg's, Alibaba's):
// a mix of prod and non-prod jobs, heavy-tailed job sizes and requests, usage below
// request, a few GPU jobs and a share of jobs constrained to labelled machines.
struct TraceShape {
  int machines = 1000;
  uint64_t seed = 1;
  // The workload's cpu requests as a share of the cell's cpu, before compaction.
  double fill = 0.7;
  double prod_share = 0.5;         // Of the jobs; the rest is non-prod (batch).
  double constrained_share = 0.1;  // Jobs that need `disk: ssd` (half the machines).
  double gpu_job_share = 0.02;     // Jobs that ask for GPUs.
  double gpu_machine_share = 0.05;
  double usage = 0.6;  // Mean usage of a prod instance as a share of its request.
};

// Machines (Ready nodes of a few shapes, some with GPUs and some with ssd), roles (one
// per job), and the pending instances of every job.
struct SimWorkload {
  std::vector<Node> machines;
  std::map<std::string, Role> roles;
  std::vector<Instance> instances;
  // Per role: what its instances use as a share of their request (prod only), which
  // reclamation may lend to non-prod work.
  std::map<std::string, double> usage;
};

SimWorkload generate_workload(const TraceShape& shape);
// Adds job `app` of the default tenant: its role "main" and `role.replicas` pending
// instances; `usage` (a share of the request) is kept for prod jobs, for reclamation.
void add_job(SimWorkload& w, const std::string& app, Role role, double usage);

struct CompactionPolicy {
  std::string name;
  SchedulerProfile profile;
  bool segregate = false;  // Prod and non-prod in cells of their own, compacted apart.
  bool bucket = false;     // Requests rounded up to powers of two (cpu and memory).
  bool reclaim = false;    // Non-prod fits against what prod uses, not what it asked for.
};

// The policies the experiments compare: gaia's default profile, best fit (most
// allocated, nothing else), Kubernetes' default scoring (LeastAllocated with
// BalancedAllocation), and gaia's default with segregation, bucketing or reclamation.
std::vector<CompactionPolicy> standard_policies();

struct CompactionOptions {
  int seeds = 5;
  uint64_t first_seed = 1;
  double pending_allowed = 0.002;  // Share of instances that may stay pending.
  int threads = 1;  // Removal orders searched side by side; the result does not depend on it.
};

struct CompactionRun {
  uint64_t seed = 0;
  // Smallest cell that fits (both cells, when segregated); more than the cell has when
  // the policy needs it to grow (up to three times).
  int machines = 0;
  int64_t pending = 0;     // Instances left pending in that cell.
  int64_t gpu_pending = 0; // Of them, instances asking for GPUs.
  bool fits_at_all = true; // False when even three times the cell leaves too much pending.
};

struct CompactionResult {
  std::string policy;
  std::vector<CompactionRun> runs;
  int64_t instances = 0;
  int machines = 0;  // Of the whole cell.
  int schedules = 0; // Scheduling passes made.
};

CompactionResult compact(const SimWorkload& w, const CompactionPolicy& p, const CompactionOptions& o);

// The value at percentile `pct` (0..100, nearest rank) of the runs' machine counts.
int machines_percentile(const CompactionResult& r, double pct);

}  // namespace gaia::sim
