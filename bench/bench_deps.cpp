// Dependency resolution benchmarks.
//
// deps-10k: a synthetic spec repository of 10,000 apps built in memory with
// SpecRepository::add from a fixed seed. The apps form four segments of 2,500; inside a
// segment every app depends on the next one (chains 2,500 deep) and on a few apps
// shortly after it (diamonds everywhere), and a few apps depend on the tail of the next
// segment. Every app has 1.0.0 and maybe 1.1.0, 1.2.0 and 2.0.0; each version draws its
// own ranges (all of them admit 1.0.0, so a resolution always exists), and 2.x drops the
// short-range edges, so the version chosen for one app changes the ranges and edges
// others see and resolution needs more than one round.
//
// Several roots are resolved repeatedly with spec::resolve. The baseline is a naive
// resolver written here: the same fixpoint rule, but state in string-keyed std::maps and
// each plan edge found by a linear search over the plan's nodes by name (as
// Plan::find does), which is what a first implementation typically looks like. Its plans
// are checked against spec::resolve's (same names, same versions).
#include <fmt/format.h>

#include <map>
#include <memory>
#include <set>
#include <stdexcept>

#include "bench/bench_util.hpp"
#include "lib/error.hpp"
#include "spec/app_spec.hpp"
#include "spec/repository.hpp"
#include "spec/resolve.hpp"
#include "spec/semver.hpp"

namespace gaia::bench {
namespace {

constexpr uint64_t k_seed = 20240611;
constexpr int k_apps = 10000;
constexpr int k_segment = 2500;             // Chain length inside a segment.
constexpr int k_diamond_window = 64;        // Short-range edges reach this far ahead.
constexpr int k_cross_tail = 500;           // Cross-segment edges land in the last 500.
constexpr double k_cross_chance = 0.02;
constexpr int k_repeats = 4;                // Resolves per root (5 roots: 20 resolves).
constexpr double k_budget_ms = 1000.0;      // Interactive `gaia deps` budget per resolve.

std::string app_name(int i) { return fmt::format("a{:05d}", i); }

semver::Version version(uint64_t major, uint64_t minor) {
  semver::Version v;
  v.major = major;
  v.minor = minor;
  return v;
}

semver::Range range(const std::string& text) {
  auto r = semver::Range::parse(text);
  if (!r) throw std::logic_error("bad range in the generator: " + text);
  return *r;
}

// A range every target admits (they all have 1.0.0), weighted towards the common forms.
const std::string& draw_range(Rng& rng) {
  static const std::vector<std::pair<int, std::string>> k_ranges = {
      {20, "*"}, {25, "^1.0"}, {20, ">=1.0 <2"}, {15, "1.x || 2.x"}, {10, ">=1.0.0"}, {5, "~1.0.0"}, {5, "<1.2"}};
  uint64_t pick = rng.below(100);
  for (const auto& [weight, text] : k_ranges) {
    if (pick < static_cast<uint64_t>(weight)) return text;
    pick -= static_cast<uint64_t>(weight);
  }
  return k_ranges.front().second;
}

struct Synthetic {
  spec::SpecRepository repo;
  std::unique_ptr<spec::AppSpec> all_root;  // Depends on the head of every segment.
  size_t versions = 0;
  size_t edges = 0;  // Dependency entries over all versions.
};

spec::Dependency dependency(int target, const std::string& range_text, const std::string& file, int line) {
  spec::Dependency d;
  d.name = app_name(target);
  d.range = range(range_text);
  d.alias = spec::default_alias(d.name);
  d.imports = {"endpoint"};
  d.location = Location{file, line, 5};
  return d;
}

Synthetic generate() {
  Rng rng(k_seed);
  Synthetic out;
  for (int i = 0; i < k_apps; ++i) {
    int segment = i / k_segment;
    int local = i % k_segment;
    // The app's structure; each version then draws its own ranges.
    std::vector<int> chain_and_cross;
    std::vector<int> short_range;
    if (local + 1 < k_segment) chain_and_cross.push_back(i + 1);
    for (uint64_t n = rng.below(3); n > 0; --n) {
      int j = i + 2 + static_cast<int>(rng.below(k_diamond_window));
      if (j / k_segment == segment && std::find(short_range.begin(), short_range.end(), j) == short_range.end())
        short_range.push_back(j);
    }
    if (segment + 1 < k_apps / k_segment && rng.chance(k_cross_chance))
      chain_and_cross.push_back((segment + 2) * k_segment - k_cross_tail + static_cast<int>(rng.below(k_cross_tail)));

    std::vector<semver::Version> versions{version(1, 0)};
    if (rng.chance(0.5)) versions.push_back(version(1, 1));
    if (rng.chance(0.3)) versions.push_back(version(1, 2));
    if (rng.chance(0.2)) versions.push_back(version(2, 0));
    for (const auto& v : versions) {
      spec::AppSpec s;
      s.name = app_name(i);
      s.version = v;
      s.dir = fmt::format("/synthetic/{}/{}", s.name, v.to_string());
      s.yaml_file = (s.dir / "app.yaml").string();
      s.outputs = {"endpoint", "port"};
      int line = 5;
      for (int t : chain_and_cross) s.dependencies.push_back(dependency(t, draw_range(rng), s.yaml_file, line++));
      if (v.major < 2)
        for (int t : short_range) s.dependencies.push_back(dependency(t, draw_range(rng), s.yaml_file, line++));
      out.edges += s.dependencies.size();
      ++out.versions;
      out.repo.add(std::move(s));
    }
  }
  if (!out.repo.diagnostics().empty())
    throw std::logic_error("synthetic repository has problems:\n" + format_diagnostics(out.repo.diagnostics()));

  auto root = std::make_unique<spec::AppSpec>();
  root->name = "bench-root";
  root->version = version(1, 0);
  root->dir = "/synthetic/bench-root";
  root->yaml_file = "/synthetic/bench-root/app.yaml";
  for (int s = 0; s < k_apps / k_segment; ++s)
    root->dependencies.push_back(dependency(s * k_segment, "*", root->yaml_file, 5 + s));
  out.all_root = std::move(root);
  return out;
}

// Longest dependency path in the plan, counted in apps (a lone root has depth 1).
size_t plan_depth(const spec::Plan& plan) {
  std::vector<size_t> depth(plan.nodes.size(), 1);
  size_t deepest = 0;
  for (size_t i : plan.order) {  // Dependencies come first.
    for (const auto& e : plan.nodes[i].dependencies) depth[i] = std::max(depth[i], depth[e.node] + 1);
    deepest = std::max(deepest, depth[i]);
  }
  return deepest;
}

// The naive baseline: same rule (highest repository version satisfying every range
// placed on a name by the apps chosen so far, iterated to a fixpoint), written the
// obvious way. Returns name -> version of the final plan.
class NaiveResolver {
 public:
  explicit NaiveResolver(const spec::SpecRepository& repo) : m_repo(repo) {}

  // Rounds the last resolve took until no choice changed.
  int rounds() const { return m_rounds; }

  std::map<std::string, std::string> resolve(const spec::AppSpec& root) {
    std::map<std::string, const spec::AppSpec*> hint;
    for (int round = 0; round < 200; ++round) {
      std::map<std::string, const spec::AppSpec*> choice{{root.name, &root}};
      std::map<std::string, std::vector<const spec::Dependency*>> reqs;
      std::vector<std::string> order{root.name};
      for (size_t head = 0; head < order.size(); ++head) {
        const spec::AppSpec* spec = choice.at(order[head]);
        for (const auto& d : spec->dependencies) {
          reqs[d.name].push_back(&d);
          if (choice.count(d.name)) continue;
          auto h = hint.find(d.name);
          const spec::AppSpec* pick = h != hint.end() ? h->second : best(d.name, reqs[d.name]);
          if (!pick) throw std::runtime_error("naive resolver: no version of " + d.name);
          choice[d.name] = pick;
          order.push_back(d.name);
        }
      }
      std::map<std::string, const spec::AppSpec*> desired;
      bool settled = true;
      for (const auto& name : order) {
        if (name == root.name) continue;
        desired[name] = best(name, reqs[name]);
        if (!desired[name]) throw std::runtime_error("naive resolver: no version of " + name + " fits");
        if (desired[name] != choice[name]) settled = false;
      }
      if (settled) {
        m_rounds = round + 1;
        return build(order, choice);
      }
      hint = std::move(desired);
    }
    throw std::runtime_error("naive resolver did not settle");
  }

 private:
  const spec::AppSpec* best(const std::string& name, const std::vector<const spec::Dependency*>& reqs) const {
    for (const spec::AppSpec* s : m_repo.versions(name)) {
      bool ok = true;
      for (const auto* d : reqs) ok = ok && d->range.satisfies(s->version);
      if (ok) return s;
    }
    return nullptr;
  }

  // Nodes and edges, each edge's target found by scanning the nodes by name.
  std::map<std::string, std::string> build(const std::vector<std::string>& order,
                                           const std::map<std::string, const spec::AppSpec*>& choice) const {
    struct Node {
      std::string name;
      const spec::AppSpec* spec;
      std::vector<size_t> deps;
    };
    std::vector<Node> nodes;
    for (const auto& name : order) nodes.push_back({name, choice.at(name), {}});
    for (auto& node : nodes)
      for (const auto& d : node.spec->dependencies)
        for (size_t k = 0; k < nodes.size(); ++k)
          if (nodes[k].name == d.name) {
            node.deps.push_back(k);
            break;
          }
    std::map<std::string, std::string> out;
    for (const auto& node : nodes) out[node.name] = node.spec->version.to_string();
    return out;
  }

  const spec::SpecRepository& m_repo;
  int m_rounds = 0;
};

struct RootCase {
  std::string label;
  const spec::AppSpec* spec;
};

Figures run_deps_10k() {
  Synthetic syn;
  double generate_ms = time_ms([&] { syn = generate(); });

  // From the widest root to a shallow one: all four segments, two segment heads, the
  // middle of a segment, and an app near the end of one.
  auto head = [&](int i) { return syn.repo.versions(app_name(i)).front(); };
  std::vector<RootCase> roots = {{"bench-root (all segments)", syn.all_root.get()},
                                 {app_name(0), head(0)},
                                 {app_name(3 * k_segment), head(3 * k_segment)},
                                 {app_name(k_segment + k_segment / 2), head(k_segment + k_segment / 2)},
                                 {app_name(3 * k_segment - 100), head(3 * k_segment - 100)}};

  Figures out;
  out["apps"] = k_apps;
  out["versions"] = syn.versions;
  out["edges"] = syn.edges;
  out["seed"] = k_seed;
  out["generate_ms"] = round3(generate_ms);

  std::vector<double> all_ms;
  Figures per_root = Figures::array();
  size_t max_apps = 0, max_depth = 0, warnings = 0;
  std::vector<spec::Plan> plans;
  double cpu_before = cpu_ms();
  for (const auto& root : roots) {
    std::vector<double> ms;
    spec::Plan last;
    for (int r = 0; r < k_repeats; ++r) {
      Result<spec::Plan> plan;
      ms.push_back(time_ms([&] { plan = spec::resolve({root.spec}, syn.repo, {}, "default"); }));
      if (!plan) throw std::runtime_error(fmt::format("resolve of {} failed:\n{}", root.label, format_diagnostics(plan.error())));
      last = std::move(*plan);
    }
    all_ms.insert(all_ms.end(), ms.begin(), ms.end());
    Figures f;
    f["root"] = root.label;
    f["plan_apps"] = last.nodes.size();
    f["depth"] = plan_depth(last);
    add_latency(f, ms);
    per_root.push_back(std::move(f));
    max_apps = std::max(max_apps, last.nodes.size());
    max_depth = std::max(max_depth, plan_depth(last));
    warnings += last.warnings.size();
    plans.push_back(std::move(last));
  }
  double resolve_cpu_ms = cpu_ms() - cpu_before;
  out["resolves"] = all_ms.size();
  add_latency(out, all_ms);
  out["cpu_ms_per_resolve"] = round3(resolve_cpu_ms / static_cast<double>(all_ms.size()));
  out["plan_apps_max"] = max_apps;
  out["depth_max"] = max_depth;
  out["plan_warnings"] = warnings;
  out["budget_ms"] = k_budget_ms;
  out["within_budget"] = percentile(all_ms, 99) < k_budget_ms;

  // Baseline: the naive resolver, once per root; its plans must match.
  NaiveResolver naive(syn.repo);
  std::vector<double> naive_ms;
  bool agrees = true;
  cpu_before = cpu_ms();
  for (size_t i = 0; i < roots.size(); ++i) {
    std::map<std::string, std::string> got;
    naive_ms.push_back(time_ms([&] { got = naive.resolve(*roots[i].spec); }));
    std::map<std::string, std::string> want;
    for (const auto& node : plans[i].nodes) want[node.name] = node.version.to_string();
    agrees = agrees && got == want;
    per_root[i]["naive_ms"] = round3(naive_ms.back());
    per_root[i]["rounds"] = naive.rounds();
    per_root[i]["speedup"] = round3(naive_ms.back() / per_root[i]["p50_ms"].get<double>());
  }
  out["naive_resolves"] = naive_ms.size();
  add_latency(out, naive_ms, "naive_");
  out["naive_cpu_ms_per_resolve"] = round3((cpu_ms() - cpu_before) / static_cast<double>(naive_ms.size()));
  out["naive_agrees"] = agrees;
  out["roots"] = std::move(per_root);
  return out;
}

const Registration k_deps_10k{"deps-10k",
                              "resolve 5 roots of a synthetic 10,000-app repository (chains 2,500+ deep, diamonds, "
                              "ranges) 4 times each; naive resolver as baseline",
                              &run_deps_10k};

}  // namespace
}  // namespace gaia::bench
