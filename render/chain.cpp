#include "render/chain.hpp"

#include <fmt/format.h>
#include <set>

namespace gaia::render {

Result<ChainResult> render_chain(const spec::Plan& plan, const ChainOptions& options, RenderCache* cache) {
  ChainResult result;
  Diagnostics errors;
  std::set<size_t> failed;
  std::set<size_t> roots(plan.roots.begin(), plan.roots.end());
  for (size_t index : plan.order) {
    const spec::PlanNode& node = plan.nodes[index];
    if (node.action != spec::Action::Deploy || node.spec == nullptr) continue;
    nlohmann::json deps = nlohmann::json::object();
    bool blocked = false;
    for (const auto& edge : node.dependencies) {
      const spec::PlanNode& dep = plan.nodes[edge.node];
      if (failed.count(edge.node)) {
        blocked = true;
        continue;
      }
      if (dep.action == spec::Action::Reuse) {
        deps[edge.alias] = dep.outputs;
      } else {
        auto it = result.rendered.find(edge.node);
        if (it == result.rendered.end()) {
          blocked = true;
          continue;
        }
        deps[edge.alias] = it->second.workload.outputs;
      }
    }
    if (blocked) {
      // The dependency's own errors are already reported; more would only be noise.
      failed.insert(index);
      continue;
    }
    RenderRequest req;
    req.spec = node.spec;
    req.deps = std::move(deps);
    if (node.name != node.spec->name) req.release = node.name;
    // Only bindings to another release than the app's own name, so the renders of apps
    // without releases keep their cache keys.
    for (const auto& edge : node.dependencies)
      if (const spec::PlanNode& to = plan.nodes[edge.node]; !to.tenant.empty())
        req.dep_releases[edge.alias] = to.tenant + "/" + to.name;
      else if (to.name != to.app)
        req.dep_releases[edge.alias] = to.name;
    req.options = options.base;
    req.stats = &result.stats;
    if (roots.count(index)) req.options.overrides = options.root_overrides;
    else req.options.overrides = nlohmann::json::object();
    auto rendered = render_app(req, cache);
    if (!rendered) {
      failed.insert(index);
      errors.insert(errors.end(), rendered.error().begin(), rendered.error().end());
      continue;
    }
    result.rendered.emplace(index, std::move(*rendered));
  }
  if (!errors.empty()) return fail(std::move(errors));
  return result;
}

}  // namespace gaia::render
