#include "ops/secrets.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "spec/app_spec.hpp"

namespace gaia::ops {

Result<std::vector<std::string>> app_secret_keys(const AppRecord& app, const BundleReader& bundles) {
  if (app.bundle.empty()) {
    // Submitted before bundles existed: the spec folder is all there is.
    if (app.spec_dir.empty()) return fail(Diagnostic{{}, "", "no spec bundle and no spec directory recorded", ""});
    auto parsed = spec::load_app_spec_partial(app.spec_dir);
    if (!parsed.errors.empty() && parsed.spec.name.empty()) return fail(parsed.errors);
    return parsed.spec.secrets;
  }
  std::string what = fmt::format("the spec bundle {}", app.bundle);
  auto text = bundles(app.bundle);
  if (!text) return fail(text.error());
  if (!*text) return fail(Diagnostic{{}, "", fmt::format("{} is missing from the store", what), ""});
  auto bundle = parse_bundle(**text, app.bundle, what);
  if (!bundle) return fail(bundle.error());
  std::string yaml = (std::filesystem::path(bundle->app_dir) / "app.yaml").string();
  auto file = bundle->files.find(yaml);
  if (file == bundle->files.end())
    return fail(Diagnostic{{}, "", fmt::format("{} holds no {}", what, yaml), ""});
  // The partial parse: a key listed as secret stays secret even if another field of
  // the file no longer validates (the app was deployed, so it did then).
  return spec::parse_app_yaml_partial(file->second, yaml).spec.secrets;
}

DeployedSecrets deployed_secrets(const ClusterState& state, const BundleReader& bundles) {
  return deployed_secrets(state.apps, bundles);
}

DeployedSecrets deployed_secrets(const std::map<std::string, AppRecord>& apps, const BundleReader& bundles) {
  DeployedSecrets out;
  std::map<std::string, std::vector<std::string>> by_bundle;
  for (const auto& [id, app] : apps) {
    if (!app.bundle.empty())
      if (auto seen = by_bundle.find(app.bundle); seen != by_bundle.end()) {
        for (const auto& k : seen->second) out.keys.add(k);
        continue;
      }
    auto keys = app_secret_keys(app, bundles);
    if (!keys) {
      out.unreadable.push_back(fmt::format("{}: {}", id, keys.error().front().message));
      continue;
    }
    for (const auto& k : *keys) out.keys.add(k);
    if (!app.bundle.empty()) by_bundle[app.bundle] = std::move(*keys);
  }
  return out;
}

SecretValues app_secret_values(const AppRecord& app, const SecretKeys& keys) {
  // Secret keys are named after the app (`web.session_secret`), whatever its release.
  return secret_values_of(app.app_name(), keys, {&app.document});
}

}  // namespace gaia::ops
