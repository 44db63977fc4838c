#pragma once
// Ways to show a dependency plan (`gaia deps`): a tree like `npm ls`, Graphviz dot and
// JSON; and the dependents of an app (`gaia deps --reverse`).

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "spec/resolve.hpp"

namespace gaia::spec {

struct TreeOptions {
  bool ascii = false;  // "|--" and "`--" instead of box-drawing characters.
};

// One line per dependency edge under each root:
//   hbase (deploy 2.5.0)
//   ├── hdfs (deploy 3.3.4)
//   │   └── zookeeper as zk (reuse 3.6.4)
//   └── zookeeper (reuse 3.6.4)
// An app whose dependencies were already shown is printed again with ", see above" and
// not expanded, so diamonds appear once. Iterative: deep chains are fine.
std::string format_plan_tree(const Plan& plan, const TreeOptions& options = {});

// A Graphviz digraph: one node per app ("name@version", labelled with the action; reused
// apps dashed), one edge per dependency (labelled with the alias when it is not the
// default one).
std::string format_plan_dot(const Plan& plan);

// {"tenant", "roots": [ids], "order": [ids], "nodes": [{name, version, action, root, dir,
// replaces, ready, requirers: [{app, range, alias}], dependencies: [{alias, app}]}]}
nlohmann::json plan_to_json(const Plan& plan);

// `gaia deps --reverse NAME` over a repository: one line per dependent app version,
// indented by depth ("hbase@2.5.0 requires zookeeper >=3.6 <4").
std::string format_repo_dependents(const std::vector<RepoDependent>& dependents, std::string_view name);
nlohmann::json repo_dependents_to_json(const std::vector<RepoDependent>& dependents);

}  // namespace gaia::spec
