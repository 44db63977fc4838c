// Start order inside an app (docs/spec.md#start-order-inside-an-app): the checks that
// need every role at once. Per-role checks (types, self, repeats) are in workload.cpp.

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "render/workload.hpp"
#include "spec/suggest.hpp"

namespace gaia::render {

void check_start_order(const spec::AppSpec& spec, const std::string& file, const std::vector<Role>& roles,
                       Diagnostics& diags) {
  auto error = [&](const std::string& role, std::string message, std::string hint) {
    Diagnostic d;
    d.location.file = file;
    d.path = "roles." + role + ".after";
    d.message = fmt::format("app {}, role {}: {}", spec.name, role, message);
    d.hint = std::move(hint);
    diags.push_back(std::move(d));
  };
  std::map<std::string, const Role*> by_name;
  std::vector<std::string> names;
  for (const auto& r : roles) {
    by_name[r.name] = &r;
    names.push_back(r.name);
  }
  bool unknown = false;
  for (const auto& r : roles)
    for (const auto& a : r.after) {
      if (by_name.count(a)) continue;
      unknown = true;
      std::string list = fmt::format("roles of app {}: {}", spec.name, spec::join_limited(names));
      if (auto best = spec::did_you_mean(a, names)) list = fmt::format("did you mean '{}'? {}", *best, list);
      error(r.name, fmt::format("'{}' is not a role of app {}", a, spec.name), list);
    }
  if (unknown) return;  // A cycle through a missing role would only repeat the error.

  // Depth-first search in name order, so the cycle reported is the same on every run.
  std::map<std::string, int> mark;  // 0 unvisited, 1 on the path, 2 done.
  std::vector<std::string> path;
  std::function<bool(const std::string&)> visit = [&](const std::string& name) {
    mark[name] = 1;
    path.push_back(name);
    for (const auto& next : by_name[name]->after) {
      if (mark[next] == 1) {
        auto from = std::find(path.begin(), path.end(), next);
        std::vector<std::string> cycle(from, path.end());
        cycle.push_back(next);
        error(cycle.front(), fmt::format("the start order has a cycle: {}", fmt::join(cycle, " -> ")),
              "each role in it waits for the next, so none would ever start; remove one of these after entries");
        return true;
      }
      if (mark[next] == 0 && visit(next)) return true;
    }
    path.pop_back();
    mark[name] = 2;
    return false;
  };
  for (const auto& name : names)
    if (mark[name] == 0 && visit(name)) return;
}

}  // namespace gaia::render
