#pragma once
// libcurl, opened the first time an HTTP client is made rather than linked into gaia.
//
// Only the etcd store and the Kubernetes backend speak HTTP, but a gaia linked with
// libcurl loads it and the thirty libraries it depends on (GnuTLS, Kerberos, LDAP,
// SSH, ...) in every process: 9 ms of wall time and 4 ms of CPU before main, paid by
// every command on the embedded default and by every process supervisor (`gaia
// __shim`) the process backend starts (docs/build.md, "Why commands start fast").
// Opened with dlopen, it costs that only in the processes that talk to a server.

#include <curl/curl.h>

#include <string>

namespace gaia::http {

// The libcurl functions gaia calls, from the library opened at run time.
struct CurlLibrary {
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_multi_init) multi_init = nullptr;
  decltype(&::curl_multi_add_handle) multi_add_handle = nullptr;
  decltype(&::curl_multi_remove_handle) multi_remove_handle = nullptr;
  decltype(&::curl_multi_perform) multi_perform = nullptr;
  decltype(&::curl_multi_info_read) multi_info_read = nullptr;
  decltype(&::curl_multi_poll) multi_poll = nullptr;
  decltype(&::curl_multi_wakeup) multi_wakeup = nullptr;
  decltype(&::curl_multi_cleanup) multi_cleanup = nullptr;
};

// Opens libcurl (Debian's libcurl4, the soname the build compiled against; 7.85 or
// later) and runs curl_global_init, once per process and thread-safe: later calls return
// the first answer. Null when it cannot, with the reason in *why.
const CurlLibrary* open_curl(std::string* why = nullptr);

// The library open_curl opened. Only for code that runs after a successful open_curl
// (every libcurl handle exists because of one).
const CurlLibrary& curl();

}  // namespace gaia::http
