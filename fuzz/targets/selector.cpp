// Label selectors (`-l app=web,tier in (a,b),!canary`): any text parses or is rejected
// with a column inside it, and an accepted selector printed back parses to the same
// requirements.

#include <fmt/format.h>

#include "fuzz/check.hpp"
#include "lib/selector.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);
  auto selector = gaia::parse_selector(text);
  if (!selector) {
    GAIA_FUZZ_CHECK(!selector.error().message.empty(), "a rejected selector without a message");
    GAIA_FUZZ_CHECK(selector.error().column <= text.size() + 1,
                    fmt::format("column {} is past the end of {:?}", selector.error().column, text));
    return 0;
  }
  const std::string printed = gaia::format_selector(*selector);
  auto again = gaia::parse_selector(printed);
  GAIA_FUZZ_CHECK(again.has_value(), fmt::format("selector {:?} printed as {:?} does not parse: {}", text, printed,
                                                 again ? "" : again.error().message));
  GAIA_FUZZ_CHECK(*again == *selector, fmt::format("selector {:?} printed as {:?} reads back differently", text, printed));
  (void)gaia::selector_matches(*selector, {{"app", "web"}, {"tier", "a"}});
  return 0;
}
