// Fuzz target for MLflow's search language (core/search.h) of runs, experiments and the model
// registry: any filter or order_by text is parsed or refused with an error, never a crash.
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
  (void)cairn::core::ParseRegisteredModelFilter(text);
  (void)cairn::core::ParseModelVersionFilter(text);
  (void)cairn::core::ParseRegisteredModelOrderBy({std::string(text)});
  (void)cairn::core::ParseModelVersionOrderBy({std::string(text)});
  return 0;
}
