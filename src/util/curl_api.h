// libcurl, loaded when the first HTTP request is made rather than when cairn starts: it brings a
// dozen libraries with it (TLS, LDAP, IDN, HTTP/2) that most commands never need. Every HTTP
// client of cairn (the tracking client, package downloads) goes through this table.
#pragma once

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include <string>

namespace cairn {

struct CurlApi {
  decltype(&::curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&::curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&::curl_easy_init) easy_init = nullptr;
  decltype(&::curl_easy_perform) easy_perform = nullptr;
  decltype(&::curl_easy_reset) easy_reset = nullptr;
  decltype(&::curl_easy_setopt) easy_setopt = nullptr;
  decltype(&::curl_easy_strerror) easy_strerror = nullptr;
  decltype(&::curl_free) free = nullptr;
  decltype(&::curl_global_init) global_init = nullptr;
  decltype(&::curl_slist_append) slist_append = nullptr;
  decltype(&::curl_slist_free_all) slist_free_all = nullptr;
  decltype(&::curl_url_cleanup) url_cleanup = nullptr;
  decltype(&::curl_url_get) url_get = nullptr;
  decltype(&::curl_url_set) url_set = nullptr;
  decltype(&::curl_url) url = nullptr;
  std::string error;  // why it could not be loaded; empty when it was
};

// The loaded library (loaded and initialised once, on first use, thread-safely). When it could
// not be loaded, `error` says why and the function pointers are null.
const CurlApi& Curl();

}  // namespace cairn
