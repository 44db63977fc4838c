#pragma once
// How `gaia plan` and `gaia submit` show a submission (ops/submission.hpp): the outcome
// of plan_submit as text or JSON, and the instances that keep it from being complete.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "controllers/submit.hpp"
#include "ops/submission.hpp"

namespace gaia::cli {

struct OutcomeView {
  bool dry_run = false;       // `gaia plan`: nothing is written.
  bool explain_scores = true;  // Add the top score terms of each placement (small plans).
};

// The outcome as aligned text: apps (deployed, updated, unchanged, reused), placements
// with node, address, score and why, preemptions, pending instances with reasons.
std::string format_outcome(const Globals& g, const ops::Submission& s, const SubmitOutcome& out, const OutcomeView& view);
nlohmann::json outcome_json(const ops::Submission& s, const SubmitOutcome& out, const OutcomeView& view);
nlohmann::json blockers_json(const std::vector<ops::Blocker>& blockers);

// "  0.frontend.web.default   Pending   0/3 nodes fit: 3 ResourceFit (memory)" lines.
std::string format_blockers(const std::vector<ops::Blocker>& blockers);

// Warns on stderr when `tenant` is not defined in a cluster that defines tenants:
// submitting there works (no quota, no pool) but is usually a typo.
void warn_unknown_tenant(const Globals& g, const ClusterState& st, const std::string& tenant);

}  // namespace gaia::cli
