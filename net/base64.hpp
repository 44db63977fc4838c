#pragma once
// Standard base64 (RFC 4648, with '=' padding), as etcd's JSON gateway encodes every key
// and value: protobuf `bytes` fields travel as base64 strings in JSON.

#include <optional>
#include <string>
#include <string_view>

namespace gaia {

std::string base64_encode(std::string_view bytes);
// Nothing when `text` is not canonical padded base64 (wrong length, a character outside
// the alphabet, misplaced padding, or non-zero bits in the padding), so a corrupted
// answer is detected instead of decoded into garbage.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gaia
