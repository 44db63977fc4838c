// lib/huge_pages.hpp: the advice reaches the kernel for the whole 2 MB pages of a large
// list's room, and nothing else is touched.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lib/huge_pages.hpp"

namespace {

// The kernel's THP mode, the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled.
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto open = all.find('['), close = all.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : all.substr(open + 1, close - open - 1);
}

// Whether the mapping holding `address` may get huge pages (/proc/self/smaps,
// THPeligible), or -1 when smaps does not say.
int thp_eligible(const void* address) {
  const auto at = reinterpret_cast<std::uintptr_t>(address);
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.starts_with("THPeligible:")) return std::stoi(line.substr(12));
  }
  return -1;
}

}  // namespace

TEST_CASE("huge pages: the whole 2 MB pages of a large list's room are advised before it is filled",
          "[huge_pages]") {
  std::vector<char> list;
  list.reserve(std::size_t{16} << 20);
  const char* middle = list.data() + (std::size_t{8} << 20);
  const std::string mode = thp_mode();
  const int before = thp_eligible(middle);
  gaia::advise_huge_pages(list);
  list.resize(list.capacity(), 'x');  // Filled as a decode fills its list: it works as ever.
  CHECK(list[std::size_t{12} << 20] == 'x');
  if (mode == "madvise") {
    CHECK(before == 0);
    CHECK(thp_eligible(middle) == 1);
  } else if (mode == "always") {
    CHECK(thp_eligible(middle) == 1);
  } else {
    WARN(fmt::format("transparent huge pages are '{}' here: only that the advice does no harm is checked", mode));
  }
}

TEST_CASE("huge pages: small or empty ranges are left alone", "[huge_pages]") {
  gaia::advise_huge_pages(nullptr, 0);
  gaia::advise_huge_pages(nullptr, std::size_t{64} << 20);
  std::vector<int> small(1000, 7);
  gaia::advise_huge_pages(small);
  CHECK(small[999] == 7);
  std::vector<int> none;
  gaia::advise_huge_pages(none);
  CHECK(none.empty());
}
