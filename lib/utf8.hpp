#pragma once
// UTF-8 validation for text users hand to gaia (app.yaml, cluster files, values files,
// --set and config values). Everything gaia stores is JSON, and JSON text is UTF-8: a
// stray Latin-1 byte that got into a record would make every later write of it fail, so
// it is refused where the user typed it, with its position.

#include <cstddef>
#include <string>
#include <string_view>

namespace gaia {

// The offset of the first byte that does not belong to well-formed UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos when the text is valid.
size_t invalid_utf8_offset(std::string_view text);

// "" for valid UTF-8, else what is wrong and where, for a message about a value a user
// typed: "not UTF-8 text (byte 0xE9 at offset 3)".
std::string utf8_problem(std::string_view text);

}  // namespace gaia
