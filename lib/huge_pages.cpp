#include "lib/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdint>

namespace gaia {

void advise_huge_pages(const void* data, std::size_t bytes) {
  constexpr std::uintptr_t k_huge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + k_huge - 1) & ~(k_huge - 1);
  const std::uintptr_t last = (begin + bytes) & ~(k_huge - 1);
  if (data == nullptr || last <= first) return;
  // Advice only: a kernel without THP, or with it off, refuses or ignores it, and the
  // pages are the usual ones.
  (void)::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace gaia
