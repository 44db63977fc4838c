#pragma once
// gaia's version ("0.1.0"), as `gaia --version` prints it after "gaia ". Its one source
// is `project(gaia VERSION ...)` in the top-level CMakeLists.txt: the build fills it into
// lib/version.cpp.in, so a release changes that line and nothing else.

#include <string_view>

namespace gaia {

std::string_view version();

}  // namespace gaia
