#pragma once
// Rendering a whole resolved dependency chain: every app the plan deploys, in
// topological order, each receiving the outputs of its dependencies (rendered just
// before it, or bound from the running app it reuses).

#include <map>
#include <optional>
#include <vector>

#include "lib/config_source.hpp"
#include "render/renderer.hpp"
#include "spec/resolve.hpp"

namespace gaia::render {

struct ChainOptions {
  RenderOptions base;                       // jpaths, limits, tenant, config snapshot.
  nlohmann::json root_overrides = nlohmann::json::object();  // --set/--values: roots only.
};

struct ChainResult {
  // By plan node index; only Deploy nodes have an entry.
  std::map<size_t, Rendered> rendered;
  RenderStats stats;
};

// Renders every Deploy node of `plan` in `plan.order`. Errors of all apps are collected;
// an app whose dependency failed to render is skipped with a note instead of reporting
// consequential errors.
Result<ChainResult> render_chain(const spec::Plan& plan, const ChainOptions& options,
                                 RenderCache* cache = nullptr);

}  // namespace gaia::render
