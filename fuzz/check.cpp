#include "fuzz/check.hpp"

#include <fmt/format.h>

namespace gaia::fuzz {

void check_diagnostics(const Diagnostics& errors, std::string_view text, const std::string& file) {
  GAIA_FUZZ_CHECK(!errors.empty(), "a rejected input came back without a diagnostic");
  const int lines = line_count(text);
  for (const Diagnostic& d : errors) {
    GAIA_FUZZ_CHECK(!d.message.empty(), fmt::format("a diagnostic without a message: {}", d.to_string()));
    if (!d.location.known()) continue;
    GAIA_FUZZ_CHECK(d.location.file == file, fmt::format("a diagnostic names another file: {}", d.to_string()));
    GAIA_FUZZ_CHECK(d.location.line <= lines + 1,
                    fmt::format("a diagnostic points past the end ({} lines): {}", lines, d.to_string()));
    GAIA_FUZZ_CHECK(d.location.column >= 0, fmt::format("a negative column: {}", d.to_string()));
  }
}

}  // namespace gaia::fuzz
