#pragma once
// The changes `gaia config` and `gaia label` (and `gaia node label`) make, as
// CenterChange values for apply_center_change (ops/propagate.hpp): what they touch, how
// they look to a dry run, how they are written, and their timeline events.

#include <memory>
#include <string>
#include <vector>

#include "controllers/node_ops.hpp"
#include "lib/config_center.hpp"
#include "ops/propagate.hpp"

namespace gaia::ops {

// "global" for the global scope, else "tenant NAME".
std::string scope_name(const std::string& scope);

// Sets or unsets config keys in one scope ("_global" or a tenant). `before` is the
// centers the command read (for the previous values in the ConfigChanged events).
CenterChange config_change(const std::string& scope, const std::vector<ConfigEdit>& edits,
                           const StoreConfigSource& before);

// Sets or removes labels of an app (of `tenant`) or a tenant (event LabelChanged).
CenterChange label_change(const std::string& kind, const std::string& tenant, const std::string& name,
                          const std::vector<LabelChange>& changes, const StoreConfigSource& before);

// Sets or removes node labels through decide_node_label (event NodeLabeled, pending
// instances retried); the decision's outcome lands in `*outcome` once written. Instances
// whose node no longer fits their required placement are moved by the placement
// controller.
CenterChange node_label_change(const std::vector<std::string>& names, const std::vector<LabelEdit>& edits,
                               bool overwrite, std::shared_ptr<NodeOpOutcome> outcome);

}  // namespace gaia::ops
