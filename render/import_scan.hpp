#pragma once
// Finds the `import "path"` expressions of a Jsonnet file, for folding a render's files
// into one evaluation (render/evaluator.cpp): libjsonnet 0.18 parses its whole standard
// library again for every file it evaluates or imports (~20 ms each), so a render that
// imports four files parses it five times.
//
// A lexer of Jsonnet's tokens as far as needed to tell code from strings and comments:
// "..." and '...' with escapes, @"..." and @'...', ||| text blocks, //, # and /* */
// comments, and identifiers (so `importstr` is not `import`). Anything it is not sure of
// makes it give up (nothing is returned), and the render evaluates its files one by one
// as before: a wrong guess would change what a render produces.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gaia::render {

struct ImportSite {
  size_t begin = 0, end = 0;  // The bytes of `import "path"` in the text.
  std::string path;           // The path as written.
};

// Every `import` of `text` with its string, in order; nothing when the text holds
// something the folding does not handle: `importstr` or `importbin` (their paths would
// resolve from another file), an import of anything but a plain string literal, a
// string or text block the lexer cannot follow to its end, brackets that do not pair,
// an import followed by more than the end of its expression (libjsonnet refuses that
// file), and `std` used but by a plain field name other than thisFile, trace and (unless
// `allow_native`, for the built-in library) native.
std::optional<std::vector<ImportSite>> scan_imports(std::string_view text, bool allow_native = false);

}  // namespace gaia::render
