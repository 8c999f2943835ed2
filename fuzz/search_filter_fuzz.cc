// Fuzz target for MLflow's search language (core/search.h): any filter or order_by text is
// parsed or refused with an error, never a crash.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/search.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cairn::core::ParseRunFilter(text);
  (void)cairn::core::ParseExperimentFilter(text);
  (void)cairn::core::ParseRunOrderBy({std::string(text)});
  (void)cairn::core::ParseExperimentOrderBy({std::string(text)});
  return 0;
}
