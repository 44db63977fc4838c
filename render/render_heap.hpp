#pragma once
// The allocator of a render's child process.
//
// libjsonnet 0.18 parses, desugars and analyses its standard library twice for every
// evaluation, building and freeing hundreds of thousands of small AST nodes; with
// glibc's malloc, allocating and freeing them is about 40% of an evaluation of `{}`.
// mimalloc (Debian's libmimalloc2.0) does the same work in about half the time. It is
// used only inside the sandbox's child (render/sandbox.hpp), which evaluates one
// template and exits: the rest of gaia keeps glibc's malloc, which measured better for
// its own work (a long-lived process that refreshes and frees large lists).
//
// How: gaia replaces the global operator new and delete (standard C++: a program may
// define them). They call malloc and free, as libstdc++'s do, until a render's child
// switches to the render heap; from then on new memory comes from mimalloc, and a
// delete frees with mimalloc what mimalloc gave and with free what the parent had
// allocated before the fork. mimalloc is opened with dlopen and its symbols kept local,
// so its malloc never replaces glibc's for the process. Without the library (or in a
// sanitizer build, with GAIA_RENDER_MALLOC=glibc, or under a memory limit too small for
// it) renders use glibc's malloc, as before, only slower.

#include <cstddef>
#include <optional>
#include <string>

namespace gaia::render {

struct RenderHeapInfo {
  bool available = false;  // mimalloc was opened; a render's child can use it.
  std::string version;     // "mimalloc 2.0.9" when available.
  std::string why_not;     // Otherwise why renders use glibc's malloc.
};

// Opens mimalloc once per process (thread-safe; later calls return the first answer),
// unless the environment says GAIA_RENDER_MALLOC=glibc. mimalloc's own MIMALLOC_*
// variables apply to it. Call in the parent before forking a render's child: the child
// only uses what this opened.
const RenderHeapInfo& load_render_heap();

// What mimalloc needs of a child's address-space limit (RLIMIT_AS) beyond what the child
// already maps (`used`): it reserves its memory in 32 MiB segments and keeps them
// (measured: a template that renders with glibc under a limit 144 MiB above the process
// needed 208 MiB with mimalloc).
inline constexpr std::size_t k_address_space_headroom = std::size_t{256} << 20;

// Why a child under `limit` that maps `used` bytes should stay on glibc, or nothing when
// mimalloc has room. Pure: enter_render_heap reads the limit and the use.
std::optional<std::string> address_space_refusal(std::size_t limit, std::size_t used);

// In a render's child, right after fork (and after its address-space limit is set): C++
// allocations from here on come from mimalloc, but for blocks over 32 MiB. Returns false
// and says why (the process then allocates from glibc as before) when mimalloc is not
// available or the limit leaves it too little room. Never call it in a process that goes on after the render: the
// switch is one-way.
bool enter_render_heap(std::string* why_not = nullptr);

// Whether this process allocates from the render heap (a render's child after
// enter_render_heap), and whether mimalloc gave p. For tests and diagnostics.
bool in_render_heap();
bool owned_by_render_heap(const void* p);

}  // namespace gaia::render
