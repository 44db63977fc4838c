// Resource quantities ("500m", "8Gi", "1e9", "3"): whatever the text, the parsers return
// a value or an error, never crash or hang, and an accepted value survives the canonical
// spelling gaia prints for it.

#include <fmt/format.h>

#include "fuzz/check.hpp"
#include "lib/quantity.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = gaia::fuzz::as_text(data, size);

  if (auto cpu = gaia::parse_cpu(text)) {
    GAIA_FUZZ_CHECK(*cpu >= 0, fmt::format("parse_cpu gave {}", *cpu));
    const std::string canonical = gaia::format_cpu(*cpu);
    auto again = gaia::parse_cpu(canonical);
    GAIA_FUZZ_CHECK(again && *again == *cpu, fmt::format("cpu {} printed as {:?} does not read back", *cpu, canonical));
    (void)gaia::format_bytes_short(*cpu);
  } else {
    GAIA_FUZZ_CHECK(!cpu.error().empty(), "parse_cpu rejected without a message");
  }

  if (auto bytes = gaia::parse_bytes(text)) {
    GAIA_FUZZ_CHECK(*bytes >= 0, fmt::format("parse_bytes gave {}", *bytes));
    const std::string canonical = gaia::format_bytes(*bytes);
    auto again = gaia::parse_bytes(canonical);
    GAIA_FUZZ_CHECK(again && *again == *bytes,
                    fmt::format("{} bytes printed as {:?} do not read back", *bytes, canonical));
    (void)gaia::format_bytes_short(*bytes);
  } else {
    GAIA_FUZZ_CHECK(!bytes.error().empty(), "parse_bytes rejected without a message");
  }

  if (auto count = gaia::parse_count(text)) {
    GAIA_FUZZ_CHECK(*count >= 0, fmt::format("parse_count gave {}", *count));
    auto again = gaia::parse_count(fmt::format("{}", *count));
    GAIA_FUZZ_CHECK(again && *again == *count, fmt::format("count {} does not read back", *count));
  } else {
    GAIA_FUZZ_CHECK(!count.error().empty(), "parse_count rejected without a message");
  }
  return 0;
}
