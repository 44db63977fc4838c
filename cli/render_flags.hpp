#pragma once
// The flags of every command that renders, and what they become for ops/: the
// environment (GAIA_PATH, GAIA_REPO, the cache folder) is read here, once, so the
// workflows only see values.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/common.hpp"
#include "ops/render_inputs.hpp"

namespace gaia::cli {

struct RenderFlags {
  std::vector<std::string> sets;         // --set key=value
  std::vector<std::string> values;       // --values FILE
  std::string config_file;               // --config-file FILE
  std::string running_file;              // --running FILE
  int timeout_ms = 10000;                // --render-timeout
  size_t max_output_mib = 16;            // --render-max-output
  size_t memory_mib = 2048;              // --render-memory
  bool no_cache = false;                 // --no-cache

  void add_to(CLI::App* cmd, bool with_overrides = true);

  // The settings ops/ renders with: these flags, -J and GAIA_PATH, --repo or GAIA_REPO,
  // and the render cache folder unless --no-cache.
  ops::RenderSettings settings(const Globals& g) const;
};

// The render cache folder: $XDG_CACHE_HOME/gaia/render, else ~/.cache/gaia/render;
// empty when neither is known (renders are then not cached).
std::filesystem::path render_cache_dir();
// Where a command keeps the state it read for the next command on the same store
// (lib/state_file.hpp): $XDG_CACHE_HOME/gaia/state, else ~/.cache/gaia/state; empty
// when neither is set.
std::filesystem::path state_cache_dir();

}  // namespace gaia::cli
