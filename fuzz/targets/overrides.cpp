// `--set key=value` and `--values FILE`: any text is an override or a located error, and
// an accepted override applies to a config as documented (new top-level keys refused,
// nested keys merged) without crashing on the types it meets.

#include <fmt/format.h>

#include "fuzz/check.hpp"
#include "render/overrides.hpp"

namespace {

const nlohmann::json& config() {
  static const nlohmann::json c = nlohmann::json::parse(R"({
    "web": {"replicas": 2, "image": "nginx:1.25", "env": {"MODE": "prod"}, "ports": [80, 443]},
    "session_secret": "s3cret",
    "limits": null,
    "enabled": true
  })");
  return c;
}

void apply(const nlohmann::json& overrides, std::string_view text, const std::string& file) {
  auto applied = gaia::render::apply_overrides(config(), overrides, file);
  if (!applied) {
    gaia::fuzz::check_diagnostics(applied.error(), text, file);
    return;
  }
  GAIA_FUZZ_CHECK(applied->is_object(), "applying overrides gave a config that is not an object");
  for (const auto& [key, value] : applied->items())
    GAIA_FUZZ_CHECK(config().contains(key), fmt::format("override added the top-level key {:?}", key));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);

  if (auto set = gaia::render::parse_set(text)) {
    GAIA_FUZZ_CHECK(set->is_object() && set->size() == 1,
                    fmt::format("--set {:?} gave {}", text, set->dump()));
    apply(*set, text, "--set");
  } else {
    GAIA_FUZZ_CHECK(!set.error().empty(), "a rejected --set without a diagnostic");
  }

  (void)gaia::render::parse_override_value(text, "key");

  const std::string file = "fuzz/values.yaml";
  if (auto values = gaia::render::yaml_to_json(text, file)) {
    (void)values->dump();
    if (values->is_object()) {
      nlohmann::json merged = config();
      gaia::render::deep_merge(merged, *values);
      apply(*values, text, file);
    }
  } else {
    gaia::fuzz::check_diagnostics(values.error(), text, file);
  }
  return 0;
}
