#include "net/curl_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <stdexcept>

namespace gaia::http {
namespace {

struct Opened {
  CurlLibrary lib;
  std::string why_not;  // Empty when lib is usable.
};

template <class F>
bool take(void* handle, const char* name, F& into, std::string& missing) {
  into = reinterpret_cast<F>(::dlsym(handle, name));
  if (!into) missing += missing.empty() ? name : fmt::format(", {}", name);
  return into != nullptr;
}

Opened open_once() {
  Opened out;
  // RTLD_LOCAL: its symbols serve only these pointers. The library stays open for the
  // life of the process, as a linked one would.
  void* handle = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = ::dlerror();
    out.why_not = fmt::format("cannot open libcurl ({}); install Debian's libcurl4", err ? err : "unknown error");
    return out;
  }
  CurlLibrary& l = out.lib;
  std::string missing;
  take(handle, "curl_global_init", l.global_init, missing);
  take(handle, "curl_easy_init", l.easy_init, missing);
  take(handle, "curl_easy_cleanup", l.easy_cleanup, missing);
  take(handle, "curl_easy_reset", l.easy_reset, missing);
  take(handle, "curl_easy_setopt", l.easy_setopt, missing);
  take(handle, "curl_easy_getinfo", l.easy_getinfo, missing);
  take(handle, "curl_easy_perform", l.easy_perform, missing);
  take(handle, "curl_easy_strerror", l.easy_strerror, missing);
  take(handle, "curl_slist_append", l.slist_append, missing);
  take(handle, "curl_slist_free_all", l.slist_free_all, missing);
  take(handle, "curl_multi_init", l.multi_init, missing);
  take(handle, "curl_multi_add_handle", l.multi_add_handle, missing);
  take(handle, "curl_multi_remove_handle", l.multi_remove_handle, missing);
  take(handle, "curl_multi_perform", l.multi_perform, missing);
  take(handle, "curl_multi_info_read", l.multi_info_read, missing);
  take(handle, "curl_multi_poll", l.multi_poll, missing);
  take(handle, "curl_multi_wakeup", l.multi_wakeup, missing);
  take(handle, "curl_multi_cleanup", l.multi_cleanup, missing);
  decltype(&::curl_version_info) version_info = nullptr;
  take(handle, "curl_version_info", version_info, missing);
  if (!missing.empty()) {
    out.why_not = fmt::format("the libcurl found lacks {} (gaia needs libcurl 7.85 or later)", missing);
    return out;
  }
  // 7.85 is the first with CURLOPT_PROTOCOLS_STR, which keeps requests to http and
  // https; an older library would ignore that option (and the certificate blobs of 7.71
  // and 7.77) without an error, so it is refused here instead.
  const curl_version_info_data* info = version_info(CURLVERSION_NOW);
  if (!info || info->version_num < 0x075500) {
    out.why_not = fmt::format("libcurl {} is older than 7.85, which gaia needs", info && info->version ? info->version : "?");
    return out;
  }
  // libcurl wants curl_global_init before any handle exists; once per process.
  if (CURLcode rc = l.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    out.why_not = fmt::format("libcurl did not initialise (curl_global_init: error {})", static_cast<int>(rc));
    return out;
  }
  return out;
}

std::atomic<const CurlLibrary*> g_opened{nullptr};

}  // namespace

const CurlLibrary* open_curl(std::string* why) {
  // Never destroyed: a watch thread may still be in libcurl while the process exits.
  static const Opened* opened = new Opened(open_once());
  if (!opened->why_not.empty()) {
    if (why) *why = opened->why_not;
    return nullptr;
  }
  g_opened.store(&opened->lib, std::memory_order_release);
  return &opened->lib;
}

const CurlLibrary& curl() {
  const CurlLibrary* l = g_opened.load(std::memory_order_acquire);
  if (!l) throw std::logic_error("libcurl used before open_curl succeeded");
  return *l;
}

}  // namespace gaia::http
