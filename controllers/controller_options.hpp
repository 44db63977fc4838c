#pragma once
// ControllerOptions kept in the store (settings/controller_options), so a tuning set once
// (`gaia sim options --reclaim-startup 0s`) applies to every later command's inline
// controllers and to `gaia controller run`, instead of only to the command that set it.

#include <nlohmann/json.hpp>

#include "controllers/reconcile.hpp"

namespace gaia {

inline constexpr const char* k_controller_options_setting = "controller_options";

// `base` with the fields stored in `state`'s settings laid over it (fields not stored
// keep their `base` value; a malformed field is ignored, keeping `base`).
ControllerOptions stored_controller_options(const ClusterState& state, ControllerOptions base = {});

nlohmann::json controller_options_json(const ControllerOptions& o);

}  // namespace gaia
