#include "spec/yaml_load.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>

#include <limits>
#include <sstream>
#include <string>

#include "lib/utf8.hpp"

namespace gaia::spec {
namespace {

// The 0-based line and column of byte `offset`, as yaml-cpp's marks count them.
YAML::Mark mark_at(std::string_view text, size_t offset) {
  YAML::Mark m;
  m.pos = static_cast<int>(offset);
  m.line = 0;
  m.column = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++m.line;
      m.column = 0;
    } else {
      ++m.column;
    }
  }
  return m;
}

// Records where each document starts; the events themselves are not needed.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { m_last = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  const YAML::Mark& last() const { return m_last; }

 private:
  YAML::Mark m_last = YAML::Mark::null_mark();
};

// Every value a document holds, aliases followed, at most this many: an alias may refer
// to its own anchor ("&a [*a]" is a list holding itself, and recursing into it overflowed
// the stack), or anchors may nest so that a few lines expand to billions of values.
constexpr size_t kMaxValues = 1'000'000;

// Walks `root` as the rest of gaia will (aliases expanded) and checks what yaml-cpp does
// not: that the expansion is finite and bounded, and that every scalar is UTF-8. yaml-cpp
// decodes the escapes \N and \_ of double-quoted scalars to the single bytes 0x85 and
// 0xA0 instead of their UTF-8 forms.
void check_values(const YAML::Node& root) {
  std::vector<YAML::Node> stack{root};
  size_t visited = 0;
  while (!stack.empty()) {
    YAML::Node n = stack.back();
    stack.pop_back();
    if (++visited > kMaxValues) {
      throw YAML::ParserException(
          n.Mark(), fmt::format("the file holds more than {} values with its aliases expanded (an alias inside "
                                "its own anchor, or anchors nested to multiply); write the values out",
                                kMaxValues));
    }
    if (n.IsScalar()) {
      if (size_t bad = invalid_utf8_offset(n.Scalar()); bad != std::string_view::npos) {
        throw YAML::ParserException(
            n.Mark(), fmt::format("the value decodes to a byte that is not UTF-8 (0x{:02X}); yaml-cpp reads the "
                                  "escapes \\N and \\_ that way: write \\x85 or \\xA0 instead",
                                  static_cast<unsigned char>(n.Scalar()[bad])));
      }
    } else if (n.IsSequence()) {
      for (const YAML::Node& item : n) stack.push_back(item);
    } else if (n.IsMap()) {
      for (const auto& kv : n) {
        stack.push_back(kv.first);
        stack.push_back(kv.second);
      }
    }
  }
}

}  // namespace

std::vector<YAML::Node> load_yaml_documents(std::string_view text) {
  if (size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    throw YAML::ParserException(
        mark_at(text, bad),
        fmt::format("the text is not UTF-8 (byte 0x{:02X}); save the file as UTF-8",
                    static_cast<unsigned char>(text[bad])));
  }
  // YAML allows no C0 control characters but tab and line breaks; yaml-cpp does not
  // refuse them, and turns a NUL into bytes that are not UTF-8.
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) {
      throw YAML::ParserException(
          mark_at(text, i), fmt::format("the text holds the control character 0x{:02X}; YAML allows tabs and line "
                                        "breaks only",
                                        c));
    }
  }
  // A first pass over the events only, to see that every document moves the parser
  // forward; LoadAll would loop forever where one does not.
  const std::string owned(text);
  {
    std::istringstream in(owned);
    YAML::Parser parser(in);
    DocumentStarts starts;
    int previous = std::numeric_limits<int>::min();
    while (parser.HandleNextDocument(starts)) {
      const YAML::Mark& m = starts.last();
      if (m.pos == previous) {
        const char c = m.pos >= 0 && static_cast<size_t>(m.pos) < text.size() ? text[m.pos] : ' ';
        throw YAML::ParserException(m, fmt::format("unexpected '{}' where a value or a new document should start", c));
      }
      previous = m.pos;
    }
  }
  std::vector<YAML::Node> docs = YAML::LoadAll(owned);
  for (const YAML::Node& d : docs) check_values(d);
  return docs;
}

}  // namespace gaia::spec
