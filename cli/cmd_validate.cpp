// gaia validate PATH...: checks many specs at once for CI. Each spec is loaded, its
// chain resolved and rendered, and its workload validated; every problem of every spec
// is reported, and the exit code is 1 if there was any.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "cli/render_flags.hpp"
#include "ops/loader.hpp"
#include "ops/render_inputs.hpp"

namespace gaia::cli {

namespace {

struct ValidateArgs {
  std::vector<std::string> paths;
  std::string output = "text";
  int jobs = 0;  // 0: one per core.
  RenderFlags flags;
};

struct SpecResult {
  std::string path;
  std::string app;
  Diagnostics errors;
};

SpecResult validate_one(const Globals& g, const std::filesystem::path& dir, const spec::SpecRepository& repo,
                        const RunningApps& running, const render::ChainOptions& options, render::RenderCache* cache) {
  SpecResult r;
  r.path = ops::display_path(dir);
  auto root = spec::load_app_spec(dir);
  if (!root) {
    r.errors = root.error();
    return r;
  }
  r.app = root->id();
  auto plan = spec::resolve({&*root}, repo, running.list_all(), g.tenant, ops::config_evaluator(options));
  if (!plan) {
    r.errors = plan.error();
    return r;
  }
  auto chain = render::render_chain(*plan, options, cache);
  if (!chain) r.errors = chain.error();
  return r;
}

int run_validate(const Globals& g, const ValidateArgs& a) {
  // Each PATH on its own: one that does not exist (or holds no spec) is a failed entry
  // of the report in its place, and every other spec is still checked.
  std::vector<std::filesystem::path> found;
  std::vector<std::optional<SpecResult>> bad;  // Per entry of `found`, or a bad path.
  std::vector<std::filesystem::path> order;
  for (const auto& raw : a.paths) {
    auto one = ops::expand_spec_paths({raw});
    if (!one) {
      SpecResult r;
      r.path = raw;
      r.errors = one.error();
      bad.emplace_back(std::move(r));
      order.emplace_back();
      continue;
    }
    for (auto& d : *one) {
      found.push_back(d);
      bad.emplace_back(std::nullopt);
      order.push_back(std::move(d));
    }
  }
  auto repo = ops::open_repository(g.repo_paths(), found);
  if (!repo) return report(g, repo.error());
  auto running = ops::load_running(a.flags.running_file);
  if (!running) return report(g, running.error());
  auto settings = a.flags.settings(g);
  auto inputs = ops::load_render_inputs(settings);
  if (!inputs) return report(g, inputs.error());
  auto options = ops::chain_options(*inputs, g.tenant);
  auto cache = ops::open_render_cache(settings.cache_dir);

  // Specs are independent and each render is its own sandboxed process, so they are
  // validated side by side, one worker per core (--jobs); results keep the order of
  // the paths, so the report is the same whatever finished first. Everything shared is
  // read-only (the repository, the running apps, the options) or made for concurrent
  // use (the render cache).
  std::vector<SpecResult> results(order.size());
  size_t workers = a.jobs > 0 ? static_cast<size_t>(a.jobs) : std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, order.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < order.size(); i = next++)
      results[i] = bad[i] ? *bad[i] : validate_one(g, order[i], *repo, *running, options, cache.get());
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  size_t failed = 0, problems = 0;
  for (const auto& r : results)
    if (!r.errors.empty()) {
      ++failed;
      problems += r.errors.size();
    }

  if (a.output == "json") {
    nlohmann::json out = {{"valid", failed == 0}, {"specs", nlohmann::json::array()}};
    for (const auto& r : results) {
      nlohmann::json errs = nlohmann::json::array();
      for (const auto& d : r.errors)
        errs.push_back({{"file", d.location.file}, {"line", d.location.line}, {"column", d.location.column},
                        {"path", d.path}, {"message", d.message}, {"hint", d.hint}});
      out["specs"].push_back({{"path", r.path}, {"app", r.app}, {"valid", r.errors.empty()}, {"errors", errs}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return failed ? k_error : k_ok;
  }

  for (const auto& r : results) {
    if (r.errors.empty()) {
      if (!g.quiet)
        std::printf("%s %s%s\n", green(g, stdout, "ok").c_str(), r.path.c_str(),
                    r.app.empty() ? "" : fmt::format(" ({})", r.app).c_str());
    } else {
      std::printf("%s %s%s: %zu problem(s)\n", red(g, stdout, "FAIL").c_str(), r.path.c_str(),
                  r.app.empty() ? "" : fmt::format(" ({})", r.app).c_str(), r.errors.size());
      std::fflush(stdout);
      report(g, r.errors);
    }
  }
  if (failed)
    std::printf("%zu of %zu spec(s) invalid, %zu problem(s)\n", failed, results.size(), problems);
  else if (!g.quiet)
    std::printf("all %zu spec(s) valid\n", results.size());
  return failed ? k_error : k_ok;
}

}  // namespace

void register_validate(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("validate", "Check app specs (and the chains they need) for every problem at once");
  cmd->footer(
      "Exit status: 0 when every spec is valid, 1 when any is not.\n"
      "Examples:\n"
      "  gaia validate examples/            # every app directory under examples/\n"
      "  gaia validate specs/a specs/b --error-format github\n"
      "  gaia validate examples/ -o json");
  auto a = std::make_shared<ValidateArgs>();
  cmd->add_option("PATH", a->paths, "App directories or folders of them")->required();
  cmd->add_option("-o,--output", a->output, "Output format")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-j,--jobs", a->jobs, "Specs validated at once (default: one per core)")
      ->check(CLI::Range(1, 256))
      ->type_name("N");
  a->flags.add_to(cmd);
  cmd->callback([&g, code, a] { *code = run_validate(g, *a); });
}

}  // namespace gaia::cli
