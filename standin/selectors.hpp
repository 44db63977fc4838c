#pragma once
// Label and field selectors of list and watch requests (?labelSelector=, ?fieldSelector=),
// and the structured label selector of objects (a disruption budget's spec.selector),
// with Kubernetes' semantics: `key!=v` and `key notin (...)` match objects without the
// label; an absent field compares as "".

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "standin/server_impl.hpp"

namespace gaia::standin::detail {

struct LabelRequirement {
  enum class Op { Equals, NotEquals, In, NotIn, Exists, NotExists };
  std::string key;
  Op op = Op::Exists;
  std::vector<std::string> values;
};

class LabelSelector {
 public:
  // "a=b,c!=d,e in (x,y),f notin (z),g,!h"; throws a 400 ApiError when malformed.
  static LabelSelector parse(std::string_view text);
  bool matches(const nlohmann::json& labels) const;  // metadata.labels (or null).
  bool empty() const { return m_requirements.empty(); }

 private:
  std::vector<LabelRequirement> m_requirements;
};

struct FieldRequirement {
  std::string field;
  bool equal = true;
  std::string value;
};

class FieldSelector {
 public:
  // "spec.nodeName=n1,status.phase!=Failed"; the fields each resource supports only
  // (400 "field label not supported" otherwise).
  static FieldSelector parse(std::string_view text, const ResourceInfo& resource);
  bool matches(const nlohmann::json& object) const;
  void add(FieldRequirement requirement) { m_requirements.push_back(std::move(requirement)); }

 private:
  std::vector<FieldRequirement> m_requirements;
};

// Both selectors of a request.
struct ObjectFilter {
  LabelSelector labels;
  FieldSelector fields;
  bool matches(const nlohmann::json& object) const;
};
ObjectFilter parse_filter(const ApiRequest& request);

// A metav1.LabelSelector (matchLabels, matchExpressions with In, NotIn, Exists,
// DoesNotExist). An empty selector selects everything, a null one nothing (policy/v1).
bool selector_selects(const nlohmann::json& selector, const nlohmann::json& labels);

}  // namespace gaia::standin::detail
