#pragma once
// Small checks shared by workload validation, the gaia/v1 document reader and the
// Kubernetes target: names of JSON types for messages, "did you mean" hints, the
// Kubernetes label and environment-variable name rules, durations and CIDRs.

#include <cstdint>
#include <expected>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "spec/app_spec.hpp"

namespace gaia::render::detail {

// "a string", "a number", "a list", "an object", "a boolean", "null".
std::string json_type_name(const nlohmann::json& v);
// The value as compact JSON; invalid UTF-8 is replaced rather than thrown, as the text
// only feeds messages, hashes and comparisons.
std::string json_compact(const nlohmann::json& v);
// The value as compact JSON, shortened to `max` characters for messages.
std::string json_preview(const nlohmann::json& v, size_t max = 60);

// "did you mean 'memory'? known fields: cpu, memory, gpu, disk" (the first part only
// when a known word is close to `word`; spec/suggest.hpp decides what is close).
std::string did_you_mean_hint(std::string_view word, const std::vector<std::string>& known,
                              std::string_view what = "known fields");

// Kubernetes label keys: an optional DNS-subdomain prefix and '/', then a name of 1-63
// characters [A-Za-z0-9._-] starting and ending alphanumeric.
bool is_label_key(std::string_view s);
// Label values: empty, or a name as above.
bool is_label_value(std::string_view s);
// Environment variable names as Kubernetes accepts them: [-._a-zA-Z][-._a-zA-Z0-9]*.
bool is_env_name(std::string_view s);

// "500ms", "1s", "2m", "1h" -> milliseconds. Whole numbers only.
std::expected<int64_t, std::string> parse_duration_ms(std::string_view text);

// Validates an IPv4 or IPv6 CIDR and returns its canonical text. Host bits set is an
// error whose message includes the network the user probably meant.
std::expected<std::string, std::string> canonical_cidr(std::string_view text);

// The path of the spec's main.jsonnet as shown in diagnostics (beside app.yaml).
std::string main_jsonnet_path(const spec::AppSpec& spec);

}  // namespace gaia::render::detail
