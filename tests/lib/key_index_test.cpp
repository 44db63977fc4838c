// The flat index from keys to positions (lib/key_index.hpp) that the controllers use to
// match instances with observed copies: it must find exactly what a plain search finds,
// every position of a repeated key in order, and nothing for a key that is absent.
#include <catch2/catch.hpp>
#include <rapidcheck.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "lib/key_index.hpp"

using namespace gaia;

namespace {

std::vector<int> positions(const KeyIndex& index, std::string_view key) {
  std::vector<int> out;
  for (int k = index.first(key); k >= 0; k = index.next(k)) out.push_back(k);
  return out;
}

std::vector<std::string_view> views(const std::vector<std::string>& keys) {
  return std::vector<std::string_view>(keys.begin(), keys.end());
}

}  // namespace

TEST_CASE("key index: repeated keys chain their positions in order, absent keys find nothing", "[key_index]") {
  std::vector<std::string> keys = {"0.fe.web.t0", "1.fe.web.t0", "0.fe.web.t0", "", "0.fe.web.t0", "1.fe.web.t0"};
  KeyIndex index(views(keys));
  CHECK(index.size() == 6);
  CHECK(positions(index, "0.fe.web.t0") == std::vector<int>{0, 2, 4});
  CHECK(positions(index, "1.fe.web.t0") == std::vector<int>{1, 5});
  CHECK(positions(index, "") == std::vector<int>{3});
  CHECK(index.first("2.fe.web.t0") == -1);
  CHECK(index.first("0.fe.web.t") == -1);   // A prefix is another key.
  CHECK(index.first("0.fe.web.t00") == -1);
}

TEST_CASE("key index: an empty index finds nothing", "[key_index]") {
  KeyIndex none;
  CHECK(none.first("x") == -1);
  KeyIndex empty(std::vector<std::string_view>{});
  CHECK(empty.first("") == -1);
  CHECK(empty.size() == 0);
}

TEST_CASE("key index: 100,000 keys, each found at its own position", "[key_index]") {
  std::vector<std::string> keys;
  for (int k = 0; k < 100000; ++k) keys.push_back(fmt::format("{}.main.app-{}.t{}", k % 500, k / 500, k % 7));
  KeyIndex index(views(keys));
  int wrong = 0;
  for (int k = 0; k < 100000; ++k)
    if (positions(index, keys[static_cast<size_t>(k)]) != std::vector<int>{k}) ++wrong;
  CHECK(wrong == 0);
  CHECK(index.first("500.main.app-0.t0") == -1);
}

TEST_CASE("key index: finds what a linear search finds (property)", "[key_index][property]") {
  bool ok = rc::check("the index agrees with a linear search", [] {
    // Few distinct short keys, so repeats and near misses are common.
    auto keys = *rc::gen::container<std::vector<std::string>>(
        rc::gen::container<std::string>(rc::gen::element('a', 'b', '.', '0')));
    auto probes = *rc::gen::container<std::vector<std::string>>(
        rc::gen::container<std::string>(rc::gen::element('a', 'b', '.', '0')));
    KeyIndex index(views(keys));
    probes.insert(probes.end(), keys.begin(), keys.end());
    for (const auto& p : probes) {
      std::vector<int> expected;
      for (size_t k = 0; k < keys.size(); ++k)
        if (keys[k] == p) expected.push_back(static_cast<int>(k));
      RC_ASSERT(positions(index, p) == expected);
    }
  });
  CHECK(ok);
}
