#include "controllers/compaction.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <future>
#include <bit>
#include <cmath>
#include <numbers>
#include <random>
#include <unordered_map>

#include "controllers/scheduler.hpp"

namespace gaia::sim {

namespace {

// Draws from std::mt19937_64, whose output the standard fixes, with distributions
// written here (the standard library's are implementation-defined), so a seed gives the
// same workload with any standard library (given the same libm).
class TraceRng {
 public:
  explicit TraceRng(uint64_t seed) : m_gen(seed) {}
  double uniform() { return static_cast<double>(m_gen() >> 11) * 0x1.0p-53; }
  double normal() {
    double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  // A log-normal value with the given median and spread (sigma of the log).
  double lognormal(double median, double sigma) { return median * std::exp(sigma * normal()); }
  // A Pareto value (heavy tail) at least 1 with shape alpha.
  double pareto(double alpha) { return std::pow(1.0 - uniform(), -1.0 / alpha); }
  size_t below(size_t n) { return std::min(n - 1, static_cast<size_t>(uniform() * static_cast<double>(n))); }

 private:
  std::mt19937_64 m_gen;
};

constexpr int64_t kTraceMi = 1024LL * 1024;
constexpr int64_t kTraceGi = 1024 * kTraceMi;

struct MachineShape {
  int64_t cores, mem_gi, gpus;
  double share;  // Of the plain machines.
};

int64_t bucketed(int64_t v) { return v <= 1 ? v : static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v))); }

std::string usage_key(const Instance& i) { return i.tenant + "/" + i.app + "/" + i.role; }

// Machine `i` of a cell in removal order `order`. Past the end of the real cell come
// copies of its machines in the same order, so a policy that needs more machines than
// the cell has (bucketed requests, two segregated cells) gets a number, not a failure,
// as the paper's compaction grows a cell that is too small.
Node machine_at(const SimWorkload& w, const std::vector<size_t>& order, size_t i) {
  Node n = w.machines[order[i % order.size()]];
  if (size_t copy = i / order.size(); copy > 0) {
    n.name += fmt::format("-copy{}", copy);
    n.address = fmt::format("{}.{}.{}.{}", 10 + copy, (i >> 16) & 255, (i >> 8) & 255, i & 255);
  }
  return n;
}

// How far a cell may grow: a workload that three times the cell cannot hold does not
// fit at all (an instance larger than every machine, say).
constexpr size_t kMaxGrowth = 3;

struct Pass {
  int64_t pending = 0, gpu_pending = 0;
};

// What a prod instance holds once reclamation lends the rest: its usage with a 10%
// safety margin, at most its request.
Resources reclaimed(const SimWorkload& w, const Instance& i) {
  auto u = w.usage.find(usage_key(i));
  double share = u == w.usage.end() ? 1.0 : std::min(1.0, u->second * 1.1);
  Resources r = i.request;
  r.cpu_millis = static_cast<int64_t>(std::ceil(static_cast<double>(r.cpu_millis) * share));
  r.memory_bytes = static_cast<int64_t>(std::ceil(static_cast<double>(r.memory_bytes) * share));
  return r;
}

// The fewest machines of `order` that could hold `instances` at all, counting only
// totals of cpu, memory and GPUs: fewer machines than this leave more than `allowed`
// instances pending under any placement, so the search need not schedule such cells
// (the smallest ones are the slowest to schedule: most of their work fails, and every
// failure is explained). Each dimension may leave its `allowed` largest requests out.
// With reclamation prod must fit by its requests first and then, by what it holds,
// beside non-prod's requests. Returns a count past the largest cell when even that is
// too small.
int fewest_machines(const SimWorkload& w, const std::vector<Instance>& instances, const std::vector<size_t>& order,
                    const CompactionPolicy& p, int64_t allowed) {
  constexpr int kDims = 3;
  auto dim = [](const Resources& r, int d) { return d == 0 ? r.cpu_millis : d == 1 ? r.memory_bytes : r.gpu; };
  std::array<int64_t, kDims> need{};
  for (int d = 0; d < kDims; ++d) {
    std::vector<int64_t> sizes;
    int64_t prod = 0, held = 0, nonprod = 0;
    for (const auto& i : instances) {
      int64_t v = dim(i.request, d);
      sizes.push_back(v);
      if (i.priority.band == Band::Nonprod) {
        nonprod += v;
      } else {
        prod += v;
        held += p.reclaim ? dim(reclaimed(w, i), d) : v;
      }
    }
    auto left_out = static_cast<size_t>(std::clamp<int64_t>(allowed, 0, static_cast<int64_t>(sizes.size())));
    std::nth_element(sizes.begin(), sizes.begin() + static_cast<std::ptrdiff_t>(left_out), sizes.end(), std::greater<>());
    int64_t spared = 0;
    for (size_t k = 0; k < left_out; ++k) spared += sizes[k];
    need[static_cast<size_t>(d)] = std::max(prod, held + nonprod) - spared;
  }
  std::array<int64_t, kDims> have{};
  size_t most = order.size() * kMaxGrowth;
  for (size_t k = 0; k <= most; ++k) {
    bool enough = true;
    for (int d = 0; d < kDims; ++d) enough = enough && have[static_cast<size_t>(d)] >= need[static_cast<size_t>(d)];
    if (enough) return static_cast<int>(k);
    if (k == most) break;
    Node n = machine_at(w, order, k);
    for (int d = 0; d < kDims; ++d) have[static_cast<size_t>(d)] += dim(n.capacity, d);
  }
  return static_cast<int>(most) + 1;
}

// One cell: the first `k` machines of `order`, and `instances` scheduled onto it as a
// submit would (prod before non-prod, by priority). With reclamation, prod is placed
// first and then holds only what it uses (its reservation), which non-prod may fill.
// What every cell of one search shares: the workload as a snapshot (nodes are set per
// cell) and where each instance is in it. Built once per search, not once per cell.
struct CellBase {
  Snapshot s;
  std::unordered_map<std::string, size_t> at;
};

CellBase cell_base(const SimWorkload& w, const std::vector<Instance>& instances, const CompactionPolicy& p) {
  CellBase b;
  b.s.profile = p.profile;
  b.s.roles = w.roles;
  b.s.instances = instances;
  for (size_t i = 0; i < b.s.instances.size(); ++i) b.at[b.s.instances[i].key()] = i;
  return b;
}

Pass schedule_cell(const SimWorkload& w, CellBase& base, const std::vector<size_t>& order, int k,
                   const CompactionPolicy& p) {
  base.s.nodes.clear();
  base.s.nodes.reserve(static_cast<size_t>(k));
  for (int i = 0; i < k; ++i) base.s.nodes.push_back(machine_at(w, order, static_cast<size_t>(i)));
  auto count = [&](const Decision& d, Pass& out) {
    auto add = [&](const std::string& key) {
      ++out.pending;
      if (base.s.instances[base.at.at(key)].request.gpu > 0) ++out.gpu_pending;
    };
    for (const auto& u : d.unschedulable) add(u.instance);
    for (const auto& v : d.preemptions) add(v.victim);
  };
  Pass out;
  if (!p.reclaim) {
    count(schedule(base.s), out);
    return out;
  }
  // Reclamation places prod into the cell before non-prod comes: on a copy, so that the
  // next cell starts from the workload again.
  Snapshot s = base.s;
  std::vector<std::string> prod, nonprod;
  for (const auto& i : s.instances) (i.priority.band == Band::Nonprod ? nonprod : prod).push_back(i.key());
  Decision first = schedule(s, prod);
  count(first, out);
  for (const auto& pl : first.placements) {
    Instance& i = s.instances[base.at.at(pl.instance)];
    i.node = pl.node;
    i.state = InstanceState::Running;
    i.reservation = reclaimed(w, i);
  }
  count(schedule(s, nonprod), out);
  return out;
}

// The smallest prefix of `order` on which at most `allowed` of `instances` stay pending,
// by bisection: like Borg's removal one machine at a time, it assumes that a cell which
// fits keeps fitting when machines are added.
CompactionRun smallest_cell(const SimWorkload& w, const std::vector<Instance>& instances, const std::vector<size_t>& order,
                            const CompactionPolicy& p, double pending_allowed, int& schedules) {
  CompactionRun run;
  auto allowed = static_cast<int64_t>(std::floor(pending_allowed * static_cast<double>(instances.size())));
  if (instances.empty()) return run;
  CellBase base = cell_base(w, instances, p);
  auto try_cell = [&](int k) {
    ++schedules;
    return schedule_cell(w, base, order, k, p);
  };
  auto finish = [&](int machines, const Pass& pass) {
    run.machines = machines;
    run.pending = pass.pending;
    run.gpu_pending = pass.gpu_pending;
    return run;
  };
  // The real cell first: most policies fit in it, and the bisection then stays inside,
  // above the cells too small by their totals alone.
  int real = static_cast<int>(order.size());
  int most = static_cast<int>(order.size() * kMaxGrowth);
  int fewest = fewest_machines(w, instances, order, p, allowed);
  int lo = std::max(0, fewest - 1), hi = real;  // lo does not fit, hi fits.
  Pass at_hi;
  bool real_fits = false;
  if (fewest <= real) {
    at_hi = try_cell(real);
    real_fits = at_hi.pending <= allowed;
  }
  if (!real_fits) {
    Pass grown = try_cell(most);
    if (grown.pending > allowed) {
      run.fits_at_all = false;
      return finish(most, grown);
    }
    lo = std::max(lo, real);
    hi = most;
    at_hi = grown;
  }
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    Pass pass = try_cell(mid);
    if (pass.pending <= allowed) {
      hi = mid;
      at_hi = pass;
    } else {
      lo = mid;
    }
  }
  return finish(hi, at_hi);
}

std::vector<size_t> shuffled(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  TraceRng rng(seed);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

}  // namespace

SimWorkload generate_workload(const TraceShape& shape) {
  SimWorkload w;
  TraceRng rng(shape.seed);
  // Machine shapes of a heterogeneous cell: three generations of plain machines and a
  // few GPU machines, about 30 cores and 120 GiB on average.
  static const MachineShape kPlain[] = {{16, 64, 0, 0.35}, {32, 128, 0, 0.40}, {64, 256, 0, 0.25}};
  const MachineShape kGpu{32, 256, 4, 0};
  int gpu_machines = static_cast<int>(std::lround(shape.machines * shape.gpu_machine_share));
  // Which machines have GPUs: spread through the cell, so that names (the scheduler's
  // last tie-break) do not put them first.
  std::vector<bool> has_gpu(static_cast<size_t>(shape.machines), false);
  for (int i = 0; i < gpu_machines; ++i) has_gpu[static_cast<size_t>(i)] = true;
  for (size_t i = has_gpu.size(); i > 1; --i) {
    size_t j = rng.below(i);
    bool t = has_gpu[i - 1];
    has_gpu[i - 1] = has_gpu[j];
    has_gpu[j] = t;
  }
  int64_t total_cpu = 0;
  for (int i = 0; i < shape.machines; ++i) {
    const MachineShape* m = &kGpu;
    if (!has_gpu[static_cast<size_t>(i)]) {
      double u = rng.uniform(), acc = 0;
      m = &kPlain[2];
      for (const auto& c : kPlain)
        if (u < (acc += c.share)) {
          m = &c;
          break;
        }
    }
    Node n;
    n.name = fmt::format("m{:05d}", i);
    n.address = fmt::format("10.{}.{}.{}", 64 + (i >> 16), (i >> 8) & 255, i & 255);
    n.capacity = Resources{m->cores * 1000, m->mem_gi * kTraceGi, m->gpus, 0};
    n.rack = fmt::format("r{:03d}", i / 40);
    n.labels = {{"rack", n.rack}, {"disk", rng.uniform() < 0.5 ? "ssd" : "hdd"}};
    if (m->gpus > 0) n.labels["gpu-model"] = "a100";
    total_cpu += n.capacity.cpu_millis;
    w.machines.push_back(std::move(n));
  }

  // Jobs until their cpu requests reach the fill: heavy-tailed instance counts
  // (Pareto), log-normal requests, memory per core log-normal too.
  int64_t requested = 0, gpus_requested = 0, total_gpus = 0;
  for (const auto& m : w.machines) total_gpus += m.capacity.gpu;
  auto target = static_cast<int64_t>(shape.fill * static_cast<double>(total_cpu));
  auto gpu_target = static_cast<int64_t>(shape.fill * static_cast<double>(total_gpus));
  for (int job = 0; requested < target; ++job) {
    bool prod = rng.uniform() < shape.prod_share;
    bool gpu = gpu_machines > 0 && rng.uniform() < shape.gpu_job_share;
    bool constrained = rng.uniform() < shape.constrained_share;
    int count = std::min(200, static_cast<int>(rng.pareto(1.2)));
    Role role;
    int64_t cpu = std::clamp<int64_t>(std::llround(rng.lognormal(1000, 0.9)), 100, 16000);
    double gi_per_core = std::clamp(rng.lognormal(4.0, 0.6), 0.25, 32.0);
    int64_t mem = std::clamp<int64_t>(std::llround(static_cast<double>(cpu) / 1000.0 * gi_per_core * kTraceGi), 256 * kTraceMi,
                                      64 * kTraceGi);
    role.resources = Resources{cpu, mem, 0, 0};
    if (gpu) {
      // GPU jobs fill the GPUs as the rest fills the cpus, so the cell can hold them.
      role.resources.gpu = rng.uniform() < 0.5 ? 1 : 2;
      count = std::min(count, 8);
      if (gpus_requested + role.resources.gpu * count > gpu_target) role.resources.gpu = 0;
      gpus_requested += role.resources.gpu * count;
    }
    role.priority.band = prod ? Band::Prod : Band::Nonprod;
    if (constrained) role.node_selector = {{"disk", "ssd"}};
    role.replicas = count;
    double usage = prod ? std::clamp(rng.lognormal(shape.usage, 0.3), 0.05, 1.0) : 1.0;
    add_job(w, fmt::format("job{:06d}", job), std::move(role), usage);
    requested += cpu * count;
  }
  return w;
}

void add_job(SimWorkload& w, const std::string& app, Role role, double usage) {
  role.name = "main";
  std::string key = "default/" + app + "/main";
  if (role.priority.band != Band::Nonprod) w.usage[key] = usage;
  for (int o = 0; o < role.replicas; ++o) {
    Instance i;
    i.tenant = "default";
    i.app = app;
    i.role = "main";
    i.ordinal = o;
    i.request = role.resources;
    i.priority = role.priority;
    i.labels = {{"gaia.io/app", app}, {"gaia.io/role", "main"}};
    i.state = InstanceState::Pending;
    w.instances.push_back(std::move(i));
  }
  w.roles[key] = std::move(role);
}

std::vector<CompactionPolicy> standard_policies() {
  std::vector<CompactionPolicy> out;
  CompactionPolicy gaia_default{"gaia", SchedulerProfile{}};
  out.push_back(gaia_default);

  CompactionPolicy best_fit{"best-fit", SchedulerProfile{}};
  best_fit.profile.strategy = "stack";
  best_fit.profile.w_allocation = 1;
  best_fit.profile.w_balance = best_fit.profile.w_locality = best_fit.profile.w_image = 0;
  best_fit.profile.w_affinity = best_fit.profile.w_spread = best_fit.profile.w_scarce = 0;
  out.push_back(best_fit);

  // Best fit that keeps GPU machines for GPU work (gaia's scarce score at its default
  // weight): tells what packing gains apart from what the GPUs cost.
  CompactionPolicy best_fit_scarce = best_fit;
  best_fit_scarce.name = "best-fit-scarce";
  best_fit_scarce.profile.w_scarce = SchedulerProfile{}.w_scarce;
  out.push_back(best_fit_scarce);

  // kube-scheduler's default scoring for pods without affinity: NodeResourcesFit
  // (LeastAllocated) and NodeResourcesBalancedAllocation at weight 1, the default
  // topology spread at weight 2, image locality at 1; nothing keeps GPU nodes apart.
  CompactionPolicy kube{"k8s-least-allocated", SchedulerProfile{}};
  kube.profile.strategy = "spread";
  kube.profile.w_allocation = kube.profile.w_balance = kube.profile.w_image = 1;
  kube.profile.w_spread = 2;
  kube.profile.w_scarce = 0;
  out.push_back(kube);

  CompactionPolicy segregated = gaia_default;
  segregated.name = "gaia-segregated";
  segregated.segregate = true;
  out.push_back(segregated);

  CompactionPolicy bucket = gaia_default;
  bucket.name = "gaia-bucketed";
  bucket.bucket = true;
  out.push_back(bucket);

  CompactionPolicy reclaim = gaia_default;
  reclaim.name = "gaia-reclaim";
  reclaim.reclaim = true;
  out.push_back(reclaim);
  return out;
}

CompactionResult compact(const SimWorkload& w, const CompactionPolicy& p, const CompactionOptions& o) {
  CompactionResult result;
  result.policy = p.name;
  result.machines = static_cast<int>(w.machines.size());
  SimWorkload work = w;
  if (p.bucket) {
    for (auto& [key, role] : work.roles) {
      role.resources.cpu_millis = bucketed(role.resources.cpu_millis);
      role.resources.memory_bytes = bucketed(role.resources.memory_bytes);
    }
    for (auto& i : work.instances) {
      i.request.cpu_millis = bucketed(i.request.cpu_millis);
      i.request.memory_bytes = bucketed(i.request.memory_bytes);
    }
  }
  result.instances = static_cast<int64_t>(work.instances.size());
  std::vector<Instance> prod, nonprod;
  for (const auto& i : work.instances) (i.priority.band == Band::Nonprod ? nonprod : prod).push_back(i);
  // Each removal order is its own search over the same workload, so the orders run side
  // by side (`threads` workers); each writes only its own slot, and the result is the
  // same whatever the number of workers.
  std::vector<CompactionRun> runs(static_cast<size_t>(std::max(o.seeds, 0)));
  std::vector<int> schedules(runs.size(), 0);
  auto one = [&](size_t s) {
    uint64_t seed = o.first_seed + static_cast<uint64_t>(s);
    std::vector<size_t> order = shuffled(work.machines.size(), seed);
    CompactionRun run;
    if (p.segregate) {
      // Two cells drawn from the same machines, one per kind of work; each is compacted
      // on its own and the cells' sizes add up.
      CompactionRun a = smallest_cell(work, prod, order, p, o.pending_allowed, schedules[s]);
      CompactionRun b = smallest_cell(work, nonprod, shuffled(work.machines.size(), seed ^ 0x9e3779b97f4a7c15ULL), p,
                                      o.pending_allowed, schedules[s]);
      run.machines = a.machines + b.machines;
      run.pending = a.pending + b.pending;
      run.gpu_pending = a.gpu_pending + b.gpu_pending;
      run.fits_at_all = a.fits_at_all && b.fits_at_all;
    } else {
      run = smallest_cell(work, work.instances, order, p, o.pending_allowed, schedules[s]);
    }
    run.seed = seed;
    runs[s] = run;
  };
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t s; (s = next.fetch_add(1)) < runs.size();) one(s);
  };
  size_t workers = std::clamp<size_t>(static_cast<size_t>(std::max(o.threads, 1)), 1, std::max<size_t>(runs.size(), 1));
  std::vector<std::future<void>> helpers;
  for (size_t w = 1; w < workers; ++w) helpers.push_back(std::async(std::launch::async, worker));
  worker();
  for (auto& h : helpers) h.get();  // Rethrows a bug's exception here, for main to report.
  result.runs = std::move(runs);
  for (int n : schedules) result.schedules += n;
  return result;
}

int machines_percentile(const CompactionResult& r, double pct) {
  if (r.runs.empty()) return 0;
  std::vector<int> v;
  for (const auto& run : r.runs) v.push_back(run.machines);
  std::sort(v.begin(), v.end());
  auto rank = static_cast<size_t>(std::ceil(pct / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

}  // namespace gaia::sim
