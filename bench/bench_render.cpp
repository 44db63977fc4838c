// Render benchmarks.
//
// render-examples: every example app in examples/ is resolved against the examples
// repository once, then its whole chain is rendered with render_chain, repeatedly:
// without a cache (every app forks a sandbox and evaluates its Jsonnet; this is the
// baseline), with a warmed MemoryRenderCache and with a warmed DirectoryRenderCache in a
// temporary directory. A cached render still hashes every file of the app directory to
// build its key, so the ratio shows what the cache saves, not an upper bound.
//
// The fork-sandbox overhead is measured on a trivial app written to a temporary
// directory: render_app without a cache (fork + evaluate + validate) against the same
// evaluation and validation in-process, plus a bare run_sandboxed round trip. Because
// libjsonnet parses its standard library again for every file it evaluates, the cost of
// evaluating an empty snippet with a fresh VM is measured too: it is the floor per file.
extern "C" {
#include <libjsonnet.h>
}

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>

#include "bench/bench_util.hpp"
#include "lib/error.hpp"
#include "render/cache.hpp"
#include "render/chain.hpp"
#include "render/evaluator.hpp"
#include "render/render_heap.hpp"
#include "render/renderer.hpp"
#include "render/sandbox.hpp"
#include "render/workload.hpp"
#include "spec/app_spec.hpp"
#include "spec/repository.hpp"
#include "spec/resolve.hpp"

namespace gaia::bench {
namespace {

namespace fs = std::filesystem;

// Passes over all example chains per mode. Uncached passes fork a child per app, so
// they are fewer; the counts keep the whole case at a few seconds on 2 cores.
constexpr int k_uncached_passes = 2;
constexpr int k_cached_passes = 50;
constexpr int k_trivial_iterations = 20;

[[noreturn]] void fail_with(const std::string& what, const Diagnostics& ds) {
  throw std::runtime_error(fmt::format("{}:\n{}", what, format_diagnostics(ds)));
}

struct Examples {
  spec::SpecRepository repo;
  std::vector<std::unique_ptr<spec::AppSpec>> roots;  // The plans point into these.
  std::vector<spec::Plan> plans;                      // One per example directory.
  int renders_per_pass = 0;                           // Deploy nodes over all plans.
};

Examples load_examples() {
  fs::path dir = fs::path(GAIA_SOURCE_DIR) / "examples";
  auto repo = spec::SpecRepository::load({dir});
  if (!repo) fail_with("cannot load the examples repository", repo.error());
  Examples ex{std::move(*repo), {}, {}, 0};

  std::vector<fs::path> app_dirs;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && fs::exists(entry.path() / "app.yaml")) app_dirs.push_back(entry.path());
  std::sort(app_dirs.begin(), app_dirs.end());
  if (app_dirs.empty()) throw std::runtime_error("no example apps under " + dir.string());

  for (const auto& d : app_dirs) {
    auto root = spec::load_app_spec(d);
    if (!root) fail_with("cannot load " + d.string(), root.error());
    ex.roots.push_back(std::make_unique<spec::AppSpec>(std::move(*root)));
    auto plan = spec::resolve({ex.roots.back().get()}, ex.repo, {}, "default");
    if (!plan) fail_with("cannot resolve " + d.string(), plan.error());
    for (const auto& node : plan->nodes)
      if (node.action == spec::Action::Deploy) ++ex.renders_per_pass;
    ex.plans.push_back(std::move(*plan));
  }
  return ex;
}

struct ModeResult {
  std::vector<double> chain_ms;  // One sample per render_chain call.
  double total_ms = 0;
  double cpu_ms = 0;             // This process and its sandboxes.
  int renders = 0;               // Apps rendered (evaluated or taken from the cache).
  int evaluations = 0;           // Sandboxes forked.
  int heap_evaluations = 0;      // Of those, children that allocated from mimalloc.
};

// One pass over every example chain, added to `r`.
void run_pass(const Examples& ex, render::RenderCache* cache, ModeResult& r) {
  render::ChainOptions options;
  for (const auto& plan : ex.plans) {
    Result<render::ChainResult> chain;
    double cpu_before = cpu_ms();
    double ms = time_ms([&] { chain = render::render_chain(plan, options, cache); });
    r.cpu_ms += cpu_ms() - cpu_before;
    if (!chain) fail_with("render of an example chain failed", chain.error());
    r.chain_ms.push_back(ms);
    r.total_ms += ms;
    r.renders += static_cast<int>(chain->rendered.size());
    r.evaluations += chain->stats.evaluations;
    r.heap_evaluations += chain->stats.heap_evaluations;
  }
}

double per_second(int count, double total_ms) { return total_ms > 0 ? round3(count * 1000.0 / total_ms) : 0.0; }

void add_mode(Figures& out, const std::string& prefix, const ModeResult& m) {
  out[prefix + "renders"] = m.renders;
  out[prefix + "evaluations"] = m.evaluations;
  if (m.evaluations > 0) out[prefix + "heap_evaluations"] = m.heap_evaluations;
  out[prefix + "renders_per_s"] = per_second(m.renders, m.total_ms);
  out[prefix + "cpu_ms_per_render"] = m.renders ? round3(m.cpu_ms / m.renders) : 0.0;
  add_latency(out, m.chain_ms, prefix + "chain_");
}

// A valid app with one role and no dependencies: as little Jsonnet as a render can have.
void write_trivial_app(const fs::path& dir) {
  std::ofstream(dir / "app.yaml") << "name: trivial\nversion: 1.0.0\noutputs: [port]\n";
  std::ofstream(dir / "config.jsonnet") << "{ replicas: 1 }\n";
  std::ofstream(dir / "main.jsonnet")
      << "function(config, deps, app) {\n"
         "  roles: { main: { image: 'busybox:1.36', replicas: config.replicas,\n"
         "                   resources: { cpu: '100m', memory: '64Mi' } } },\n"
         "  outputs: { port: 80 },\n"
         "}\n";
}

Figures measure_sandbox_overhead() {
  TempDir tmp("gaia-bench-trivial");
  write_trivial_app(tmp.path());
  auto spec = spec::load_app_spec(fs::canonical(tmp.path()));
  if (!spec) fail_with("cannot load the trivial app", spec.error());

  render::RenderRequest req;
  req.spec = &*spec;
  // The same steps render_app takes after the sandbox, without the fork: evaluation
  // with the inputs render_app would give the child, then validation.
  render::EvalInput in;
  in.app_dir = spec->dir;
  in.app_name = spec->name;
  in.app = {{"name", spec->name}, {"version", spec->version.to_string()}, {"tenant", req.options.tenant}};
  in.config = req.options.config.get();
  auto render_in_process = [&] {
    auto out = render::evaluate_jsonnet(in);
    if (!out) fail_with("in-process evaluation of the trivial app failed", out.error());
    auto w = render::validate_workload(*spec, req.options.tenant, out->raw);
    if (!w) fail_with("validation of the trivial app failed", w.error());
    auto doc = render::to_document(*w);
  };
  auto render_sandboxed = [&] {
    auto r = render::render_app(req, nullptr);
    if (!r) fail_with("render of the trivial app failed", r.error());
  };
  render::SandboxLimits limits;
  auto bare_sandbox = [&] {
    auto outcome = render::run_sandboxed(limits, [](render::SandboxChannel&) { return std::string("{}"); });
    if (outcome.status != render::SandboxOutcome::Status::Ok)
      throw std::runtime_error("bare sandbox round trip failed: " + outcome.error);
  };
  auto empty_jsonnet = [] {
    JsonnetVm* vm = jsonnet_make();
    int error = 0;
    char* result = jsonnet_evaluate_snippet(vm, "empty", "{}", &error);
    jsonnet_realloc(vm, result, 0);
    jsonnet_destroy(vm);
    if (error) throw std::runtime_error("libjsonnet cannot evaluate {}");
  };

  // The variants take turns, so load from other processes drifting over the run
  // affects them alike. CPU time is summed per variant as well.
  struct Variant {
    const char* prefix;
    std::function<void()> run;
    std::vector<double> ms;
    double cpu = 0;
  };
  std::vector<Variant> variants = {{"sandboxed_", render_sandboxed, {}, 0},
                                   {"in_process_", render_in_process, {}, 0},
                                   {"bare_sandbox_", bare_sandbox, {}, 0},
                                   {"empty_jsonnet_", empty_jsonnet, {}, 0}};
  for (int i = 0; i < k_trivial_iterations; ++i) {
    for (auto& v : variants) {
      double cpu_before = cpu_ms();
      v.ms.push_back(time_ms(v.run));
      v.cpu += cpu_ms() - cpu_before;
    }
  }

  Figures out;
  out["iterations"] = k_trivial_iterations;
  for (const auto& v : variants) {
    add_latency(out, v.ms, v.prefix);
    out[std::string(v.prefix) + "cpu_mean_ms"] = round3(v.cpu / k_trivial_iterations);
  }
  // What the sandbox adds to a render: wall clock at the median, and CPU time (which
  // includes the child's evaluation, so the difference is fork, pipe and exit).
  out["overhead_p50_ms"] = round3(percentile(variants[0].ms, 50) - percentile(variants[1].ms, 50));
  out["overhead_cpu_ms"] = round3((variants[0].cpu - variants[1].cpu) / k_trivial_iterations);
  return out;
}

Figures run_render_examples() {
  Examples ex = load_examples();
  Figures out;
  out["apps"] = ex.plans.size();
  out["renders_per_pass"] = ex.renders_per_pass;

  // Baseline: no cache, every app is evaluated in a fresh sandbox.
  ModeResult uncached;
  for (int pass = 0; pass < k_uncached_passes; ++pass) run_pass(ex, nullptr, uncached);
  if (uncached.evaluations != uncached.renders)
    throw std::runtime_error("an uncached render did not evaluate its Jsonnet");
  out["uncached_passes"] = k_uncached_passes;
  // The allocator of the render's children (render/render_heap.hpp): with glibc's an
  // uncached render costs about half as much CPU again.
  const auto& heap = render::load_render_heap();
  out["render_heap"] = heap.available ? heap.version : "glibc malloc: " + heap.why_not;
  add_mode(out, "uncached_", uncached);

  // Warmed caches: one pass fills each, then their passes alternate (so drifting load
  // affects both alike) and must not evaluate at all.
  render::MemoryRenderCache memory;
  TempDir cache_dir("gaia-bench-render-cache");
  render::DirectoryRenderCache directory(cache_dir.path());
  ModeResult warm, mem, dir;
  run_pass(ex, &memory, warm);
  run_pass(ex, &directory, warm);
  for (int pass = 0; pass < k_cached_passes; ++pass) {
    run_pass(ex, &memory, mem);
    run_pass(ex, &directory, dir);
  }
  if (mem.evaluations != 0) throw std::runtime_error("the warmed memory cache missed");
  if (dir.evaluations != 0) throw std::runtime_error("the warmed directory cache missed");
  out["cached_passes"] = k_cached_passes;
  out["cache_entries"] = memory.size();
  add_mode(out, "memory_", mem);
  add_mode(out, "directory_", dir);

  double base = per_second(uncached.renders, uncached.total_ms);
  out["memory_vs_uncached"] = base > 0 ? round3(per_second(mem.renders, mem.total_ms) / base) : 0.0;
  out["directory_vs_uncached"] = base > 0 ? round3(per_second(dir.renders, dir.total_ms) / base) : 0.0;

  out["trivial"] = measure_sandbox_overhead();
  out["children_peak_rss_mb"] = peak_rss_mb(RUSAGE_CHILDREN);
  return out;
}

const Registration k_render_examples{
    "render-examples",
    "render every example chain: uncached (baseline) vs warmed memory and directory caches; sandbox overhead",
    &run_render_examples};

}  // namespace
}  // namespace gaia::bench
