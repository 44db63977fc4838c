#pragma once
// Golden-file comparison for tests: the output must match tests/golden/<relpath>
// byte-for-byte. With GAIA_UPDATE_GOLDEN=1 in the environment the file is rewritten
// instead, so a deliberate change of output is one command and a reviewable diff.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gaia::test {

inline std::filesystem::path golden_dir() { return std::filesystem::path(GAIA_SOURCE_DIR) / "tests" / "golden"; }

inline std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares `actual` with the golden file `relpath` (relative to tests/golden/).
inline void check_golden(const std::string& relpath, const std::string& actual) {
  std::filesystem::path path = golden_dir() / relpath;
  const char* update = std::getenv("GAIA_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    SUCCEED("updated " << path.string());
    return;
  }
  INFO("golden file " << path.string() << " (set GAIA_UPDATE_GOLDEN=1 to rewrite it)");
  REQUIRE(std::filesystem::exists(path));
  std::string expected = read_text_file(path);
  CHECK(actual == expected);
}

}  // namespace gaia::test
