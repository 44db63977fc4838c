#include "render/render_heap.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <mimalloc.h>

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
};

struct LoadedMimalloc {
  RenderHeapInfo info;
  Mimalloc fns;
};

LoadedMimalloc open_mimalloc() {
  LoadedMimalloc out;
  if (!GAIA_RENDER_HEAP) {
    out.info.detail = "the sanitizer's malloc: a sanitizer build keeps its own operator new";
    return out;
  }
  // The user's choice, read here in the parent (the Jsonnet a child evaluates never sees
  // the environment). glibc is there to rule the allocator out when something goes wrong.
  if (const char* choice = std::getenv("GAIA_RENDER_MALLOC"); choice && *choice) {
    const std::string_view c{choice};
    if (c == "glibc") {
      out.info.detail = "glibc malloc: GAIA_RENDER_MALLOC=glibc";
      return out;
    }
    if (c != "mimalloc") {
      out.info.detail = fmt::format("glibc malloc: GAIA_RENDER_MALLOC={} is neither mimalloc nor glibc", c);
      return out;
    }
  }
  // The soname of Debian's libmimalloc2.0. RTLD_LOCAL keeps its malloc and free (it
  // exports them to replace glibc's when preloaded) out of the process's symbol lookup.
  void* lib = ::dlopen("libmimalloc.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = ::dlerror();
    out.info.detail = fmt::format("glibc malloc: cannot open mimalloc ({})", why ? why : "unknown error");
    return out;
  }
  out.fns.malloc = reinterpret_cast<decltype(&mi_malloc)>(::dlsym(lib, "mi_malloc"));
  out.fns.free = reinterpret_cast<decltype(&mi_free)>(::dlsym(lib, "mi_free"));
  out.fns.owns = reinterpret_cast<decltype(&mi_is_in_heap_region)>(::dlsym(lib, "mi_is_in_heap_region"));
  out.fns.set_option = reinterpret_cast<decltype(&mi_option_set_enabled)>(::dlsym(lib, "mi_option_set_enabled"));
  auto version = reinterpret_cast<decltype(&mi_version)>(::dlsym(lib, "mi_version"));
  if (!out.fns.malloc || !out.fns.free || !out.fns.owns || !out.fns.set_option || !version) {
    out.info.detail = "glibc malloc: the mimalloc library lacks one of mi_malloc, mi_free, mi_is_in_heap_region, "
                      "mi_option_set_enabled and mi_version";
    out.fns = {};
    return out;  // The library stays open: unloading an allocator is never safe.
  }
  const int v = version();
  out.info.available = true;
  out.info.detail = fmt::format("mimalloc {}.{}.{}", v / 100, (v / 10) % 10, v % 10);
  return out;
}

const LoadedMimalloc& loaded_mimalloc() {
  static const LoadedMimalloc l = open_mimalloc();
  return l;
}

// Null in every process but a render's child after enter_render_heap. Written once,
// in a child that runs one thread (fork copies only the caller), so it needs no atomic.
const Mimalloc* g_heap = nullptr;

}  // namespace

const RenderHeapInfo& load_render_heap() { return loaded_mimalloc().info; }

bool enter_render_heap() {
  const LoadedMimalloc& l = loaded_mimalloc();
  if (!l.info.available) return false;
  // Whole 2 MB pages where the kernel allows them (transparent huge pages in "always" or
  // "madvise" mode): a render fills a few MB at once, and one fault per 2 MB instead of
  // one per 4 KB is a tenth of its CPU time. Set here, not in the parent, which never
  // allocates from mimalloc; nothing has been taken from the system yet.
  l.fns.set_option(mi_option_large_os_pages, true);
  g_heap = &l.fns;
  return true;
}

bool in_render_heap() { return g_heap != nullptr; }

bool owned_by_render_heap(const void* p) { return g_heap && p && g_heap->owns(p); }

}  // namespace gaia::render

// The global operator new and delete.
#if GAIA_RENDER_HEAP
namespace {

[[gnu::always_inline]] inline void* render_heap_allocate(std::size_t n) {
  if (n == 0) n = 1;
  if (const auto* heap = gaia::render::g_heap) {
    if (void* p = heap->malloc(n)) return p;
    throw std::bad_alloc();
  }
  // What libstdc++'s own operator new does: malloc, and on failure the new-handler.
  while (true) {
    if (void* p = std::malloc(n)) return p;
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
