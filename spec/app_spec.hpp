#pragma once
// The app spec's identity file, app.yaml: parsed with yaml-cpp and validated. All errors
// of a file are reported with file:line:col, the field path, what was expected and a
// hint. See docs/spec.md for the reference.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/error.hpp"
#include "lib/priority.hpp"
#include "spec/condition.hpp"
#include "spec/semver.hpp"

namespace gaia::spec {

struct Dependency {
  std::string name;            // App name (DNS label).
  semver::Range range;         // "version:", default "*".
  std::string alias;           // "as:", default: name with '-' replaced by '_'.
  std::vector<std::string> imports;  // Outputs of the dependency this app uses.
  Location location;           // Of the list item, for resolution errors.
  // "when:": the dependency applies only while this holds on the app's evaluated config
  // (spec/condition.hpp); unset: always.
  std::optional<Condition> when;
  Location when_location;      // Of the condition's text, for its errors.
  // "release:": the release of the app it binds to (docs/spec.md section 8, Releases); empty:
  // any running release satisfying the range, else the release named after the app.
  std::string release;
  Location release_location;
  // "tenant:": bind to a release of that tenant, which must run there and export it to
  // the dependent's tenant (`gaia export`); empty: the dependent's own tenant.
  std::string tenant;
  Location tenant_location;
};

struct AppSpec {
  std::string name;
  semver::Version version;
  std::string description;
  Priority priority;               // Default prod.
  std::vector<Dependency> dependencies;
  std::vector<std::string> outputs;  // What dependents may import.
  std::vector<std::string> secrets;  // Config keys whose values are masked in diffs.
  std::filesystem::path dir;         // The app directory (absolute, canonical).
  std::string yaml_file;             // Path of app.yaml as shown in diagnostics.

  std::string id() const { return name + "@" + version.to_string(); }
};

// Parses app.yaml text. `file` is used in diagnostics only. Collects every error.
Result<AppSpec> parse_app_yaml(std::string_view text, const std::string& file);
// Reads DIR/app.yaml (and checks config.jsonnet and main.jsonnet exist). Errors for a
// missing dir, a dir that is a file, unreadable files.
Result<AppSpec> load_app_spec(const std::filesystem::path& dir);

// What was understood of a possibly broken app.yaml, with every error found. The spec
// repository uses it to file a broken app under its name, so that only resolutions that
// touch that name report it.
struct AppSpecParse {
  AppSpec spec;          // Fields that parsed; the others keep their defaults.
  Diagnostics errors;    // Empty when the spec is valid.
  bool name_valid = false;
  bool version_valid = false;
};
AppSpecParse parse_app_yaml_partial(std::string_view text, const std::string& file);
AppSpecParse load_app_spec_partial(const std::filesystem::path& dir);

// DNS-label rule (RFC 1123): 1-63 chars of [a-z0-9-], starting and ending alphanumeric.
bool is_dns_label(std::string_view s);
// Identifier usable in Jsonnet field access: [A-Za-z_][A-Za-z0-9_]*.
bool is_identifier(std::string_view s);
// Which rule `s` breaks ("it starts with '-': ..."), or empty when it is a valid label.
std::string dns_label_problem(std::string_view s);
// The closest valid label ("HDFS_Name" -> "hdfs-name"); may be empty.
std::string suggest_dns_label(std::string_view s);
// Which rule `s` breaks as an identifier, or empty when it is valid.
std::string identifier_problem(std::string_view s);
// `s` with every invalid character replaced by '_' (and a leading '_' before a digit).
std::string suggest_identifier(std::string_view s);
// The alias of a dependency without "as:": its name with '-' replaced by '_'.
std::string default_alias(std::string_view name);

}  // namespace gaia::spec
