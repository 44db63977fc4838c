#include "cli/render_flags.hpp"

#include <cstdlib>

namespace gaia::cli {

namespace fs = std::filesystem;

void RenderFlags::add_to(CLI::App* cmd, bool with_overrides) {
  if (with_overrides) {
    cmd->add_option("--set", sets, "Override a parameter: key=value (typed: numbers, true/false, null, JSON); repeatable")
        ->type_name("KEY=VALUE");
    cmd->add_option("--values", values, "YAML or JSON file of parameter overrides; repeatable")->type_name("FILE");
  }
  cmd->add_option("--config-file", config_file, "YAML/JSON file with config-center keys (config:) and labels (labels:)")
      ->type_name("FILE");
  cmd->add_option("--running", running_file, "YAML/JSON list of apps to treat as already running (name, version, outputs)")
      ->type_name("FILE");
  cmd->add_option("--render-timeout", timeout_ms, "Wall-clock limit of one Jsonnet evaluation, in ms")
      ->check(CLI::Range(100, 3600000));
  cmd->add_option("--render-max-output", max_output_mib, "Largest output one Jsonnet evaluation may produce, in MiB")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--render-memory", memory_mib, "Memory limit of one Jsonnet evaluation, in MiB")
      ->check(CLI::Range(64, 65536));
  cmd->add_flag("--no-cache", no_cache, "Do not read or write the render cache");
}

ops::RenderSettings RenderFlags::settings(const Globals& g) const {
  ops::RenderSettings s;
  s.sets = sets;
  s.values = values;
  s.config_file = config_file;
  s.jpaths = g.jpath_paths();
  s.repo = g.repo_paths();
  s.limits.timeout_ms = timeout_ms;
  s.limits.max_output_bytes = max_output_mib << 20;
  s.limits.memory_limit_bytes = memory_mib << 20;
  if (!no_cache) s.cache_dir = render_cache_dir();
  return s;
}

fs::path render_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "gaia" / "render";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "gaia" / "render";
  return {};
}

fs::path state_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "gaia" / "state";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "gaia" / "state";
  return {};
}

}  // namespace gaia::cli
