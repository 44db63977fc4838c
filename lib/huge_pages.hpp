#pragma once
// Large lists that a command fills at once (every instance of a 50,000-instance cluster,
// decoded or copied: 30 MB each) are backed by transparent huge pages where the kernel
// offers them on request (THP "madvise" mode, Debian's default): one page fault per 2 MB
// instead of one per 4 KB. Page faults were 40% of a `gaia submit`'s CPU at 50,000
// instances, nearly all of them first touches of such lists (docs/benchmarks.md, "Round
// thirteen"). Where THP is off or "always", the advice changes nothing.

#include <cstddef>
#include <vector>

namespace gaia {

// Advises huge pages for the whole 2 MB pages inside [data, data + bytes), before they
// are first touched; smaller ranges are left alone.
void advise_huge_pages(const void* data, std::size_t bytes);

// The same for the room a list reserved.
template <class T>
void advise_huge_pages(const std::vector<T>& list) {
  advise_huge_pages(list.data(), list.capacity() * sizeof(T));
}

}  // namespace gaia
