#pragma once
// Loading the YAML files users write (app.yaml, cluster files, values files) into
// yaml-cpp nodes, guarding against two things yaml-cpp 0.7 does not:
//  - text that is not UTF-8 or holds control characters (YAML streams are printable
//    Unicode; what is read is later stored as JSON, which cannot hold the bytes), and
//  - inputs on which YAML::LoadAll never returns: a stray ',' at the top level ("a, b"
//    with a leading comma, or ", " alone) makes its parser hand out empty documents
//    forever without consuming the token, filling memory;
//  - aliases that refer to their own anchor or multiply ("billion laughs"), which the
//    code walking the nodes would follow forever; and scalars it decodes to bytes that
//    are not UTF-8 (the escapes \N and \_).
// All are reported as YAML::ParserException with the position, so callers handle them
// like any other syntax error. UTF-16 and UTF-32 files (which yaml-cpp would decode from
// their byte order mark) are refused as not UTF-8: gaia reads UTF-8 only.

#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace gaia::spec {

// Every document of `text` (none for empty text). Throws YAML::ParserException (a
// syntax error, non-UTF-8 text, a token the parser cannot get past, runaway aliases).
std::vector<YAML::Node> load_yaml_documents(std::string_view text);

}  // namespace gaia::spec
