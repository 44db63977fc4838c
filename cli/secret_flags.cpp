#include "cli/secret_flags.hpp"

#include <fmt/format.h>

#include "ops/secrets.hpp"

namespace gaia::cli {

void add_show_secrets(CLI::App* cmd, bool& flag) {
  cmd->add_flag("--show-secrets", flag,
                "Show the values of secret keys (listed under secrets: in an app.yaml, or under secrets.) "
                "instead of <secret>");
}

SecretKeys deployed_secret_keys(const Globals& g, Session& s, const ClusterState& state) {
  return deployed_secret_keys(g, s, state.apps);
}

SecretKeys deployed_secret_keys(const Globals& g, Session& s, const std::map<std::string, AppRecord>& apps) {
  auto found = ops::deployed_secrets(apps, [&](const std::string& hash) { return s.state->bundle(hash); });
  if (!g.quiet)
    for (const auto& why : found.unreadable)
      fmt::print(stderr, "{} cannot read the secrets: list of {}; values it declares secret may show\n",
                 yellow(g, stderr, "warning:"), why);
  return std::move(found.keys);
}

}  // namespace gaia::cli
