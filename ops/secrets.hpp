#pragma once
// Which config keys the deployed apps declare secret: what each lists under `secrets:`
// in the app.yaml it was submitted with, read from its spec bundle in the store (or, for
// an app submitted before bundles existed, from its spec folder). The masking rule
// itself is lib/secrets.hpp; this only gathers its input, so every command masks the
// keys of every app, not only of the app it happens to touch.

#include <map>
#include <string>
#include <vector>

#include "lib/error.hpp"
#include "lib/secrets.hpp"
#include "lib/state.hpp"
#include "ops/bundle.hpp"

namespace gaia::ops {

// The keys `app` lists under `secrets:`.
Result<std::vector<std::string>> app_secret_keys(const AppRecord& app, const BundleReader& bundles);

struct DeployedSecrets {
  SecretKeys keys;  // Every app's, together.
  // Apps whose app.yaml could not be read ("tenant/name: why"): the keys they declare
  // are unknown, so their values may show. Callers warn about them.
  std::vector<std::string> unreadable;
};

// The secret keys of every app of `state`. Apps sharing a bundle read it once.
DeployedSecrets deployed_secrets(const ClusterState& state, const BundleReader& bundles);
// The same for apps read without the rest of the state (State::load_apps).
DeployedSecrets deployed_secrets(const std::map<std::string, AppRecord>& apps, const BundleReader& bundles);

// The values to hide wherever `app`'s rendered document was copied (its outputs, its
// events): secret_values_of over its document with `keys`.
SecretValues app_secret_values(const AppRecord& app, const SecretKeys& keys);

}  // namespace gaia::ops
