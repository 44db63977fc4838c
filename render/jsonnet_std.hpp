#pragma once
// Faster stand-ins for two functions of libjsonnet 0.18's standard library, used by a
// folded render (render/evaluator.cpp). That version implements std.format (so the `%`
// operator) and std.escapeStringJson (so every std.manifestJson*) in Jsonnet itself: a
// format string is parsed one character at a time through objects and recursion, about
// 1.6 ms per `'%d.%s' % [i, name]`, and those two made up most of an example's render.
//
// The folded render shadows `std` with an object whose `format` and `escapeStringJson`
// ask these functions first (beside leaner Jsonnet for the type tests, toString and the
// JSON, YAML and XML manifests, built on the library's native parts) (as natives) and fall back to the library's own code for
// anything they do not take: a value they cannot see (objects, arrays, text outside
// printable-and-control ASCII), a conversion they do not mirror (%c, %f, %e, %g, `*`,
// `%(key)`), and every input on which the library's code would fail, so an error reads
// exactly as before. What they take, they render byte for byte as the library's code
// does (tests/render/jsonnet_std_test.cpp compares both on random inputs).

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gaia::render {

// A value given to std.format: null, a boolean, a number or an ASCII string.
using FormatValue = std::variant<std::monostate, bool, double, std::string>;

// std.format(fmt, vals) for a format string and values of ASCII text, or nothing when
// the library's own code must decide (see above).
std::optional<std::string> jsonnet_format(std::string_view fmt, const std::vector<FormatValue>& vals);

// std.escapeStringJson(s) for ASCII text, or nothing.
std::optional<std::string> jsonnet_escape_string_json(std::string_view s);

// The stable order of a JSON list of keys, all strings or all numbers, as Jsonnet's `<`
// orders them; nothing for anything else (or text that is not JSON).
std::optional<std::vector<size_t>> jsonnet_sort_order(std::string_view keys_json);

// Whether the text holds only ASCII without NUL, as the natives require: the C API
// passes strings NUL-terminated, and a Jsonnet length counts code points.
bool is_plain_ascii(std::string_view s);

// The Jsonnet text that shadows `std` for a folded render: `local std = ...;`. It uses
// the natives 'gaia_format' (params k_format_params) and 'gaia_escape_json' (str, len).
extern const char* const k_std_shim;
// Values std.format hands to the native at most; more go the library's way. The shim's
// text (`n > 6`, v0..v5) and the native's parameter list (render/evaluator.cpp, checked
// there) are written for this number.
inline constexpr int k_format_native_values = 6;

}  // namespace gaia::render
