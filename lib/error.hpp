#pragma once
// Diagnostics: every failure a user can cause is a value with a location, the path of
// the offending field, what was expected, and a hint. Functions collect them rather than
// stopping at the first, so a user fixes a file in one round trip.

#include <expected>
#include <string>
#include <vector>

namespace gaia {

struct Location {
  std::string file;  // Path as the user gave it (or relative to the spec dir).
  int line = 0;      // 1-based; 0 when unknown.
  int column = 0;    // 1-based; 0 when unknown.

  bool known() const { return line > 0; }
  // "file:line:col", "file:line", or "file".
  std::string to_string() const;
};

struct Diagnostic {
  Location location;
  std::string path;     // Field path, e.g. "dependencies[1].version"; may be empty.
  std::string message;  // What is wrong, and what was expected.
  std::string hint;     // What to do about it; may be empty.
  // A stable name for the kind of failure where a caller may act on it, e.g.
  // "store.unavailable" (StoreErrc, lib/store.hpp); empty for most diagnostics.
  std::string code = {};

  // "file:line:col: error: path: message\n  hint: ..." (one or two lines).
  std::string to_string() const;
};

using Diagnostics = std::vector<Diagnostic>;

template <class T>
using Result = std::expected<T, Diagnostics>;

inline std::unexpected<Diagnostics> fail(Diagnostic d) {
  return std::unexpected(Diagnostics{std::move(d)});
}
inline std::unexpected<Diagnostics> fail(Diagnostics ds) { return std::unexpected(std::move(ds)); }

// Renders all diagnostics, one per line (plus hint lines), sorted by file, line, column.
std::string format_diagnostics(const Diagnostics& ds);

}  // namespace gaia
