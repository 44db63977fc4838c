#pragma once
// Helpers of the dependency resolution tests (resolve_test.cpp, release_test.cpp): a
// version from its text, a node of a plan by name, and the errors of a failed resolve.

#include <catch2/catch.hpp>

#include <string>

#include "lib/error.hpp"
#include "spec/resolve.hpp"
#include "spec/semver.hpp"

namespace gaia::test {

inline semver::Version ver(const std::string& s) { return semver::parse_version(s).value(); }

inline const spec::PlanNode& node(const spec::Plan& plan, const std::string& name) {
  auto i = plan.find(name);
  INFO("no node " << name);
  REQUIRE(i.has_value());
  return plan.nodes[*i];
}

inline std::string errors_text(const Result<spec::Plan>& r) {
  REQUIRE_FALSE(r.has_value());
  return format_diagnostics(r.error());
}

}  // namespace gaia::test
