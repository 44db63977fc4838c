#pragma once
// Shared by `gaia scale`, `gaia migrate`, `gaia drain`, `gaia node fail|recover` and
// `gaia rebalance`: checking names the user typed (with "did you mean" hints), and
// printing where instances went (or would go) after the controllers ran.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "cli/context.hpp"
#include "controllers/migration.hpp"

namespace gaia::cli {

// An error for a node name that is not in the cluster: the closest name as a hint.
std::optional<Diagnostic> unknown_node(const ClusterState& state, const std::string& name, const std::string& field = "");
// An error for an instance key that is not in the store (closest key, or the
// instances of an app of that name, as a hint).
std::optional<Diagnostic> unknown_instance(const ClusterState& state, const std::string& ref, const std::string& key);

// The instances of `report` as a table (INSTANCE FROM TO STATE NOTE) under `heading`,
// then the instances elsewhere that were preempted to make room.
std::string format_moves(const Globals& g, const WhatIf& report, const std::string& heading);
nlohmann::json moves_json(const WhatIf& report);

// "dry run: nothing was written" (stdout, unless quiet).
void print_dry_run_note(const Globals& g);

}  // namespace gaia::cli
