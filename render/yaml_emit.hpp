#pragma once
// Deterministic YAML for JSON values: the text form of rendered gaia documents and of
// Kubernetes manifests. Block style with two-space indentation; object keys in the
// order nlohmann::json holds them (sorted). A string is written plain only when every
// YAML 1.1 and 1.2 reader (yaml-cpp, go-yaml as used by kubectl, PyYAML) reads it back
// as the same string; otherwise it is double-quoted, or a literal block for multi-line
// text. Reading the output back yields a value equal to the input.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gaia::render {

// One YAML document (no "---" marker), ending with a newline.
std::string emit_yaml(const nlohmann::json& value);
// Several documents separated by "---" lines, as `kubectl apply -f -` reads them.
std::string emit_yaml_documents(const std::vector<nlohmann::json>& documents);

// True when `s` can be written as a plain (unquoted) scalar and read back as the same
// string. Exposed for tests.
bool yaml_plain_safe(std::string_view s);

}  // namespace gaia::render
