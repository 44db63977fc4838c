#pragma once
// Conditions of dependencies (docs/spec.md#conditional-dependencies): `when:` in an
// app.yaml dependency names a parameter of the app's evaluated config (config.jsonnet
// after --set/--values, with the config center's values it read), and the dependency
// applies only while the condition holds.
//
//   when: search.enabled            the parameter is true
//   when: "!sharing.enabled"        the parameter is false
//   when: "storage.mode == hdfs"    equal to a value (true, false, a number, a string)
//   when: "storage.mode != local"   not equal
//
// A bare parameter must be a boolean, so that "0", "" or "false" as strings never
// switch a dependency silently; compare such values with == instead.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "lib/error.hpp"

namespace gaia::spec {

struct Condition {
  enum class Op { IsTrue, IsFalse, Equal, NotEqual };
  std::string key;  // Dotted path into the evaluated config: "search.enabled".
  Op op = Op::IsTrue;
  nlohmann::json value;  // For Equal and NotEqual.
  std::string text;      // As written, for messages.
  bool operator==(const Condition& o) const { return key == o.key && op == o.op && value == o.value; }
};

// Parses the text of a `when:`. The error says what is wrong, without a location (the
// caller has the YAML position).
std::expected<Condition, std::string> parse_condition(std::string_view text);

// Whether `c` holds on the evaluated `config`. Errors (a key that is not a parameter, a
// bare parameter that is not a boolean) say what is wrong; `hint` gets what to write
// instead (the parameters at that level, with a did-you-mean).
std::expected<bool, std::string> evaluate_condition(const Condition& c, const nlohmann::json& config,
                                                    std::string* hint = nullptr);

// "search.enabled is false" / "storage.mode is \"local\"": the value that decided, for
// `gaia deps` and `plan`.
std::string condition_value_text(const Condition& c, const nlohmann::json& config);

}  // namespace gaia::spec
