#pragma once
// Where a re-render reads a deployed app's spec from: its spec bundle unpacked into a
// temporary folder (ops/bundle.hpp), or, for a record written before bundles existed,
// the folder it was submitted from. Config changes re-render through it
// (ops/propagate.hpp), and so does the check of a scale (ops/scale_check.hpp).

#include <optional>
#include <string>

#include "lib/error.hpp"
#include "lib/state.hpp"
#include "ops/bundle.hpp"
#include "spec/app_spec.hpp"

namespace gaia::ops {

// The spec, and the folder it was unpacked into (removed with this).
struct SpecSource {
  std::optional<TempFolder> folder;
  std::optional<Materialized> unpacked;
  spec::AppSpec spec;

  // Paths of the unpacked folder shown as they were where the bundle was made.
  std::string unmap(std::string text) const { return unpacked ? unpacked->unmap(std::move(text)) : text; }
  Diagnostic unmap(Diagnostic d) const {
    d.location.file = unmap(std::move(d.location.file));
    d.message = unmap(std::move(d.message));
    d.hint = unmap(std::move(d.hint));
    return d;
  }
};

// Opens the spec `app` was rendered from, reading its bundle with `bundles`. Errors: the
// bundle is missing or damaged, or (without one) the spec folder cannot be read.
Result<SpecSource> open_spec(const AppRecord& app, const BundleReader& bundles);

}  // namespace gaia::ops
