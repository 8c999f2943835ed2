#include "util/curl_api.h"

#include <dlfcn.h>

#include <type_traits>

namespace cairn {

const CurlApi& Curl() {
  static const CurlApi api = [] {
    CurlApi a;
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      a.error = std::string("libcurl cannot be loaded: ") + (why != nullptr ? why : "?");
      return a;
    }
    auto load = [&](auto* field, const char* name) {
      *field = reinterpret_cast<std::remove_pointer_t<decltype(field)>>(dlsym(lib, name));
      if (*field == nullptr && a.error.empty()) a.error = std::string("libcurl lacks ") + name;
    };
    load(&a.easy_cleanup, "curl_easy_cleanup");
    load(&a.easy_getinfo, "curl_easy_getinfo");
    load(&a.easy_init, "curl_easy_init");
    load(&a.easy_perform, "curl_easy_perform");
    load(&a.easy_reset, "curl_easy_reset");
    load(&a.easy_setopt, "curl_easy_setopt");
    load(&a.easy_strerror, "curl_easy_strerror");
    load(&a.free, "curl_free");
    load(&a.global_init, "curl_global_init");
    load(&a.slist_append, "curl_slist_append");
    load(&a.slist_free_all, "curl_slist_free_all");
    load(&a.url_cleanup, "curl_url_cleanup");
    load(&a.url_get, "curl_url_get");
    load(&a.url_set, "curl_url_set");
    load(&a.url, "curl_url");
    if (a.error.empty()) a.global_init(CURL_GLOBAL_DEFAULT);
    return a;
  }();
  return api;
}

}  // namespace cairn
