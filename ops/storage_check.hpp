#pragma once
// The storage classes a submission's volumes name, checked against the cluster's
// (docs/spec.md#storage-classes). Rendering is hermetic and does not know the cluster,
// so it checks only the form of a class name; plan and submit, which read the cluster,
// check that the class exists before anything is decided or written.

#include <string>
#include <vector>

#include "controllers/submit.hpp"
#include "lib/error.hpp"
#include "lib/state.hpp"

namespace gaia::ops {

// Every volume of `apps` whose class `state`'s cluster does not have, one located error
// each (the spec file and line that write the class name, when the spec's own files
// hold it as a string literal), listing the classes the cluster has.
Result<void> check_storage_classes(const ClusterState& state, const std::vector<AppToDeploy>& apps);

// Where in the spec at `spec_dir` the string literal `value` is written: its Jsonnet
// files (main.jsonnet and config.jsonnet first, then the rest, in name order) are
// searched for 'value' or "value". An empty line when no file has it.
Location find_literal(const std::string& spec_dir, const std::string& value);

}  // namespace gaia::ops
