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

#include "lib/cluster.hpp"

namespace gaia {

// `pool` shares equal labels between the instances decoded through it (a load's).
std::optional<Instance> scan_instance(std::string_view text, LabelPool* pool = nullptr);

class JsonScanner;
// Resources as NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT reads them: missing
// fields keep their defaults; another key (which it ignores) is left to the slow way.
bool scan_resources(JsonScanner& s, Resources& r);

}  // namespace gaia
