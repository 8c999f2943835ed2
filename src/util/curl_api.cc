#include "util/curl_api.h"

#include "util/dynamic_library.h"

namespace cairn {

const CurlApi& Curl() {
  static const CurlApi api = [] {
    CurlApi a;
    DynamicLibrary lib = DynamicLibrary::Open({"libcurl.so.4"}, "libcurl");
    lib.Load(&a.easy_cleanup, "curl_easy_cleanup");
    lib.Load(&a.easy_getinfo, "curl_easy_getinfo");
    lib.Load(&a.easy_init, "curl_easy_init");
    lib.Load(&a.easy_perform, "curl_easy_perform");
    lib.Load(&a.easy_reset, "curl_easy_reset");
    lib.Load(&a.easy_setopt, "curl_easy_setopt");
    lib.Load(&a.easy_strerror, "curl_easy_strerror");
    lib.Load(&a.free, "curl_free");
    lib.Load(&a.global_init, "curl_global_init");
    lib.Load(&a.slist_append, "curl_slist_append");
    lib.Load(&a.slist_free_all, "curl_slist_free_all");
    lib.Load(&a.url_cleanup, "curl_url_cleanup");
    lib.Load(&a.url_get, "curl_url_get");
    lib.Load(&a.url_set, "curl_url_set");
    lib.Load(&a.url, "curl_url");
    a.error = lib.error();
    if (a.error.empty()) a.global_init(CURL_GLOBAL_DEFAULT);
    return a;
  }();
  return api;
}

}  // namespace cairn
