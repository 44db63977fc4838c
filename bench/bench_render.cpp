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
#include <memory>
#include <stdexcept>

#include "bench/bench_util.hpp"
#include "lib/error.hpp"
#include "render/cache.hpp"
#include "render/chain.hpp"
#include "render/evaluator.hpp"
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
  int renders = 0;               // Apps rendered (evaluated or taken from the cache).
  int evaluations = 0;           // Sandboxes forked.
};

ModeResult run_passes(const Examples& ex, int passes, render::RenderCache* cache) {
  render::ChainOptions options;
  ModeResult r;
  for (int pass = 0; pass < passes; ++pass) {
    for (const auto& plan : ex.plans) {
      Result<render::ChainResult> chain;
      double ms = time_ms([&] { chain = render::render_chain(plan, options, cache); });
      if (!chain) fail_with("render of an example chain failed", chain.error());
      r.chain_ms.push_back(ms);
      r.total_ms += ms;
      r.renders += static_cast<int>(chain->rendered.size());
      r.evaluations += chain->stats.evaluations;
    }
  }
  return r;
}

double per_second(int count, double total_ms) { return total_ms > 0 ? round3(count * 1000.0 / total_ms) : 0.0; }

void add_mode(Figures& out, const std::string& prefix, const ModeResult& m) {
  out[prefix + "renders"] = m.renders;
  out[prefix + "evaluations"] = m.evaluations;
  out[prefix + "renders_per_s"] = per_second(m.renders, m.total_ms);
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
  std::vector<double> sandboxed, in_process, bare_fork;
  for (int i = 0; i < k_trivial_iterations; ++i) {
    Result<render::Rendered> r;
    sandboxed.push_back(time_ms([&] { r = render::render_app(req, nullptr); }));
    if (!r) fail_with("render of the trivial app failed", r.error());
  }

  // The same steps render_app takes after the sandbox, without the fork: evaluation
  // with the inputs render_app would give the child, then validation.
  render::EvalInput in;
  in.app_dir = spec->dir;
  in.app_name = spec->name;
  in.app = {{"name", spec->name}, {"version", spec->version.to_string()}, {"tenant", req.options.tenant}};
  in.config = &req.options.config;
  for (int i = 0; i < k_trivial_iterations; ++i) {
    in_process.push_back(time_ms([&] {
      auto out = render::evaluate_jsonnet(in);
      if (!out) fail_with("in-process evaluation of the trivial app failed", out.error());
      auto w = render::validate_workload(*spec, req.options.tenant, out->raw);
      if (!w) fail_with("validation of the trivial app failed", w.error());
      auto doc = render::to_document(*w);
    }));
  }

  render::SandboxLimits limits;
  for (int i = 0; i < k_trivial_iterations; ++i) {
    render::SandboxOutcome outcome;
    bare_fork.push_back(time_ms([&] { outcome = render::run_sandboxed(limits, [](render::SandboxChannel&) { return std::string("{}"); }); }));
    if (outcome.status != render::SandboxOutcome::Status::Ok)
      throw std::runtime_error("bare sandbox round trip failed: " + outcome.error);
  }

  std::vector<double> empty_jsonnet;
  for (int i = 0; i < k_trivial_iterations; ++i) {
    empty_jsonnet.push_back(time_ms([] {
      JsonnetVm* vm = jsonnet_make();
      int error = 0;
      char* result = jsonnet_evaluate_snippet(vm, "empty", "{}", &error);
      jsonnet_realloc(vm, result, 0);
      jsonnet_destroy(vm);
      if (error) throw std::runtime_error("libjsonnet cannot evaluate {}");
    }));
  }

  Figures out;
  out["iterations"] = k_trivial_iterations;
  add_latency(out, sandboxed, "sandboxed_");
  add_latency(out, in_process, "in_process_");
  add_latency(out, bare_fork, "bare_sandbox_");
  add_latency(out, empty_jsonnet, "empty_jsonnet_");
  out["overhead_p50_ms"] = round3(percentile(sandboxed, 50) - percentile(in_process, 50));
  return out;
}

Figures run_render_examples() {
  Examples ex = load_examples();
  Figures out;
  out["apps"] = ex.plans.size();
  out["renders_per_pass"] = ex.renders_per_pass;

  // Baseline: no cache, every app is evaluated in a fresh sandbox.
  ModeResult uncached = run_passes(ex, k_uncached_passes, nullptr);
  if (uncached.evaluations != uncached.renders)
    throw std::runtime_error("an uncached render did not evaluate its Jsonnet");
  out["uncached_passes"] = k_uncached_passes;
  add_mode(out, "uncached_", uncached);

  // Warmed caches: one pass fills them, the measured passes must not evaluate at all.
  render::MemoryRenderCache memory;
  run_passes(ex, 1, &memory);
  ModeResult mem = run_passes(ex, k_cached_passes, &memory);
  if (mem.evaluations != 0) throw std::runtime_error("the warmed memory cache missed");
  out["cached_passes"] = k_cached_passes;
  add_mode(out, "memory_", mem);
  out["memory_entries"] = memory.size();

  TempDir cache_dir("gaia-bench-render-cache");
  render::DirectoryRenderCache directory(cache_dir.path());
  run_passes(ex, 1, &directory);
  ModeResult dir = run_passes(ex, k_cached_passes, &directory);
  if (dir.evaluations != 0) throw std::runtime_error("the warmed directory cache missed");
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
