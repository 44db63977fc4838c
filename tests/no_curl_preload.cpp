// Preloaded into gaia by the end-to-end tests (LD_PRELOAD) to run it as on a machine
// without libcurl: every dlopen of a library whose name mentions libcurl fails, with a
// reason dlerror cannot give here; everything else is opened as usual.
#include <dlfcn.h>

#include <cstring>

extern "C" void* dlopen(const char* file, int mode) {
  using Open = void* (*)(const char*, int);
  static Open real = reinterpret_cast<Open>(::dlsym(RTLD_NEXT, "dlopen"));
  if (file && std::strstr(file, "libcurl")) return nullptr;
  return real(file, mode);
}
