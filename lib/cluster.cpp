#include "lib/cluster.hpp"

#include <fmt/format.h>

namespace gaia {

std::string_view node_state_name(NodeState s) {
  switch (s) {
    case NodeState::Ready: return "Ready";
    case NodeState::Cordoned: return "Cordoned";
    case NodeState::Down: return "Down";
  }
  return "?";
}

std::string_view instance_state_name(InstanceState s) {
  switch (s) {
    case InstanceState::Pending: return "Pending";
    case InstanceState::Placed: return "Placed";
    case InstanceState::Running: return "Running";
    case InstanceState::Failed: return "Failed";
    case InstanceState::Succeeded: return "Succeeded";
    case InstanceState::Terminating: return "Terminating";
  }
  return "?";
}

std::string Instance::key() const { return fmt::format("{}.{}.{}.{}", ordinal, role, app, tenant); }

}  // namespace gaia
