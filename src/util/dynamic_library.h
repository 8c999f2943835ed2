// Shared libraries opened on first use (dlopen) rather than when cairn starts: libcurl and
// libarchive each bring a dozen libraries with them that most commands never need. A caller
// fills a table of function pointers once (util/curl_api.h, env/install/wheel_archive.cc) and keeps
// the first error, so that a missing library or symbol is reported when the feature is used.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

namespace cairn {

class DynamicLibrary {
 public:
  // The first of `sonames` that loads; `what` names the library in errors ("libcurl").
  // The library stays loaded for the life of the process.
  static DynamicLibrary Open(std::initializer_list<const char*> sonames, std::string_view what);

  // Points *function at the library's symbol `name`; when the library is not loaded or lacks
  // it, leaves it null and keeps the first error.
  template <typename F>
  void Load(F** function, const char* name) {
    *function = reinterpret_cast<F*>(Symbol(name));
  }

  // Why the library or one of the loaded symbols is missing; empty when all are there.
  const std::string& error() const { return error_; }

 private:
  void* Symbol(const char* name);

  void* handle_ = nullptr;
  std::string what_;
  std::string error_;
};

}  // namespace cairn
