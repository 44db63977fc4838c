#pragma once
#include <string_view>
namespace gaia::render {
// The gaia Jsonnet library (render/gaia.libsonnet), compiled into the binary.
extern const std::string_view k_gaia_libsonnet;
}  // namespace gaia::render
