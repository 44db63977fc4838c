#pragma once
// What submit-e2e-5k (bench_submit.cpp) shares with the cases that start from a full
// cluster (bench_submit_cli.cpp): the stream of submissions that fills it.
#include <cstdint>
#include <functional>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/state.hpp"
#include "ops/submit_stream.hpp"

namespace gaia::bench {

// schedule-basic's workload of `instances` from `seed`, whole apps in submissions of at
// least `chunk` instances.
std::vector<std::vector<AppToDeploy>> submission_stream(size_t instances, uint64_t seed, size_t chunk);

// Plans each submission of `stream` on `current` and commits it through `state`, each
// planned while the last one commits, carrying the decided state from one to the next as
// a long-running submitter does (ops/submit_stream.hpp). Leaves `current` at the state
// the last commit left; throws if any commit fails.
std::vector<StreamCommit> place_stream(State& state, ClusterState& current,
                                       std::vector<std::vector<AppToDeploy>>& stream);

}  // namespace gaia::bench
