// app.yaml as a user writes it (or breaks it): the strict parser and the partial one the
// spec repository uses must agree, every rejection is located inside the file, and an
// accepted spec holds what the rest of gaia relies on (a valid name, a version that
// prints and reads back, dependency ranges that normalise).

#include <fmt/format.h>

#include "fuzz/check.hpp"
#include "lib/utf8.hpp"
#include "spec/app_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);
  const std::string file = "fuzz/app.yaml";

  auto spec = gaia::spec::parse_app_yaml(text, file);
  gaia::spec::AppSpecParse partial = gaia::spec::parse_app_yaml_partial(text, file);
  GAIA_FUZZ_CHECK(spec.has_value() == partial.errors.empty(),
                  fmt::format("parse_app_yaml {} but the partial parse found {} error(s)",
                              spec ? "accepted" : "rejected", partial.errors.size()));
  if (!spec) {
    gaia::fuzz::check_diagnostics(spec.error(), text, file);
    gaia::fuzz::check_diagnostics(partial.errors, text, file);
    if (partial.name_valid) GAIA_FUZZ_CHECK(gaia::spec::is_dns_label(partial.spec.name), partial.spec.name);
    return 0;
  }
  GAIA_FUZZ_CHECK(gaia::spec::is_dns_label(spec->name), fmt::format("accepted name {:?}", spec->name));
  GAIA_FUZZ_CHECK(partial.name_valid && partial.version_valid, "the partial parse disowns a valid name or version");
  const std::string version = spec->version.to_string();
  auto again = gaia::semver::parse_version(version);
  GAIA_FUZZ_CHECK(again && gaia::semver::compare(*again, spec->version) == 0,
                  fmt::format("version {:?} does not read back", version));
  // Everything an app record stores from app.yaml is JSON text, so UTF-8.
  for (const std::string& text : {spec->description, spec->name})
    GAIA_FUZZ_CHECK(gaia::invalid_utf8_offset(text) == std::string_view::npos, fmt::format("accepted text {:?} is not UTF-8", text));
  for (const auto& list : {spec->outputs, spec->secrets})
    for (const std::string& text : list)
      GAIA_FUZZ_CHECK(gaia::invalid_utf8_offset(text) == std::string_view::npos,
                      fmt::format("accepted text {:?} is not UTF-8", text));
  for (const gaia::spec::Dependency& d : spec->dependencies) {
    GAIA_FUZZ_CHECK(gaia::spec::is_dns_label(d.name), fmt::format("accepted dependency name {:?}", d.name));
    GAIA_FUZZ_CHECK(!d.alias.empty(), fmt::format("dependency {} has no alias", d.name));
    GAIA_FUZZ_CHECK(gaia::semver::Range::parse(d.range.normalized()).has_value(),
                    fmt::format("dependency {} range {:?} does not normalise", d.name, d.range.text()));
  }
  return 0;
}
