// Durations: `--since 1h30m`, `events --retention 7d` (lib/timeline) and the spec's
// probe and grace periods ("500ms", "2m"; render/json_fields). Any text gives a value
// or an error; accepted values are never negative.

#include <fmt/format.h>

#include "fuzz/check.hpp"
#include "lib/timeline.hpp"
#include "render/json_fields.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);

  if (auto d = gaia::parse_duration(text)) {
    GAIA_FUZZ_CHECK(d->count() >= 0, fmt::format("parse_duration gave {} ticks", d->count()));
  } else {
    GAIA_FUZZ_CHECK(!d.error().empty(), "parse_duration rejected without a diagnostic");
    GAIA_FUZZ_CHECK(!d.error().front().message.empty(), "parse_duration rejected without a message");
  }

  if (auto ms = gaia::render::detail::parse_duration_ms(text)) {
    GAIA_FUZZ_CHECK(*ms >= 0, fmt::format("parse_duration_ms gave {}", *ms));
  } else {
    GAIA_FUZZ_CHECK(!ms.error().empty(), "parse_duration_ms rejected without a message");
  }

  (void)gaia::parse_rfc3339(text);
  return 0;
}
