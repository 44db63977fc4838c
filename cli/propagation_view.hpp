#pragma once
// How config and label changes (ops/propagate.hpp) are shown: the impact chain as text
// or JSON, and what a `--wait` that timed out still waits for.

#include <nlohmann/json.hpp>
#include <string>

#include "cli/common.hpp"
#include "cli/context.hpp"
#include "ops/propagate.hpp"

namespace gaia::cli {

// --wait for a change (no-op for a dry run): follows the controllers until the change
// settled or the timeout (a duration such as "5m"); on a timeout prints the blocking
// instances on stderr and returns k_error.
int wait_for_change(const Globals& g, Session& s, const ops::ChangeOutcome& o, const std::string& timeout, bool print);

// The impact chain: apps reading the change, then dependents, then rollout and moves.
std::string format_propagation(const Globals& g, const ops::ChangeOutcome& o);
nlohmann::json propagation_json(const ops::ChangeOutcome& o);

// "3 Replaced, 3 Scheduled, 1 RolledOut": a batch's events counted by reason, in order of
// first appearance ("" for none).
std::string controller_summary(const Batch& b);

}  // namespace gaia::cli
