#include "render/render_heap.hpp"

#include <dlfcn.h>
#include <sys/resource.h>
#include <unistd.h>
#include <fmt/format.h>
#include <mimalloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string_view>

// Sanitizer builds keep their runtime's operator new and delete, which check every new
// against its delete; renders there use the sanitizer's malloc.
#if defined(__SANITIZE_ADDRESS__)
#define GAIA_RENDER_HEAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GAIA_RENDER_HEAP 0
#endif
#endif
#ifndef GAIA_RENDER_HEAP
#define GAIA_RENDER_HEAP 1
#endif

namespace gaia::render {
namespace {

struct Mimalloc {
  decltype(&mi_malloc) malloc = nullptr;
  decltype(&mi_free) free = nullptr;
  decltype(&mi_is_in_heap_region) owns = nullptr;
  decltype(&mi_option_set_enabled) set_option = nullptr;
  decltype(&mi_collect) collect = nullptr;
};

struct LoadedMimalloc {
  RenderHeapInfo info;
  Mimalloc fns;
  // Whether the child asks mimalloc for 2 MB pages (see enter_render_heap).
  bool large_pages = false;
};

// The first number in a file of /proc or /sys (or -1).
long read_number_file(const char* path) {
  std::FILE* f = std::fopen(path, "re");
  if (!f) return -1;
  long v = -1;
  if (std::fscanf(f, "%ld", &v) != 1) v = -1;
  std::fclose(f);
  return v;
}

LoadedMimalloc open_mimalloc() {
  LoadedMimalloc out;
  if (!GAIA_RENDER_HEAP) {
    out.info.why_not = "a sanitizer build keeps its own operator new";
    return out;
  }
  // The user's choice, read here in the parent (the Jsonnet a child evaluates never sees
  // the environment). glibc is there to rule the allocator out when something goes wrong.
  if (const char* choice = std::getenv("GAIA_RENDER_MALLOC"); choice && *choice) {
    const std::string_view c{choice};
    if (c == "glibc") {
      out.info.why_not = "GAIA_RENDER_MALLOC=glibc";
      return out;
    }
    if (c != "mimalloc") {
      out.info.why_not = fmt::format("GAIA_RENDER_MALLOC={} is neither mimalloc nor glibc", c);
      return out;
    }
  }
  // The soname of Debian's libmimalloc2.0. RTLD_LOCAL keeps its malloc and free (it
  // exports them to replace glibc's when preloaded) out of the process's symbol lookup.
  void* lib = ::dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    out.info.why_not = fmt::format("cannot open mimalloc ({})", why ? why : "unknown error");
    return out;
  }
  // The library stays open whatever follows: unloading an allocator is never safe.
  out.fns.malloc = reinterpret_cast<decltype(&mi_malloc)>(::dlsym(lib, "mi_malloc"));
  out.fns.free = reinterpret_cast<decltype(&mi_free)>(::dlsym(lib, "mi_free"));
  out.fns.owns = reinterpret_cast<decltype(&mi_is_in_heap_region)>(::dlsym(lib, "mi_is_in_heap_region"));
  out.fns.set_option = reinterpret_cast<decltype(&mi_option_set_enabled)>(::dlsym(lib, "mi_option_set_enabled"));
  out.fns.collect = reinterpret_cast<decltype(&mi_collect)>(::dlsym(lib, "mi_collect"));
  auto version = reinterpret_cast<decltype(&mi_version)>(::dlsym(lib, "mi_version"));
  if (!out.fns.malloc || !out.fns.free || !out.fns.owns || !out.fns.set_option || !out.fns.collect || !version) {
    out.info.why_not = "the mimalloc library lacks one of mi_malloc, mi_free, mi_is_in_heap_region, "
                       "mi_option_set_enabled, mi_collect and mi_version";
    out.fns = {};
    return out;
  }
  const int v = version();
  const std::string name = fmt::format("mimalloc {}.{}.{}", v / 100, (v / 10) % 10, v % 10);
  // 2.0 is bookworm's, the one measured and tested. 2.1 reserves 1 GiB arenas up front,
  // which the render's address-space limit would have to make room for.
  if (v / 10 != 20) {
    out.info.why_not = fmt::format("{} is not the 2.0 series gaia was tested with", name);
    out.fns = {};
    return out;
  }
  out.info.available = true;
  out.info.version = name;
  // With large OS pages mimalloc 2.0 first asks for pages of the 2 MB hugetlbfs pool
  // (MAP_HUGETLB | MAP_HUGE_2MB), then for transparent huge pages. Where an
  // administrator reserved such a pool (for a database, say), renders must not take from
  // it; a kernel without the pool's directory has none. A user's own
  // MIMALLOC_LARGE_OS_PAGES is left to decide.
  const char* pool = "/sys/kernel/mm/hugepages/hugepages-2048kB";
  const bool user_decides = std::getenv("MIMALLOC_LARGE_OS_PAGES") != nullptr;
  const bool no_pool =
      ::access(pool, F_OK) != 0 ||
      (read_number_file("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == 0 &&
       read_number_file("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages") == 0);
  out.large_pages = !user_decides && no_pool;
  return out;
}

// Set once, by load_render_heap in the parent; a child reads it and never opens the
// library itself (a dlopen in a forked child of a threaded parent may deadlock).
std::atomic<const LoadedMimalloc*> g_loaded{nullptr};

// Null in every process but a render's child after enter_render_heap. Written once,
// in a child that runs one thread (fork copies only the caller), so it needs no atomic.
const Mimalloc* g_heap = nullptr;

// Blocks larger than this go to glibc (which maps them on their own) even in the child:
// mimalloc gains nothing on them, and 2.0 serves the largest from addresses its own
// ownership test does not cover.
constexpr std::size_t k_largest_from_mimalloc = std::size_t{32} << 20;

// The process's mapped address space (the first field of /proc/self/statm), or 0.
std::size_t address_space_in_use() {
  const long pages = read_number_file("/proc/self/statm");
  return pages > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

std::optional<std::string> address_space_refusal(std::size_t limit, std::size_t used) {
  if (used == 0) return "the address space in use cannot be read (/proc/self/statm)";
  if (limit >= used && limit - used >= k_address_space_headroom) return std::nullopt;
  return fmt::format("the memory limit of {} MiB leaves mimalloc too little address space ({} MiB in use, {} MiB "
                     "needed above it)",
                     limit >> 20, used >> 20, k_address_space_headroom >> 20);
}

const RenderHeapInfo& load_render_heap() {
  static const LoadedMimalloc loaded = open_mimalloc();
  g_loaded.store(&loaded, std::memory_order_release);
  return loaded.info;
}

bool enter_render_heap(std::string* why_not) {
  const LoadedMimalloc* l = g_loaded.load(std::memory_order_acquire);
  auto refuse = [&](std::string why) {
    if (why_not) *why_not = std::move(why);
    return false;
  };
  if (!l) return refuse("load_render_heap was not called before the fork");
  if (!l->info.available) return refuse(l->info.why_not);
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    if (auto why = address_space_refusal(as.rlim_cur, address_space_in_use())) return refuse(std::move(*why));
  // Whole 2 MB pages where the kernel allows them (transparent huge pages in "always" or
  // "madvise" mode): a render fills a few MB at once, and one fault per 2 MB instead of
  // one per 4 KB is a tenth of its CPU time. Set here, not in the parent, which never
  // allocates from mimalloc; nothing has been taken from the system yet.
  if (l->large_pages) l->fns.set_option(mi_option_large_os_pages, true);
  g_heap = &l->fns;
  // A probe: from here on, a C++ allocation must come from mimalloc.
  void* probe = ::operator new(64);
  const bool owned = l->fns.owns(probe);
  ::operator delete(probe);
  if (!owned) {
    g_heap = nullptr;
    l->fns.collect(true);  // What it mapped for the probe goes back, for glibc's use.
    return refuse("mimalloc's blocks are outside the addresses it reports as its own");
  }
  return true;
}

bool in_render_heap() { return g_heap != nullptr; }

bool owned_by_render_heap(const void* p) {
  const LoadedMimalloc* l = g_loaded.load(std::memory_order_acquire);
  return l && l->info.available && p && l->fns.owns(p);
}

}  // namespace gaia::render

// The global operator new and delete.
#if GAIA_RENDER_HEAP
namespace {

[[gnu::always_inline]] inline void* render_heap_allocate(std::size_t n) {
  if (n == 0) n = 1;
  if (const auto* heap = gaia::render::g_heap; heap && n <= gaia::render::k_largest_from_mimalloc) {
    if (void* p = heap->malloc(n)) {
      // delete tells the two allocators apart by mimalloc's own ownership test, so a block
      // that fails it (an arena of the user's MIMALLOC_ settings outside the range the test
      // covers) must not be handed out; glibc serves the request instead.
      if (heap->owns(p)) return p;
      heap->free(p);
    }
  }
  // What libstdc++'s own operator new does: malloc, and on failure the new-handler.
  bool collected = false;
  while (true) {
    if (void* p = std::malloc(n)) return p;
    // In a render's child mimalloc keeps the segments it freed mapped, and under the
    // child's address-space limit glibc may find no room for a block mimalloc does not
    // serve: once, mimalloc gives back what it can (measured: a template's 40 MiB blocks
    // got 120 MiB of a limit's 400 after 200 MiB of small ones were freed, 360 with this).
    if (const auto* heap = gaia::render::g_heap; heap && !collected) {
      heap->collect(true);
      collected = true;
      continue;
    }
    std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

[[gnu::always_inline]] inline void render_heap_release(void* p) noexcept {
  if (!p) return;
  // In a render's child, memory allocated before the fork came from glibc.
  if (const auto* heap = gaia::render::g_heap; heap && heap->owns(p)) {
    heap->free(p);
    return;
  }
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) { return render_heap_allocate(n); }
void* operator new[](std::size_t n) { return render_heap_allocate(n); }
void operator delete(void* p) noexcept { render_heap_release(p); }
void operator delete[](void* p) noexcept { render_heap_release(p); }
void operator delete(void* p, std::size_t) noexcept { render_heap_release(p); }
void operator delete[](void* p, std::size_t) noexcept { render_heap_release(p); }
#endif
