#include "util/dynamic_library.h"

#include <dlfcn.h>

namespace cairn {

DynamicLibrary DynamicLibrary::Open(std::initializer_list<const char*> sonames,
                                    std::string_view what) {
  DynamicLibrary lib;
  lib.what_ = std::string(what);
  for (const char* soname : sonames) {
    lib.handle_ = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (lib.handle_ != nullptr) return lib;
  }
  const char* why = dlerror();
  lib.error_ = lib.what_ + " cannot be loaded: " + (why != nullptr ? why : "?");
  return lib;
}

void* DynamicLibrary::Symbol(const char* name) {
  if (handle_ == nullptr) return nullptr;
  void* symbol = dlsym(handle_, name);
  if (symbol == nullptr && error_.empty()) error_ = what_ + " lacks " + name;
  return symbol;
}

}  // namespace cairn
