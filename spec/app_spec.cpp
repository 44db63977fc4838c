#include "spec/app_spec.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "spec/suggest.hpp"
#include "spec/yaml_load.hpp"

namespace gaia::spec {
namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTopFields = {"name",         "version", "description", "priority",
                                             "dependencies", "outputs", "secrets"};
const std::vector<std::string> kDependencyFields = {"name", "version", "as", "import", "when", "release", "tenant"};

// How a node is described in "expected X, found Y" messages.
std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing (null)";
    case YAML::NodeType::Scalar: return fmt::format("the string '{}'", n.Scalar());
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Undefined: break;
  }
  return "nothing";
}

std::string unknown_field_hint(const std::string& key, const std::vector<std::string>& known) {
  if (auto close = did_you_mean(key, known)) return fmt::format("did you mean '{}'?", *close);
  return fmt::format("known fields are: {}", join_limited(known));
}

// A hint for YAML syntax errors on a line holding an unquoted version range: in YAML a
// bare '>' starts a folded block scalar and '*' an alias, which surprises everyone.
std::string syntax_hint(std::string_view text, int line0) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  for (int l = line0; l >= 0 && l >= line0 - 1; --l) {
    if (l >= static_cast<int>(lines.size())) continue;
    std::string_view s = lines[static_cast<size_t>(l)];
    size_t k = s.find("version:");
    if (k == std::string_view::npos) continue;
    std::string_view value = s.substr(k + 8);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (!value.empty() && std::string_view(">*|&!%@`").find(value.front()) != std::string_view::npos)
      return fmt::format(
          "quote the version range: version: \"{}\" (unquoted, YAML reads '{}' as syntax, not text)", value,
          value.front());
  }
  return "check the indentation and quoting around this position";
}

class Parser {
 public:
  explicit Parser(std::string file) : m_file(std::move(file)) {}

  AppSpecParse run(std::string_view text) {
    m_out.spec.yaml_file = m_file;
    m_out.spec.priority = Priority{};
    std::vector<YAML::Node> docs;
    try {
      docs = load_yaml_documents(text);
    } catch (const YAML::Exception& e) {
      Location where{m_file, e.mark.is_null() ? 0 : e.mark.line + 1, e.mark.is_null() ? 0 : e.mark.column + 1};
      error(where, "", fmt::format("invalid YAML: {}", e.msg), syntax_hint(text, e.mark.line));
      return std::move(m_out);
    }
    if (docs.empty() || docs[0].IsNull()) {
      error({m_file, 1, 1}, "", "the file is empty: expected a map with at least 'name' and 'version'",
            "start with the lines 'name: my-app' and 'version: 0.1.0'");
      return std::move(m_out);
    }
    if (docs.size() > 1)
      error(location(docs[1], {m_file, 1, 1}), "",
            fmt::format("the file holds {} YAML documents: expected exactly one", docs.size()),
            "remove the '---' separators and keep a single map");
    parse_root(docs[0]);
    return std::move(m_out);
  }

 private:
  Location location(const YAML::Node& n, const Location& fallback) const {
    YAML::Mark m = n.Mark();
    if (m.is_null() || m.line < 0) return fallback;
    return Location{m_file, m.line + 1, m.column + 1};
  }

  void error(Location where, std::string path, std::string message, std::string hint = "") {
    m_out.errors.push_back(Diagnostic{std::move(where), std::move(path), std::move(message), std::move(hint)});
  }

  // The string value of a scalar node; an error naming `what` otherwise.
  std::optional<std::string> string_value(const YAML::Node& n, const std::string& path, const Location& where,
                                          std::string_view what) {
    if (n.IsScalar()) return n.Scalar();
    std::string key = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    std::string hint = n.IsNull() && key.find('[') == std::string::npos
                           ? fmt::format("give '{}' a value", key)
                           : "";
    error(where, path, fmt::format("expected {}, found {}", what, describe(n)), hint);
    return std::nullopt;
  }

  // Iterates a map's entries, reporting non-string and repeated keys. `visit` gets the
  // key, the value, the key's location and the value's location.
  template <class Visit>
  void for_each_field(const YAML::Node& map, const Location& map_loc, const std::string& prefix, Visit visit) {
    std::map<std::string, int> seen;  // key -> line of its first occurrence
    for (auto it = map.begin(); it != map.end(); ++it) {
      YAML::Node key = it->first;
      YAML::Node value = it->second;
      Location key_loc = location(key, map_loc);
      if (!key.IsScalar()) {
        error(key_loc, prefix, fmt::format("expected a field name, found {}", describe(key)));
        continue;
      }
      std::string name = key.Scalar();
      std::string path = prefix.empty() ? name : prefix + "." + name;
      if (auto [pos, fresh] = seen.emplace(name, key_loc.line); !fresh) {
        error(key_loc, path, fmt::format("field '{}' is given twice (first on line {})", name, pos->second),
              "keep one of them");
        continue;
      }
      // A null value's mark points past the line break after the key, so errors about a
      // missing value point at the key instead.
      visit(name, path, value, key_loc, value.IsNull() ? key_loc : location(value, key_loc));
    }
  }

  void parse_root(const YAML::Node& root) {
    Location root_loc = location(root, {m_file, 1, 1});
    if (!root.IsMap()) {
      error(root_loc, "", fmt::format("expected a map of fields (name, version, ...), found {}", describe(root)));
      return;
    }
    bool has_name = false, has_version = false;
    for_each_field(root, root_loc, "", [&](const std::string& key, const std::string& path, const YAML::Node& v,
                                           const Location& key_loc, const Location& value_loc) {
      if (key == "name") {
        has_name = true;
        parse_name(v, value_loc);
      } else if (key == "version") {
        has_version = true;
        parse_version_field(v, value_loc);
      } else if (key == "description") {
        if (v.IsNull()) return;
        if (auto s = string_value(v, path, value_loc, "a string")) m_out.spec.description = *s;
      } else if (key == "priority") {
        parse_priority_field(v, value_loc);
      } else if (key == "dependencies") {
        parse_dependencies(v, value_loc);
      } else if (key == "outputs") {
        m_out.spec.outputs = parse_identifier_list(v, value_loc, "outputs", "output");
      } else if (key == "secrets") {
        parse_secrets(v, value_loc);
      } else {
        error(key_loc, path, fmt::format("unknown field '{}'", key), unknown_field_hint(key, kTopFields));
      }
    });
    if (!has_name)
      error(root_loc, "name", "missing required field 'name': expected the app's name, a DNS label such as 'hdfs'",
            "add a line: name: my-app");
    if (!has_version)
      error(root_loc, "version", "missing required field 'version': expected a full semantic version such as 1.0.0",
            "add a line: version: 0.1.0");
    check_dependencies_against_name();
  }

  void parse_name(const YAML::Node& v, const Location& where) {
    auto s = string_value(v, "name", where, "a string (the app's name)");
    if (!s) return;
    if (std::string problem = dns_label_problem(*s); !problem.empty()) {
      error(where, "name", fmt::format("'{}' is not a valid app name: {}", *s, problem), dns_hint(*s));
      return;
    }
    m_out.spec.name = *s;
    m_out.name_valid = true;
  }

  static std::string dns_hint(const std::string& s) {
    std::string hint =
        "names are DNS labels: 1-63 characters of a-z, 0-9 and '-', starting and ending with a letter or digit";
    std::string better = suggest_dns_label(s);
    if (!better.empty() && better != s) hint += fmt::format("; for example '{}'", better);
    return hint;
  }

  void parse_version_field(const YAML::Node& v, const Location& where) {
    auto s = string_value(v, "version", where, "a string (a semantic version such as 1.2.3)");
    if (!s) return;
    auto parsed = semver::parse_version(*s);
    if (!parsed) {
      error(where, "version", parsed.error(), version_hint(*s));
      return;
    }
    m_out.spec.version = *parsed;
    m_out.version_valid = true;
  }

  static std::string version_hint(const std::string& s) {
    // "3.3" and "3" are the usual mistakes: suggest the padded form.
    int dots = 0;
    bool digits_and_dots = !s.empty();
    for (char c : s) {
      if (c == '.') ++dots;
      else if (c < '0' || c > '9') digits_and_dots = false;
    }
    if (digits_and_dots && dots < 2 && s.back() != '.')
      return fmt::format("a version needs all three parts MAJOR.MINOR.PATCH: write {}{}", s,
                         dots == 0 ? ".0.0" : ".0");
    return "use a full semantic version MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], e.g. 3.3.4 or 1.0.0-rc.1";
  }

  void parse_priority_field(const YAML::Node& v, const Location& where) {
    if (v.IsNull()) return;
    auto s = string_value(v, "priority", where, "a string such as 'prod' or 'prod:200'");
    if (!s) return;
    auto p = parse_priority(*s);
    if (!p) {
      error(where, "priority", fmt::format("'{}' is not a valid priority: {}", *s, p.error()),
            "write sys, prod or nonprod, optionally with a level 0-1000 (prod:200) and, for nonprod only, "
            ":non-preemptible");
      return;
    }
    m_out.spec.priority = *p;
  }

  bool expect_list(const YAML::Node& v, const Location& where, const std::string& path, std::string_view example) {
    if (v.IsSequence()) return true;
    std::string hint;
    std::string key = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    if (v.IsScalar()) hint = fmt::format("write a YAML list, e.g. {}: [{}]", key, v.Scalar());
    else if (!example.empty()) hint = fmt::format("write a YAML list, e.g. {}", example);
    error(where, path, fmt::format("expected a list, found {}", describe(v)), hint);
    return false;
  }

  // A list of Jsonnet identifiers without repeats ("outputs", "dependencies[0].import").
  std::vector<std::string> parse_identifier_list(const YAML::Node& v, const Location& where, const std::string& path,
                                                 std::string_view what) {
    std::vector<std::string> out;
    if (v.IsNull() || !expect_list(v, where, path, "")) return out;
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string item_path = fmt::format("{}[{}]", path, i);
      Location item_loc = location(v[i], where);
      auto s = string_value(v[i], item_path, item_loc, fmt::format("a string (an {} name)", what));
      if (!s) continue;
      if (std::string problem = identifier_problem(*s); !problem.empty()) {
        error(item_loc, item_path, fmt::format("'{}' is not a valid {} name: {}", *s, what, problem),
              fmt::format("{} names are used as Jsonnet fields: letters, digits and '_', not starting with a digit; "
                          "for example '{}'",
                          what, suggest_identifier(*s)));
        continue;
      }
      if (auto [pos, fresh] = seen.emplace(*s, i); !fresh) {
        error(item_loc, item_path, fmt::format("{} '{}' is listed twice (also {}[{}])", what, *s, path, pos->second),
              "remove the repeated entry");
        continue;
      }
      out.push_back(*s);
    }
    return out;
  }

  void parse_secrets(const YAML::Node& v, const Location& where) {
    if (v.IsNull() || !expect_list(v, where, "secrets", "secrets: [db.password]")) return;
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      std::string item_path = fmt::format("secrets[{}]", i);
      Location item_loc = location(v[i], where);
      auto s = string_value(v[i], item_path, item_loc, "a string (a config key such as db.password)");
      if (!s) continue;
      if (s->empty()) {
        error(item_loc, item_path, "the config key is empty: expected a key such as db.password");
        continue;
      }
      if (auto [pos, fresh] = seen.emplace(*s, i); !fresh) {
        error(item_loc, item_path, fmt::format("secret '{}' is listed twice (also secrets[{}])", *s, pos->second),
              "remove the repeated entry");
        continue;
      }
      m_out.spec.secrets.push_back(*s);
    }
  }

  void parse_dependencies(const YAML::Node& v, const Location& where) {
    if (v.IsNull() || !expect_list(v, where, "dependencies", "dependencies: [{name: zookeeper, version: \">=3.6\"}]"))
      return;
    // First occurrences of each name and alias, for duplicate reports.
    std::map<std::string, size_t> names;
    std::map<std::string, std::pair<size_t, std::string>> aliases;  // alias -> index, app name
    for (size_t i = 0; i < v.size(); ++i) {
      std::string path = fmt::format("dependencies[{}]", i);
      Location item_loc = location(v[i], where);
      std::optional<Dependency> dep = parse_dependency(v[i], item_loc, path);
      if (!dep) continue;
      bool ok = true;
      if (!dep->name.empty()) {
        // Two releases of one app are two dependencies; one release twice is a mistake.
        std::string key = dep->tenant + "/" + dep->name + "/" + dep->release;
        if (auto [pos, fresh] = names.emplace(key, i); !fresh) {
          std::string what = dep->release.empty() ? fmt::format("dependency '{}'", dep->name)
                                                  : fmt::format("dependency on release '{}' of {}", dep->release, dep->name);
          if (!dep->tenant.empty()) what += fmt::format(" of tenant {}", dep->tenant);
          error(item_loc, path + ".name", fmt::format("{} is listed twice (also dependencies[{}])", what, pos->second),
                "an app can depend on a release only once: merge the two entries, or name another release with "
                "release:");
          ok = false;
        }
      }
      if (!dep->alias.empty()) {
        if (auto [pos, fresh] = aliases.emplace(dep->alias, std::pair{i, dep->name}); !fresh) {
          error(item_loc, path + ".as",
                fmt::format("alias '{}' is already used by dependencies[{}] ({})", dep->alias, pos->second.first,
                            pos->second.second),
                "give each dependency its own name under deps.* with 'as:'");
          ok = false;
        }
      }
      if (ok) m_out.spec.dependencies.push_back(std::move(*dep));
    }
  }

  std::optional<Dependency> parse_dependency(const YAML::Node& item, const Location& item_loc,
                                             const std::string& path) {
    if (!item.IsMap()) {
      std::string hint;
      if (item.IsScalar()) hint = fmt::format("write a map: - name: {}", item.Scalar());
      error(item_loc, path, fmt::format("expected a map with 'name' (and optionally version, as, import, when, release, tenant), found {}",
                                        describe(item)),
            hint);
      return std::nullopt;
    }
    Dependency dep;
    dep.location = item_loc;
    dep.range = semver::Range::parse("*").value();
    bool has_name = false, has_alias = false;
    for_each_field(item, item_loc, path, [&](const std::string& key, const std::string& field_path,
                                             const YAML::Node& v, const Location& key_loc,
                                             const Location& value_loc) {
      if (key == "name") {
        has_name = true;
        auto s = string_value(v, field_path, value_loc, "a string (the name of an app)");
        if (!s) return;
        if (std::string problem = dns_label_problem(*s); !problem.empty()) {
          error(value_loc, field_path, fmt::format("'{}' is not a valid app name: {}", *s, problem), dns_hint(*s));
          return;
        }
        dep.name = *s;
      } else if (key == "version") {
        if (v.IsNull()) return;
        auto s = string_value(v, field_path, value_loc, "a string (a semver range such as \">=3.6 <4\")");
        if (!s) return;
        auto r = semver::Range::parse(*s);
        if (!r) {
          error(value_loc, field_path, r.error(),
                "write a semver range such as \">=3.6 <4\", \"^3.6\", \"~3.6.1\", \"3.x\" or \"*\"");
          return;
        }
        dep.range = *r;
      } else if (key == "as") {
        has_alias = true;
        auto s = string_value(v, field_path, value_loc, "a string (a Jsonnet identifier)");
        if (!s) return;
        if (std::string problem = identifier_problem(*s); !problem.empty()) {
          error(value_loc, field_path, fmt::format("'{}' is not a valid alias: {}", *s, problem),
                fmt::format("the alias is used as deps.<alias> in Jsonnet: letters, digits and '_', not starting "
                            "with a digit; for example '{}'",
                            suggest_identifier(*s)));
          return;
        }
        dep.alias = *s;
      } else if (key == "import") {
        dep.imports = parse_identifier_list(v, value_loc, field_path, "output");
      } else if (key == "when") {
        auto s = string_value(v, field_path, value_loc, "a string (a condition such as search.enabled)");
        if (!s) return;
        auto c = parse_condition(*s);
        if (!c) {
          error(value_loc, field_path, c.error(),
                "write a parameter of config.jsonnet (search.enabled), its negation (\"!search.enabled\") or a "
                "comparison (\"storage.mode == hdfs\", \"storage.mode != local\")");
          return;
        }
        dep.when = std::move(*c);
        dep.when_location = value_loc;
      } else if (key == "release") {
        auto s = string_value(v, field_path, value_loc, "a string (the name of a release of the app)");
        if (!s) return;
        if (std::string problem = dns_label_problem(*s); !problem.empty()) {
          error(value_loc, field_path, fmt::format("'{}' is not a valid release name: {}", *s, problem), dns_hint(*s));
          return;
        }
        dep.release = *s;
        dep.release_location = value_loc;
      } else if (key == "tenant") {
        auto s = string_value(v, field_path, value_loc, "a string (the tenant that exports the release)");
        if (!s) return;
        if (std::string problem = dns_label_problem(*s); !problem.empty()) {
          error(value_loc, field_path, fmt::format("'{}' is not a valid tenant name: {}", *s, problem), dns_hint(*s));
          return;
        }
        dep.tenant = *s;
        dep.tenant_location = value_loc;
      } else {
        error(key_loc, field_path, fmt::format("unknown field '{}'", key), unknown_field_hint(key, kDependencyFields));
      }
    });
    if (!has_name)
      error(item_loc, path + ".name", "missing required field 'name': expected the name of the app depended on",
            "add: name: <app>");
    if (!has_alias && !dep.name.empty()) {
      dep.alias = default_alias(dep.name);
      if (!is_identifier(dep.alias))
        error(item_loc, path + ".as",
              fmt::format("the default alias '{}' (the name with '-' replaced by '_') is not a Jsonnet identifier: {}",
                          dep.alias, identifier_problem(dep.alias)),
              fmt::format("set one explicitly: as: {}", suggest_identifier(dep.alias)));
    }
    // A dependency with errors is still returned when its name is known, so that the
    // duplicate checks see it; the spec as a whole is rejected anyway.
    if (dep.name.empty()) return std::nullopt;
    return dep;
  }

  // Runs after all fields are read, since 'name' may come after 'dependencies'.
  void check_dependencies_against_name() {
    if (!m_out.name_valid) return;
    for (size_t i = 0; i < m_out.spec.dependencies.size(); ++i) {
      const Dependency& d = m_out.spec.dependencies[i];
      if (d.name == m_out.spec.name)
        error(d.location, fmt::format("dependencies[{}].name", i),
              fmt::format("app '{}' depends on itself", d.name), "remove this dependency");
    }
  }

  std::string m_file;
  AppSpecParse m_out;
};

// Reads a whole file; the error is the reason in words.
std::expected<std::string, std::string> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::unexpected(std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::unexpected(std::strerror(errno));
  return ss.str();
}

}  // namespace

AppSpecParse parse_app_yaml_partial(std::string_view text, const std::string& file) {
  return Parser(file).run(text);
}

Result<AppSpec> parse_app_yaml(std::string_view text, const std::string& file) {
  AppSpecParse p = parse_app_yaml_partial(text, file);
  if (!p.errors.empty()) return fail(std::move(p.errors));
  return std::move(p.spec);
}

AppSpecParse load_app_spec_partial(const fs::path& dir) {
  AppSpecParse out;
  std::string shown = dir.string();
  std::error_code ec;
  auto status = fs::status(dir, ec);
  if (ec || !fs::exists(status)) {
    out.errors.push_back({Location{shown}, "",
                          fmt::format("app directory '{}' does not exist", shown),
                          "pass a directory containing app.yaml, config.jsonnet and main.jsonnet"});
    return out;
  }
  if (!fs::is_directory(status)) {
    std::string hint = "pass the directory that contains app.yaml";
    if (dir.filename() == "app.yaml") {
      fs::path parent = dir.parent_path();
      hint = fmt::format("pass its directory instead: {}", parent.empty() ? std::string(".") : parent.string());
    }
    out.errors.push_back({Location{shown}, "",
                          fmt::format("'{}' is a file, expected an app directory containing app.yaml", shown), hint});
    return out;
  }
  fs::path canonical = fs::weakly_canonical(fs::absolute(dir), ec);
  if (ec) canonical = fs::absolute(dir);

  fs::path yaml = dir / "app.yaml";
  std::string yaml_shown = yaml.string();
  if (!fs::exists(yaml, ec)) {
    out.errors.push_back({Location{yaml_shown}, "", fmt::format("'{}' has no app.yaml", shown),
                          "an app directory holds app.yaml (name, version, dependencies), config.jsonnet and "
                          "main.jsonnet"});
  } else if (fs::is_directory(yaml, ec)) {
    out.errors.push_back({Location{yaml_shown}, "", "app.yaml is a directory, expected a file", ""});
  } else if (auto text = read_file(yaml); !text) {
    out.errors.push_back({Location{yaml_shown}, "", fmt::format("cannot read app.yaml: {}", text.error()),
                          "check the file's permissions"});
  } else {
    out = parse_app_yaml_partial(*text, yaml_shown);
  }
  out.spec.dir = canonical;
  out.spec.yaml_file = yaml_shown;

  for (std::string_view name : {"config.jsonnet", "main.jsonnet"}) {
    fs::path p = dir / name;
    std::string what = name == "config.jsonnet" ? "the parameters object" : "the template function";
    if (!fs::exists(p, ec)) {
      out.errors.push_back({Location{p.string()}, "", fmt::format("'{}' has no {}", shown, name),
                            fmt::format("create {} with {}", name, what)});
    } else if (fs::is_directory(p, ec)) {
      out.errors.push_back({Location{p.string()}, "", fmt::format("{} is a directory, expected a file", name), ""});
    } else if (std::ifstream probe(p); !probe) {
      out.errors.push_back({Location{p.string()}, "", fmt::format("cannot read {}: {}", name, std::strerror(errno)),
                            "check the file's permissions"});
    }
  }
  return out;
}

Result<AppSpec> load_app_spec(const fs::path& dir) {
  AppSpecParse p = load_app_spec_partial(dir);
  if (!p.errors.empty()) return fail(std::move(p.errors));
  return std::move(p.spec);
}

}  // namespace gaia::spec
