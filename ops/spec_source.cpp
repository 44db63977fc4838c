#include "ops/spec_source.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace gaia::ops {

Result<SpecSource> open_spec(const AppRecord& app, const BundleReader& bundles) {
  SpecSource src;
  if (app.bundle.empty()) {
    if (app.spec_dir.empty()) return fail(Diagnostic{{}, "", "no spec directory recorded", ""});
    auto spec = spec::load_app_spec(app.spec_dir);
    if (!spec) return fail(spec.error());
    src.spec = std::move(*spec);
    return src;
  }
  std::string what = fmt::format("its spec bundle {}", app.bundle);
  if (!bundles) throw std::logic_error("open_spec: no way to read spec bundles");
  auto text = bundles(app.bundle);
  if (!text) return fail(text.error());
  if (!*text)
    return fail(Diagnostic{{}, "", fmt::format("{} is missing from the store (key {})", what, keys::bundle(app.bundle)),
                           ""});
  auto bundle = parse_bundle(**text, app.bundle, what);
  if (!bundle) return fail(bundle.error());
  auto folder = TempFolder::make();
  if (!folder) return fail(folder.error());
  auto unpacked = materialize_bundle(*bundle, folder->path());
  if (!unpacked) return fail(unpacked.error());
  src.folder = std::move(*folder);
  src.unpacked = std::move(*unpacked);
  auto spec = spec::load_app_spec(src.unpacked->app_dir);
  if (!spec) {
    Diagnostics errors;
    for (const auto& e : spec.error()) errors.push_back(src.unmap(e));
    return fail(std::move(errors));
  }
  src.spec = std::move(*spec);
  return src;
}

}  // namespace gaia::ops
