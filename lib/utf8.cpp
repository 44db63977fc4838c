#include "lib/utf8.hpp"

#include <cstdint>

#include <fmt/format.h>

namespace gaia {

size_t invalid_utf8_offset(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t lo = 0x80, hi = 0xBF;  // The range of the second byte (RFC 3629, section 4).
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // Overlong below U+0800.
      if (c == 0xED) hi = 0x9F;  // Surrogates U+D800..U+DFFF.
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // Overlong below U+10000.
      if (c == 0xF4) hi = 0x8F;  // Above U+10FFFF.
    } else {
      return i;
    }
    if (i + len > n) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string utf8_problem(std::string_view text) {
  const size_t bad = invalid_utf8_offset(text);
  if (bad == std::string_view::npos) return "";
  return fmt::format("not UTF-8 text (byte 0x{:02X} at offset {})", static_cast<unsigned char>(text[bad]), bad);
}

}  // namespace gaia
