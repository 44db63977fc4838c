#include "render/overrides.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <sstream>

#include "lib/utf8.hpp"
#include "spec/suggest.hpp"
#include "spec/yaml_load.hpp"

namespace gaia::render {
namespace {

using nlohmann::json;

// The YAML 1.2 core schema's number forms (plus JSON's), matched on plain (unquoted)
// scalars only: integers [-+]?[0-9]+ and floats [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)
// ([eE][-+]?[0-9]+)?. Matched by hand: std::regex recurses per character and overflows
// the stack on a long value.
enum class NumberForm { None, Integer, Float };
NumberForm number_form(std::string_view t) {
  auto digits = [&](size_t& i) {
    size_t n = 0;
    while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i, ++n;
    return n;
  };
  size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  bool is_float = false;
  size_t whole = digits(i), fraction = 0;
  if (i < t.size() && t[i] == '.') {
    is_float = true;
    ++i;
    fraction = digits(i);
  }
  if (whole == 0 && fraction == 0) return NumberForm::None;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    is_float = true;
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    if (digits(i) == 0) return NumberForm::None;
  }
  if (i != t.size()) return NumberForm::None;
  return is_float ? NumberForm::Float : NumberForm::Integer;
}

// nullopt when `text` is not a number; otherwise the number, or why JSON cannot hold it.
// Integers that do not fit int64 become doubles.
std::optional<std::expected<json, std::string>> as_number(const std::string& text) {
  const NumberForm form = number_form(text);
  if (form == NumberForm::None) return std::nullopt;
  const char* first = text.data() + (text[0] == '+' ? 1 : 0);
  const char* last = text.data() + text.size();
  if (form == NumberForm::Integer) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(first, last, v);
    if (ec == std::errc() && p == last) return json(v);
  }
  double d = 0;
  auto [p, ec] = std::from_chars(first, last, d);
  if (ec == std::errc() && p == last) return json(d);
  return std::unexpected(fmt::format("'{}' is beyond the range of a number (about 1e-308 to 1e308)", text));
}

Diagnostic yaml_error(const std::string& file, const YAML::Mark& mark, std::string message, std::string hint = {}) {
  Location loc{file, mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0};
  return Diagnostic{loc, "", std::move(message), std::move(hint)};
}

void convert(const YAML::Node& node, const std::string& file, const std::string& path, json& out,
             Diagnostics& errors) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      out = nullptr;
      return;
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      // yaml-cpp tags quoted scalars "!" and plain ones "?": only plain ones are typed.
      if (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str") {
        out = text;
        return;
      }
      if (text == "true" || text == "True" || text == "TRUE") {
        out = true;
      } else if (text == "false" || text == "False" || text == "FALSE") {
        out = false;
      } else if (text == "null" || text == "Null" || text == "NULL" || text == "~") {
        out = nullptr;
      } else if (auto n = as_number(text)) {
        if (*n) {
          out = **n;
        } else {
          errors.push_back(yaml_error(file, node.Mark(), fmt::format("{}: {}", path, n->error()),
                                      "use a smaller number, or quote it to make it a string"));
          out = nullptr;
        }
      } else if (text == ".inf" || text == "-.inf" || text == ".nan" || text == ".NaN" || text == ".Inf") {
        errors.push_back(yaml_error(file, node.Mark(), fmt::format("{}: '{}' has no JSON equivalent", path, text),
                                    "use a finite number, or quote it to make it a string"));
        out = nullptr;
      } else {
        out = text;
      }
      return;
    }
    case YAML::NodeType::Sequence: {
      out = json::array();
      size_t i = 0;
      for (const auto& item : node) {
        json v;
        convert(item, file, fmt::format("{}[{}]", path, i++), v, errors);
        out.push_back(std::move(v));
      }
      return;
    }
    case YAML::NodeType::Map: {
      out = json::object();
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          errors.push_back(yaml_error(file, kv.first.Mark(), fmt::format("{}: keys must be scalars", path)));
          continue;
        }
        const std::string key = kv.first.Scalar();
        json v;
        convert(kv.second, file, path.empty() ? key : path + "." + key, v, errors);
        out[key] = std::move(v);
      }
      return;
    }
  }
}

}  // namespace

Result<json> parse_override_value(std::string_view text_view, const std::string& key) {
  const std::string text{text_view};
  // Values are stored as JSON, which holds only UTF-8 text; a stray byte must be refused
  // here, where the user can see it, not fail the write of the record later.
  if (std::string problem = utf8_problem(text); !problem.empty()) {
    return fail(Diagnostic{{"--set"}, key, fmt::format("the value of '{}' is {}", key, problem),
                           "check the terminal's or the script's encoding; values must be UTF-8"});
  }
  if (!text.empty() && (text[0] == '{' || text[0] == '[' || text[0] == '"')) {
    try {
      return json::parse(text);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for 1e400.
      return fail(Diagnostic{{"--set"}, key, fmt::format("value {} is not valid JSON: {}", text, e.what()),
                             "quote JSON objects for the shell: --set x='{\"a\": 1}'"});
    }
  }
  if (text == "true") return json(true);
  if (text == "false") return json(false);
  if (text == "null") return json(nullptr);
  if (auto n = as_number(text)) {
    if (*n) return **n;
    return fail(Diagnostic{{"--set"}, key, n->error(), "use a smaller number, or quote it to make it a string: '\"...\"'"});
  }
  return json(text);
}

Result<json> parse_set(std::string_view arg) {
  auto eq = arg.find('=');
  if (eq == std::string_view::npos) {
    return fail(Diagnostic{{"--set"}, "", fmt::format("'{}' is not of the form key=value", arg),
                           "write --set hdfs.replication=2"});
  }
  const std::string key{arg.substr(0, eq)};
  if (std::string problem = utf8_problem(key); !problem.empty()) {
    return fail(Diagnostic{{"--set"}, "", fmt::format("the key of --set is {}", problem),
                           "keys are dot-separated parameter names, e.g. hdfs.replication"});
  }
  std::vector<std::string> segments;
  size_t start = 0;
  while (true) {
    auto dot = key.find('.', start);
    segments.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const auto& s : segments) {
    if (s.empty()) {
      return fail(Diagnostic{{"--set"}, key, fmt::format("key '{}' has an empty segment", key),
                             "keys are dot-separated parameter names, e.g. hdfs.replication"});
    }
  }
  auto value = parse_override_value(arg.substr(eq + 1), key);
  if (!value) return std::unexpected(value.error());
  json out = std::move(*value);
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) out = json{{*it, std::move(out)}};
  return out;
}

Result<json> yaml_to_json(std::string_view text, const std::string& file) {
  YAML::Node root;
  try {
    std::vector<YAML::Node> docs = spec::load_yaml_documents(text);
    // Generated YAML often ends with a separator ("a: 1\n---\n"): an empty last document
    // holds nothing to lose.
    while (docs.size() > 1 && docs.back().IsNull()) docs.pop_back();
    if (docs.size() > 1) {
      YAML::Mark m = docs[1].Mark();
      return fail(yaml_error(file, m, fmt::format("the file holds {} YAML documents: expected one", docs.size()),
                             "remove the '---' separators and keep a single mapping"));
    }
    if (!docs.empty()) root = docs[0];
  } catch (const YAML::ParserException& e) {
    return fail(yaml_error(file, e.mark, e.msg, "values files are YAML or JSON mappings"));
  }
  Diagnostics errors;
  json out;
  convert(root, file, "", out, errors);
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

Result<json> load_values_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return fail(Diagnostic{{file.string()}, "", "cannot read values file", "check the path given to --values"});
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto v = yaml_to_json(ss.str(), file.string());
  if (!v) return v;
  if (v->is_null()) return json::object();  // An empty file overrides nothing.
  if (!v->is_object()) {
    return fail(Diagnostic{{file.string(), 1, 1}, "", "a values file must be a mapping of parameter names",
                           "write e.g. `hdfs: {replication: 2}`"});
  }
  return v;
}

void deep_merge(json& into, const json& from) {
  if (!into.is_object() || !from.is_object()) {
    into = from;
    return;
  }
  for (const auto& [k, v] : from.items()) {
    auto it = into.find(k);
    if (it == into.end()) {
      into[k] = v;
    } else {
      deep_merge(*it, v);
    }
  }
}

Result<json> build_overrides(const std::vector<std::filesystem::path>& values_files,
                             const std::vector<std::string>& sets) {
  json out = json::object();
  Diagnostics errors;
  for (const auto& f : values_files) {
    auto v = load_values_file(f);
    if (!v) {
      errors.insert(errors.end(), v.error().begin(), v.error().end());
      continue;
    }
    deep_merge(out, *v);
  }
  for (const auto& s : sets) {
    auto v = parse_set(s);
    if (!v) {
      errors.insert(errors.end(), v.error().begin(), v.error().end());
      continue;
    }
    deep_merge(out, *v);
  }
  if (!errors.empty()) return fail(std::move(errors));
  return out;
}

Result<json> apply_overrides(const json& config, const json& overrides, const std::string& config_file) {
  if (overrides.is_null() || (overrides.is_object() && overrides.empty())) return config;
  if (!overrides.is_object()) {
    return fail(Diagnostic{{config_file}, "", "overrides must be an object of parameter names", ""});
  }
  std::vector<std::string> known;
  for (const auto& [k, _] : config.items()) known.push_back(k);
  Diagnostics errors;
  for (const auto& [k, _] : overrides.items()) {
    if (config.contains(k)) continue;
    std::string hint = known.empty() ? std::string("config.jsonnet defines no parameters")
                                     : fmt::format("known parameters: {}", spec::join_limited(known));
    if (auto s = spec::did_you_mean(k, known)) hint = fmt::format("did you mean '{}'? {}", *s, hint);
    errors.push_back(Diagnostic{{config_file}, k,
                                fmt::format("--set/--values override '{}' is not a parameter of config.jsonnet", k),
                                hint + "; add it to config.jsonnet to make it overridable"});
  }
  if (!errors.empty()) return fail(std::move(errors));
  json out = config;
  deep_merge(out, overrides);
  return out;
}

}  // namespace gaia::render
