#pragma once
// Resource quantities as users write them: cpu in cores or millicores ("2", "0.5",
// "500m"), memory and disk in bytes with binary or decimal suffixes ("8Gi", "512M",
// "1e9"), gpu as a whole count. Values are stored as integers (millicores, bytes,
// devices) so arithmetic in the scheduler is exact. Overflow and negatives are errors.

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace gaia {

// Millicores. "2" -> 2000, "0.5" -> 500, "500m" -> 500, "1.5e3m"? -> error-free 1500.
// A value that is not a whole number of millicores ("0.0001") is an error.
std::expected<int64_t, std::string> parse_cpu(std::string_view text);
// Bytes. Suffixes Ki Mi Gi Ti Pi Ei (powers of 1024) and k K M G T P E (powers of
// 1000); plain numbers and exponents ("1e9", "1.5Gi" -> 1610612736). Fractions of a
// byte are rounded up, as Kubernetes does.
std::expected<int64_t, std::string> parse_bytes(std::string_view text);
// A whole, non-negative count ("2"). "1.5" is an error.
std::expected<int64_t, std::string> parse_count(std::string_view text);

// Canonical spellings used in rendered output: cpu "500m" or "2" (whole cores), bytes
// with the largest exact binary suffix ("8Gi", "1536Mi", "1000000000").
std::string format_cpu(int64_t millicores);
std::string format_bytes(int64_t bytes);
// Human-friendly approximations for tables: "1.5Gi", "2.3k".
std::string format_bytes_short(int64_t bytes);

}  // namespace gaia
