// gaia render DIR: resolves the chain DIR needs, renders it, and prints the gaia/v1
// document (or Kubernetes manifests) of the app, or of every app deployed with --all.
#include <fmt/format.h>

#include "cli/render_flags.hpp"
#include "ops/loader.hpp"
#include "ops/render_inputs.hpp"
#include "render/kubernetes.hpp"
#include "render/render_heap.hpp"
#include "render/yaml_emit.hpp"

namespace gaia::cli {

namespace {

struct RenderArgs {
  std::string dir;
  std::string output = "yaml";
  std::string target = "gaia";
  bool all = false;
  RenderFlags flags;
};

int run_render(const Globals& g, const RenderArgs& a) {
  auto dirs = ops::expand_spec_paths({a.dir});
  if (!dirs) return report(g, dirs.error());
  if (dirs->size() != 1)
    return report_error(g, fmt::format("{} holds {} app specs; render takes one app directory", a.dir, dirs->size()),
                        "name one of them, e.g. " + ops::display_path((*dirs)[0]));
  auto root = spec::load_app_spec((*dirs)[0]);
  if (!root) return report(g, root.error());
  auto repo = ops::open_repository(g.repo_paths(), *dirs);
  if (!repo) return report(g, repo.error());
  auto running = ops::load_running(a.flags.running_file);
  if (!running) return report(g, running.error());
  auto settings = a.flags.settings(g);
  auto inputs = ops::load_render_inputs(settings);
  // Conditions of dependencies are decided on the config the inputs give; spec errors
  // are still reported first.
  auto options = inputs ? ops::chain_options(*inputs, g.tenant) : render::ChainOptions{};
  auto plan = spec::resolve({&*root}, *repo, running->list_all(), g.tenant,
                            inputs ? ops::config_evaluator(options) : spec::ConfigEvaluator{});
  if (!plan) return report(g, plan.error());
  if (!inputs) return report(g, inputs.error());
  auto cache = ops::open_render_cache(settings.cache_dir);
  auto chain = render::render_chain(*plan, options, cache.get());
  if (!chain) return report(g, chain.error());

  std::vector<size_t> selected;
  if (a.all) {
    for (size_t i : plan->order)
      if (chain->rendered.count(i)) selected.push_back(i);
  } else {
    selected.push_back(plan->roots.at(0));
  }

  std::vector<nlohmann::json> documents;
  Diagnostics errors;
  for (size_t i : selected) {
    const auto& r = chain->rendered.at(i);
    if (a.target == "kubernetes") {
      auto manifests = render::to_kubernetes(r.workload, *plan->nodes[i].spec);
      if (!manifests) {
        errors.insert(errors.end(), manifests.error().begin(), manifests.error().end());
        continue;
      }
      documents.insert(documents.end(), manifests->begin(), manifests->end());
    } else {
      documents.push_back(r.document);
    }
  }
  if (!errors.empty()) return report(g, errors);

  if (a.output == "json") {
    nlohmann::json out;
    if (a.target == "kubernetes")
      out = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", documents}};
    else if (!a.all)
      out = documents.at(0);
    else
      out = documents;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::fputs(render::emit_yaml_documents(documents).c_str(), stdout);
  }
  if (g.verbose > 0) {
    // Which allocator the evaluations used: a render without mimalloc is slower, not wrong.
    const auto& s = chain->stats;
    const auto& info = render::load_render_heap();
    std::string heap;
    if (s.evaluations > 0 && s.heap_evaluations == s.evaluations)
      heap = fmt::format(" ({})", info.version);
    else if (s.evaluations > 0)
      heap = fmt::format(" ({} with glibc malloc: {})", s.evaluations - s.heap_evaluations,
                         s.glibc_reason.empty() ? info.why_not : s.glibc_reason);
    std::fprintf(stderr, "rendered %zu app(s): %d evaluation(s)%s, %d cache hit(s)\n", chain->rendered.size(),
                 s.evaluations, heap.c_str(), s.cache_hits);
  }
  return k_ok;
}

}  // namespace

void register_render(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("render", "Render an app spec (and the chain it depends on) to a workload document");
  cmd->footer(
      "Examples:\n"
      "  gaia render examples/hdfs                        # gaia/v1 document as YAML\n"
      "  gaia render examples/web -o json --all           # every app the chain deploys\n"
      "  gaia render examples/hdfs --set datanodes=5\n"
      "  gaia render examples/hdfs --target kubernetes | kubectl apply --dry-run=client -f -");
  auto a = std::make_shared<RenderArgs>();
  cmd->add_option("DIR", a->dir, "App directory")->required();
  cmd->add_option("-o,--output", a->output, "Output format")->check(CLI::IsMember({"yaml", "json"}));
  cmd->add_option("--target", a->target, "gaia (the workload document) or kubernetes (manifests)")
      ->check(CLI::IsMember({"gaia", "kubernetes"}));
  cmd->add_flag("--all", a->all, "Print every app the chain deploys, in deploy order, not only DIR's");
  a->flags.add_to(cmd);
  cmd->callback([&g, code, a] { *code = run_render(g, *a); });
}

}  // namespace gaia::cli
