#include "lib/error.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace gaia {

std::string Location::to_string() const {
  if (line > 0 && column > 0) return fmt::format("{}:{}:{}", file, line, column);
  if (line > 0) return fmt::format("{}:{}", file, line);
  return file;
}

std::string Diagnostic::to_string() const {
  std::string out;
  std::string where = location.to_string();
  if (!where.empty()) out += where + ": ";
  out += "error: ";
  if (!path.empty()) out += path + ": ";
  out += message;
  if (!hint.empty()) out += "\n  hint: " + hint;
  return out;
}

std::string format_diagnostics(const Diagnostics& ds) {
  Diagnostics sorted = ds;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic& a, const Diagnostic& b) {
    if (a.location.file != b.location.file) return a.location.file < b.location.file;
    if (a.location.line != b.location.line) return a.location.line < b.location.line;
    return a.location.column < b.location.column;
  });
  std::string out;
  for (const auto& d : sorted) {
    out += d.to_string();
    out += '\n';
  }
  return out;
}

}  // namespace gaia
