#pragma once
// Invariants a fuzz target checks beyond "no crash": a parser that accepts an input must
// give a value that survives its own round trip, and one that rejects it must say why,
// where. A broken invariant aborts, so libFuzzer (and the replay driver of the normal
// build) keep the input that broke it as a crash artifact.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lib/error.hpp"

namespace gaia::fuzz {

[[noreturn]] inline void fail_check(const char* what, const std::string& detail, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n  %s\n", file, line, what, detail.c_str());
  std::abort();
}

// The input as text; fuzzers hand bytes, parsers take string_view.
inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Lines in `text`, counting a last line without a newline; a location may name the line
// after the last (an error "at the end of the file").
inline int line_count(std::string_view text) {
  int lines = 1;
  for (char c : text)
    if (c == '\n') ++lines;
  return lines;
}

// What every rejection must hold: at least one diagnostic, each with a message, and a
// location (where known) inside the text that was parsed.
void check_diagnostics(const Diagnostics& errors, std::string_view text, const std::string& file);

}  // namespace gaia::fuzz

#define GAIA_FUZZ_CHECK(cond, detail)                                          \
  do {                                                                         \
    if (!(cond)) ::gaia::fuzz::fail_check(#cond, (detail), __FILE__, __LINE__); \
  } while (0)
