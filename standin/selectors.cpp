#include "standin/selectors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace gaia::standin::detail {

namespace {

std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

bool is_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
}

ApiError unparsable(std::string_view text, const std::string& why) {
  return bad_request(fmt::format("unable to parse requirement: {}: \"{}\"", why, text));
}

// A small cursor over the selector text.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : m_text(text) {}
  void skip_spaces() {
    while (m_pos < m_text.size() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }
  bool done() {
    skip_spaces();
    return m_pos >= m_text.size();
  }
  char peek() {
    skip_spaces();
    return m_pos < m_text.size() ? m_text[m_pos] : '\0';
  }
  bool consume(std::string_view token) {
    skip_spaces();
    if (m_text.substr(m_pos).starts_with(token)) {
      m_pos += token.size();
      return true;
    }
    return false;
  }
  // A keyword ("in", "notin") followed by a space or '(' so that a key "index" is not one.
  bool consume_word(std::string_view word) {
    skip_spaces();
    std::string_view rest = m_text.substr(m_pos);
    if (!rest.starts_with(word)) return false;
    if (rest.size() > word.size() && is_key_char(rest[word.size()])) return false;
    m_pos += word.size();
    return true;
  }
  std::string key() {
    skip_spaces();
    size_t start = m_pos;
    while (m_pos < m_text.size() && is_key_char(m_text[m_pos])) ++m_pos;
    return std::string(m_text.substr(start, m_pos - start));
  }
  // A value after '=': everything up to the next ',' (values cannot hold one).
  std::string value_until_comma() {
    size_t start = m_pos;
    while (m_pos < m_text.size() && m_text[m_pos] != ',') ++m_pos;
    return trim(m_text.substr(start, m_pos - start));
  }
  std::string value_until(std::string_view stops) {
    skip_spaces();
    size_t start = m_pos;
    while (m_pos < m_text.size() && stops.find(m_text[m_pos]) == std::string_view::npos) ++m_pos;
    return trim(m_text.substr(start, m_pos - start));
  }

 private:
  std::string_view m_text;
  size_t m_pos = 0;
};

}  // namespace

LabelSelector LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  Scanner in(text);
  if (in.done()) return selector;
  while (true) {
    LabelRequirement req;
    if (in.consume("!")) {
      req.key = in.key();
      req.op = LabelRequirement::Op::NotExists;
    } else {
      req.key = in.key();
      if (in.consume("==") || in.consume("=")) {
        req.op = LabelRequirement::Op::Equals;
        req.values.push_back(in.value_until_comma());
      } else if (in.consume("!=")) {
        req.op = LabelRequirement::Op::NotEquals;
        req.values.push_back(in.value_until_comma());
      } else if (bool notin = in.consume_word("notin"); notin || in.consume_word("in")) {
        req.op = notin ? LabelRequirement::Op::NotIn : LabelRequirement::Op::In;
        if (!in.consume("(")) throw unparsable(text, "expected '(' after " + std::string(notin ? "notin" : "in"));
        while (true) {
          req.values.push_back(in.value_until(",)"));
          if (in.consume(")")) break;
          if (!in.consume(",")) throw unparsable(text, "expected ',' or ')' in a set of values");
        }
      } else {
        req.op = LabelRequirement::Op::Exists;
      }
    }
    if (req.key.empty()) throw unparsable(text, "a label key is missing");
    selector.m_requirements.push_back(std::move(req));
    if (in.done()) break;
    if (!in.consume(",")) throw unparsable(text, "expected ','");
  }
  return selector;
}

bool LabelSelector::matches(const nlohmann::json& labels) const {
  for (const LabelRequirement& req : m_requirements) {
    bool has = labels.is_object() && labels.contains(req.key) && labels[req.key].is_string();
    std::string value = has ? labels[req.key].get<std::string>() : std::string();
    bool listed = std::find(req.values.begin(), req.values.end(), value) != req.values.end();
    bool ok = false;
    switch (req.op) {
      case LabelRequirement::Op::Equals: ok = has && value == req.values.front(); break;
      case LabelRequirement::Op::NotEquals: ok = !has || value != req.values.front(); break;
      case LabelRequirement::Op::In: ok = has && listed; break;
      case LabelRequirement::Op::NotIn: ok = !has || !listed; break;
      case LabelRequirement::Op::Exists: ok = has; break;
      case LabelRequirement::Op::NotExists: ok = !has; break;
    }
    if (!ok) return false;
  }
  return true;
}

namespace {

const std::set<std::string>& supported_fields(const ResourceInfo& resource) {
  static const std::set<std::string> common = {"metadata.name", "metadata.namespace"};
  static const std::set<std::string> pods = {"metadata.name",      "metadata.namespace",      "spec.nodeName",
                                             "spec.schedulerName", "spec.restartPolicy",      "spec.serviceAccountName",
                                             "status.phase",       "status.nominatedNodeName", "status.podIP"};
  static const std::set<std::string> nodes = {"metadata.name", "spec.unschedulable"};
  static const std::set<std::string> namespaces = {"metadata.name", "status.phase"};
  static const std::set<std::string> events = {"metadata.name",
                                               "metadata.namespace",
                                               "involvedObject.kind",
                                               "involvedObject.name",
                                               "involvedObject.namespace",
                                               "involvedObject.uid",
                                               "reason",
                                               "type",
                                               "regarding.kind",
                                               "regarding.name",
                                               "regarding.namespace",
                                               "regarding.uid"};
  if (resource.plural == "pods") return pods;
  if (resource.plural == "nodes") return nodes;
  if (resource.plural == "namespaces") return namespaces;
  if (resource.plural == "events") return events;
  return common;
}

std::string field_value(const nlohmann::json& object, const std::string& field) {
  const nlohmann::json* at = &object;
  size_t start = 0;
  while (true) {
    size_t dot = field.find('.', start);
    std::string part = field.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!at->is_object() || !at->contains(part)) {
      // An absent boolean reads as its zero value, as the API's field labels do.
      return field == "spec.unschedulable" ? "false" : "";
    }
    at = &(*at)[part];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean()) return at->get<bool>() ? "true" : "false";
  if (at->is_number()) return at->dump();
  return "";
}

}  // namespace

FieldSelector FieldSelector::parse(std::string_view text, const ResourceInfo& resource) {
  FieldSelector selector;
  std::string s(text);
  size_t start = 0;
  if (trim(s).empty()) return selector;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string term = trim(std::string_view(s).substr(start, comma == std::string::npos ? comma : comma - start));
    FieldRequirement req;
    size_t op = term.find("!=");
    size_t op_len = 2;
    if (op != std::string::npos) {
      req.equal = false;
    } else if ((op = term.find("==")) != std::string::npos) {
      op_len = 2;
    } else if ((op = term.find('=')) != std::string::npos) {
      op_len = 1;
    } else {
      throw bad_request(fmt::format("invalid field selector: \"{}\": expected an operator", text));
    }
    req.field = trim(std::string_view(term).substr(0, op));
    req.value = trim(std::string_view(term).substr(op + op_len));
    if (!supported_fields(resource).contains(req.field))
      throw bad_request(fmt::format("field label not supported: {}", req.field));
    selector.m_requirements.push_back(std::move(req));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return selector;
}

bool FieldSelector::matches(const nlohmann::json& object) const {
  for (const FieldRequirement& req : m_requirements)
    if ((field_value(object, req.field) == req.value) != req.equal) return false;
  return true;
}

bool ObjectFilter::matches(const nlohmann::json& object) const {
  static const nlohmann::json no_labels = nullptr;
  const nlohmann::json& meta = object.contains("metadata") ? object["metadata"] : no_labels;
  const nlohmann::json& labels = meta.is_object() && meta.contains("labels") ? meta["labels"] : no_labels;
  return this->labels.matches(labels) && fields.matches(object);
}

ObjectFilter parse_filter(const ApiRequest& request) {
  ObjectFilter filter;
  filter.labels = LabelSelector::parse(request.param("labelSelector"));
  filter.fields = FieldSelector::parse(request.param("fieldSelector"), *request.resource);
  return filter;
}

bool selector_selects(const nlohmann::json& selector, const nlohmann::json& labels) {
  if (!selector.is_object()) return false;
  auto label = [&](const std::string& key) -> const nlohmann::json* {
    if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) return nullptr;
    return &labels[key];
  };
  if (selector.contains("matchLabels") && selector["matchLabels"].is_object()) {
    for (const auto& [key, value] : selector["matchLabels"].items()) {
      const nlohmann::json* have = label(key);
      if (!have || *have != value) return false;
    }
  }
  if (selector.contains("matchExpressions") && selector["matchExpressions"].is_array()) {
    for (const nlohmann::json& expr : selector["matchExpressions"]) {
      std::string key = expr.value("key", "");
      std::string op = expr.value("operator", "");
      const nlohmann::json* have = label(key);
      bool listed = false;
      if (have && expr.contains("values") && expr["values"].is_array())
        for (const nlohmann::json& v : expr["values"]) listed = listed || v == *have;
      bool ok = op == "In"             ? have && listed
                : op == "NotIn"        ? !have || !listed
                : op == "Exists"       ? have != nullptr
                : op == "DoesNotExist" ? have == nullptr
                                       : false;
      if (!ok) return false;
    }
  }
  return true;
}

}  // namespace gaia::standin::detail
