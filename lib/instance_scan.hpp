#pragma once
// A fast path for decoding instance records (lib/codec.hpp's from_json), the bulk of
// every full load of the state: 50,000 of them are 27 MB of JSON, and building
// nlohmann's document of each one first (a tree node and strings per field) was a fifth
// of a `gaia submit` on such a cluster (docs/benchmarks.md, "submit-cli-50k").
//
// scan_instance reads the record's text directly into an Instance. It follows only the
// shape gaia itself writes: one object of the keys to_json writes, strings of printable
// ASCII without escapes, integers within their field's range, an empty volume list. For
// anything else (a key it does not know, an escape, a float, a null, a mapping it cannot
// check, a malformed record) it returns nothing and the caller decodes the record with
// nlohmann as before, so the result, and every error a corrupt record gives, is the
// same as from_json's (tests/lib/instance_scan_test.cpp compares the two on random and
// mutated records).

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/cluster.hpp"

namespace gaia {

// `pool` shares equal labels between the instances decoded through it (a load's).
std::optional<Instance> scan_instance(std::string_view text, LabelPool* pool = nullptr);

// A node record's name and labels, what the config center reads of every node
// (lib/config_center.cpp): 5,000 nodes took 25 ms through nlohmann on the main thread of
// every command that renders. The views point into `text`. Nothing when the record is
// of another shape than gaia writes (an escape, a label that is not a string, labels
// out of key order or repeated, a malformed value anywhere): the caller reads it with
// nlohmann then, with the same result or the same error. `name` is empty when the
// record has none.
struct NodeLabelsView {
  std::optional<std::string_view> name;
  std::vector<std::pair<std::string_view, std::string_view>> labels;
};
std::optional<NodeLabelsView> scan_node_labels(std::string_view text);

class JsonScanner;
// Resources as NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT reads them: missing
// fields keep their defaults; another key (which it ignores) is left to the slow way.
bool scan_resources(JsonScanner& s, Resources& r);

}  // namespace gaia
