#pragma once
// Parameter overrides from the command line: `--set key=value` and `--values FILE`.
// They are merged into one JSON object (values files in order, then every --set in
// order) and deep-merged over the object config.jsonnet evaluated to, before
// main.jsonnet runs. All functions here are pure apart from reading values files.

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"

namespace gaia::render {

// Types the value of a `--set`: integers and floats become numbers, true/false/null
// their JSON values, text starting with '{', '[' or '"' is parsed as JSON (so
// `--set x='"123"'` forces a string), anything else is a string as written.
Result<nlohmann::json> parse_override_value(std::string_view text, const std::string& key);

// Parses one `--set key=value` into a nested object: "a.b.c=1" -> {"a":{"b":{"c":1}}}.
// Keys are split on dots; empty segments are errors.
Result<nlohmann::json> parse_set(std::string_view arg);

// Converts YAML text (or JSON, which YAML reads too) into JSON, preserving the types of
// plain scalars (ints, floats, bools, null) and keeping quoted scalars as strings.
// `file` is used in diagnostics (file:line:col).
Result<nlohmann::json> yaml_to_json(std::string_view text, const std::string& file);

// Reads a values file (YAML or JSON); its top level must be a mapping.
Result<nlohmann::json> load_values_file(const std::filesystem::path& file);

// Recursively merges `from` into `into`: objects merge key by key, anything else
// replaces what was there.
void deep_merge(nlohmann::json& into, const nlohmann::json& from);

// The combined overrides object: `values_files` in order, then `sets` in order (later
// wins). Collects every error.
Result<nlohmann::json> build_overrides(const std::vector<std::filesystem::path>& values_files,
                                       const std::vector<std::string>& sets);

// Applies `overrides` to the evaluated config. Every top-level key of the overrides must
// already be a parameter of the config (a typo must not be silently ignored); deeper
// keys under an existing parameter may be new. `config_file` is shown in diagnostics.
Result<nlohmann::json> apply_overrides(const nlohmann::json& config, const nlohmann::json& overrides,
                                       const std::string& config_file);

}  // namespace gaia::render
