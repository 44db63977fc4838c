// gaia deps DIR...: the dependency plan (reuse or deploy, versions, deploy order) as a
// tree, JSON or Graphviz, against the apps running in the current context (or the
// --running file); --reverse NAME lists the apps that depend on NAME.
#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "cli/context.hpp"
#include "cli/render_flags.hpp"
#include "lib/config_center.hpp"
#include "ops/render_inputs.hpp"
#include "ops/loader.hpp"
#include "spec/plan_format.hpp"

namespace gaia::cli {

namespace {

struct DepsArgs {
  std::vector<std::string> dirs;
  std::string output = "tree";
  bool dot = false;
  bool ascii = false;
  std::string reverse;
  std::string name;
  RenderFlags flags;
};

// What the context's store says: the apps of the tenant running there, and its config
// and label centers (for the `when:` of dependencies). A store file that does not exist
// yet (no `gaia cluster create` so far) runs nothing and has empty centers, so `deps`
// keeps working on a machine without a cluster; any other failure to open the store is
// reported.
struct ContextView {
  std::vector<RunningApp> running;
  std::optional<StoreConfigSource> centers;
};
Result<ContextView> context_view(const Globals& g) {
  auto context = resolve_context(g);
  if (!context) return fail(context.error());
  if (auto where = parse_store_location(context->store); where && where->kind == StoreLocation::Kind::File) {
    std::error_code ec;
    if (!std::filesystem::exists(where->file, ec)) return ContextView{};
  }
  auto session = open_session(g);
  if (!session) return fail(session.error());
  ContextView out;
  out.running = (*session)->state->list_all();
  auto centers = StoreConfigSource::load(*(*session)->store);
  if (!centers) return fail(centers.error());
  out.centers = std::move(*centers);
  return out;
}

int run_deps(const Globals& g, const DepsArgs& a) {
  if (a.dirs.empty() && a.reverse.empty())
  {
    report_error(g, "nothing to show", "give an app directory (gaia deps DIR) or --reverse NAME");
    return k_usage;
  }
  std::vector<std::filesystem::path> dirs;
  if (!a.dirs.empty()) {
    auto expanded = ops::expand_spec_paths(a.dirs);
    if (!expanded) return report(g, expanded.error());
    dirs = *expanded;
  }
  auto repo = ops::open_repository(g.repo_paths(), dirs);
  if (!repo) return report(g, repo.error());

  if (dirs.empty()) {
    // Reverse over the whole repository: who would be affected by a change to NAME.
    if (repo->size() == 0)
      return report_error(g, "the spec repository is empty, so nothing can depend on " + a.reverse,
                          "name it with --repo DIR or GAIA_REPO, or give an app directory");
    if (!repo->contains(a.reverse))
      return report_error(g, fmt::format("no app named '{}' in the repository", a.reverse),
                          "apps: " + fmt::format("{}", fmt::join(repo->names(), ", ")));
    auto dependents = spec::reverse_dependents(*repo, a.reverse);
    if (a.output == "json") std::printf("%s\n", spec::repo_dependents_to_json(dependents).dump(2).c_str());
    else std::fputs(spec::format_repo_dependents(dependents, a.reverse).c_str(), stdout);
    return k_ok;
  }

  std::vector<spec::AppSpec> roots;
  Diagnostics errors;
  for (const auto& d : dirs) {
    auto s = spec::load_app_spec(d);
    if (!s) errors.insert(errors.end(), s.error().begin(), s.error().end());
    else roots.push_back(std::move(*s));
  }
  if (!errors.empty()) return report(g, errors);
  if (!a.name.empty() && roots.size() != 1)
    return report_error(g, fmt::format("--name {} names one release, but {} specs are given", a.name, roots.size()),
                        "show the spec to run under that name on its own");
  if (!a.name.empty())
    if (std::string problem = spec::dns_label_problem(a.name); !problem.empty())
      return report_error(g, fmt::format("--name '{}' is not a valid release name: {}", a.name, problem),
                          "release names are DNS labels (a-z, 0-9 and '-')");
  std::vector<spec::RootSpec> root_ptrs;
  for (const auto& r : roots) root_ptrs.push_back({&r, a.name});
  // The running apps come from --running when given, else from the context's store, as
  // `gaia plan` and `gaia submit` read them: otherwise deps would say "deploy" for a
  // dependency that plan reuses.
  // With --running the store is not opened at all (deps works offline, in CI, with an
  // unreachable context): the conditions then see the config without the centers.
  ContextView view;
  if (a.flags.running_file.empty()) {
    auto from_store = context_view(g);
    if (!from_store) return report(g, from_store.error());
    view = std::move(*from_store);
  }
  std::vector<RunningApp> running_apps = std::move(view.running);
  if (!a.flags.running_file.empty()) {
    auto running = ops::load_running(a.flags.running_file);
    if (!running) return report(g, running.error());
    running_apps = running->list_all();
  }
  // Conditional dependencies are decided as plan and submit decide them: on the config
  // with --set/--values over the roots and the store's centers.
  auto inputs = ops::load_render_inputs(a.flags.settings(g));
  if (!inputs) return report(g, inputs.error());
  auto options = ops::chain_options(*inputs, g.tenant, view.centers ? &*view.centers : nullptr);
  auto plan = spec::resolve_releases(root_ptrs, *repo, running_apps, g.tenant, ops::config_evaluator(options));
  if (!plan) return report(g, plan.error());

  if (!a.reverse.empty()) {
    auto found = plan->find(a.reverse);
    if (!found)
      return report_error(g, fmt::format("'{}' is not part of this plan", a.reverse),
                          "without DIR, --reverse searches the whole repository");
    auto deps = spec::reverse_dependents(*plan, a.reverse);
    if (a.output == "json") {
      nlohmann::json out = nlohmann::json::array();
      for (size_t i : deps) out.push_back({{"name", plan->nodes[i].name}, {"version", plan->nodes[i].version.to_string()}});
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::printf("apps in this plan that depend on %s:\n", a.reverse.c_str());
      for (size_t i : deps) std::printf("  %s\n", plan->nodes[i].id().c_str());
      if (deps.empty()) std::printf("  (none)\n");
    }
    return k_ok;
  }
  if (a.dot) {
    std::fputs(spec::format_plan_dot(*plan).c_str(), stdout);
    return k_ok;
  }
  if (a.output == "json") {
    std::printf("%s\n", spec::plan_to_json(*plan).dump(2).c_str());
    return k_ok;
  }
  spec::TreeOptions tree;
  tree.ascii = a.ascii;
  std::fputs(spec::format_plan_tree(*plan, tree).c_str(), stdout);
  size_t deploy = 0, reuse = 0;
  std::string order;
  for (size_t i : plan->order) {
    const auto& n = plan->nodes[i];
    (n.action == spec::Action::Deploy ? deploy : reuse)++;
    if (n.action == spec::Action::Deploy) order += (order.empty() ? "" : " -> ") + n.id();
  }
  std::printf("\n%s %zu to deploy, %zu reused\n", bold(g, stdout, "plan:").c_str(), deploy, reuse);
  if (!order.empty()) std::printf("%s %s\n", bold(g, stdout, "deploy order:").c_str(), order.c_str());
  return k_ok;
}

}  // namespace

void register_deps(CLI::App& app, Globals& g, int* code) {
  auto* cmd = app.add_subcommand("deps", "Show the dependency plan: what is reused, what is deployed, in which order");
  cmd->footer(
      "Examples:\n"
      "  gaia deps examples/web\n"
      "  gaia deps examples/web --dot | dot -Tsvg > web.svg\n"
      "  gaia deps examples/web -o json\n"
      "  gaia deps examples/spark --set streaming.enabled=true   # with a conditional dependency on\n"
      "  gaia deps --reverse zookeeper --repo examples   # who depends on zookeeper");
  auto a = std::make_shared<DepsArgs>();
  cmd->add_option("DIR", a->dirs, "App directories (or folders of them) resolved together");
  auto* output = cmd->add_option("-o,--output", a->output, "Output format")->check(CLI::IsMember({"tree", "json"}));
  auto* dot = cmd->add_flag("--dot", a->dot, "Print the plan as a Graphviz digraph");
  cmd->add_flag("--ascii", a->ascii, "Draw the tree with ASCII characters only");
  cmd->add_option("--reverse", a->reverse, "List the apps that depend on NAME (in the plan, or the whole repository)")
      ->type_name("NAME");
  cmd->add_option("--name", a->name, "Release name the one spec would be submitted as (as submit --name)")
      ->type_name("RELEASE");
  cmd->add_option("--set", a->flags.sets,
                  "Override a parameter of the given apps: key=value; decides the `when:` of their dependencies")
      ->type_name("KEY=VALUE");
  cmd->add_option("--values", a->flags.values, "YAML or JSON file of parameter overrides; repeatable")->type_name("FILE");
  cmd->add_option("--config-file", a->flags.config_file,
                  "YAML/JSON file with config-center keys (config:) and labels (labels:)")
      ->type_name("FILE");
  cmd->add_option("--running", a->flags.running_file,
                  "YAML/JSON list of apps to treat as running, instead of the context's apps (name, version, outputs)")
      ->type_name("FILE");
  dot->excludes(output);
  cmd->callback([&g, code, a] { *code = run_deps(g, *a); });
}

}  // namespace gaia::cli
