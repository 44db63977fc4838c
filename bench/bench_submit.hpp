#pragma once
// What submit-e2e-5k (bench_submit.cpp) shares with the cases that start from a full
// cluster (bench_submit_cli.cpp): the stream of submissions that fills it.
#include <cstdint>
#include <functional>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/state.hpp"

namespace gaia::bench {

// What one submission of a stream cost.
struct StreamStep {
  double plan_ms = 0;    // plan_submit.
  double commit_ms = 0;  // State::commit, fsynced.
  size_t events = 0;     // Events the submission wrote.
};

// schedule-basic's workload of `instances` from `seed`, whole apps in submissions of at
// least `chunk` instances.
std::vector<std::vector<AppToDeploy>> submission_stream(size_t instances, uint64_t seed, size_t chunk);

// Plans each submission of `stream` on `current` with plan_submit and commits it through
// `state` (whose store is `store`), carrying the decided state to the next one as a
// long-running submitter would; calls `each` after every commit.
void place_stream(Store& store, State& state, ClusterState& current, std::vector<std::vector<AppToDeploy>>& stream,
                  const std::function<void(const SubmitOutcome&, const StreamStep&)>& each);

}  // namespace gaia::bench
