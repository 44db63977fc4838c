#pragma once
// What the commands that show config values share about secrets (lib/secrets.hpp): the
// --show-secrets flag, and the secret keys of the apps deployed in the session's store.

#include <CLI/CLI.hpp>

#include "cli/common.hpp"
#include "cli/context.hpp"
#include "lib/secrets.hpp"
#include "lib/state.hpp"

namespace gaia::cli {

// Adds --show-secrets, for the commands where a person asks for a value (config get,
// list and history; describe; diff). Everywhere else secrets are always masked.
void add_show_secrets(CLI::App* cmd, bool& flag);

// The secret keys of the apps of `state`, read from their spec bundles in the session's
// store. An app whose app.yaml cannot be read is named in a warning on stderr (unless
// --quiet): the keys it declares are unknown, so their values may show.
SecretKeys deployed_secret_keys(const Globals& g, Session& s, const ClusterState& state);
SecretKeys deployed_secret_keys(const Globals& g, Session& s, const std::map<std::string, AppRecord>& apps);

}  // namespace gaia::cli
